//! Scripts: what the mock supplier does with one request, whichever protocol
//! it came in on (Chat Completions, Messages or Responses).
//!
//! A [`Script`] is serde-tagged by `kind` (snake_case), so the same values can
//! be built in Rust or pushed as JSON through the control endpoints:
//!
//! ```json
//! {"kind": "reply", "text": "Hi!", "chunk_delay_ms": 5}
//! {"kind": "status", "status": 429, "retry_after": "1"}
//! {"kind": "truncated_stream", "after_chunks": 2}
//! {"kind": "stream_error", "after_chunks": 3, "message": "overloaded"}
//! {"kind": "redirect", "status": 307, "location": "http://127.0.0.1:9/elsewhere"}
//! ```

use serde::{Deserialize, Serialize};

/// The signature a Messages thinking block carries when the reply does not
/// script one ([`MockReply::thinking_signature`]).
pub const DEFAULT_THINKING_SIGNATURE: &str = "bW9jay1zdXBwbGllci10aGlua2luZy1zaWduYXR1cmU=";

/// The message of a [`Script::StreamError`] pushed as JSON without one.
pub const DEFAULT_STREAM_ERROR_MESSAGE: &str = "the mock supplier's stream failed";

fn default_stream_error_message() -> String {
    DEFAULT_STREAM_ERROR_MESSAGE.to_owned()
}

/// One scripted outcome for one request.
///
/// "Event" below means one complete SSE event of the request's protocol: a
/// `data:` chunk for Chat Completions, an `event:` + `data:` pair for
/// Messages and Responses.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Script {
    /// A successful completion, as JSON or as an SSE stream depending on the
    /// request's `stream` flag.
    Reply(MockReply),
    /// An error response with the given status.
    Status {
        /// HTTP status code. A code outside 200..=999 is answered with a 500
        /// that says so.
        status: u16,
        /// Response body; `None` sends the protocol's own error shape (the
        /// OpenAI envelope for Chat and Responses, `{"type": "error", ...}`
        /// for Messages).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<serde_json::Value>,
        /// Value of the `Retry-After` header, sent only when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
    },
    /// A redirect: `status` (a 3xx, e.g. 307, which asks the client to
    /// replay the same method and body) with a `Location: location` header
    /// and the protocol's error body; on every endpoint the script player
    /// serves (the three chat protocols and images). A client must not
    /// follow it: the location may be any host. A status outside
    /// 300..=399, or a location that is not a valid header value, is
    /// answered with a 500 that says so.
    Redirect {
        /// HTTP status code, 300 to 399.
        status: u16,
        /// The `Location` header, sent verbatim.
        location: String,
    },
    /// Read the request, then reset the TCP connection without any response.
    Reset,
    /// Send `200` and the response headers, then close the connection before
    /// any body byte.
    ResetAfterHeaders,
    /// Never answer; the connection stays open until the client gives up or
    /// the server shuts down.
    Stall,
    /// `200` with `content-type: application/json` and a body that is not JSON.
    InvalidJson,
    /// For a streaming request: `after_chunks` valid events (at most all of
    /// them but the terminal ones) of a fixed reply, then the connection is
    /// closed without the terminal event (`[DONE]`, `message_stop`,
    /// `response.completed`). For a non-streaming request: the first half of
    /// a JSON reply, then the connection is closed.
    TruncatedStream {
        /// How many complete events to send before closing.
        after_chunks: usize,
    },
    /// For a streaming request: `after_chunks` valid events, then a frame
    /// whose data is `{not json`, then the body ends (no terminal event). For
    /// Messages and Responses the bad frame carries a known event name
    /// (`content_block_delta`, `response.output_text.delta`) so that a client
    /// cannot skip it as an unknown event. For a non-streaming request: the
    /// same as [`Script::InvalidJson`].
    MalformedStream {
        /// How many complete events to send before the bad one.
        after_chunks: usize,
    },
    /// For a streaming request: `after_chunks` valid events (at most all but
    /// the terminal ones), then the protocol's in-stream error, then the body
    /// ends cleanly:
    ///
    /// - Chat Completions: `data: {"error": {"message", "type": "server_error", ...}}`;
    /// - Messages: `event: error` with `{"type": "error", "error": {"type": "api_error", "message"}}`;
    /// - Responses: `event: response.failed` with a `failed` response whose
    ///   `error` is `{"code": "server_error", "message"}`.
    ///
    /// For a non-streaming request: `500` with the protocol's error body
    /// carrying `message`.
    StreamError {
        /// How many complete events to send before the error.
        after_chunks: usize,
        /// The error message the supplier reports.
        #[serde(default = "default_stream_error_message")]
        message: String,
    },
    /// Image generation only (`/images/generations`): answer with the
    /// scripted image (a valid PNG, a broken one, or a URL). On the chat
    /// protocols it is a mock error (500). A plain [`Script::Reply`] on the
    /// images endpoint answers a valid PNG after its `delay_ms`.
    Image(MockImage),
}

