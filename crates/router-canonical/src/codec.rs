//! The two roles a wire protocol plays, as traits.
//!
//! Every wire crate serves two parties:
//!
//! * the **client** that calls the gateway in that protocol: a
//!   [`ClientCodec`] parses and validates its request into a canonical
//!   [`Request`], and renders canonical replies, stream events and errors in
//!   the protocol's JSON, SSE frames and error envelope;
//! * the **supplier** the gateway calls in that protocol: a
//!   [`SupplierCodec`] encodes a canonical request for it (refusing what the
//!   protocol cannot carry losslessly, naming the field) and decodes its
//!   reply, stream frames and error replies into canonical values, with a
//!   typed [`SupplierError`].
//!
//! A translation between two protocols is a client codec of one and a
//! supplier codec of the other, joined by the canonical model. A new supplier
//! dialect is one [`SupplierCodec`] implementation and nothing else.

use crate::response::{Response, StopReason, Usage};
use crate::sse::Frame;
use crate::{ApiError, NanoUsd, Protocol, Request, StreamEvent};
use std::error::Error;
use std::fmt;
use std::sync::Arc;

/// Read access to a request's HTTP headers, by lower-case name.
///
/// Implemented for `()` (no headers) so a library user without HTTP can
/// call a codec directly.
pub trait HeaderSource {
    /// The header's value, if present and valid UTF-8.
    fn header(&self, name: &str) -> Option<&str>;
}

impl HeaderSource for () {
    fn header(&self, _name: &str) -> Option<&str> {
        None
    }
}

/// What a reply states that the supplier's answer did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplyContext<'a> {
    /// The reply's id (`chatcmpl-…`, `msg_…`, `resp_…`).
    pub id: &'a str,
    /// The model name to show the client.
    pub model: &'a str,
    /// Unix seconds, where the protocol states a creation time.
    pub created: i64,
    /// The charge to report, where the protocol has a place for it
    /// (`usage.cost` in USD on the OpenAI surfaces); `None` reports none.
    pub cost: Option<NanoUsd>,
}

/// What every frame of a client stream repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    pub id: String,
    pub model: String,
    /// Unix seconds.
    pub created: i64,
}

/// How a successful stream ends: the stop reason, the final usage and,
/// where the protocol has a place for it, the charge.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StreamEnd<'a> {
    pub stop_reason: &'a StopReason,
    pub stop_sequence: Option<&'a str>,
    pub usage: &'a Usage,
    pub cost: Option<NanoUsd>,
}

/// The client side of a protocol: parse its requests, render its replies.
pub trait ClientCodec: Send + Sync + 'static {
    /// What the reply needs from the request besides the canonical form
    /// (e.g. the legacy Completions `echo` prompt); `()` for most surfaces.
    type Extra: Send + 'static;
    /// The encoder of one streamed reply.
    type StreamEncoder: ClientStreamEncoder;

    /// The protocol this codec speaks.
    fn protocol(&self) -> Protocol;

    /// Validate a client's body (and the protocol's own headers) into a
    /// canonical request. A rejection names the offending field in
    /// [`ApiError::param`].
    fn parse_request(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
    ) -> Result<(Request, Self::Extra), ApiError>;

    /// The JSON body of a complete reply.
    fn encode_response(
        &self,
        response: &Response,
        reply: &ReplyContext<'_>,
        extra: &Self::Extra,
    ) -> Vec<u8>;

    /// An encoder for one streamed reply.
    fn stream_encoder(&self, stream: StreamContext, extra: Self::Extra) -> Self::StreamEncoder;

    /// The protocol's error envelope for `error`, as a JSON body.
    fn error_body(&self, error: &ApiError) -> Vec<u8>;
}

/// Writes canonical stream events as one protocol's SSE frames.
pub trait ClientStreamEncoder: Send + 'static {
    /// Encode one event. [`StreamEvent::Finish`] writes the stream's ending,
    /// exactly as [`ClientStreamEncoder::finish`] does without a cost.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>);

    /// Write the ending of a successful stream (stop reason, usage, and the
    /// charge where the protocol has a place for it).
    fn finish(&mut self, end: &StreamEnd<'_>, out: &mut Vec<u8>);

    /// Write the protocol's terminal error frame for a failure after the
    /// stream started.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>);
}

