//! Every 400 rule of `POST /v1/chat/completions` with the `param` it must name.

use router_chat::{ApiError, ChatClient, Request};
use router_wire_testkit::codecs;
use router_wire_testkit::rejection;
use serde_json::{Value, json};

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&ChatClient::default(), &(), body)
}

fn base() -> Value {
    json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
}

/// The base request with one top-level field set.
fn with(field: &str, value: Value) -> Vec<u8> {
    rejection::with(base(), field, value)
}

/// The base request whose single message is `message`.
fn message(message: Value) -> Vec<u8> {
    with("messages", json!([message]))
}

/// A user message whose single content part is `part`.
fn part(part: Value) -> Vec<u8> {
    message(json!({"role": "user", "content": [part]}))
}

fn without(field: &str) -> Vec<u8> {
    rejection::without(base(), field)
}

#[test]
fn every_rule_rejects_with_its_param() {
    let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        // body
        ("body not JSON", b"{".to_vec(), None),
        ("body not an object", b"42".to_vec(), None),
        ("body an array", b"[]".to_vec(), None),
        ("trailing garbage", b"{\"model\":\"m\"} x".to_vec(), None),
        // model and messages (B-02, B-04)
        ("model missing", without("model"), Some("model")),
        ("model not a string", with("model", json!(5)), Some("model")),
        ("messages missing", without("messages"), Some("messages")),
        (
            "messages empty",
            with("messages", json!([])),
            Some("messages"),
        ),
        (
            "messages a string",
            with("messages", json!("hi")),
            Some("messages"),
        ),
        (
            "message not an object",
            with("messages", json!([1])),
            Some("messages[0]"),
        ),
        // role (B-05)
        (
            "role missing",
            message(json!({"content": "hi"})),
            Some("messages[0].role"),
        ),
        (
            "role function",
            message(json!({"role": "function", "content": "hi", "name": "f"})),
            Some("messages[0].role"),
        ),
        // content (B-06)
        (
            "content 42",
            message(json!({"role": "user", "content": 42})),
            Some("messages[0].content"),
        ),
        (
            "content {}",
            message(json!({"role": "user", "content": {}})),
            Some("messages[0].content"),
        ),
        (
            "second message content",
            with(
                "messages",
                json!([
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                    {"role": "user", "content": true}
                ]),
            ),
            Some("messages[2].content"),
        ),
        // tool_call_id and tool_calls (B-09)
        (
            "tool_call_id 5",
            message(json!({"role": "tool", "content": "x", "tool_call_id": 5})),
            Some("messages[0].tool_call_id"),
        ),
        (
            "tool message without tool_call_id",
            message(json!({"role": "tool", "content": "x"})),
            Some("messages[0].tool_call_id"),
        ),
        (
            "tool_calls \"x\"",
            message(json!({"role": "assistant", "tool_calls": "x"})),
            Some("messages[0].tool_calls"),
        ),
        (
            "tool_calls [1]",
            message(json!({"role": "assistant", "tool_calls": [1]})),
            Some("messages[0].tool_calls[0]"),
        ),
        (
            "tool call without function",
            message(json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]})),
            Some("messages[0].tool_calls[0].function"),
        ),
        (
            "tool call arguments not a string",
            message(
                json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": {}}}]}),
            ),
            Some("messages[0].tool_calls[0].function.arguments"),
        ),
        (
            "tool call of another type",
            message(
                json!({"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "function": {"name": "f", "arguments": "{}"}}]}),
            ),
            Some("messages[0].tool_calls[0].type"),
        ),
        (
            "tool_calls on a user message",
            message(json!({"role": "user", "content": "x", "tool_calls": []})),
            Some("messages[0].tool_calls"),
        ),
        // content parts
        (
            "part not an object",
            part(json!(1)),
            Some("messages[0].content[0]"),
        ),
        (
            "part without type",
            part(json!({"text": "a"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "part type not a string",
            part(json!({"type": 1})),
            Some("messages[0].content[0].type"),
        ),
        (
            "text part without text",
            part(json!({"type": "text"})),
            Some("messages[0].content[0].text"),
        ),
        (
            "text part text 1",
            part(json!({"type": "text", "text": 1})),
            Some("messages[0].content[0].text"),
        ),
        (
            "cache_control not an object",
            part(json!({"type": "text", "text": "a", "cache_control": "x"})),
            Some("messages[0].content[0].cache_control"),
        ),
        (
            "image_url url 1",
            part(json!({"type": "image_url", "image_url": {"url": 1}})),
            Some("messages[0].content[0].image_url.url"),
        ),
        (
            "image_url ftp",
            part(json!({"type": "image_url", "image_url": {"url": "ftp://x/a.png"}})),
            Some("messages[0].content[0].image_url.url"),
        ),
        (
            "image_url data text/plain",
            part(json!({"type": "image_url", "image_url": "data:text/plain;base64,aGk="})),
            Some("messages[0].content[0].image_url.url"),
        ),
        (
            "input_image without source",
            part(json!({"type": "input_image"})),
            Some("messages[0].content[0].image_url"),
        ),
        (
            "input_image with both",
            part(
                json!({"type": "input_image", "image_url": "https://img.example/a.png", "file_id": "f"}),
            ),
            Some("messages[0].content[0]"),
        ),
        (
            "image bmp",
            part(
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA=="}}),
            ),
            Some("messages[0].content[0].source.media_type"),
        ),
        (
            "image unknown source",
            part(json!({"type": "image", "source": {"type": "blob"}})),
            Some("messages[0].content[0].source.type"),
        ),
        // media parts (B-26, CF-09)
        (
            "file part",
            part(json!({"type": "file", "file": {"file_id": "f"}})),
            Some("messages[0].content[0].type"),
        ),
        (
            "input_file part",
            part(json!({"type": "input_file", "file_id": "f"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "input_audio part",
            part(json!({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}})),
            Some("messages[0].content[0].type"),
        ),
        (
            "audio part",
            part(json!({"type": "audio"})),
            Some("messages[0].content[0].type"),
        ),
        // A type Chat does not define fails at parse, not first at encode
        // time (issue 31); `refusal` is a part of assistant messages only.
        (
            "unknown part type",
            part(json!({"type": "future_part", "x": 1})),
            Some("messages[0].content[0].type"),
        ),
        (
            "part without a type",
            part(json!({"text": "hi"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "refusal part in a user message",
            part(json!({"type": "refusal", "refusal": "no"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "video part",
            part(json!({"type": "video"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "video_url part",
            part(json!({"type": "video_url", "video_url": {"url": "https://img.example/v.mp4"}})),
            Some("messages[0].content[0].type"),
        ),
        (
            "document part",
            part(json!({"type": "document"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "media in a tool message",
            message(
                json!({"role": "tool", "tool_call_id": "c", "content": [{"type": "input_audio"}]}),
            ),
            Some("messages[0].content[0].type"),
        ),
        (
            "modalities audio",
            with("modalities", json!(["text", "audio"])),
            Some("modalities"),
        ),
        (
            "audio parameter",
            with("audio", json!({"voice": "alloy", "format": "wav"})),
            Some("audio"),
        ),
        // token limits (B-10, B-28)
        (
            "max_tokens 0",
            with("max_tokens", json!(0)),
            Some("max_tokens"),
        ),
        (
            "max_tokens -1",
            with("max_tokens", json!(-1)),
            Some("max_tokens"),
        ),
        (
            "max_tokens 1.5",
            with("max_tokens", json!(1.5)),
            Some("max_tokens"),
        ),
        (
            "max_tokens \"5\"",
            with("max_tokens", json!("5")),
            Some("max_tokens"),
        ),
        (
            "max_completion_tokens 0",
            with("max_completion_tokens", json!(0)),
            Some("max_completion_tokens"),
        ),
        (
            "max_completion_tokens -1",
            with("max_completion_tokens", json!(-1)),
            Some("max_completion_tokens"),
        ),
        (
            "max_completion_tokens 1.5",
            with("max_completion_tokens", json!(1.5)),
            Some("max_completion_tokens"),
        ),
        (
            "max_completion_tokens \"5\"",
            with("max_completion_tokens", json!("5")),
            Some("max_completion_tokens"),
        ),
        (
            "token limits differ",
            {
                let mut body = base();
                body["max_tokens"] = json!(10);
                body["max_completion_tokens"] = json!(20);
                serde_json::to_vec(&body).unwrap()
            },
            Some("max_tokens"),
        ),
        // sampling (B-25)
        (
            "temperature 2.01",
            with("temperature", json!(2.01)),
            Some("temperature"),
        ),
        (
            "temperature -0.01",
            with("temperature", json!(-0.01)),
            Some("temperature"),
        ),
        (
            "temperature \"1\"",
            with("temperature", json!("1")),
            Some("temperature"),
        ),
        ("top_p 1.5", with("top_p", json!(1.5)), Some("top_p")),
        ("top_p -0.1", with("top_p", json!(-0.1)), Some("top_p")),
        (
            "frequency_penalty 2.5",
            with("frequency_penalty", json!(2.5)),
            Some("frequency_penalty"),
        ),
        (
            "presence_penalty -2.5",
            with("presence_penalty", json!(-2.5)),
            Some("presence_penalty"),
        ),
        ("seed 1.5", with("seed", json!(1.5)), Some("seed")),
        // n's type (B-27; a number other than 1 is the gateway's refusal:
        // `n_is_carried_for_the_caller_to_decide`)
        ("n \"1\"", with("n", json!("1")), Some("n")),
        // tools (B-11)
        ("tools {}", with("tools", json!({})), Some("tools")),
        ("tools [1]", with("tools", json!([1])), Some("tools[0]")),
        (
            "tool without type",
            with("tools", json!([{"function": {"name": "f"}}])),
            Some("tools[0].type"),
        ),
        (
            "hosted tool",
            with("tools", json!([{"type": "web_search"}])),
            Some("tools[0].type"),
        ),
        (
            "function tool without function",
            with("tools", json!([{"type": "function"}])),
            Some("tools[0].function"),
        ),
        (
            "function without name",
            with("tools", json!([{"type": "function", "function": {}}])),
            Some("tools[0].function.name"),
        ),
        (
            "parameters not an object",
            with(
                "tools",
                json!([{"type": "function", "function": {"name": "f", "parameters": "x"}}]),
            ),
            Some("tools[0].function.parameters"),
        ),
        (
            "tool_choice 1",
            with("tool_choice", json!(1)),
            Some("tool_choice"),
        ),
        (
            "tool_choice unknown mode",
            with("tool_choice", json!("sometimes")),
            Some("tool_choice"),
        ),
        (
            "tool_choice allowed_tools",
            with(
                "tool_choice",
                json!({"type": "allowed_tools", "allowed_tools": {}}),
            ),
            Some("tool_choice.type"),
        ),
        (
            "tool_choice without function",
            with("tool_choice", json!({"type": "function"})),
            Some("tool_choice.function"),
        ),
        (
            "parallel_tool_calls \"yes\"",
            with("parallel_tool_calls", json!("yes")),
            Some("parallel_tool_calls"),
        ),
        // response_format, thinking (B-11)
        (
            "response_format \"json\"",
            with("response_format", json!("json")),
            Some("response_format"),
        ),
        (
            "response_format unknown type",
            with("response_format", json!({"type": "grammar"})),
            Some("response_format.type"),
        ),
        (
            "json_schema without name",
            with(
                "response_format",
                json!({"type": "json_schema", "json_schema": {"schema": {}}}),
            ),
            Some("response_format.json_schema.name"),
        ),
        (
            "response_format without type",
            with("response_format", json!({})),
            Some("response_format.type"),
        ),
        (
            "thinking true",
            with("thinking", json!(true)),
            Some("thinking"),
        ),
        (
            "thinking unknown type",
            with("thinking", json!({"type": "on"})),
            Some("thinking.type"),
        ),
        (
            "thinking budget -1",
            with("thinking", json!({"type": "enabled", "budget_tokens": -1})),
            Some("thinking.budget_tokens"),
        ),
        // reasoning (B-12, B-13)
        (
            "reasoning_effort 3",
            with("reasoning_effort", json!(3)),
            Some("reasoning_effort"),
        ),
        (
            "reasoning \"high\"",
            with("reasoning", json!("high")),
            Some("reasoning"),
        ),
        (
            "reasoning.effort 3",
            with("reasoning", json!({"effort": 3})),
            Some("reasoning.effort"),
        ),
        (
            "efforts differ",
            {
                let mut body = base();
                body["reasoning_effort"] = json!("low");
                body["reasoning"] = json!({"effort": "high"});
                serde_json::to_vec(&body).unwrap()
            },
            Some("reasoning_effort"),
        ),
        // stop (B-17)
        ("stop 1", with("stop", json!(1)), Some("stop")),
        ("stop [1]", with("stop", json!([1])), Some("stop[0]")),
        (
            "stop [\"a\", null]",
            with("stop", json!(["a", null])),
            Some("stop[1]"),
        ),
        // stream (B-20)
        (
            "stream \"yes\"",
            with("stream", json!("yes")),
            Some("stream"),
        ),
        (
            "stream_options \"x\"",
            with("stream_options", json!("x")),
            Some("stream_options"),
        ),
        (
            "include_usage \"yes\"",
            with("stream_options", json!({"include_usage": "yes"})),
            Some("stream_options.include_usage"),
        ),
        // other typed fields
        ("user 5", with("user", json!(5)), Some("user")),
        (
            "logprobs \"yes\"",
            with("logprobs", json!("yes")),
            Some("logprobs"),
        ),
        (
            "logit_bias []",
            with("logit_bias", json!([])),
            Some("logit_bias"),
        ),
        (
            "top_logprobs -1",
            with("top_logprobs", json!(-1)),
            Some("top_logprobs"),
        ),
    ];

    rejection::check_rejected(parse_request, &cases);
}

#[test]
fn the_boundaries_of_each_rule_are_accepted() {
    let accepted: Vec<(&str, Vec<u8>)> = vec![
        (
            "each role",
            with(
                "messages",
                json!([
                    {"role": "system", "content": "s"},
                    {"role": "developer", "content": "d"},
                    {"role": "user", "content": "u"},
                    {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "f", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "c1", "content": "r"}
                ]),
            ),
        ),
        ("max_tokens 1", with("max_tokens", json!(1))),
        ("equal token limits", {
            let mut body = base();
            body["max_tokens"] = json!(10);
            body["max_completion_tokens"] = json!(10);
            serde_json::to_vec(&body).unwrap()
        }),
        ("temperature 2", with("temperature", json!(2))),
        ("temperature 0", with("temperature", json!(0))),
        ("n 1", with("n", json!(1))),
        ("modalities text", with("modalities", json!(["text"]))),
        ("stop null", with("stop", Value::Null)),
        ("stop []", with("stop", json!([]))),
        ("stop END", with("stop", json!("END"))),
        ("reasoning null", with("reasoning", Value::Null)),
        ("equal efforts", {
            let mut body = base();
            body["reasoning_effort"] = json!("low");
            body["reasoning"] = json!({"effort": "low"});
            serde_json::to_vec(&body).unwrap()
        }),
        ("unknown top-level field", with("x_custom", json!(1))),
        ("store", with("store", json!(true))),
        (
            "refusal part in an assistant message",
            with(
                "messages",
                json!([{"role": "user", "content": "hi"},
                       {"role": "assistant", "content": [{"type": "refusal", "refusal": "no"}]},
                       {"role": "user", "content": "why?"}]),
            ),
        ),
        (
            "bare image_url",
            part(json!({"type": "image_url", "image_url": "https://img.example/a.png"})),
        ),
        (
            "input_image file_id",
            part(json!({"type": "input_image", "file_id": "file_1"})),
        ),
        (
            "image url source",
            part(
                json!({"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}}),
            ),
        ),
        (
            "data URL",
            part(
                json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}),
            ),
        ),
        (
            "stream_options",
            with("stream_options", json!({"include_usage": true})),
        ),
        (
            "thinking",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 2048}),
            ),
        ),
    ];
    rejection::check_accepted(parse_request, &accepted);
}

#[test]
fn string_or_array_fields_say_what_they_expect() {
    let cases = [
        (
            message(json!({"role": "user", "content": 5})),
            "messages[0].content",
            "invalid type: integer `5`, expected a string, null, or an array of content parts",
        ),
        (
            with("stop", json!(5)),
            "stop",
            "invalid type: integer `5`, expected a string, an array of strings, or null",
        ),
        (
            with("stop", json!(["a", 1])),
            "stop[1]",
            "invalid type: integer `1`, expected a string",
        ),
    ];
    for (body, param, text) in cases {
        let err = parse_request(&body).unwrap_err();
        assert_eq!(err.param.as_deref(), Some(param));
        assert!(err.message.contains(text), "{param}: {}", err.message);
    }
}

/// B-27, GP-50: `n` is the protocol's field. The codec carries it
/// (`Sampling::choices`) instead of refusing it; the gateway refuses other
/// than 1 (`router-core`'s `several_choices_are_refused_naming_n`), and
/// every supplier encoder refuses to encode it
/// (`several_choices_are_not_encoded` in `supplier_replies.rs`).
#[test]
fn n_is_carried_for_the_caller_to_decide() {
    for n in [0, 1, 2] {
        let request = parse_request(&with("n", json!(n))).unwrap();
        assert_eq!(request.sampling.choices, Some(n));
    }
    let request = parse_request(&serde_json::to_vec(&base()).unwrap()).unwrap();
    assert_eq!(request.sampling.choices, None);
}