/// What the images endpoint answers (`{"kind": "image", "answer": ...}`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockImage {
    pub answer: ImageAnswer,
    /// Wait this long before answering.
    pub delay_ms: u64,
    /// For [`ImageAnswer::Url`]: the URL to answer instead of the mock's own
    /// `{base}/images/content/valid.png`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// The image in a [`MockImage`] answer. Every byte form is sent as
/// `b64_json`; `url` answers `{"url": ...}` pointing at the mock's own
/// `GET {base}/images/content/{name}.png` (names `valid`, `truncated`,
/// `bad_crc`, `not_png`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ImageAnswer {
    /// A complete, valid 2x2 PNG.
    #[default]
    Png,
    /// The valid PNG cut before its `IEND` chunk.
    TruncatedPng,
    /// The valid PNG with one IDAT byte changed (its CRC no longer matches).
    BadCrc,
    /// Bytes that are not a PNG (a GIF header).
    NotPng,
    /// A URL to the valid PNG, to be downloaded.
    Url,
}

impl Script {
    /// An image answer with no delay.
    pub fn image(answer: ImageAnswer) -> Script {
        Script::Image(MockImage {
            answer,
            ..MockImage::default()
        })
    }

    /// A plain text reply with no delays.
    pub fn reply(text: impl Into<String>) -> Script {
        Script::Reply(MockReply::text(text))
    }

    /// An error response with the protocol's default error body.
    pub fn status(status: u16) -> Script {
        Script::Status {
            status,
            body: None,
            retry_after: None,
        }
    }

    /// A stream that fails after `after_chunks` events with the default
    /// message.
    pub fn stream_error(after_chunks: usize) -> Script {
        Script::StreamError {
            after_chunks,
            message: default_stream_error_message(),
        }
    }
}

impl From<MockReply> for Script {
    fn from(reply: MockReply) -> Script {
        Script::Reply(reply)
    }
}

/// The content and pacing of a successful reply. The same reply drives every
/// protocol; each field says how it is written in each.
///
/// Every field has a default, so `{"kind": "reply"}` is a valid (empty) reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockReply {
    /// Assistant text. In a stream it is sent word by word. Chat: `content`;
    /// Messages: a `text` block; Responses: a `message` item with one
    /// `output_text` part. An empty text is left out of Messages and
    /// Responses replies that carry reasoning or tool calls.
    pub text: String,
    /// Tool calls. Chat: `tool_calls`, streamed as OpenAI does (a head delta
    /// with index, id, type and name, then argument fragments). Messages:
    /// `tool_use` blocks (see [`MockToolCall::arguments`]). Responses:
    /// `function_call` items.
    pub tool_calls: Vec<MockToolCall>,
    /// Chat `finish_reason`, sent verbatim; defaults to `"tool_calls"` when
    /// there are tool calls, else `"stop"`.
    ///
    /// Messages `stop_reason`: `"stop"` → `end_turn`, `"length"` →
    /// `max_tokens`, `"tool_calls"` → `tool_use`, `"content_filter"` →
    /// `refusal`; any other value (`end_turn`, `stop_sequence`, `pause_turn`,
    /// ...) is sent verbatim.
    ///
    /// Responses: `"length"` or `"max_tokens"` → status `incomplete` with
    /// `incomplete_details.reason` `max_output_tokens` (stream ends with
    /// `response.incomplete`); `"content_filter"` or `"refusal"` → status
    /// `incomplete` with reason `content_filter`; anything else → `completed`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Messages only: the `stop_sequence` sent, verbatim (`null` when
    /// absent). Pair it with `finish_reason: "stop_sequence"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Defaults to an estimate: prompt = characters of the request's text
    /// (Chat `messages`; Messages `messages` and `system`; Responses `input`
    /// and `instructions`) / 4 + 1, completion = text characters / 4 + 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<MockUsage>,
    /// Reasoning, sent before the text. Chat: `reasoning_content` (DeepSeek
    /// style). Messages: a `thinking` block signed with
    /// [`MockReply::thinking_signature`]. Responses: a `reasoning` item whose
    /// summary is this text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Messages: the `signature` of the thinking block; defaults to
    /// [`DEFAULT_THINKING_SIGNATURE`]. Responses: the reasoning item's
    /// `encrypted_content`, sent when this is set or when the request's
    /// `include` asks for `reasoning.encrypted_content` (then defaulting the
    /// same way). Chat: unused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thinking_signature: Option<String>,
    /// Adds what a supplier may add and a router must drop (D-30, CF-08):
    /// an unknown top-level field `"provider_x": 1` on the reply object and
    /// the same field on every content block, output item or Chat message.
    /// Messages and Responses streams also get one unknown event after the
    /// first block or item opens (`provider_event`, `response.provider_event`);
    /// Chat streams only get the fields (on the first chunk and its delta),
    /// since Chat events carry no name.
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub provider_extras: bool,
    /// Wait before sending the response head (streaming or not).
    pub delay_ms: u64,
    /// Streaming only: wait after the head, before the first event.
    pub first_chunk_delay_ms: u64,
    /// Streaming only: wait between events.
    pub chunk_delay_ms: u64,
    /// Streaming only: after this many events (paced like the rest), the
    /// connection is closed without the terminal ones: a supplier cut
    /// mid-answer, at a known pace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cut_after_chunks: Option<usize>,
}

