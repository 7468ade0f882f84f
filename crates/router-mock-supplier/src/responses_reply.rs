//! OpenAI Responses bodies: the `response` object with its output items, the
//! named `response.*` SSE events of a stream, and the failed response.
//!
//! Written from the public Responses reference, independently of the
//! router's own wire crates, so that the mock can catch their mistakes.
//! Pure functions of a [`MockReply`] and the parts of the request that
//! matter ([`ResponsesRequest`]); nothing here knows about sockets or timing.

use serde_json::{Value, json};

use crate::reply_identity::ReplyIdentity;
use crate::script::{MockReply, MockToolCall, MockUsage};
use crate::sse::{fragments, words};
use crate::usage_estimate::{content_chars_of, effective_usage, text_chars};

/// The body [`crate::Script::InvalidJson`] sends.
pub(crate) const INVALID_JSON_BODY: &[u8] = b"{\"id\": \"resp_mock\", this is not json";

/// The frame [`crate::Script::MalformedStream`] sends: a known event name,
/// so a client cannot drop it as an unknown event.
pub(crate) const SSE_MALFORMED: &[u8] = b"event: response.output_text.delta\ndata: {not json\n\n";

/// Prefix of response ids; items use `rs_mock_`, `msg_mock_` and `fc_mock_`.
const ID_PREFIX: &str = "resp_mock_";

/// The `include` value that asks for encrypted reasoning.
const INCLUDE_ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// Argument fragments of a streamed function call are at most this many
/// characters.
const ARGUMENT_FRAGMENT_CHARS: usize = 8;

/// What the mock needs to know about an incoming Responses request.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct ResponsesRequest {
    /// `model`, or empty when absent.
    pub(crate) model: String,
    /// `stream: true`.
    pub(crate) stream: bool,
    /// `include` lists `reasoning.encrypted_content`.
    pub(crate) include_encrypted_reasoning: bool,
    /// Characters of text in `instructions` and `input` (a string, or the
    /// `content` of its items plus the `output` of tool results).
    pub(crate) prompt_chars: usize,
}

impl ResponsesRequest {
    /// Reads the fields the mock cares about; anything missing or mistyped
    /// takes its default.
    pub(crate) fn from_body(body: &Value) -> ResponsesRequest {
        let model = body
            .get("model")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let stream = body.get("stream").and_then(Value::as_bool) == Some(true);
        let include_encrypted_reasoning = body
            .get("include")
            .and_then(Value::as_array)
            .is_some_and(|include| {
                include
                    .iter()
                    .any(|value| value.as_str() == Some(INCLUDE_ENCRYPTED_REASONING))
            });
        let instructions = body.get("instructions").map(text_chars).unwrap_or(0);
        let input = match body.get("input") {
            Some(Value::String(text)) => text.chars().count(),
            Some(Value::Array(items)) => {
                let outputs: usize = items
                    .iter()
                    .filter_map(|item| item.get("output"))
                    .map(text_chars)
                    .sum();
                content_chars_of(body, "input") + outputs
            }
            _ => 0,
        };
        ResponsesRequest {
            model,
            stream,
            include_encrypted_reasoning,
            prompt_chars: instructions + input,
        }
    }
}

/// How the reply ends: `completed`, or `incomplete` with a reason.
fn incomplete_reason(reply: &MockReply) -> Option<&'static str> {
    match reply.effective_finish_reason() {
        "length" | "max_tokens" => Some("max_output_tokens"),
        "content_filter" | "refusal" => Some("content_filter"),
        _ => None,
    }
}

/// The Responses `usage` object; the details are always present.
fn usage_json(usage: MockUsage) -> Value {
    json!({
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": { "cached_tokens": usage.cached_tokens.unwrap_or(0) },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": { "reasoning_tokens": usage.reasoning_tokens.unwrap_or(0) },
        "total_tokens": usage.prompt_tokens.saturating_add(usage.completion_tokens),
    })
}

fn call_id(call: &MockToolCall, index: usize) -> String {
    if call.id.is_empty() {
        format!("call_mock_{index}")
    } else {
        call.id.clone()
    }
}

/// Whether the reply has a message item: when it has text, or when it would
/// otherwise have no output at all.
fn has_message(reply: &MockReply) -> bool {
    !reply.text.is_empty() || (reply.tool_calls.is_empty() && reply.reasoning_content.is_none())
}

/// Adds the unknown provider field when the reply asks for extras.
fn add_extras(reply: &MockReply, object: &mut Value) {
    if reply.provider_extras {
        object["provider_x"] = json!(1);
    }
}

