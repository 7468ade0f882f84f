//! Anthropic Messages bodies: the `message` object, the named SSE events of
//! a stream, and the `{"type": "error", ...}` error shape.
//!
//! Written from the public Messages reference, independently of the
//! router's own wire crates, so that the mock can catch their mistakes.
//! Pure functions of a [`MockReply`] and the parts of the request that
//! matter ([`MessagesRequest`]); nothing here knows about sockets or timing.

use serde_json::{Value, json};

use crate::reply_identity::ReplyIdentity;
use crate::script::{MockReply, MockToolCall, MockUsage};
use crate::sse::{fragments, words};
use crate::usage_estimate::{content_chars_of, effective_usage, text_chars};

/// The body [`crate::Script::InvalidJson`] sends.
pub(crate) const INVALID_JSON_BODY: &[u8] = b"{\"id\": \"msg_mock\", this is not json";

/// The frame [`crate::Script::MalformedStream`] sends: a known event name,
/// so a client cannot drop it as an unknown event.
pub(crate) const SSE_MALFORMED: &[u8] = b"event: content_block_delta\ndata: {not json\n\n";

/// Prefix of message ids.
const ID_PREFIX: &str = "msg_mock_";

/// `partial_json` fragments of a streamed tool input are at most this many
/// characters.
const INPUT_FRAGMENT_CHARS: usize = 8;

/// What the mock needs to know about an incoming Messages request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct MessagesRequest {
    /// `model`, or empty when absent.
    pub(crate) model: String,
    /// `stream: true`.
    pub(crate) stream: bool,
    /// Characters of text in `system` and all `messages[].content`.
    pub(crate) prompt_chars: usize,
}

impl MessagesRequest {
    /// Reads the fields the mock cares about; anything missing or mistyped
    /// takes its default.
    pub(crate) fn from_body(body: &Value) -> MessagesRequest {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        let system_chars = body.get("system").map(text_chars).unwrap_or(0);
        MessagesRequest {
            model,
            stream,
            prompt_chars: system_chars + content_chars_of(body, "messages"),
        }
    }
}

/// The `stop_reason` sent for the reply's finish reason: the OpenAI names
/// are mapped, anything else (Messages-native or not) is sent verbatim.
pub(crate) fn stop_reason(reply: &MockReply) -> &str {
    match reply.effective_finish_reason() {
        "stop" => "end_turn",
        "length" => "max_tokens",
        "tool_calls" => "tool_use",
        "content_filter" => "refusal",
        other => other,
    }
}

/// The Messages `usage` object. `input_tokens` excludes cache reads and
/// cache writes, which have fields of their own.
fn usage_json(usage: MockUsage, output_tokens: u64) -> Value {
    let cache_read = usage.cached_tokens.unwrap_or(0);
    let cache_creation = usage.cache_creation_tokens.unwrap_or(0);
    json!({
        "input_tokens": usage
            .prompt_tokens
            .saturating_sub(cache_read)
            .saturating_sub(cache_creation),
        "cache_creation_input_tokens": cache_creation,
        "cache_read_input_tokens": cache_read,
        "output_tokens": output_tokens,
    })
}

fn tool_use_id(call: &MockToolCall, index: usize) -> String {
    if call.id.is_empty() {
        format!("toolu_mock_{index}")
    } else {
        call.id.clone()
    }
}

/// A tool call's `input`: its arguments parsed; `{}` when empty; the raw
/// text as a JSON string when it is not JSON.
fn tool_input(arguments: &str) -> Value {
    if arguments.trim().is_empty() {
        return json!({});
    }
    serde_json::from_str(arguments).unwrap_or_else(|_| Value::String(arguments.to_owned()))
}

/// Whether the reply has a text block: when it has text, or when it would
/// otherwise have no content at all.
fn has_text_block(reply: &MockReply) -> bool {
    !reply.text.is_empty() || (reply.tool_calls.is_empty() && reply.reasoning_content.is_none())
}

/// Adds the unknown provider field when the reply asks for extras.
fn add_extras(reply: &MockReply, object: &mut Value) {
    if reply.provider_extras {
        object["provider_x"] = json!(1);
    }
}

/// The complete content blocks: thinking, text, then tool uses.
fn content_blocks(reply: &MockReply) -> Vec<Value> {
    let mut blocks = Vec::new();
    if let Some(thinking) = &reply.reasoning_content {
        blocks.push(json!({
            "type": "thinking",
            "thinking": thinking,
            "signature": reply.effective_thinking_signature(),
        }));
    }
    if has_text_block(reply) {
        blocks.push(json!({ "type": "text", "text": reply.text }));
    }
    for (index, call) in reply.tool_calls.iter().enumerate() {
        blocks.push(json!({
            "type": "tool_use",
            "id": tool_use_id(call, index),
            "name": call.name,
            "input": tool_input(&call.arguments),
        }));
    }
    for block in &mut blocks {
        add_extras(reply, block);
    }
    blocks
}

