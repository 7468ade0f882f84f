//! Chat Completions bodies: the `chat.completion` JSON object, the
//! `chat.completion.chunk` SSE events of a stream, and the error envelope.
//!
//! Pure functions of a [`MockReply`] and the parts of the request that matter
//! ([`ChatRequest`]); nothing here knows about sockets or timing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use serde_json::{Value, json};

use crate::script::{MockReply, MockUsage};

/// The final SSE event of a successful stream.
pub(crate) const SSE_DONE: &[u8] = b"data: [DONE]\n\n";

/// The event [`crate::Script::MalformedStream`] sends after its valid chunks.
pub(crate) const SSE_MALFORMED: &[u8] = b"data: {not json\n\n";

/// The body [`crate::Script::InvalidJson`] sends.
pub(crate) const INVALID_JSON_BODY: &[u8] = b"{\"id\": \"chatcmpl-mock\", this is not json";

/// Text of the reply a stream-breaking script cuts short.
pub(crate) const INTERRUPTED_TEXT: &str =
    "This reply from the mock supplier is interrupted before it completes.";

/// Argument fragments in a streamed tool call are at most this many characters.
const ARGUMENT_FRAGMENT_CHARS: usize = 8;

/// What the mock needs to know about an incoming chat request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ChatRequest {
    /// `model`, or empty when absent.
    pub(crate) model: String,
    /// `stream: true`.
    pub(crate) stream: bool,
    /// `stream_options.include_usage: true`.
    pub(crate) include_usage: bool,
    /// Characters of text in all `messages[].content`.
    pub(crate) prompt_chars: usize,
}

impl ChatRequest {
    /// Reads the fields the mock cares about; anything missing or mistyped
    /// takes its default.
    pub(crate) fn from_body(body: &Value) -> ChatRequest {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        let include_usage = body
            .pointer("/stream_options/include_usage")
            .and_then(Value::as_bool)
            == Some(true);
        let prompt_chars = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|messages| {
                messages
                    .iter()
                    .filter_map(|message| message.get("content"))
                    .map(content_chars)
                    .sum()
            })
            .unwrap_or(0);
        ChatRequest {
            model,
            stream,
            include_usage,
            prompt_chars,
        }
    }
}

/// Characters in a message `content`: a string, or an array of parts whose
/// `text` fields count.
fn content_chars(content: &Value) -> usize {
    match content {
        Value::String(text) => text.chars().count(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|part| part.get("text").and_then(Value::as_str))
            .map(|text| text.chars().count())
            .sum(),
        _ => 0,
    }
}

/// The usage a reply reports: the scripted one, or the estimate.
pub(crate) fn effective_usage(reply: &MockReply, request: &ChatRequest) -> MockUsage {
    reply.usage.unwrap_or(MockUsage {
        prompt_tokens: estimate_tokens(request.prompt_chars),
        completion_tokens: estimate_tokens(reply.text.chars().count()),
        cached_tokens: None,
        reasoning_tokens: None,
    })
}

fn estimate_tokens(chars: usize) -> u64 {
    u64::try_from(chars / 4)
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}

/// The OpenAI `usage` object.
fn usage_json(usage: MockUsage) -> Value {
    let mut object = json!({
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.prompt_tokens.saturating_add(usage.completion_tokens),
    });
    if let Some(cached) = usage.cached_tokens {
        object["prompt_tokens_details"] = json!({ "cached_tokens": cached });
    }
    if let Some(reasoning) = usage.reasoning_tokens {
        object["completion_tokens_details"] = json!({ "reasoning_tokens": reasoning });
    }
    object
}

/// Identity shared by every object of one reply: id, creation time, model.
#[derive(Debug, Clone)]
pub(crate) struct ReplyIdentity {
    id: String,
    created: u64,
    model: String,
}

impl ReplyIdentity {
    /// A fresh `chatcmpl-mock-N` id, stamped now, echoing the request's model.
    pub(crate) fn new(request: &ChatRequest) -> ReplyIdentity {
        static NEXT_ID: AtomicU64 = AtomicU64::new(1);
        let created = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|elapsed| elapsed.as_secs())
            .unwrap_or(0);
        ReplyIdentity {
            id: format!("chatcmpl-mock-{}", NEXT_ID.fetch_add(1, Ordering::Relaxed)),
            created,
            model: request.model.clone(),
        }
    }
}