/// One output item of a reply; [`item_json`] writes it in progress (empty
/// content, summary and arguments) or done.
#[derive(Debug, Clone, Copy)]
enum Item<'a> {
    Reasoning(&'a str),
    Message,
    FunctionCall(usize, &'a MockToolCall),
}

/// The output items in order: reasoning, message, function calls.
fn items(reply: &MockReply) -> Vec<Item<'_>> {
    let mut items = Vec::new();
    if let Some(reasoning) = &reply.reasoning_content {
        items.push(Item::Reasoning(reasoning));
    }
    if has_message(reply) {
        items.push(Item::Message);
    }
    items.extend(
        reply
            .tool_calls
            .iter()
            .enumerate()
            .map(|(index, call)| Item::FunctionCall(index, call)),
    );
    items
}

fn item_id(item: Item<'_>, identity: &ReplyIdentity) -> String {
    match item {
        Item::Reasoning(_) => identity.id("rs_mock_"),
        Item::Message => identity.id("msg_mock_"),
        Item::FunctionCall(index, _) => format!("{}_{index}", identity.id("fc_mock_")),
    }
}

fn output_text(text: &str) -> Value {
    json!({ "type": "output_text", "text": text, "annotations": [], "logprobs": [] })
}

fn summary_text(text: &str) -> Value {
    json!({ "type": "summary_text", "text": text })
}

fn item_json(
    item: Item<'_>,
    done: bool,
    reply: &MockReply,
    request: &ResponsesRequest,
    identity: &ReplyIdentity,
) -> Value {
    let id = item_id(item, identity);
    let mut value = match item {
        Item::Reasoning(reasoning) => {
            let summary = if done {
                vec![summary_text(reasoning)]
            } else {
                Vec::new()
            };
            let mut value = json!({ "id": id, "type": "reasoning", "summary": summary });
            if request.include_encrypted_reasoning || reply.thinking_signature.is_some() {
                value["encrypted_content"] = json!(reply.effective_thinking_signature());
            }
            value
        }
        Item::Message => {
            let status = match (done, incomplete_reason(reply)) {
                (false, _) => "in_progress",
                (true, None) => "completed",
                (true, Some(_)) => "incomplete",
            };
            let content = if done {
                vec![output_text(&reply.text)]
            } else {
                Vec::new()
            };
            json!({
                "id": id,
                "type": "message",
                "status": status,
                "role": "assistant",
                "content": content,
            })
        }
        Item::FunctionCall(index, call) => json!({
            "id": id,
            "type": "function_call",
            "status": if done { "completed" } else { "in_progress" },
            "call_id": call_id(call, index),
            "name": call.name,
            "arguments": if done { call.arguments.as_str() } else { "" },
        }),
    };
    add_extras(reply, &mut value);
    value
}

/// The `response` object in a given state.
fn response_object(
    reply: &MockReply,
    identity: &ReplyIdentity,
    status: &str,
    output: Vec<Value>,
    usage: Option<Value>,
) -> Value {
    let incomplete_details = match (status, incomplete_reason(reply)) {
        ("incomplete", Some(reason)) => json!({ "reason": reason }),
        _ => Value::Null,
    };
    let mut response = json!({
        "id": identity.id(ID_PREFIX),
        "object": "response",
        "created_at": identity.created,
        "status": status,
        "error": null,
        "incomplete_details": incomplete_details,
        "model": identity.model,
        "output": output,
        "parallel_tool_calls": true,
        "tool_choice": "auto",
        "tools": [],
        "usage": usage,
    });
    add_extras(reply, &mut response);
    response
}

fn final_status(reply: &MockReply) -> &'static str {
    if incomplete_reason(reply).is_some() {
        "incomplete"
    } else {
        "completed"
    }
}

/// The finished `response` object, as returned without streaming and in
/// the terminal event.
pub(crate) fn response_json(
    reply: &MockReply,
    request: &ResponsesRequest,
    identity: &ReplyIdentity,
) -> Value {
    let output = items(reply)
        .into_iter()
        .map(|item| item_json(item, true, reply, request, identity))
        .collect();
    let usage = usage_json(effective_usage(reply, request.prompt_chars));
    response_object(reply, identity, final_status(reply), output, Some(usage))
}

/// Collects events, numbering them with `sequence_number` from 0.
#[derive(Debug, Default)]
struct Sequence {
    events: Vec<Value>,
}

