//! OpenAI-compatible servers (vLLM, Ollama, llama.cpp, LM Studio) that
//! deviate from Chat in small, named ways: [`CompatChatSupplier`] is the
//! Chat dialect with [`ChatCompat`] options, not a dialect of its own.
//!
//! Two deviations need no option, as [`ChatSupplier`] already copes: a
//! server that sends usage only when asked is always asked
//! (`stream_options.include_usage`), and a missing `finish_reason` reads as
//! the end of the turn (or a tool call when the turn called tools).

use super::ChatSupplier;
use router_canonical::codec::{
    SupplierCodec, SupplierError, SupplierStreamDecoder, SupplierTarget,
};
use router_canonical::sse::Frame;
use router_canonical::{ApiError, ErrorCode, Protocol, Request, Response, StreamEvent};
use serde_json::Value;

/// The named deviations one route's server has.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ChatCompat {
    /// `developer` turns go as `system` (chat templates without the role).
    pub developer_as_system: bool,
    /// The output cap goes as `max_tokens`, not `max_completion_tokens`.
    pub max_tokens: bool,
    /// No `stream_options` (the server refuses it and reports usage unasked).
    pub no_stream_options: bool,
    /// A stream may close without `data: [DONE]`: the chunk with a
    /// `finish_reason` and usage (whichever comes last) ends it.
    pub stream_without_done: bool,
}

impl ChatCompat {
    /// No deviation: the server speaks Chat Completions as OpenAI does.
    pub const fn new() -> Self {
        ChatCompat {
            developer_as_system: false,
            max_tokens: false,
            no_stream_options: false,
            stream_without_done: false,
        }
    }

    /// With [`ChatCompat::developer_as_system`] set to `on`.
    pub const fn with_developer_as_system(mut self, on: bool) -> Self {
        self.developer_as_system = on;
        self
    }

    /// With [`ChatCompat::max_tokens`] set to `on`.
    pub const fn with_max_tokens(mut self, on: bool) -> Self {
        self.max_tokens = on;
        self
    }

    /// With [`ChatCompat::no_stream_options`] set to `on`.
    pub const fn with_no_stream_options(mut self, on: bool) -> Self {
        self.no_stream_options = on;
        self
    }

    /// With [`ChatCompat::stream_without_done`] set to `on`.
    pub const fn with_stream_without_done(mut self, on: bool) -> Self {
        self.stream_without_done = on;
        self
    }
}

/// [`ChatSupplier`] with a server's [`ChatCompat`] options.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct CompatChatSupplier {
    /// The Chat codec underneath.
    pub chat: ChatSupplier,
    /// The server's deviations.
    pub compat: ChatCompat,
}

impl CompatChatSupplier {
    /// `chat` with the deviations `compat`.
    pub const fn new(chat: ChatSupplier, compat: ChatCompat) -> Self {
        CompatChatSupplier { chat, compat }
    }
}

impl SupplierCodec for CompatChatSupplier {
    fn protocol(&self) -> Protocol {
        Protocol::Chat
    }

    fn path(&self) -> &'static str {
        self.chat.path()
    }

    /// The Chat body with the options applied.
    fn encode_request(
        &self,
        request: &Request,
        target: &SupplierTarget<'_>,
    ) -> Result<Vec<u8>, ApiError> {
        let body = self.chat.encode_request(request, target)?;
        if self.compat == ChatCompat::default() {
            return Ok(body);
        }
        let internal = |err: serde_json::Error| {
            ApiError::new(
                ErrorCode::InternalError,
                format!("could not rewrite the Chat request: {err}"),
            )
        };
        let mut value: Value = serde_json::from_slice(&body).map_err(internal)?;
        if let Some(object) = value.as_object_mut() {
            if self.compat.developer_as_system
                && let Some(Value::Array(messages)) = object.get_mut("messages")
            {
                for message in messages {
                    if message.get("role").and_then(Value::as_str) == Some("developer") {
                        message["role"] = Value::String("system".into());
                    }
                }
            }
            if self.compat.max_tokens
                && let Some(cap) = object.remove("max_completion_tokens")
            {
                object.insert("max_tokens".into(), cap);
            }
            if self.compat.no_stream_options {
                object.remove("stream_options");
            }
        }
        serde_json::to_vec(&value).map_err(internal)
    }

    fn headers(&self, request: &Request, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        self.chat.headers(request, api_key)
    }

    fn decode_response(&self, body: &[u8]) -> Result<Response, SupplierError> {
        self.chat.decode_response(body)
    }

    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        self.chat.decode_error(status, headers, body)
    }

    fn stream_decoder(&self) -> Box<dyn SupplierStreamDecoder> {
        let inner = self.chat.stream_decoder();
        if !self.compat.stream_without_done {
            return inner;
        }
        Box::new(WithoutDone {
            inner,
            finish_seen: false,
            usage_seen: false,
        })
    }
}