/// The `message` object, with the given content, stop reason and usage.
fn message_object(
    reply: &MockReply,
    identity: &ReplyIdentity,
    content: Vec<Value>,
    stop_reason: Option<&str>,
    usage: Value,
) -> Value {
    let mut message = json!({
        "id": identity.id(ID_PREFIX),
        "type": "message",
        "role": "assistant",
        "model": identity.model,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": if stop_reason.is_some() { reply.stop_sequence.as_deref() } else { None },
        "usage": usage,
    });
    add_extras(reply, &mut message);
    message
}

/// The non-streaming `message` object.
pub(crate) fn message_json(
    reply: &MockReply,
    request: &MessagesRequest,
    identity: &ReplyIdentity,
) -> Value {
    let usage = effective_usage(reply, request.prompt_chars);
    message_object(
        reply,
        identity,
        content_blocks(reply),
        Some(stop_reason(reply)),
        usage_json(usage, usage.completion_tokens),
    )
}

/// The events of a streamed reply, each a JSON payload whose `type` is also
/// its SSE event name, in order, without the final `message_stop`:
///
/// 1. `message_start` with empty content, no stop reason, and usage whose
///    `output_tokens` is at most 1 (as the real API reports it there);
/// 2. `ping`;
/// 3. per block (thinking, text, tool uses): `content_block_start` with an
///    empty block, deltas (`thinking_delta` word by word then one
///    `signature_delta`; `text_delta` word by word; `input_json_delta`
///    fragments of the arguments text, one empty fragment when there are
///    none), `content_block_stop`;
/// 4. `message_delta` with `stop_reason`, `stop_sequence` and the final,
///    cumulative usage.
///
/// With `provider_extras`, a `provider_event` follows the first
/// `content_block_start`, and the message and every started block carry
/// `provider_x`.
pub(crate) fn stream_events(
    reply: &MockReply,
    request: &MessagesRequest,
    identity: &ReplyIdentity,
) -> Vec<Value> {
    let usage = effective_usage(reply, request.prompt_chars);
    let start_usage = usage_json(usage, usage.completion_tokens.min(1));
    let mut events = vec![
        json!({
            "type": "message_start",
            "message": message_object(reply, identity, Vec::new(), None, start_usage),
        }),
        json!({ "type": "ping" }),
    ];
    let mut index = 0;
    let mut open_block = |events: &mut Vec<Value>, mut block: Value, deltas: Vec<Value>| {
        add_extras(reply, &mut block);
        events
            .push(json!({ "type": "content_block_start", "index": index, "content_block": block }));
        if reply.provider_extras && index == 0 {
            events.push(json!({ "type": "provider_event", "provider_x": 1 }));
        }
        events.extend(
            deltas.into_iter().map(
                |delta| json!({ "type": "content_block_delta", "index": index, "delta": delta }),
            ),
        );
        events.push(json!({ "type": "content_block_stop", "index": index }));
        index += 1;
    };
    if let Some(thinking) = &reply.reasoning_content {
        let mut deltas: Vec<Value> = words(thinking)
            .map(|word| json!({ "type": "thinking_delta", "thinking": word }))
            .collect();
        deltas.push(json!({
            "type": "signature_delta",
            "signature": reply.effective_thinking_signature(),
        }));
        open_block(
            &mut events,
            json!({ "type": "thinking", "thinking": "", "signature": "" }),
            deltas,
        );
    }
    if has_text_block(reply) {
        let deltas = words(&reply.text)
            .map(|word| json!({ "type": "text_delta", "text": word }))
            .collect();
        open_block(&mut events, json!({ "type": "text", "text": "" }), deltas);
    }
    for (call_index, call) in reply.tool_calls.iter().enumerate() {
        let mut pieces = fragments(&call.arguments, INPUT_FRAGMENT_CHARS);
        if pieces.is_empty() {
            pieces.push("");
        }
        let deltas = pieces
            .into_iter()
            .map(|piece| json!({ "type": "input_json_delta", "partial_json": piece }))
            .collect();
        let block = json!({
            "type": "tool_use",
            "id": tool_use_id(call, call_index),
            "name": call.name,
            "input": {},
        });
        open_block(&mut events, block, deltas);
    }
    events.push(json!({
        "type": "message_delta",
        "delta": {
            "stop_reason": stop_reason(reply),
            "stop_sequence": reply.stop_sequence,
        },
        "usage": usage_json(usage, usage.completion_tokens),
    }));
    events
}