impl Sequence {
    fn push(&mut self, mut event: Value) {
        event["sequence_number"] = json!(self.events.len());
        self.events.push(event);
    }
}

/// The events of a streamed reply, in order, each a payload whose `type` is
/// also its SSE event name and whose `sequence_number` counts from 0. The
/// last one is the terminal event: `response.completed`, or
/// `response.incomplete` when the reply is cut short (see
/// [`MockReply::finish_reason`]).
///
/// 1. `response.created` and `response.in_progress` (status `in_progress`,
///    no output, no usage);
/// 2. per output item, `response.output_item.added`, then:
///    reasoning: `response.reasoning_summary_part.added`,
///    `response.reasoning_summary_text.delta` word by word,
///    `response.reasoning_summary_text.done`,
///    `response.reasoning_summary_part.done`;
///    message: `response.content_part.added`, `response.output_text.delta`
///    word by word, `response.output_text.done`, `response.content_part.done`;
///    function call: `response.function_call_arguments.delta` fragments,
///    `response.function_call_arguments.done`;
///    and `response.output_item.done`;
/// 3. the terminal event with the finished response.
///
/// With `provider_extras`, a `response.provider_event` follows the first
/// `response.output_item.added`, and responses and items carry `provider_x`.
pub(crate) fn stream_events(
    reply: &MockReply,
    request: &ResponsesRequest,
    identity: &ReplyIdentity,
) -> Vec<Value> {
    let mut sequence = Sequence::default();
    for kind in ["response.created", "response.in_progress"] {
        sequence.push(json!({
            "type": kind,
            "response": response_object(reply, identity, "in_progress", Vec::new(), None),
        }));
    }
    for (output_index, item) in items(reply).into_iter().enumerate() {
        let id = item_id(item, identity);
        sequence.push(json!({
            "type": "response.output_item.added",
            "output_index": output_index,
            "item": item_json(item, false, reply, request, identity),
        }));
        if reply.provider_extras && output_index == 0 {
            sequence.push(json!({ "type": "response.provider_event", "provider_x": 1 }));
        }
        match item {
            Item::Reasoning(reasoning) => {
                let at = json!({ "item_id": id, "output_index": output_index, "summary_index": 0 });
                let with = |mut event: Value| {
                    merge(&mut event, &at);
                    event
                };
                sequence.push(with(json!({
                    "type": "response.reasoning_summary_part.added",
                    "part": summary_text(""),
                })));
                for word in words(reasoning) {
                    sequence.push(with(json!({
                        "type": "response.reasoning_summary_text.delta",
                        "delta": word,
                    })));
                }
                sequence.push(with(json!({
                    "type": "response.reasoning_summary_text.done",
                    "text": reasoning,
                })));
                sequence.push(with(json!({
                    "type": "response.reasoning_summary_part.done",
                    "part": summary_text(reasoning),
                })));
            }
            Item::Message => {
                let at = json!({ "item_id": id, "output_index": output_index, "content_index": 0 });
                let with = |mut event: Value| {
                    merge(&mut event, &at);
                    event
                };
                sequence.push(with(json!({
                    "type": "response.content_part.added",
                    "part": output_text(""),
                })));
                for word in words(&reply.text) {
                    sequence.push(with(json!({
                        "type": "response.output_text.delta",
                        "delta": word,
                        "logprobs": [],
                    })));
                }
                sequence.push(with(json!({
                    "type": "response.output_text.done",
                    "text": reply.text,
                    "logprobs": [],
                })));
                sequence.push(with(json!({
                    "type": "response.content_part.done",
                    "part": output_text(&reply.text),
                })));
            }
            Item::FunctionCall(_, call) => {
                for fragment in fragments(&call.arguments, ARGUMENT_FRAGMENT_CHARS) {
                    sequence.push(json!({
                        "type": "response.function_call_arguments.delta",
                        "item_id": id,
                        "output_index": output_index,
                        "delta": fragment,
                    }));
                }
                sequence.push(json!({
                    "type": "response.function_call_arguments.done",
                    "item_id": id,
                    "output_index": output_index,
                    "name": call.name,
                    "arguments": call.arguments,
                }));
            }
        }
        sequence.push(json!({
            "type": "response.output_item.done",
            "output_index": output_index,
            "item": item_json(item, true, reply, request, identity),
        }));
    }
    let terminal = match final_status(reply) {
        "incomplete" => "response.incomplete",
        _ => "response.completed",
    };
    sequence.push(json!({
        "type": terminal,
        "response": response_json(reply, request, identity),
    }));
    sequence.events
}

