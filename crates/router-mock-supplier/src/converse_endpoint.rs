//! Amazon Bedrock Converse (`…/model/{modelId}/converse` and
//! `…/converse-stream`), written from AWS's published Converse reference:
//! `messages` of content blocks (`text`, `toolUse`, `toolResult`,
//! `image`), `system`, `inferenceConfig`, `toolConfig`; the reply
//! `{output: {message}, stopReason, usage, metrics}`; the stream AWS event
//! stream (`messageStart`, `contentBlockDelta`/`Start`/`Stop`,
//! `messageStop`, `metadata`). Requests must carry a valid SigV4 signature
//! of the mock's credentials (403 otherwise), and a body with `model` or
//! `stream` is a 400 `ValidationException` message.

use bytes::Bytes;
use http::HeaderMap;
use serde_json::{Value, json};

use crate::aws::{
    MALFORMED_MESSAGE, json_event, model_in_path, signature_refusal, stream_exception,
};
use crate::endpoint::{EventStream, WireProtocol};
use crate::reply_identity::ReplyIdentity;
use crate::script::{MockReply, MockUsage};
use crate::sse::{fragments, words};

/// `toolUse.input` fragments of a stream are at most this many characters.
const INPUT_FRAGMENT_CHARS: usize = 8;
use crate::usage_estimate::{effective_usage, text_chars};

#[derive(Debug)]
pub(crate) struct Converse;

#[derive(Debug, Default)]
pub(crate) struct ConverseRequest {
    model: String,
    stream: bool,
    prompt_chars: usize,
}

/// Whether `path` is a Converse endpoint.
pub(crate) fn is_converse_path(path: &str) -> bool {
    path.contains("/model/") && (path.ends_with("/converse") || path.ends_with("/converse-stream"))
}

fn stop_reason(reply: &MockReply) -> &'static str {
    match reply.finish_reason.as_deref() {
        Some("length") => "max_tokens",
        Some("content_filter") => "content_filtered",
        _ if !reply.tool_calls.is_empty() => "tool_use",
        _ => "end_turn",
    }
}

fn usage_json(usage: MockUsage) -> Value {
    let read = usage.cached_tokens.unwrap_or(0);
    let write = usage.cache_creation_tokens.unwrap_or(0);
    let input = usage.prompt_tokens.saturating_sub(read + write);
    json!({
        "inputTokens": input,
        "outputTokens": usage.completion_tokens,
        "totalTokens": usage.prompt_tokens + usage.completion_tokens,
        "cacheReadInputTokens": read,
        "cacheWriteInputTokens": write,
    })
}

fn tool_use_id(index: usize, id: &str) -> String {
    if id.is_empty() {
        format!("tooluse_mock{index}")
    } else {
        id.to_owned()
    }
}

fn event(kind: &str, payload: Value) -> Bytes {
    json_event(kind, &payload)
}

impl WireProtocol for Converse {
    type Request = ConverseRequest;

    const INVALID_JSON_BODY: &'static [u8] = b"{\"output\": {\"message\": ";
    const MALFORMED_EVENT: &'static [u8] = MALFORMED_MESSAGE;

    fn read_request(body: &Value) -> ConverseRequest {
        Self::read_request_at(body, "", None)
    }

    fn read_request_at(body: &Value, path: &str, _host: Option<&str>) -> ConverseRequest {
        let system = body.get("system").map(text_chars).unwrap_or(0);
        let messages = body
            .get("messages")
            .and_then(Value::as_array)
            .map(|messages| {
                messages
                    .iter()
                    .filter_map(|m| m.get("content"))
                    .map(text_chars)
                    .sum::<usize>()
            })
            .unwrap_or(0);
        ConverseRequest {
            model: model_in_path(path),
            stream: path.ends_with("/converse-stream"),
            prompt_chars: system + messages,
        }
    }

