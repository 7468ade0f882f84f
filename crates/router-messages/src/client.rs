//! The client side of Messages: validating what a caller sends
//! (`POST /v1/messages` and `POST /v1/messages/count_tokens`) and rendering
//! what it is answered.

mod content;
mod envelope;
mod headers;
mod request;
mod response;
mod stream;

pub use envelope::ErrorEnvelope;
pub use stream::StreamEncoder;

use headers::RequestHeaders;
use router_canonical::{
    ApiError, BodyExtensions, ClientCodec, HeaderSource, Protocol, ReplyContext, Request, Response,
    StreamContext,
};

/// The Messages protocol as a client speaks it.
///
/// [`ClientCodec::parse_request`] checks the headers and body of
/// `POST /v1/messages`:
///
/// * `content-type` must be `application/json`;
/// * `anthropic-version` must be `2023-06-01`, and
///   `anthropic-dangerous-direct-browser-access`, when present, `true`;
/// * `anthropic-beta` is split on commas into `request.native.betas`;
/// * the body is strict: an unknown member, anywhere, is refused.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field path (`messages[2].content[0].source.media_type`) or
/// header. A check of `max_tokens` against the model's own maximum is left
/// to the caller, which knows the model.
///
/// Features only a Messages supplier can honour (`context_management`,
/// `output_config`, adaptive thinking, `thinking.display`, a `system` turn
/// inside `messages`, images in tool results, beta identifiers) are
/// accepted, and the first one found is recorded in
/// [`Request::native_only`] so the request is not converted to another
/// protocol. `metadata` and block `cache_control` are annotations and never
/// pin a request.
///
/// Replies are `message` objects and named SSE events. The message object
/// has no creation time and no cost: [`ReplyContext::created`] and
/// [`ReplyContext::cost`] (and a stream ending's cost) are ignored.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MessagesClient;

impl ClientCodec for MessagesClient {
    type Extra = ();
    type StreamEncoder = StreamEncoder;

    fn protocol(&self) -> Protocol {
        Protocol::Messages
    }

    /// Validate a `POST /v1/messages` call into a canonical request with
    /// `inbound: Some(Protocol::Messages)`. The body is checked before the
    /// `anthropic-*` headers.
    fn parse_request_with(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<(Request, ()), ApiError> {
        headers::require_json(headers)?;
        let mut request = request::request(body, extensions)?;
        headers::apply_headers(&mut request, &RequestHeaders::read(headers))?;
        Ok((request, ()))
    }

    /// The client's `message` object, under `reply.id` and `reply.model`.
    fn encode_response(&self, response: &Response, reply: &ReplyContext<'_>, (): &()) -> Vec<u8> {
        response::response(response, reply)
    }

    fn stream_encoder(&self, stream: StreamContext, (): ()) -> StreamEncoder {
        StreamEncoder::new(stream)
    }

    /// The Messages error envelope, whose `type` follows from the error's
    /// HTTP status.
    fn error_body(&self, error: &ApiError) -> Vec<u8> {
        envelope::error_body(error)
    }
}

impl MessagesClient {
    /// Validate a `POST /v1/messages/count_tokens` call: `content-type`,
    /// the `anthropic-*` headers (beta identifiers are accepted and
    /// ignored), then the body as [`MessagesClient::parse_count_tokens_body`]
    /// does.
    pub fn parse_count_tokens(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
    ) -> Result<Request, ApiError> {
        self.parse_count_tokens_with(headers, body, &mut ())
    }

    /// [`MessagesClient::parse_count_tokens`], with a gateway's own members
    /// taken first (as [`ClientCodec::parse_request_with`]).
    pub fn parse_count_tokens_with(
        &self,
        headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<Request, ApiError> {
        headers::require_json(headers)?;
        headers::check_headers(&RequestHeaders::read(headers))?;
        request::count_tokens(body, extensions)
    }

    /// Validate a count_tokens body alone, for a token-counting tool.
    ///
    /// Looser than a `POST /v1/messages` body where the count body is:
    /// `max_tokens` is optional, `system` may be an empty string, tools may
    /// be any objects. Stricter where counting is local: image, thinking
    /// and redacted_thinking blocks are refused. Besides `model`,
    /// `messages`, `system` and `tools` it takes `tool_choice`, `thinking`,
    /// `max_tokens`; anything else (a gateway's routing fields too) is a
    /// 400 naming the field.
    pub fn parse_count_tokens_body(&self, body: &[u8]) -> Result<Request, ApiError> {
        request::count_tokens(body, &mut ())
    }
}