/// The [`StreamEnd`] a [`StreamEvent::Finish`] describes, with no cost.
pub fn finish_of(event: &StreamEvent) -> Option<StreamEnd<'_>> {
    match event {
        StreamEvent::Finish {
            stop_reason,
            stop_sequence,
            usage,
        } => Some(StreamEnd {
            stop_reason,
            stop_sequence: stop_sequence.as_deref(),
            usage,
            cost: None,
        }),
        _ => None,
    }
}

/// Where a supplier request goes: what the route calls the model, and the
/// output cap a protocol that requires one (Messages `max_tokens`) uses
/// when the client set none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SupplierTarget<'a> {
    pub model: &'a str,
    pub default_max_output_tokens: Option<u32>,
}

/// `segment` percent-encoded as one path segment (RFC 3986: everything but
/// the unreserved characters), so a model ID with `/` or `:` stays one
/// segment of a supplier path.
pub fn encode_path_segment(segment: &str) -> String {
    let mut out = String::with_capacity(segment.len());
    for b in segment.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// The supplier side of a protocol: encode requests for it, decode what it
/// answers. Object safe: a gateway holds `&dyn SupplierCodec` per route.
pub trait SupplierCodec: Send + Sync + 'static {
    /// The protocol this codec speaks.
    fn protocol(&self) -> Protocol;

    /// The endpoint's path, appended to a supplier's base URL.
    fn path(&self) -> &'static str;

    /// The path of one request, appended to the supplier's base URL: the
    /// default is [`SupplierCodec::path`]. Dialects that name the model or
    /// the streaming choice in the path (Gemini, Bedrock) override it; the
    /// model is percent-encoded as one path segment, and a query the
    /// dialect needs (Gemini's `alt=sse`) may follow.
    fn request_path(&self, target: &SupplierTarget<'_>, stream: bool) -> String {
        let _ = (target, stream);
        self.path().to_owned()
    }

    /// How a streamed reply's bytes are framed: SSE unless the dialect says
    /// otherwise (Bedrock: AWS event stream, each message handed to the
    /// stream decoder as a [`Frame`]).
    fn stream_framing(&self) -> StreamFraming {
        StreamFraming::Sse
    }

    /// The JSON body for the supplier. Fails with `unsupported_conversion`
    /// (naming the field in `param` where there is one) when the request
    /// holds what this protocol cannot carry losslessly.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError>;

    /// The authentication and protocol headers of one request.
    fn headers(&self, request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)>;

    /// Read a complete (non-streaming) success reply.
    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError>;

    /// Read an error reply (`status` is not 2xx). Always a
    /// [`SupplierError::Reported`]; its detail is whatever the body says in
    /// the protocol's error shape.
    fn decode_error(&self, status: u16, body: &[u8]) -> SupplierError;

    /// A decoder for one streamed reply.
    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder>;
}

/// The framing of a supplier's streamed reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamFraming {
    /// Server-sent events ([`crate::sse`]).
    Sse,
    /// AWS event stream ([`crate::eventstream`]); each message reaches the
    /// decoder through [`crate::eventstream::Message::into_frame`].
    AwsEventStream,
}

/// Decodes one supplier stream, frame by frame, into canonical events.
pub trait SupplierStreamDecoder: Send {
    /// The canonical events one SSE frame stands for (possibly none).
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError>;

    /// Whether the stream's final event has been decoded.
    fn is_finished(&self) -> bool;
}

/// What a supplier reported about its own failure, in whatever detail its
/// protocol gives. Never shown to clients verbatim.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SupplierFailure {
    /// The HTTP status of an error reply; `None` for a failure reported
    /// inside a success reply or a stream.
    pub status: Option<u16>,
    /// The protocol's error type (`rate_limit_error`, `server_error`).
    pub kind: Option<String>,
    /// The protocol's error code, where it has one.
    pub code: Option<String>,
    pub message: Option<String>,
}

