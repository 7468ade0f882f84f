//! The client side of the Responses protocol: [`ResponsesClient`] validates
//! a caller's request into the canonical model and writes canonical replies,
//! stream events and errors as Responses JSON and SSE.

mod echo;
mod envelope;
mod request;
mod response;
mod stream;

pub use echo::{RequestEcho, ResponsesExtra};
pub use stream::StreamEncoder;

use router_canonical::{
    ApiError, BodyExtensions, ClientCodec, Field, HeaderSource, Protocol, ReplyContext, Request,
    Response, StreamContext,
};

/// The Responses protocol as a gateway's clients speak it
/// (`POST /v1/responses`, stateless).
///
/// [`ClientCodec::parse_request`] refuses with a 400 `invalid_parameter`
/// whose `param` names the offending field path
/// (`input[1].content[0].text`). Unknown top-level fields are accepted; the
/// vetted ones (`metadata`, `truncation`, `include`, `top_logprobs`,
/// `prompt_cache_key`, `prompt_cache_retention`, and `text.verbosity`) are
/// kept in [`Request::native`] for a Responses supplier, everything else
/// (`service_tier`, ...) is dropped. Nothing is stored, so `store: true`,
/// `previous_response_id`, `conversation`, item references, stored
/// `prompt`s and `background: true` are refused.
///
/// Replies and streams carry `usage.cost` (USD) when the
/// [`ReplyContext`] or stream ending states a cost, and repeat what the
/// request set (`instructions`, `max_output_tokens`, `reasoning`, `tools`,
/// `tool_choice`, ...) as OpenAI's `response` object does: the
/// [`RequestEcho`] in the [`ResponsesExtra`] that `parse_request` returns.
///
/// `reasoning.summary` is kept in [`Reasoning::summary`](router_canonical::Reasoning::summary)
/// and sent to Responses suppliers only: Chat and Messages have no field
/// for it, and clients send `summary: "auto"` on every request, so it is
/// accepted for every route and a Chat route produces no summary.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResponsesClient;

impl ClientCodec for ResponsesClient {
    /// The request members the reply echoes, and the functions of its
    /// `namespace` tools, to name a call as the client declared it.
    type Extra = ResponsesExtra;
    type StreamEncoder = StreamEncoder;

    fn protocol(&self) -> Protocol {
        Protocol::Responses
    }

    /// Responses has no request headers of its own: `headers` is not read.
    fn parse_request_with(
        &self,
        _headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<(Request, ResponsesExtra), ApiError> {
        request::request(body, extensions)
    }

    fn encode_response(
        &self,
        response: &Response,
        reply: &ReplyContext<'_>,
        extra: &ResponsesExtra,
    ) -> Vec<u8> {
        response::response(response, reply, extra)
    }

    fn stream_encoder(&self, stream: StreamContext, extra: ResponsesExtra) -> StreamEncoder {
        StreamEncoder::new(stream).with_extra(extra)
    }

    /// The OpenAI error envelope, `{"error": {"message", "type", "param",
    /// "code"}}`, as for Chat clients. A stream that fails after it started
    /// ends with an `error` event and `response.failed` instead (see
    /// [`StreamEncoder`]).
    fn error_body(&self, error: &ApiError) -> Vec<u8> {
        envelope::error_body(&error.named_in(field_name))
    }
}

/// The Responses API's name for a canonical request field, for errors
/// raised where the protocol was not known (routing).
pub fn field_name(field: Field) -> &'static str {
    match field {
        Field::MaxOutputTokens => "max_output_tokens",
        Field::StopSequences => "stop",
        Field::ImageInput => "input",
        Field::Tools => "tools",
        Field::ReasoningEffort | Field::Thinking => "reasoning.effort",
        Field::ResponseFormat => "text.format",
        Field::Stream => "stream",
        Field::Temperature => "temperature",
        Field::Penalties => "frequency_penalty",
        Field::Messages => "input",
    }
}

impl ResponsesClient {
    /// Validate a `POST /v1/responses/input_tokens` body (the Responses
    /// API's token count): the fields of a create body, read as
    /// [`ClientCodec::parse_request`] reads them, with `input` optional and
    /// no images (a local estimate cannot count them).
    pub fn parse_input_tokens(&self, body: &[u8]) -> Result<Request, ApiError> {
        request::input_tokens(body, &mut ())
    }

    /// [`ResponsesClient::parse_input_tokens`], with a gateway's own members
    /// taken first (as [`ClientCodec::parse_request_with`]).
    pub fn parse_input_tokens_with(
        &self,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<Request, ApiError> {
        request::input_tokens(body, extensions)
    }
}