fn tool_call_id(reply: &MockReply, index: usize) -> String {
    match reply.tool_calls.get(index) {
        Some(call) if !call.id.is_empty() => call.id.clone(),
        _ => format!("call_mock_{index}"),
    }
}

/// The non-streaming `chat.completion` object.
pub(crate) fn completion_json(
    reply: &MockReply,
    request: &ChatRequest,
    identity: &ReplyIdentity,
) -> Value {
    let content = if reply.text.is_empty() && !reply.tool_calls.is_empty() {
        Value::Null
    } else {
        Value::String(reply.text.clone())
    };
    let mut message = json!({ "role": "assistant", "content": content });
    if let Some(reasoning) = &reply.reasoning_content {
        message["reasoning_content"] = Value::String(reasoning.clone());
    }
    if !reply.tool_calls.is_empty() {
        let calls: Vec<Value> = reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| {
                json!({
                    "id": tool_call_id(reply, index),
                    "type": "function",
                    "function": { "name": call.name, "arguments": call.arguments },
                })
            })
            .collect();
        message["tool_calls"] = Value::Array(calls);
    }
    json!({
        "id": identity.id,
        "object": "chat.completion",
        "created": identity.created,
        "model": identity.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": reply.effective_finish_reason(),
        }],
        "usage": usage_json(effective_usage(reply, request)),
    })
}

/// The `chat.completion.chunk` objects of a streamed reply, in order, without
/// the final `[DONE]`:
///
/// 1. role `assistant` with empty content;
/// 2. `reasoning_content` word by word, then `content` word by word;
/// 3. per tool call, a head delta (index, id, type, name, empty arguments)
///    then argument fragments;
/// 4. an empty delta with `finish_reason`;
/// 5. when `include_usage`, `choices: []` with `usage`.
pub(crate) fn stream_chunks(
    reply: &MockReply,
    request: &ChatRequest,
    identity: &ReplyIdentity,
) -> Vec<Value> {
    let mut chunks = vec![delta_chunk(
        identity,
        json!({ "role": "assistant", "content": "" }),
        None,
    )];
    if let Some(reasoning) = &reply.reasoning_content {
        chunks.extend(
            words(reasoning)
                .map(|word| delta_chunk(identity, json!({ "reasoning_content": word }), None)),
        );
    }
    chunks.extend(
        words(&reply.text).map(|word| delta_chunk(identity, json!({ "content": word }), None)),
    );
    for (index, call) in reply.tool_calls.iter().enumerate() {
        let head = json!({ "tool_calls": [{
            "index": index,
            "id": tool_call_id(reply, index),
            "type": "function",
            "function": { "name": call.name, "arguments": "" },
        }]});
        chunks.push(delta_chunk(identity, head, None));
        for fragment in fragments(&call.arguments, ARGUMENT_FRAGMENT_CHARS) {
            let delta = json!({ "tool_calls": [{
                "index": index,
                "function": { "arguments": fragment },
            }]});
            chunks.push(delta_chunk(identity, delta, None));
        }
    }
    chunks.push(delta_chunk(
        identity,
        json!({}),
        Some(reply.effective_finish_reason()),
    ));
    if request.include_usage {
        chunks.push(json!({
            "id": identity.id,
            "object": "chat.completion.chunk",
            "created": identity.created,
            "model": identity.model,
            "choices": [],
            "usage": usage_json(effective_usage(reply, request)),
        }));
    }
    chunks
}

fn delta_chunk(identity: &ReplyIdentity, delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": identity.id,
        "object": "chat.completion.chunk",
        "created": identity.created,
        "model": identity.model,
        "choices": [{
            "index": 0,
            "delta": delta,
            "logprobs": null,
            "finish_reason": finish_reason,
        }],
    })
}

/// Splits text into pieces that each end after a whitespace character, so
/// that their concatenation is the text exactly.
fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split_inclusive(char::is_whitespace)
}