/// Why a supplier's answer yields no canonical value. The kind decides what
/// a gateway may do next: a reported failure may be tried elsewhere; an
/// invalid or unrepresentable reply means the supplier answered, so trying
/// again could pay twice.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SupplierError {
    /// The supplier reported a failure: an error reply, an error body in a
    /// success reply, or an error event in a stream.
    #[error("the supplier reported a failure{}", describe_failure(.0))]
    Reported(SupplierFailure),
    /// The reply is not valid in the protocol: bad JSON, a missing member,
    /// events out of order, implausible usage.
    #[error("invalid supplier reply: {0}")]
    InvalidReply(Arc<dyn Error + Send + Sync>),
    /// The reply is valid in the protocol but holds a construct the
    /// canonical model cannot represent (an unknown content type).
    #[error("unsupported construct in the supplier reply: {0}")]
    Unsupported(Arc<dyn Error + Send + Sync>),
}

impl SupplierError {
    /// An invalid reply, keeping the decoder's typed error as its source.
    pub fn invalid(error: impl Error + Send + Sync + 'static) -> Self {
        SupplierError::InvalidReply(Arc::new(error))
    }

    /// An unrepresentable construct, keeping the decoder's typed error.
    pub fn unsupported(error: impl Error + Send + Sync + 'static) -> Self {
        SupplierError::Unsupported(Arc::new(error))
    }

    /// The failure the supplier reported, if that is what this is.
    pub fn reported(&self) -> Option<&SupplierFailure> {
        match self {
            SupplierError::Reported(failure) => Some(failure),
            _ => None,
        }
    }
}

impl PartialEq for SupplierError {
    /// Reported failures compare by content; decoder errors by their text.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SupplierError::Reported(a), SupplierError::Reported(b)) => a == b,
            (SupplierError::InvalidReply(a), SupplierError::InvalidReply(b))
            | (SupplierError::Unsupported(a), SupplierError::Unsupported(b)) => {
                a.to_string() == b.to_string()
            }
            _ => false,
        }
    }
}

fn describe_failure(failure: &SupplierFailure) -> String {
    let mut text = String::new();
    if let Some(status) = failure.status {
        text.push_str(&format!(" (HTTP {status})"));
    }
    for (label, value) in [("type", &failure.kind), ("code", &failure.code)] {
        if let Some(value) = value {
            text.push_str(&format!(", {label} {value}"));
        }
    }
    text
}

impl fmt::Display for SupplierFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(describe_failure(self).trim_start_matches(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("no choices")]
    struct NoChoices;

    #[test]
    fn a_decoder_error_keeps_its_type() {
        let error = SupplierError::invalid(NoChoices);
        let SupplierError::InvalidReply(source) = &error else {
            panic!("wrong kind");
        };
        assert!(source.downcast_ref::<NoChoices>().is_some());
        assert_eq!(error.to_string(), "invalid supplier reply: no choices");
        assert!(error.reported().is_none());
    }

    #[test]
    fn a_reported_failure_describes_itself() {
        let failure = SupplierFailure {
            status: Some(429),
            kind: Some("rate_limit_error".into()),
            ..SupplierFailure::default()
        };
        let error = SupplierError::Reported(failure.clone());
        assert_eq!(
            error.to_string(),
            "the supplier reported a failure (HTTP 429), type rate_limit_error"
        );
        assert_eq!(error.reported().unwrap(), &failure);
    }

    #[test]
    fn a_finish_event_is_a_stream_end_without_cost() {
        let event = StreamEvent::Finish {
            stop_reason: StopReason::EndTurn,
            stop_sequence: None,
            usage: Usage::default(),
        };
        let end = finish_of(&event).unwrap();
        assert_eq!(end.cost, None);
        assert_eq!(end.stop_reason, &StopReason::EndTurn);
        assert!(finish_of(&StreamEvent::BlockStop { index: 0 }).is_none());
    }
}
