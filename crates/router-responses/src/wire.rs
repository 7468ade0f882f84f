//! Responses wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both directions: a client's request and the body the
//! router sends a Responses supplier are both [`request::ResponsesRequest`]; a
//! supplier's reply and the router's reply to its client are both
//! [`response::ResponseObject`], and stream events are [`event`] types.
//! Conversion to and from the canonical model is written by hand, in
//! [`crate::client`] and [`crate::supplier`].
//!
//! Open world: the request keeps unknown top-level fields in a
//! `#[serde(flatten)]` map; input items, content parts, output items and
//! text formats are dispatched on their `type` with an `Unknown`/`Other`
//! variant that keeps the whole object, so the validator can name what it
//! rejects and a supplier's new item types become a typed decode error
//! instead of a shape error. Outgoing optionals are skipped when absent,
//! except the fields the OpenAI reference defines as required-but-nullable on
//! the `response` object (`error`, `incomplete_details`, `instructions`, ...),
//! which a client expects to see as `null`.

pub mod event;
pub mod request;
pub mod response;

use router_canonical::parse::optional_tag;
use serde::de;
use serde_json::{Map, Value};

/// Serialize a wire value to JSON bytes (an `internal_error` envelope should
/// that ever fail, rather than a panic).
pub(crate) use router_canonical::openai_error::to_json_bytes;

/// The `type` member of a buffered object that must have one; unlike
/// [`router_canonical::parse::tag`], a `null` type reads as missing, as it
/// does everywhere else in a Responses body.
pub(crate) fn required_tag<E: de::Error>(map: &Map<String, Value>) -> Result<&str, E> {
    optional_tag(map)?.ok_or_else(|| E::missing_field("type"))
}
