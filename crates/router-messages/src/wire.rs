//! Messages wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both parties: a client's request and the body sent
//! to a Messages supplier are both [`request::MessagesRequest`]; a
//! supplier's reply and the reply to a client are both
//! [`response::MessageObject`], and stream events are [`event::Event`].
//! Conversion to and from the canonical model is written by hand in the
//! crate's client and supplier codecs (no `serde_json::Value` round trips).
//!
//! Open world: request and message objects keep unknown members in a
//! `#[serde(flatten)]` map (the client codec rejects them), unknown content
//! blocks are kept whole ([`request::ContentBlock::Unknown`]), a supplier's
//! unknown `stop_reason` is kept as [`response::WireStopReason::Other`], and an
//! unknown stream event is [`event::Event::Unknown`]. Outgoing optionals are
//! skipped when absent, except `stop_reason` and `stop_sequence` of a message
//! object, which Anthropic's schema defines as nullable and always present.

pub mod event;
pub mod request;
pub mod response;

use router_canonical::parse::to_json_bytes_or;
use serde::Serialize;

/// The body sent should serializing a reply ever fail: a well-formed Messages
/// `api_error` envelope rather than a panic.
const SERIALIZE_FAILED: &[u8] = br#"{"type":"error","error":{"type":"api_error","message":"the router could not serialize its response"}}"#;

/// Serialize a wire value to JSON bytes (see [`SERIALIZE_FAILED`]).
pub(crate) fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    to_json_bytes_or(value, SERIALIZE_FAILED)
}
