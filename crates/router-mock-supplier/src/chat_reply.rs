//! Chat Completions bodies: the `chat.completion` JSON object, the
//! `chat.completion.chunk` SSE events of a stream, and the in-stream error.
//!
//! Pure functions of a [`MockReply`] and the parts of the request that matter
//! ([`ChatRequest`]); nothing here knows about sockets or timing.

use bytes::Bytes;
use serde_json::{Value, json};

use crate::openai_error;
use crate::reply_identity::ReplyIdentity;
use crate::script::{MockReply, MockUsage};
use crate::sse::{data_event, fragments, words};
use crate::usage_estimate::{content_chars_of, effective_usage};

/// The final SSE event of a successful stream.
pub(crate) const SSE_DONE: &[u8] = b"data: [DONE]\n\n";

/// The event [`crate::Script::MalformedStream`] sends after its valid chunks.
pub(crate) const SSE_MALFORMED: &[u8] = b"data: {not json\n\n";

/// The body [`crate::Script::InvalidJson`] sends.
pub(crate) const INVALID_JSON_BODY: &[u8] = b"{\"id\": \"chatcmpl-mock\", this is not json";

/// Prefix of completion ids.
const ID_PREFIX: &str = "chatcmpl-mock-";

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
        ChatRequest {
            model,
            stream,
            include_usage,
            prompt_chars: content_chars_of(body, "messages"),
        }
    }
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

fn tool_call_id(reply: &MockReply, index: usize) -> String {
    match reply.tool_calls.get(index) {
        Some(call) if !call.id.is_empty() => call.id.clone(),
        _ => format!("call_mock_{index}"),
    }
}

/// Adds the unknown provider field when the reply asks for extras.
fn add_extras(reply: &MockReply, object: &mut Value) {
    if reply.provider_extras {
        object["provider_x"] = json!(1);
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
    add_extras(reply, &mut message);
    let mut completion = json!({
        "id": identity.id(ID_PREFIX),
        "object": "chat.completion",
        "created": identity.created,
        "model": identity.model,
        "choices": [{
            "index": 0,
            "message": message,
            "logprobs": null,
            "finish_reason": reply.effective_finish_reason(),
        }],
        "usage": usage_json(effective_usage(reply, request.prompt_chars)),
    });
    add_extras(reply, &mut completion);
    completion
}

/// The `chat.completion.chunk` objects of a streamed reply, in order, without
/// the final `[DONE]`:
///
/// 1. role `assistant` with empty content (with `provider_extras`, this
///    chunk and its delta carry `provider_x`);
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
    let mut first = delta_chunk(
        identity,
        json!({ "role": "assistant", "content": "" }),
        None,
    );
    add_extras(reply, &mut first);
    add_extras(reply, &mut first["choices"][0]["delta"]);
    let mut chunks = vec![first];
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
            "id": identity.id(ID_PREFIX),
            "object": "chat.completion.chunk",
            "created": identity.created,
            "model": identity.model,
            "choices": [],
            "usage": usage_json(effective_usage(reply, request.prompt_chars)),
        }));
    }
    chunks
}

fn delta_chunk(identity: &ReplyIdentity, delta: Value, finish_reason: Option<&str>) -> Value {
    json!({
        "id": identity.id(ID_PREFIX),
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

/// The in-stream error OpenAI-compatible suppliers send: a `data:` event
/// whose payload is the error envelope.
pub(crate) fn stream_error_event(message: &str) -> Bytes {
    data_event(&openai_error::error_body(500, message))
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
    fn stream_chunks_follow_openai_order() {
        let reply = MockReply {
            text: "Hello there world".into(),
            tool_calls: vec![MockToolCall::new("", "lookup", "{\"q\": \"weather\"}")],
            ..MockReply::default()
        };
        let request = request(true, true);
        let identity = ReplyIdentity::new(&request.model);
        let chunks = stream_chunks(&reply, &request, &identity);
        assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
        assert!(chunks[0].get("provider_x").is_none());
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
                cached_tokens: Some(4),
                reasoning_tokens: Some(1),
                ..MockUsage::tokens(10, 2)
            }),
            ..MockReply::default()
        };
        let request = request(false, false);
        let body = completion_json(&reply, &request, &ReplyIdentity::new(&request.model));
        assert_eq!(body["choices"][0]["message"]["content"], Value::Null);
        assert_eq!(body["choices"][0]["message"]["tool_calls"][0]["id"], "c1");
        assert_eq!(body["usage"]["total_tokens"], 12);
        assert_eq!(body["usage"]["prompt_tokens_details"]["cached_tokens"], 4);
        assert_eq!(
            body["usage"]["completion_tokens_details"]["reasoning_tokens"],
            1
        );
        assert!(body.get("provider_x").is_none());
    }

    #[test]
    fn provider_extras_add_unknown_fields() {
        let reply = MockReply {
            provider_extras: true,
            ..MockReply::text("hi")
        };
        let request = request(true, false);
        let identity = ReplyIdentity::new(&request.model);
        let body = completion_json(&reply, &request, &identity);
        assert_eq!(body["provider_x"], 1);
        assert_eq!(body["choices"][0]["message"]["provider_x"], 1);
        let chunks = stream_chunks(&reply, &request, &identity);
        assert_eq!(chunks[0]["provider_x"], 1);
        assert_eq!(chunks[0]["choices"][0]["delta"]["provider_x"], 1);
        assert!(chunks[1].get("provider_x").is_none());
    }
}