impl MockReply {
    /// A reply carrying only `text`.
    pub fn text(text: impl Into<String>) -> MockReply {
        MockReply {
            text: text.into(),
            ..MockReply::default()
        }
    }

    /// The finish reason actually sent (on Chat; the other protocols map it).
    pub fn effective_finish_reason(&self) -> &str {
        match &self.finish_reason {
            Some(reason) => reason,
            None if self.tool_calls.is_empty() => "stop",
            None => "tool_calls",
        }
    }

    /// The thinking signature actually sent.
    pub fn effective_thinking_signature(&self) -> &str {
        self.thinking_signature
            .as_deref()
            .unwrap_or(DEFAULT_THINKING_SIGNATURE)
    }
}

/// One tool call in a [`MockReply`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockToolCall {
    /// Tool call id; when empty, `call_mock_<index>` is sent.
    #[serde(default)]
    pub id: String,
    /// Function name.
    pub name: String,
    /// Function arguments as JSON text. Chat and Responses send it verbatim,
    /// as do Messages streams (`input_json_delta` fragments). A non-streamed
    /// Messages `tool_use` block carries it parsed as `input`; an empty text
    /// is `{}`, and text that is not JSON is sent as a JSON string, so a
    /// script can play a supplier whose tool input is broken.
    #[serde(default)]
    pub arguments: String,
}

impl MockToolCall {
    /// A tool call with the given id, name and arguments text.
    pub fn new(
        id: impl Into<String>,
        name: impl Into<String>,
        arguments: impl Into<String>,
    ) -> MockToolCall {
        MockToolCall {
            id: id.into(),
            name: name.into(),
            arguments: arguments.into(),
        }
    }
}

/// Token usage reported by a [`MockReply`], counted the OpenAI way: prompt
/// tokens include cached ones and completion tokens include reasoning ones.
///
/// | field                   | Chat                                           | Messages                                            | Responses                                      |
/// |-------------------------|------------------------------------------------|-----------------------------------------------------|------------------------------------------------|
/// | `prompt_tokens`         | `prompt_tokens`                                | `input_tokens` = prompt − cached − cache creation   | `input_tokens`                                 |
/// | `completion_tokens`     | `completion_tokens`                            | `output_tokens`                                     | `output_tokens`                                |
/// | `cached_tokens`         | `prompt_tokens_details.cached_tokens`          | `cache_read_input_tokens` (0 when absent)           | `input_tokens_details.cached_tokens` (0)       |
/// | `cache_creation_tokens` | not sent                                       | `cache_creation_input_tokens` (0 when absent)       | not sent                                       |
/// | `reasoning_tokens`      | `completion_tokens_details.reasoning_tokens`   | not sent (the Messages usage object has no such field) | `output_tokens_details.reasoning_tokens` (0) |
///
/// Chat sends the details objects only when their field is given; Chat and
/// Responses also send `total_tokens` = prompt + completion.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockUsage {
    /// Input tokens, cached and cache-writing ones included.
    pub prompt_tokens: u64,
    /// Output tokens, reasoning ones included.
    pub completion_tokens: u64,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// Input tokens written to the prompt cache (Messages only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_tokens: Option<u64>,
    /// Output tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}

