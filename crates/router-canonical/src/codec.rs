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
use serde_json::{Map, Value};

pub use crate::header::HeaderSource;
pub use crate::supplier_error::{SupplierError, SupplierErrorCategory, SupplierFailure};

/// What a reply states that the supplier's answer did not.
///
/// Built with [`ReplyContext::new`] (and [`ReplyContext::with_cost`]);
/// new members may be added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
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

impl<'a> ReplyContext<'a> {
    /// A reply with this id, model name and creation time (Unix seconds),
    /// reporting no charge.
    pub const fn new(id: &'a str, model: &'a str, created: i64) -> Self {
        ReplyContext {
            id,
            model,
            created,
            cost: None,
        }
    }

    /// This context reporting `cost` as the charge (`None`: no charge shown).
    pub const fn with_cost(mut self, cost: Option<NanoUsd>) -> Self {
        self.cost = cost;
        self
    }
}

/// What every frame of a client stream repeats.
///
/// Built with [`StreamContext::new`]; new members may be added, hence
/// `#[non_exhaustive]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StreamContext {
    /// The stream's reply id (`chatcmpl-…`, `msg_…`, `resp_…`).
    pub id: String,
    /// The model name to show the client.
    pub model: String,
    /// Unix seconds.
    pub created: i64,
}

impl StreamContext {
    /// A stream with this id, model name and creation time (Unix seconds).
    pub fn new(id: impl Into<String>, model: impl Into<String>, created: i64) -> Self {
        StreamContext {
            id: id.into(),
            model: model.into(),
            created,
        }
    }
}

/// How a successful stream ends: the stop reason, the final usage and,
/// where the protocol has a place for it, the charge.
///
/// Built with [`StreamEnd::new`] and its setters; new members may be
/// added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub struct StreamEnd<'a> {
    /// Why generation stopped.
    pub stop_reason: &'a StopReason,
    /// The stop sequence that ended it, if one did.
    pub stop_sequence: Option<&'a str>,
    /// The whole stream's token usage.
    pub usage: &'a Usage,
    /// The charge to report, where the protocol has a place for it.
    pub cost: Option<NanoUsd>,
}

impl<'a> StreamEnd<'a> {
    /// An ending for this stop reason and usage, with no stop sequence and
    /// no charge.
    pub const fn new(stop_reason: &'a StopReason, usage: &'a Usage) -> Self {
        StreamEnd {
            stop_reason,
            stop_sequence: None,
            usage,
            cost: None,
        }
    }

    /// This ending with the stop sequence that ended the stream.
    pub const fn with_stop_sequence(mut self, stop_sequence: Option<&'a str>) -> Self {
        self.stop_sequence = stop_sequence;
        self
    }

    /// This ending reporting `cost` as the charge.
    pub const fn with_cost(mut self, cost: Option<NanoUsd>) -> Self {
        self.cost = cost;
        self
    }
}

/// A gateway's own members of a client's request body: top-level members
/// the protocol does not define, read by the gateway rather than by the
/// protocol's model. A client codec hands them over before it applies its
/// rule for unknown members (Chat and Responses drop them, Messages refuses
/// them), so an extension is accepted on every surface and validated once.
/// The values stay with the gateway, beside the canonical [`Request`]:
///
/// ```
/// use router_canonical::{ApiError, BodyExtensions};
/// use serde_json::{Map, Value};
///
/// /// A gateway's `tenant` member of every body.
/// #[derive(Default)]
/// struct Tenant(Option<String>);
///
/// impl BodyExtensions for Tenant {
///     fn take(&mut self, members: &mut Map<String, Value>) -> Result<(), ApiError> {
///         match members.remove("tenant") {
///             None | Some(Value::Null) => Ok(()),
///             Some(Value::String(name)) => {
///                 self.0 = Some(name);
///                 Ok(())
///             }
///             Some(_) => Err(ApiError::invalid("tenant", "`tenant` must be a string")),
///         }
///     }
/// }
///
/// let mut members = Map::new();
/// members.insert("tenant".into(), Value::String("acme".into()));
/// let mut tenant = Tenant::default();
/// tenant.take(&mut members)?;
/// assert_eq!(tenant.0.as_deref(), Some("acme"));
/// assert!(members.is_empty());
/// # Ok::<(), ApiError>(())
/// ```
pub trait BodyExtensions {
    /// Take this gateway's members out of `members` (the body's top-level
    /// members the protocol does not define), refusing a bad value with an
    /// `invalid_parameter` error naming it.
    fn take(&mut self, members: &mut Map<String, Value>) -> Result<(), ApiError>;

    /// Judges an `http:` or `https:` image URL the body gives at `param`,
    /// before it enters the canonical request. Every such URL is accepted
    /// by default. A gateway that forwards image URLs to suppliers, which
    /// fetch them, refuses private and metadata hosts here
    /// ([`crate::parse::public_http_image_url`]).
    fn check_image_url(&self, param: &str, url: &str) -> Result<(), ApiError> {
        let _ = (param, url);
        Ok(())
    }
}

