//! Scripts: what the mock supplier does with one chat request.
//!
//! A [`Script`] is serde-tagged by `kind` (snake_case), so the same values can
//! be built in Rust or pushed as JSON through the control endpoints:
//!
//! ```json
//! {"kind": "reply", "text": "Hi!", "chunk_delay_ms": 5}
//! {"kind": "status", "status": 429, "retry_after": "1"}
//! {"kind": "truncated_stream", "after_chunks": 2}
//! ```

use serde::{Deserialize, Serialize};

/// One scripted outcome for one chat request.
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
        /// Response body; `None` sends an OpenAI error envelope.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        body: Option<serde_json::Value>,
        /// Value of the `Retry-After` header, sent only when given.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        retry_after: Option<String>,
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
    /// For a streaming request: `after_chunks` valid SSE chunks (at most all
    /// of them) of a fixed reply, then the connection is closed without
    /// `[DONE]`. For a non-streaming request: the
    /// first half of a JSON completion, then the connection is closed.
    TruncatedStream {
        /// How many complete `data:` events to send before closing.
        after_chunks: usize,
    },
    /// For a streaming request: `after_chunks` valid SSE chunks, then a
    /// `data: {not json` event, then the body ends (no `[DONE]`). For a
    /// non-streaming request: the same as [`Script::InvalidJson`].
    MalformedStream {
        /// How many complete `data:` events to send before the bad one.
        after_chunks: usize,
    },
}

impl Script {
    /// A plain text reply with no delays.
    pub fn reply(text: impl Into<String>) -> Script {
        Script::Reply(MockReply::text(text))
    }

    /// An error response with the default OpenAI error envelope.
    pub fn status(status: u16) -> Script {
        Script::Status {
            status,
            body: None,
            retry_after: None,
        }
    }
}

impl From<MockReply> for Script {
    fn from(reply: MockReply) -> Script {
        Script::Reply(reply)
    }
}

/// The content and pacing of a successful reply.
///
/// Every field has a default, so `{"kind": "reply"}` is a valid (empty) reply.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockReply {
    /// Assistant text. In a stream it is sent word by word.
    pub text: String,
    /// Tool calls. In a stream each is sent as OpenAI does: a first delta with
    /// index, id, type and name, then argument fragments.
    pub tool_calls: Vec<MockToolCall>,
    /// Defaults to `"tool_calls"` when there are tool calls, else `"stop"`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub finish_reason: Option<String>,
    /// Defaults to an estimate: prompt = message characters / 4 + 1,
    /// completion = text characters / 4 + 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub usage: Option<MockUsage>,
    /// Sent as `reasoning_content` (DeepSeek style) before the text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Wait before sending the response head (streaming or not).
    pub delay_ms: u64,
    /// Streaming only: wait after the head, before the first event.
    pub first_chunk_delay_ms: u64,
    /// Streaming only: wait between events.
    pub chunk_delay_ms: u64,
}

impl MockReply {
    /// A reply carrying only `text`.
    pub fn text(text: impl Into<String>) -> MockReply {
        MockReply {
            text: text.into(),
            ..MockReply::default()
        }
    }

    /// The finish reason actually sent.
    pub fn effective_finish_reason(&self) -> &str {
        match &self.finish_reason {
            Some(reason) => reason,
            None if self.tool_calls.is_empty() => "stop",
            None => "tool_calls",
        }
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
    /// Function arguments as JSON text, sent verbatim.
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

/// Token usage reported by a [`MockReply`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MockUsage {
    /// `usage.prompt_tokens`.
    pub prompt_tokens: u64,
    /// `usage.completion_tokens`.
    pub completion_tokens: u64,
    /// `usage.prompt_tokens_details.cached_tokens`, sent only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
    /// `usage.completion_tokens_details.reasoning_tokens`, sent only when given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
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
                    reasoning_tokens: None,
                }),
                chunk_delay_ms: 3,
                ..MockReply::default()
            }),
            Script::Status {
                status: 429,
                body: Some(json!({"x": 1})),
                retry_after: Some("2".into()),
            },
            Script::Reset,
            Script::ResetAfterHeaders,
            Script::Stall,
            Script::InvalidJson,
            Script::TruncatedStream { after_chunks: 2 },
            Script::MalformedStream { after_chunks: 1 },
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