impl MockUsage {
    /// Usage with only prompt and completion tokens; the details are absent.
    /// Start struct literals from it (`..MockUsage::tokens(10, 2)`) so they
    /// keep compiling when a field is added.
    pub fn tokens(prompt_tokens: u64, completion_tokens: u64) -> MockUsage {
        MockUsage {
            prompt_tokens,
            completion_tokens,
            ..MockUsage::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn scripts_round_trip_through_json() {
        let scripts = vec![
            Script::Reply(MockReply {
                text: "hi".into(),
                tool_calls: vec![MockToolCall::new("c1", "f", "{}")],
                usage: Some(MockUsage {
                    prompt_tokens: 1,
                    completion_tokens: 2,
                    cached_tokens: Some(0),
                    cache_creation_tokens: Some(1),
                    reasoning_tokens: None,
                }),
                chunk_delay_ms: 3,
                ..MockReply::default()
            }),
            Script::Reply(MockReply {
                reasoning_content: Some("hmm".into()),
                thinking_signature: Some("sig".into()),
                finish_reason: Some("stop_sequence".into()),
                stop_sequence: Some("END".into()),
                provider_extras: true,
                ..MockReply::default()
            }),
            Script::Status {
                status: 429,
                body: Some(json!({"x": 1})),
                retry_after: Some("2".into()),
            },
            Script::Redirect {
                status: 307,
                location: "http://127.0.0.1:9/x".into(),
            },
            Script::Reset,
            Script::ResetAfterHeaders,
            Script::Stall,
            Script::InvalidJson,
            Script::TruncatedStream { after_chunks: 2 },
            Script::MalformedStream { after_chunks: 1 },
            Script::StreamError {
                after_chunks: 4,
                message: "overloaded".into(),
            },
        ];
        for script in scripts {
            let value = serde_json::to_value(&script).unwrap();
            let back: Script = serde_json::from_value(value).unwrap();
            assert_eq!(back, script);
        }
    }

    #[test]
    fn reply_fields_default() {
        let script: Script = serde_json::from_value(json!({"kind": "reply"})).unwrap();
        assert_eq!(script, Script::Reply(MockReply::default()));
        let script: Script =
            serde_json::from_value(json!({"kind": "reset_after_headers"})).unwrap();
        assert_eq!(script, Script::ResetAfterHeaders);
    }

    #[test]
    fn new_fields_default_so_old_scripts_parse() {
        let script: Script = serde_json::from_value(json!({
            "kind": "reply",
            "text": "hi",
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "cached_tokens": 2},
        }))
        .unwrap();
        let Script::Reply(reply) = script else {
            panic!("not a reply: {script:?}");
        };
        assert!(!reply.provider_extras);
        assert_eq!(reply.stop_sequence, None);
        assert_eq!(
            reply.effective_thinking_signature(),
            DEFAULT_THINKING_SIGNATURE
        );
        assert_eq!(reply.usage.unwrap().cache_creation_tokens, None);
        let serialized = serde_json::to_value(MockReply::text("x")).unwrap();
        assert!(serialized.get("provider_extras").is_none());
    }

    #[test]
    fn stream_error_message_defaults() {
        let script: Script =
            serde_json::from_value(json!({"kind": "stream_error", "after_chunks": 2})).unwrap();
        assert_eq!(script, Script::stream_error(2));
    }

    #[test]
    fn misspelt_reply_field_is_rejected() {
        let result: Result<Script, _> =
            serde_json::from_value(json!({"kind": "reply", "chunk_delay": 5}));
        assert!(result.is_err());
    }

    #[test]
    fn finish_reason_defaults_follow_tool_calls() {
        assert_eq!(MockReply::text("x").effective_finish_reason(), "stop");
        let with_tool = MockReply {
            tool_calls: vec![MockToolCall::new("c", "f", "{}")],
            ..MockReply::default()
        };
        assert_eq!(with_tool.effective_finish_reason(), "tool_calls");
    }
}