    fn check_request(
        headers: &HeaderMap,
        path: &str,
        query: Option<&str>,
        body: &Bytes,
    ) -> Option<(u16, Value)> {
        if let Some(refusal) = signature_refusal(headers, path, query, body) {
            return Some(refusal);
        }
        let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        for key in ["model", "stream"] {
            if parsed.get(key).is_some() {
                return Some((
                    400,
                    json!({"message": format!("1 validation error detected: extraneous key [{key}] is not permitted")}),
                ));
            }
        }
        None
    }

    fn model(request: &ConverseRequest) -> &str {
        &request.model
    }

    fn streams(request: &ConverseRequest) -> bool {
        request.stream
    }

    fn reply_body(
        reply: &MockReply,
        request: &ConverseRequest,
        _identity: &ReplyIdentity,
    ) -> Value {
        let usage = effective_usage(reply, request.prompt_chars);
        let mut content = Vec::new();
        if let Some(thinking) = &reply.reasoning_content {
            content.push(json!({"reasoningContent": {"reasoningText": {
                "text": thinking, "signature": reply.effective_thinking_signature()}}}));
        }
        if !reply.text.is_empty() {
            content.push(json!({"text": reply.text}));
        }
        for (i, call) in reply.tool_calls.iter().enumerate() {
            let input: Value = serde_json::from_str(&call.arguments).unwrap_or_else(|_| json!({}));
            content.push(json!({"toolUse": {"toolUseId": tool_use_id(i, &call.id), "name": call.name, "input": input}}));
        }
        json!({
            "output": {"message": {"role": "assistant", "content": content}},
            "stopReason": stop_reason(reply),
            "usage": usage_json(usage),
            "metrics": {"latencyMs": 100},
        })
    }

    fn reply_events(
        reply: &MockReply,
        request: &ConverseRequest,
        _identity: &ReplyIdentity,
    ) -> EventStream {
        let usage = effective_usage(reply, request.prompt_chars);
        let mut events = vec![event("messageStart", json!({"role": "assistant"}))];
        let mut index = 0;
        if let Some(thinking) = &reply.reasoning_content {
            for word in words(thinking) {
                events.push(event("contentBlockDelta", json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"text": word}}})));
            }
            events.push(event("contentBlockDelta", json!({"contentBlockIndex": index, "delta": {"reasoningContent": {"signature": reply.effective_thinking_signature()}}})));
            events.push(event(
                "contentBlockStop",
                json!({"contentBlockIndex": index}),
            ));
            index += 1;
        }
        if !reply.text.is_empty() {
            for word in words(&reply.text) {
                events.push(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index, "delta": {"text": word}}),
                ));
            }
            events.push(event(
                "contentBlockStop",
                json!({"contentBlockIndex": index}),
            ));
            index += 1;
        }
        for (i, call) in reply.tool_calls.iter().enumerate() {
            events.push(event("contentBlockStart", json!({"contentBlockIndex": index, "start": {"toolUse": {"toolUseId": tool_use_id(i, &call.id), "name": call.name}}})));
            // The input JSON arrives in fragments, as ConverseStream sends it.
            for fragment in fragments(&call.arguments, INPUT_FRAGMENT_CHARS) {
                events.push(event(
                    "contentBlockDelta",
                    json!({"contentBlockIndex": index, "delta": {"toolUse": {"input": fragment}}}),
                ));
            }
            events.push(event(
                "contentBlockStop",
                json!({"contentBlockIndex": index}),
            ));
            index += 1;
        }
        events.push(event(
            "messageStop",
            json!({"stopReason": stop_reason(reply)}),
        ));
        EventStream {
            events,
            terminal: vec![event(
                "metadata",
                json!({"usage": usage_json(usage), "metrics": {"latencyMs": 100}}),
            )],
        }
    }

    fn stream_error_event(_identity: &ReplyIdentity, _events_sent: usize, message: &str) -> Bytes {
        stream_exception(message)
    }

    fn error_body(_status: u16, message: &str) -> Value {
        json!({"message": message})
    }
}