/// No extensions: every member is judged by the protocol's rules.
impl BodyExtensions for () {
    fn take(&mut self, _members: &mut Map<String, Value>) -> Result<(), ApiError> {
        Ok(())
    }
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
    /// [`ApiError::param`]. Every top-level member is judged by the
    /// protocol's own rules: a gateway's extensions are not read (see
    /// [`ClientCodec::parse_request_with`]).
    fn parse_request(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
    ) -> Result<(Request, Self::Extra), ApiError> {
        self.parse_request_with(headers, body, &mut ())
    }

    /// [`ClientCodec::parse_request`], with `extensions` first taking a
    /// gateway's own top-level members out of those the protocol does not
    /// define (a gateway's routing options, for one), before the protocol's
    /// rules judge the rest.
    fn parse_request_with(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
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

    /// A supplier's failure as this protocol's client is answered: the
    /// public error of [`SupplierError::to_api_error`] (its status, its
    /// `Retry-After` and this protocol's envelope), in one call.
    fn supplier_error_reply(&self, error: &SupplierError) -> ErrorReply {
        ErrorReply::new(&error.to_api_error(), |public| self.error_body(public))
    }
}

/// An error reply ready to send: status, `Retry-After` and body.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ErrorReply {
    /// The HTTP status.
    pub status: u16,
    /// The `Retry-After` header's value in seconds, when there is one.
    pub retry_after: Option<u64>,
    /// The protocol's error envelope, JSON.
    pub body: Vec<u8>,
    /// The public error the reply renders.
    pub error: ApiError,
}

impl ErrorReply {
    /// The reply for `error`, its body rendered by `render`.
    pub fn new(error: &ApiError, render: impl FnOnce(&ApiError) -> Vec<u8>) -> Self {
        ErrorReply {
            status: error.status(),
            retry_after: error.retry_after,
            body: render(error),
            error: error.clone(),
        }
    }
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

/// Where a supplier request goes and how it is encoded beyond the
/// request's content: what the route calls the model, the output cap a
/// protocol that requires one (Messages `max_tokens`) uses when the client
/// set none, who signed thinking a caller restored, and whether to add an
/// automatic prompt-cache marker.
///
/// Built with [`SupplierTarget::new`] and its `with_*` setters; new members
/// may be added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupplierTarget<'a> {
    /// The supplier's name for the model.
    pub model: &'a str,
    /// The output cap to send when the request sets none and the protocol
    /// requires one.
    pub default_max_output_tokens: Option<u32>,
    /// The protocol whose suppliers issued the signatures of the request's
    /// thinking parts, when it is not the request's inbound protocol
    /// (`None`: they are the inbound protocol's). An encoder replays signed
    /// thinking only to a supplier of that protocol. A caller that restores
    /// thinking it kept itself (a gateway that seals thinking) sets it.
    pub thinking_signed_by: Option<Protocol>,
    /// Add a five-minute prompt-cache marker (`cache_control`) to the last
    /// block of the last message when the request holds none. Only the
    /// Messages dialects have such markers; other encoders ignore it. Set it
    /// only for models that honour markers: the encoder cannot tell.
    pub prompt_cache_marker: bool,
}

impl<'a> SupplierTarget<'a> {
    /// A request for the supplier's model `model`, with no default cap, its
    /// thinking signed by its inbound protocol's suppliers, and no marker
    /// added.
    pub const fn new(model: &'a str) -> Self {
        SupplierTarget {
            model,
            default_max_output_tokens: None,
            thinking_signed_by: None,
            prompt_cache_marker: false,
        }
    }

    /// This target with the output cap used when the request sets none.
    pub const fn with_default_max_output_tokens(mut self, cap: Option<u32>) -> Self {
        self.default_max_output_tokens = cap;
        self
    }

    /// This target for a request whose thinking parts `signer`'s suppliers
    /// signed (`None`: the request's inbound protocol's).
    pub const fn with_thinking_signed_by(mut self, signer: Option<Protocol>) -> Self {
        self.thinking_signed_by = signer;
        self
    }

    /// This target adding (or not) an automatic prompt-cache marker
    /// ([`SupplierTarget::prompt_cache_marker`]).
    pub const fn with_prompt_cache_marker(mut self, add: bool) -> Self {
        self.prompt_cache_marker = add;
        self
    }

    /// The protocol whose suppliers signed `request`'s thinking parts:
    /// [`SupplierTarget::thinking_signed_by`], else the request's inbound
    /// protocol.
    pub fn thinking_signer(&self, request: &Request) -> Option<Protocol> {
        self.thinking_signed_by.or(request.inbound)
    }
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

    /// Read an error reply (`status` is not 2xx) with its headers. Always a
    /// [`SupplierError::Reported`]: its detail is whatever the body says in
    /// the protocol's error shape, and the wait its `Retry-After` header
    /// asks for (start from [`SupplierFailure::from_reply`]).
    fn decode_error(&self, status: u16, headers: &dyn HeaderSource, body: &[u8]) -> SupplierError;

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

#[cfg(test)]
mod tests {
    use super::*;

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