/// Splits text into pieces of at most `max_chars` characters.
fn fragments(text: &str, max_chars: usize) -> Vec<&str> {
    let mut pieces = Vec::new();
    let mut start = 0;
    for (count, (offset, _)) in text.char_indices().enumerate() {
        if count > 0 && count % max_chars == 0 {
            pieces.push(&text[start..offset]);
            start = offset;
        }
    }
    if start < text.len() {
        pieces.push(&text[start..]);
    }
    pieces
}

/// One SSE `data:` event carrying a JSON value.
pub(crate) fn sse_event(value: &Value) -> Bytes {
    Bytes::from(format!("data: {value}\n\n"))
}

/// The OpenAI error envelope for a scripted status.
pub(crate) fn error_envelope(status: u16) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "api_error",
    };
    json!({
        "error": {
            "message": format!("mock supplier scripted status {status}"),
            "type": kind,
            "param": null,
            "code": null,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::script::MockToolCall;

    fn request(stream: bool, include_usage: bool) -> ChatRequest {
        ChatRequest::from_body(&json!({
            "model": "m-1",
            "stream": stream,
            "stream_options": { "include_usage": include_usage },
            "messages": [
                { "role": "user", "content": "12345678" },
                { "role": "user", "content": [{ "type": "text", "text": "abcd" }] },
            ],
        }))
    }

    #[test]
    fn request_fields_are_read() {
        let parsed = request(true, true);
        assert_eq!(parsed.model, "m-1");
        assert!(parsed.stream);
        assert!(parsed.include_usage);
        assert_eq!(parsed.prompt_chars, 12);
        assert_eq!(ChatRequest::from_body(&Value::Null), ChatRequest::default());
    }

    #[test]
    fn usage_is_estimated_when_not_scripted() {
        let usage = effective_usage(&MockReply::text("abcdefgh"), &request(false, false));
        assert_eq!(usage.prompt_tokens, 4);
        assert_eq!(usage.completion_tokens, 3);
    }

    #[test]
    fn fragments_rejoin_exactly() {
        let text = "{\"city\": \"Zürich\", \"days\": 3}";
        let pieces = fragments(text, 8);
        assert!(pieces.len() > 2);
        assert!(pieces.iter().all(|piece| piece.chars().count() <= 8));
        assert_eq!(pieces.concat(), text);
        assert!(fragments("", 8).is_empty());
    }

    #[test]
    fn stream_chunks_follow_openai_order() {
        let reply = MockReply {
            text: "Hello there world".into(),
            tool_calls: vec![MockToolCall::new("", "lookup", "{\"q\": \"weather\"}")],
            ..MockReply::default()
        };
        let request = request(true, true);
        let identity = ReplyIdentity::new(&request);
        let chunks = stream_chunks(&reply, &request, &identity);
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        let text: String = chunks
            .iter()
            .filter_map(|chunk| chunk["choices"][0]["delta"]["content"].as_str())
            .collect();
        assert_eq!(text, "Hello there world");
        let head = chunks
            .iter()
            .find(|chunk| chunk["choices"][0]["delta"]["tool_calls"][0]["id"].is_string())
            .unwrap();
        assert_eq!(
            head["choices"][0]["delta"]["tool_calls"][0]["id"],
            "call_mock_0"
        );
        let last = chunks.last().unwrap();
        assert_eq!(last["choices"], json!([]));
        assert_eq!(last["usage"]["completion_tokens"], 5);
        let finish = &chunks[chunks.len() - 2];
        assert_eq!(finish["choices"][0]["finish_reason"], "tool_calls");
    }

    #[test]
    fn completion_has_null_content_with_only_tool_calls() {
        let reply = MockReply {
            tool_calls: vec![MockToolCall::new("c1", "f", "{}")],
            usage: Some(MockUsage {
                prompt_tokens: 10,
                completion_tokens: 2,
                cached_tokens: Some(4),
                reasoning_tokens: Some(1),
            }),
            ..MockReply::default()
        };
        let request = request(false, false);
        let body = completion_json(&reply, &request, &ReplyIdentity::new(&request));
        assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "c1");
        assert_eq!(body["usage"]["total_tokens"], 12);
        assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
        assert_eq!(
            body["usage"]["completion_tokens_details"]["reasoning_tokens"],
            1
        );
    }
}