/// Copies the fields of `from` (an object) into `into` (an object).
fn merge(into: &mut Value, from: &Value) {
    if let (Some(into), Some(from)) = (into.as_object_mut(), from.as_object()) {
        for (key, value) in from {
            into.insert(key.clone(), value.clone());
        }
    }
}

/// The `response.failed` event sent as event number `sequence_number`.
pub(crate) fn failed_event(
    identity: &ReplyIdentity,
    sequence_number: usize,
    message: &str,
) -> Value {
    let mut response = response_object(&MockReply::default(), identity, "failed", Vec::new(), None);
    response["error"] = json!({ "code": "server_error", "message": message });
    json!({
        "type": "response.failed",
        "response": response,
        "sequence_number": sequence_number,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(include: bool) -> ResponsesRequest {
        let mut body = json!({
            "model": "gpt-r",
            "stream": true,
            "instructions": "Be brief",
            "input": [
                { "role": "user", "content": "12345678" },
                { "role": "user", "content": [{ "type": "input_text", "text": "abcd" }] },
                { "type": "function_call_output", "call_id": "c", "output": "xy" },
            ],
        });
        if include {
            body["include"] = json!(["reasoning.encrypted_content"]);
        }
        ResponsesRequest::from_body(&body)
    }

    #[test]
    fn request_fields_are_read() {
        let parsed = request(true);
        assert_eq!(parsed.model, "gpt-r");
        assert!(parsed.stream);
        assert!(parsed.include_encrypted_reasoning);
        assert_eq!(parsed.prompt_chars, 8 + 8 + 4 + 2);
        assert!(!request(false).include_encrypted_reasoning);
        let plain = ResponsesRequest::from_body(&json!({"input": "hello"}));
        assert_eq!(plain.prompt_chars, 5);
        assert_eq!(
            ResponsesRequest::from_body(&Value::Null),
            ResponsesRequest::default()
        );
    }

    #[test]
    fn length_makes_an_incomplete_response() {
        let reply = MockReply {
            finish_reason: Some("length".into()),
            ..MockReply::text("cut")
        };
        let request = request(false);
        let identity = ReplyIdentity::new(&request.model);
        let body = response_json(&reply, &request, &identity);
        assert_eq!(body["status"], "incomplete");
        assert_eq!(
            body["incomplete_details"],
            json!({"reason": "max_output_tokens"})
        );
        assert_eq!(body["output"][0]["status"], "incomplete");
        let events = stream_events(&reply, &request, &identity);
        assert_eq!(events.last().unwrap()["type"], "response.incomplete");
        let filtered = MockReply {
            finish_reason: Some("content_filter".into()),
            ..MockReply::default()
        };
        let body = response_json(&filtered, &request, &identity);
        assert_eq!(body["incomplete_details"]["reason"], "content_filter");
    }

    #[test]
    fn encrypted_reasoning_is_sent_when_asked_or_scripted() {
        let reply = MockReply {
            reasoning_content: Some("think".into()),
            ..MockReply::default()
        };
        let identity = ReplyIdentity::new("m");
        let plain = response_json(&reply, &request(false), &identity);
        assert_eq!(plain["output"][0]["type"], "reasoning");
        assert!(plain["output"][0].get("encrypted_content").is_none());
        assert_eq!(
            plain["output"].as_array().unwrap().len(),
            1,
            "no empty message"
        );
        let asked = response_json(&reply, &request(true), &identity);
        assert_eq!(
            asked["output"][0]["encrypted_content"],
            crate::script::DEFAULT_THINKING_SIGNATURE
        );
        let scripted = MockReply {
            thinking_signature: Some("sig".into()),
            ..reply
        };
        let body = response_json(&scripted, &request(false), &identity);
        assert_eq!(body["output"][0]["encrypted_content"], "sig");
    }

    #[test]
    fn usage_details_are_always_present() {
        assert_eq!(
            usage_json(MockUsage::tokens(10, 4)),
            json!({
                "input_tokens": 10,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": 4,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 14,
            })
        );
    }

    #[test]
    fn failed_event_carries_the_error() {
        let identity = ReplyIdentity::new("m");
        let event = failed_event(&identity, 7, "boom");
        assert_eq!(event["sequence_number"], 7);
        assert_eq!(event["response"]["status"], "failed");
        assert_eq!(event["response"]["error"]["message"], "boom");
        assert_eq!(event["response"]["id"], identity.id(ID_PREFIX));
    }
}
