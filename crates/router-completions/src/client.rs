//! The client side of legacy Completions: validate a `POST /v1/completions`
//! body into a canonical request, and write canonical replies and streams
//! back as `text_completion` objects.

pub mod envelope;
mod request;
mod response;
pub mod stream;

pub use envelope::error_body;
pub use stream::{CompletionStreamContext, StreamEncoder};

use router_canonical::codec::{self, BodyExtensions, ClientCodec, HeaderSource};
use router_canonical::{ApiError, Field, NanoUsd, Protocol, Request, Response};

/// The output limit a request without `max_tokens` gets.
pub const DEFAULT_MAX_TOKENS: u32 = request::DEFAULT_MAX_TOKENS;

/// The legacy Completions client codec. `Extra` is the prompt to echo in
/// front of the generated text when the client sent `echo: true`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CompletionsClient;

impl ClientCodec for CompletionsClient {
    type Extra = Option<String>;
    type StreamEncoder = StreamEncoder;

    fn protocol(&self) -> Protocol {
        Protocol::Completions
    }

    fn parse_request_with(
        &self,
        _headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<(Request, Option<String>), ApiError> {
        let CompletionRequest { request, echo } = parse_request_with(body, extensions)?;
        Ok((request, echo))
    }

    fn encode_response(
        &self,
        response: &Response,
        reply: &codec::ReplyContext<'_>,
        echo: &Option<String>,
    ) -> Vec<u8> {
        let ctx = ResponseContext {
            id: reply.id,
            model: reply.model,
            created: reply.created,
            cost: reply.cost,
            echo: echo.as_deref(),
        };
        encode_response(response, &ctx)
    }

    fn stream_encoder(&self, stream: codec::StreamContext, echo: Option<String>) -> StreamEncoder {
        StreamEncoder::new(CompletionStreamContext {
            id: stream.id,
            model: stream.model,
            created: stream.created,
            echo,
        })
    }

    fn error_body(&self, error: &ApiError) -> Vec<u8> {
        error_body(&error.named_in(field_name))
    }
}

/// A parsed Completions request: the canonical request, and the prompt to
/// echo when the client asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// One user message holding the prompt; `inbound` is
    /// [`Protocol::Completions`].
    pub request: Request,
    /// `Some(prompt)` when the client sent `echo: true`.
    pub echo: Option<String>,
}

/// Validate a client's Completions body into a canonical request.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field (`prompt`, `logprobs`, `stop[1]`). `n` and `best_of` are
/// carried as `Sampling::choices` and `Sampling::best_of`, whatever their
/// values (supplier encoders refuse other than 1; what to answer is the
/// caller's decision). Every unknown top-level
/// field is accepted and dropped (a gateway's routing fields too: see
/// [`parse_request_with`]).
pub fn parse_request(body: &[u8]) -> Result<CompletionRequest, ApiError> {
    request::request(body, &mut ())
}

/// [`parse_request`], with a gateway's own members taken out of the
/// unknown ones first (as [`ClientCodec::parse_request_with`]).
pub fn parse_request_with(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<CompletionRequest, ApiError> {
    request::request(body, extensions)
}

/// What a reply states that the canonical response does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The reply's completion id.
    pub id: &'a str,
    /// The model name to show the client.
    pub model: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// The charge, reported as `usage.cost` in USD; `None` reports none.
    pub cost: Option<NanoUsd>,
    /// The prompt to put in front of the text ([`CompletionRequest::echo`]).
    pub echo: Option<&'a str>,
}

/// The client's `text_completion` JSON: the text blocks of `response`
/// concatenated (after the echoed prompt, if any), a `finish_reason` of
/// `stop`, `length` or `content_filter`, and `usage`.
pub fn encode_response(response: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    response::response(response, ctx)
}

/// Legacy Completions' name for a canonical request field, for errors
/// raised where the protocol was not known (routing).
pub fn field_name(field: Field) -> &'static str {
    match field {
        Field::MaxOutputTokens => "max_tokens",
        Field::StopSequences => "stop",
        Field::ImageInput => "prompt",
        Field::Tools => "tools",
        Field::ReasoningEffort | Field::Thinking => "reasoning_effort",
        Field::ResponseFormat => "response_format",
        Field::Stream => "stream",
        Field::Temperature => "temperature",
        Field::Penalties => "frequency_penalty",
        Field::Messages => "prompt",
    }
}