/// Ends a stream at the chunk that completes both a `finish_reason` and
/// the usage, as if `data: [DONE]` followed it.
struct WithoutDone {
    inner: Box<dyn SupplierStreamDecoder>,
    finish_seen: bool,
    usage_seen: bool,
}

impl SupplierStreamDecoder for WithoutDone {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        let mut events = self.inner.decode(frame)?;
        if self.inner.is_finished() {
            return Ok(events);
        }
        if let Ok(chunk) = serde_json::from_str::<Value>(frame.data.trim()) {
            let finish = chunk
                .get("choices")
                .and_then(Value::as_array)
                .is_some_and(|choices| {
                    choices
                        .iter()
                        .any(|c| c.get("finish_reason").is_some_and(|f| !f.is_null()))
                });
            self.finish_seen |= finish;
            self.usage_seen |= chunk.get("usage").is_some_and(|u| !u.is_null());
        }
        if self.finish_seen && self.usage_seen {
            events.extend(self.inner.decode(&Frame {
                event: None,
                data: "[DONE]".into(),
            })?);
        }
        Ok(events)
    }

    fn is_finished(&self) -> bool {
        self.inner.is_finished()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{Message, Role};

    fn request(stream: bool) -> Request {
        Request {
            model: "m".into(),
            messages: vec![
                Message::text(Role::Developer, "be brief"),
                Message::text(Role::User, "hi"),
            ],
            stream,
            sampling: router_canonical::request::Sampling {
                max_output_tokens: Some(64),
                ..Default::default()
            },
            ..Request::default()
        }
    }

    const TARGET: SupplierTarget<'static> = SupplierTarget::new("llama3.1:8b");

    fn body(codec: &CompatChatSupplier, stream: bool) -> Value {
        serde_json::from_slice(
            &codec
                .encode_request(&request(stream), &TARGET)
                .unwrap_or_default(),
        )
        .unwrap_or_default()
    }

    #[test]
    fn options_rewrite_the_body_and_none_leaves_it_alone() {
        let plain = CompatChatSupplier::default();
        let body_plain = body(&plain, true);
        assert_eq!(body_plain["messages"][0]["role"], "developer");
        assert_eq!(body_plain["max_completion_tokens"], 64);
        assert_eq!(body_plain["stream_options"]["include_usage"], true);
        let local = CompatChatSupplier {
            compat: ChatCompat {
                developer_as_system: true,
                max_tokens: true,
                no_stream_options: true,
                stream_without_done: false,
            },
            ..CompatChatSupplier::default()
        };
        let rewritten = body(&local, true);
        assert_eq!(rewritten["messages"][0]["role"], "system");
        assert_eq!(rewritten["max_tokens"], 64);
        assert!(rewritten.get("max_completion_tokens").is_none());
        assert!(rewritten.get("stream_options").is_none());
    }

    #[test]
    fn a_stream_without_done_ends_at_its_finish_and_usage() {
        let codec = CompatChatSupplier {
            chat: ChatSupplier {
                require_usage: true,
            },
            compat: ChatCompat {
                stream_without_done: true,
                ..ChatCompat::default()
            },
        };
        let mut decoder = codec.stream_decoder();
        let frame = |data: &str| Frame {
            event: None,
            data: data.into(),
        };
        let chunks = [
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1:8b","choices":[{"index":0,"delta":{"role":"assistant","content":"Hi"},"finish_reason":null}]}"#,
            r#"{"id":"c1","object":"chat.completion.chunk","created":1,"model":"llama3.1:8b","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":5,"completion_tokens":1,"total_tokens":6}}"#,
        ];
        let mut events = Vec::new();
        for chunk in chunks {
            events.extend(decoder.decode(&frame(chunk)).unwrap_or_default());
        }
        assert!(decoder.is_finished());
        assert!(matches!(events.last(), Some(StreamEvent::Finish { .. })));

        let mut strict = CompatChatSupplier::default().stream_decoder();
        for chunk in chunks {
            let _ = strict.decode(&frame(chunk));
        }
        assert!(
            !strict.is_finished(),
            "without the option [DONE] ends a stream"
        );
    }
}