/// The event that ends a successful stream.
pub(crate) fn message_stop() -> Value {
    json!({ "type": "message_stop" })
}

/// The in-stream error event's payload.
pub(crate) fn stream_error(message: &str) -> Value {
    error_object("api_error", message)
}

/// The Messages error body for an HTTP status; `error.type` follows the
/// status as the Messages reference names its error types.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        401 => "authentication_error",
        402 => "billing_error",
        403 => "permission_error",
        404 => "not_found_error",
        413 => "request_too_large",
        429 => "rate_limit_error",
        504 => "timeout_error",
        529 => "overloaded_error",
        // 400 and every other client error.
        400..=499 => "invalid_request_error",
        _ => "api_error",
    };
    error_object(kind, message)
}

fn error_object(kind: &str, message: &str) -> Value {
    json!({ "type": "error", "error": { "type": kind, "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> MessagesRequest {
        MessagesRequest::from_body(&json!({
            "model": "claude-x",
            "stream": true,
            "system": [{ "type": "text", "text": "Be brief" }],
            "messages": [
                { "role": "user", "content": "12345678" },
                { "role": "assistant", "content": [{ "type": "text", "text": "abcd" }] },
            ],
        }))
    }

    #[test]
    fn request_fields_are_read() {
        let parsed = request();
        assert_eq!(parsed.model, "claude-x");
        assert!(parsed.stream);
        assert_eq!(parsed.prompt_chars, 8 + 8 + 4);
        let plain = MessagesRequest::from_body(&json!({"system": "abc", "messages": []}));
        assert_eq!(plain.prompt_chars, 3);
        assert_eq!(
            MessagesRequest::from_body(&Value::Null),
            MessagesRequest::default()
        );
    }

    #[test]
    fn finish_reasons_map_to_stop_reasons() {
        let with = |reason: &str| MockReply {
            finish_reason: Some(reason.into()),
            ..MockReply::default()
        };
        assert_eq!(stop_reason(&MockReply::text("x")), "end_turn");
        assert_eq!(stop_reason(&with("length")), "max_tokens");
        assert_eq!(stop_reason(&with("tool_calls")), "tool_use");
        assert_eq!(stop_reason(&with("content_filter")), "refusal");
        assert_eq!(stop_reason(&with("stop_sequence")), "stop_sequence");
        assert_eq!(stop_reason(&with("pause_turn")), "pause_turn");
        let tools = MockReply {
            tool_calls: vec![MockToolCall::new("", "f", "")],
            ..MockReply::default()
        };
        assert_eq!(stop_reason(&tools), "tool_use");
    }

    #[test]
    fn tool_input_is_parsed_with_fallbacks() {
        assert_eq!(tool_input(r#"{"a": [1]}"#), json!({"a": [1]}));
        assert_eq!(tool_input(""), json!({}));
        assert_eq!(tool_input("{oops"), json!("{oops"));
    }

    #[test]
    fn usage_splits_cache_out_of_input_tokens() {
        let usage = MockUsage {
            cached_tokens: Some(30),
            cache_creation_tokens: Some(20),
            reasoning_tokens: Some(5),
            ..MockUsage::tokens(100, 9)
        };
        assert_eq!(
            usage_json(usage, 9),
            json!({
                "input_tokens": 50,
                "cache_creation_input_tokens": 20,
                "cache_read_input_tokens": 30,
                "output_tokens": 9,
            })
        );
        // More cache than prompt cannot go negative.
        let odd = MockUsage {
            cached_tokens: Some(7),
            ..MockUsage::tokens(3, 0)
        };
        assert_eq!(usage_json(odd, 0)["input_tokens"], 0);
    }

    #[test]
    fn empty_reply_still_has_one_text_block() {
        let request = request();
        let identity = ReplyIdentity::new(&request.model);
        let body = message_json(&MockReply::default(), &request, &identity);
        assert_eq!(body["content"], json!([{ "type": "text", "text": "" }]));
        let events = stream_events(&MockReply::default(), &request, &identity);
        let types: Vec<&str> = events.iter().filter_map(|e| e["type"].as_str()).collect();
        assert_eq!(
            types,
            [
                "message_start",
                "ping",
                "content_block_start",
                "content_block_stop",
                "message_delta"
            ]
        );
    }

    #[test]
    fn error_types_follow_the_status() {
        assert_eq!(error_body(429, "m")["error"]["type"], "rate_limit_error");
        assert_eq!(error_body(529, "m")["error"]["type"], "overloaded_error");
        assert_eq!(
            error_body(422, "m")["error"]["type"],
            "invalid_request_error"
        );
        assert_eq!(error_body(503, "m")["error"]["type"], "api_error");
        assert_eq!(error_body(400, "m")["type"], "error");
    }
}
