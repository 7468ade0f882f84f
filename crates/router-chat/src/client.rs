//! The client side of Chat Completions: what a caller sends a gateway, and
//! what the gateway answers ([`ChatClient`]).

mod request;
mod response;
mod stream;

pub use stream::StreamEncoder;

use router_canonical::codec::{
    BodyExtensions, ClientCodec, HeaderSource, ReplyContext, StreamContext,
};
use router_canonical::openai_error::openai_error_body;
use router_canonical::{ApiError, Field, Protocol, Request, Response};

/// The Chat Completions client codec: validates a caller's request into the
/// canonical model and renders canonical replies, streams and errors as
/// Chat Completions JSON and SSE.
///
/// [`Default`] follows the protocol: a stream ends with a usage chunk only
/// when the request asked for one (`stream_options.include_usage`). A
/// gateway that always reports usage sets `always_include_usage`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatClient {
    /// End every stream with the usage chunk, whether or not it was asked for.
    pub always_include_usage: bool,
}

impl ChatClient {
    /// The protocol's defaults.
    pub const fn new() -> Self {
        ChatClient {
            always_include_usage: false,
        }
    }

    /// This codec ending every stream with the usage chunk (`true`), or only
    /// when the request asked for it.
    pub const fn with_always_include_usage(mut self, always: bool) -> Self {
        self.always_include_usage = always;
        self
    }
}

/// What a Chat reply needs from the request besides its canonical form.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ChatExtra {
    /// The request's `stream_options.include_usage`.
    pub include_usage: bool,
}

impl ClientCodec for ChatClient {
    type Extra = ChatExtra;
    type StreamEncoder = StreamEncoder;

    fn protocol(&self) -> Protocol {
        Protocol::Chat
    }

    /// Every rejection is a 400 `invalid_parameter` whose `param` names the
    /// offending field path (`messages[2].content`). Unknown top-level
    /// fields are accepted; the vetted ones (`logit_bias`, `logprobs`,
    /// `top_logprobs`, `metadata`, `prediction`, `verbosity`) are kept in
    /// `Request::native` for Chat suppliers and everything else is dropped
    /// (a gateway's own members are taken first by `extensions`).
    /// `n` is carried as `Sampling::choices`, whatever its value: a
    /// canonical response holds one choice, so every supplier encoder
    /// refuses another number (`Request::refuse_several_choices`), and what
    /// to answer the client is the caller's decision.
    /// Chat reads no headers of its own.
    fn parse_request_with(
        &self,
        _headers: &dyn HeaderSource,
        body: &[u8],
        extensions: &mut dyn BodyExtensions,
    ) -> Result<(Request, ChatExtra), ApiError> {
        request::request(body, extensions)
    }

    /// The `chat.completion` JSON, with `usage.cost` when `reply.cost` is set.
    fn encode_response(
        &self,
        response: &Response,
        reply: &ReplyContext<'_>,
        _extra: &ChatExtra,
    ) -> Vec<u8> {
        response::response(response, reply)
    }

    fn stream_encoder(&self, stream: StreamContext, extra: ChatExtra) -> StreamEncoder {
        StreamEncoder::new(stream, self.always_include_usage || extra.include_usage)
    }

    /// The OpenAI error envelope, `{"error": {"message", "type", "param", "code"}}`.
    fn error_body(&self, error: &ApiError) -> Vec<u8> {
        openai_error_body(&error.named_in(field_name))
    }
}

/// Chat Completions' name for a canonical request field, for errors
/// raised where the protocol was not known (routing).
pub fn field_name(field: Field) -> &'static str {
    match field {
        Field::MaxOutputTokens => "max_tokens",
        Field::StopSequences => "stop",
        Field::ImageInput => "messages",
        Field::Tools => "tools",
        Field::ReasoningEffort | Field::Thinking => "reasoning_effort",
        Field::ResponseFormat => "response_format",
        Field::Stream => "stream",
        Field::Temperature => "temperature",
        Field::Penalties => "frequency_penalty",
        Field::Messages => "messages",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::ErrorCode;
    use serde_json::json;

    fn error_body(error: &ApiError) -> Vec<u8> {
        ChatClient::default().error_body(error)
    }

    #[test]
    fn envelope_has_all_four_keys() {
        let body = error_body(&ApiError::invalid("messages[0].role", "bad role"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"error": {
                "message": "bad role",
                "type": "invalid_request_error",
                "param": "messages[0].role",
                "code": "invalid_parameter"
            }})
        );
    }

    #[test]
    fn param_is_null_when_absent_and_type_follows_status() {
        let body = error_body(&ApiError::new(ErrorCode::UpstreamUnavailable, "try later"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["param"], serde_json::Value::Null);
        assert_eq!(value["error"]["type"], "api_error");
        assert_eq!(value["error"]["code"], "upstream_unavailable");
    }
}
