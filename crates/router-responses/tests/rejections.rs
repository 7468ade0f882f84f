//! Every 400 rule of `POST /v1/responses` with the `param` it must name, and
//! the boundaries that must pass (requirements C-01..C-16, F-18..F-28,
//! CF-01/07/09, GP-49).
//!
//! Long by design: one table of cases per rule set, each case a line or two.

use router_canonical::{Protocol, ResponseFormat, Role};
use router_responses::{ApiError, Request, ResponsesClient};
use router_wire_testkit::codecs;
use router_wire_testkit::rejection;
use serde_json::{Value, json};

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&ResponsesClient, &(), body)
}

fn base() -> Value {
    json!({"model": "m", "input": [{"role": "user", "content": "hi"}]})
}

/// The base request with one top-level field set.
fn with(field: &str, value: Value) -> Vec<u8> {
    rejection::with(base(), field, value)
}

/// The base request whose single input item is `item`.
fn item(item: Value) -> Vec<u8> {
    with("input", json!([item]))
}

/// A user message whose single content part is `part`.
fn part(part: Value) -> Vec<u8> {
    item(json!({"role": "user", "content": [part]}))
}

/// An assistant message whose single content part is `part`.
fn assistant_part(part: Value) -> Vec<u8> {
    item(json!({"role": "assistant", "content": [part]}))
}

fn without(field: &str) -> Vec<u8> {
    rejection::without(base(), field)
}

fn both(a: (&str, Value), b: (&str, Value)) -> Vec<u8> {
    rejection::with_all(base(), &[a, b])
}

#[test]
fn every_rule_rejects_with_its_param() {
    let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        // body
        ("body not JSON", b"{".to_vec(), None),
        ("body not an object", b"42".to_vec(), None),
        ("body an array", b"[]".to_vec(), None),
        ("trailing garbage", b"{\"model\":\"m\"} x".to_vec(), None),
        // model and input (C-02, F-18)
        ("model missing", without("model"), Some("model")),
        ("model not a string", with("model", json!(5)), Some("model")),
        ("input missing", without("input"), Some("input")),
        ("input null", with("input", Value::Null), Some("input")),
        // C-03
        ("input 5", with("input", json!(5)), Some("input")),
        ("input an object", with("input", json!({})), Some("input")),
        ("input [5]", with("input", json!([5])), Some("input[0]")),
        // GP-49
        ("input []", with("input", json!([])), Some("input")),
        (
            "message without content",
            item(json!({"role": "user"})),
            Some("input[0].content"),
        ),
        (
            "message content 5",
            item(json!({"role": "user", "content": 5})),
            Some("input[0].content"),
        ),
        (
            "message content null",
            item(json!({"role": "user", "content": null})),
            Some("input[0].content"),
        ),
        (
            "message content {}",
            item(json!({"role": "user", "content": {}})),
            Some("input[0].content"),
        ),
        (
            "message without role",
            item(json!({"content": "hi"})),
            Some("input[0].role"),
        ),
        (
            "role tool",
            item(json!({"role": "tool", "content": "hi"})),
            Some("input[0].role"),
        ),
        (
            "type not a string",
            item(json!({"type": 1, "role": "user", "content": "hi"})),
            Some("input[0].type"),
        ),
        (
            "second item content",
            with(
                "input",
                json!([
                    {"role": "user", "content": "a"},
                    {"role": "assistant", "content": "b"},
                    {"role": "user", "content": true}
                ]),
            ),
            Some("input[2].content"),
        ),
        // statelessness (C-11, GP-49, CF-07)
        (
            "item_reference",
            item(json!({"type": "item_reference", "id": "msg_123"})),
            Some("input[0]"),
        ),
        (
            "item_reference without type",
            item(json!({"id": "msg_123"})),
            Some("input[0]"),
        ),
        (
            "previous_response_id",
            with("previous_response_id", json!("resp_x")),
            Some("previous_response_id"),
        ),
        (
            "previous_response_id 5",
            with("previous_response_id", json!(5)),
            Some("previous_response_id"),
        ),
        (
            "conversation id",
            with("conversation", json!("conv_1")),
            Some("conversation"),
        ),
        (
            "conversation object",
            with("conversation", json!({"id": "conv_1"})),
            Some("conversation"),
        ),
        ("store true", with("store", json!(true)), Some("store")),
        (
            "store \"false\"",
            with("store", json!("false")),
            Some("store"),
        ),
        ("store 0", with("store", json!(0)), Some("store")),
        (
            "background true",
            with("background", json!(true)),
            Some("background"),
        ),
        (
            "stored prompt",
            with("prompt", json!({"id": "pmpt_1"})),
            Some("prompt"),
        ),
        // hosted-tool and unknown items (CF-08)
        (
            "web_search_call item",
            item(json!({"type": "web_search_call", "id": "ws_1", "status": "completed"})),
            Some("input[0].type"),
        ),
        (
            "computer_call_output item",
            item(json!({"type": "computer_call_output", "call_id": "c", "output": {}})),
            Some("input[0].type"),
        ),
        // function_call and function_call_output items
        (
            "function_call without call_id",
            item(json!({"type": "function_call", "name": "f", "arguments": "{}"})),
            Some("input[0].call_id"),
        ),
        (
            "function_call without name",
            item(json!({"type": "function_call", "call_id": "c", "arguments": "{}"})),
            Some("input[0].name"),
        ),
        (
            "function_call arguments object",
            item(json!({"type": "function_call", "call_id": "c", "name": "f", "arguments": {}})),
            Some("input[0].arguments"),
        ),
        (
            "function_call_output without output",
            item(json!({"type": "function_call_output", "call_id": "c"})),
            Some("input[0].output"),
        ),
        (
            "function_call_output call_id 5",
            item(json!({"type": "function_call_output", "call_id": 5, "output": "x"})),
            Some("input[0].call_id"),
        ),
        (
            "function_call_output output 5",
            item(json!({"type": "function_call_output", "call_id": "c", "output": 5})),
            Some("input[0].output"),
        ),
        (
            "function_call_output with a file",
            item(
                json!({"type": "function_call_output", "call_id": "c", "output": [{"type": "input_file", "file_id": "f"}]}),
            ),
            Some("input[0].output[0].type"),
        ),
        (
            "function_call_output text 1",
            item(
                json!({"type": "function_call_output", "call_id": "c", "output": [{"type": "input_text", "text": 1}]}),
            ),
            Some("input[0].output[0].text"),
        ),
        (
            "function_call_output refusal",
            item(
                json!({"type": "function_call_output", "call_id": "c", "output": [{"type": "refusal", "refusal": "no"}]}),
            ),
            Some("input[0].output[0].type"),
        ),
        // reasoning items
        (
            "reasoning summary not a list",
            item(json!({"type": "reasoning", "summary": "x"})),
            Some("input[0].summary"),
        ),
        (
            "reasoning summary text 1",
            item(json!({"type": "reasoning", "summary": [{"type": "summary_text", "text": 1}]})),
            Some("input[0].summary[0].text"),
        ),
        (
            "reasoning encrypted_content 1",
            item(json!({"type": "reasoning", "summary": [], "encrypted_content": 1})),
            Some("input[0].encrypted_content"),
        ),
        // content parts
        (
            "part not an object",
            part(json!(1)),
            Some("input[0].content[0]"),
        ),
        (
            "part without type",
            part(json!({"text": "a"})),
            Some("input[0].content[0].type"),
        ),
        (
            "part type not a string",
            part(json!({"type": 1})),
            Some("input[0].content[0].type"),
        ),
        (
            "input_text without text",
            part(json!({"type": "input_text"})),
            Some("input[0].content[0].text"),
        ),
        (
            "input_text text 1",
            part(json!({"type": "input_text", "text": 1})),
            Some("input[0].content[0].text"),
        ),
        (
            "second item's part text 1",
            with(
                "input",
                json!([
                    {"role": "user", "content": "a"},
                    {"role": "user", "content": [{"type": "input_text", "text": "ok"}, {"type": "input_text", "text": 1}]}
                ]),
            ),
            Some("input[1].content[1].text"),
        ),
        (
            "cache_control not an object",
            part(json!({"type": "input_text", "text": "a", "cache_control": "x"})),
            Some("input[0].content[0].cache_control"),
        ),
        (
            "unknown part type",
            part(json!({"type": "future_part"})),
            Some("input[0].content[0].type"),
        ),
        (
            "output_text in a user message",
            part(json!({"type": "output_text", "text": "a"})),
            Some("input[0].content[0].type"),
        ),
        (
            "refusal in a user message",
            part(json!({"type": "refusal", "refusal": "no"})),
            Some("input[0].content[0].type"),
        ),
        (
            "refusal without refusal",
            assistant_part(json!({"type": "refusal"})),
            Some("input[0].content[0].refusal"),
        ),
        (
            "image in an assistant message",
            assistant_part(
                json!({"type": "input_image", "image_url": "https://img.example/a.png"}),
            ),
            Some("input[0].content[0].type"),
        ),
        // media parts (CF-09)
        (
            "input_file part",
            part(json!({"type": "input_file", "file_id": "f"})),
            Some("input[0].content[0].type"),
        ),
        (
            "input_audio part",
            part(json!({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}})),
            Some("input[0].content[0].type"),
        ),
        (
            "file part",
            part(json!({"type": "file", "file": {"file_id": "f"}})),
            Some("input[0].content[0].type"),
        ),
        (
            "video_url part",
            part(json!({"type": "video_url", "video_url": {"url": "https://img.example/v.mp4"}})),
            Some("input[0].content[0].type"),
        ),
        // images (C-12, GP-02)
        (
            "input_image without source",
            part(json!({"type": "input_image"})),
            Some("input[0].content[0].image_url"),
        ),
        (
            "input_image with both",
            part(
                json!({"type": "input_image", "image_url": "https://img.example/a.png", "file_id": "f"}),
            ),
            Some("input[0].content[0]"),
        ),
        (
            "input_image url object",
            part(json!({"type": "input_image", "image_url": {"url": "https://img.example/a.png"}})),
            Some("input[0].content[0].image_url"),
        ),
        (
            "input_image ftp",
            part(json!({"type": "input_image", "image_url": "ftp://x/a.png"})),
            Some("input[0].content[0].image_url"),
        ),
        (
            "input_image data text/plain",
            part(json!({"type": "input_image", "image_url": "data:text/plain;base64,aGk="})),
            Some("input[0].content[0].image_url"),
        ),
        (
            "input_image detail 1",
            part(
                json!({"type": "input_image", "image_url": "https://img.example/a.png", "detail": 1}),
            ),
            Some("input[0].content[0].detail"),
        ),
        (
            "image_url part ftp",
            part(json!({"type": "image_url", "image_url": {"url": "ftp://x/a.png"}})),
            Some("input[0].content[0].image_url.url"),
        ),
        (
            "image part bmp",
            part(
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/bmp", "data": "AA=="}}),
            ),
            Some("input[0].content[0].source.media_type"),
        ),
        // instructions (C-05)
        (
            "instructions 1",
            with("instructions", json!(1)),
            Some("instructions"),
        ),
        (
            "instructions as items",
            with("instructions", json!([{"role": "system", "content": "x"}])),
            Some("instructions"),
        ),
        // max_output_tokens (C-06)
        (
            "max_output_tokens 0",
            with("max_output_tokens", json!(0)),
            Some("max_output_tokens"),
        ),
        (
            "max_output_tokens -1",
            with("max_output_tokens", json!(-1)),
            Some("max_output_tokens"),
        ),
        (
            "max_output_tokens 1.5",
            with("max_output_tokens", json!(1.5)),
            Some("max_output_tokens"),
        ),
        (
            "max_output_tokens \"16\"",
            with("max_output_tokens", json!("16")),
            Some("max_output_tokens"),
        ),
        // sampling (C-14, CF-01)
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
        // tools (C-07)
        ("tools {}", with("tools", json!({})), Some("tools")),
        ("tools [1]", with("tools", json!([1])), Some("tools[0]")),
        (
            "tool without type",
            with("tools", json!([{"name": "f"}])),
            Some("tools[0].type"),
        ),
        (
            "web_search tool",
            with("tools", json!([{"type": "web_search"}])),
            Some("tools[0].type"),
        ),
        (
            "file_search tool",
            with(
                "tools",
                json!([{"type": "function", "name": "f"}, {"type": "file_search", "vector_store_ids": ["vs_1"]}]),
            ),
            Some("tools[1].type"),
        ),
        (
            "code_interpreter tool",
            with(
                "tools",
                json!([{"type": "code_interpreter", "container": {"type": "auto"}}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "mcp tool",
            with(
                "tools",
                json!([{"type": "mcp", "server_label": "x", "server_url": "https://x"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "image_generation tool",
            with("tools", json!([{"type": "image_generation"}])),
            Some("tools[0].type"),
        ),
        (
            "computer_use_preview tool",
            with(
                "tools",
                json!([{"type": "computer_use_preview", "display_width": 1, "display_height": 1, "environment": "linux"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "Chat-shaped function tool",
            with(
                "tools",
                json!([{"type": "function", "function": {"name": "f"}}]),
            ),
            Some("tools[0].name"),
        ),
        (
            "name 1",
            with("tools", json!([{"type": "function", "name": 1}])),
            Some("tools[0].name"),
        ),
        (
            "parameters not an object",
            with(
                "tools",
                json!([{"type": "function", "name": "f", "parameters": "x"}]),
            ),
            Some("tools[0].parameters"),
        ),
        (
            "strict \"yes\"",
            with(
                "tools",
                json!([{"type": "function", "name": "f", "strict": "yes"}]),
            ),
            Some("tools[0].strict"),
        ),
        // tool_choice
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
            "tool_choice hosted",
            with("tool_choice", json!({"type": "web_search_preview"})),
            Some("tool_choice.type"),
        ),
        (
            "tool_choice allowed_tools",
            with(
                "tool_choice",
                json!({"type": "allowed_tools", "mode": "auto", "tools": []}),
            ),
            Some("tool_choice.type"),
        ),
        (
            "tool_choice function without name",
            with("tool_choice", json!({"type": "function"})),
            Some("tool_choice.name"),
        ),
        (
            "parallel_tool_calls \"yes\"",
            with("parallel_tool_calls", json!("yes")),
            Some("parallel_tool_calls"),
        ),
        // reasoning (C-08, C-09)
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
            "reasoning_effort 3",
            with("reasoning_effort", json!(3)),
            Some("reasoning_effort"),
        ),
        (
            "efforts differ",
            both(
                ("reasoning_effort", json!("low")),
                ("reasoning", json!({"effort": "high"})),
            ),
            Some("reasoning_effort"),
        ),
        // text.format
        ("text \"json\"", with("text", json!("json")), Some("text")),
        (
            "format without type",
            with("text", json!({"format": {}})),
            Some("text.format.type"),
        ),
        (
            "format unknown type",
            with("text", json!({"format": {"type": "grammar"}})),
            Some("text.format.type"),
        ),
        (
            "json_schema without name",
            with(
                "text",
                json!({"format": {"type": "json_schema", "schema": {"type": "object"}}}),
            ),
            Some("text.format.name"),
        ),
        (
            "json_schema without schema",
            with(
                "text",
                json!({"format": {"type": "json_schema", "name": "x"}}),
            ),
            Some("text.format.schema"),
        ),
        (
            "json_schema schema not an object",
            with(
                "text",
                json!({"format": {"type": "json_schema", "name": "x", "schema": "s"}}),
            ),
            Some("text.format.schema"),
        ),
        (
            "Chat-shaped json_schema",
            with(
                "text",
                json!({"format": {"type": "json_schema", "json_schema": {"name": "x", "schema": {}}}}),
            ),
            Some("text.format.name"),
        ),
        (
            "verbosity 1",
            with("text", json!({"verbosity": 1})),
            Some("text.verbosity"),
        ),
        // stream (F-19)
        (
            "stream \"yes\"",
            with("stream", json!("yes")),
            Some("stream"),
        ),
        // end user
        ("user 5", with("user", json!(5)), Some("user")),
        (
            "safety_identifier 5",
            with("safety_identifier", json!(5)),
            Some("safety_identifier"),
        ),
        // common routing fields (C-16, F-21, F-26)
        (
            "min_discount_percent 100",
            with("min_discount_percent", json!(100)),
            Some("min_discount_percent"),
        ),
        (
            "min_discount_percent \"5\"",
            with("min_discount_percent", json!("5")),
            Some("min_discount_percent"),
        ),
        ("zdr \"true\"", with("zdr", json!("true")), Some("zdr")),
        // vetted passthrough fields
        ("metadata []", with("metadata", json!([])), Some("metadata")),
        (
            "include \"x\"",
            with("include", json!("reasoning.encrypted_content")),
            Some("include"),
        ),
        (
            "top_logprobs 21",
            with("top_logprobs", json!(21)),
            Some("top_logprobs"),
        ),
        (
            "truncation 1",
            with("truncation", json!(1)),
            Some("truncation"),
        ),
    ];

    rejection::check_rejected(parse_request, &cases);
}

#[test]
fn the_boundaries_of_each_rule_are_accepted() {
    let accepted: Vec<(&str, Vec<u8>)> = vec![
        // C-01, C-04, CF-07
        ("store false", with("store", json!(false))),
        ("store omitted", base().to_string().into_bytes()),
        ("store null", with("store", Value::Null)),
        ("input a string", with("input", json!("hi"))),
        (
            "input_text parts (C-03)",
            item(json!({"role": "user", "content": [{"type": "input_text", "text": "hi"}]})),
        ),
        (
            "each role",
            with(
                "input",
                json!([
                    {"role": "system", "content": "s"},
                    {"role": "developer", "content": "d"},
                    {"type": "message", "role": "user", "content": "u"},
                    {"role": "assistant", "content": "a"}
                ]),
            ),
        ),
        // C-05, C-06
        ("instructions", with("instructions", json!("Be brief"))),
        ("instructions null", with("instructions", Value::Null)),
        ("max_output_tokens 1", with("max_output_tokens", json!(1))),
        (
            "max_output_tokens null",
            with("max_output_tokens", Value::Null),
        ),
        // C-13, F-28
        ("unknown top-level field", with("x_custom", json!(1))),
        ("service_tier", with("service_tier", json!("priority"))),
        ("background false", with("background", json!(false))),
        (
            "previous_response_id null",
            with("previous_response_id", Value::Null),
        ),
        ("conversation null", with("conversation", Value::Null)),
        // C-08, C-09
        ("reasoning null", with("reasoning", Value::Null)),
        ("reasoning {}", with("reasoning", json!({}))),
        (
            "equal efforts",
            both(
                ("reasoning_effort", json!("low")),
                ("reasoning", json!({"effort": "low"})),
            ),
        ),
        (
            "effort alias alone",
            with("reasoning_effort", json!("minimal")),
        ),
        // C-14
        ("temperature 2", with("temperature", json!(2))),
        ("temperature 0", with("temperature", json!(0))),
        // C-16, F-21
        (
            "min_discount_percent 99.99",
            with("min_discount_percent", json!(99.99)),
        ),
        ("zdr true (routing decides)", with("zdr", json!(true))),
        // GP-49: the accepted item types
        (
            "function call turn",
            with(
                "input",
                json!([
                    {"role": "user", "content": "q"},
                    {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "e"},
                    {"type": "function_call", "call_id": "c", "name": "f", "arguments": "{}"},
                    {"type": "function_call_output", "call_id": "c", "output": "r"}
                ]),
            ),
        ),
        (
            "replayed assistant output with refusal",
            assistant_part(json!({"type": "refusal", "refusal": "no"})),
        ),
        (
            "replayed output_text with annotations",
            assistant_part(
                json!({"type": "output_text", "text": "a", "annotations": [], "logprobs": []}),
            ),
        ),
        // C-12, GP-02
        (
            "input_image https",
            part(
                json!({"type": "input_image", "image_url": "https://img.example/a.png", "detail": "auto"}),
            ),
        ),
        (
            "input_image file_id",
            part(json!({"type": "input_image", "file_id": "upload_1"})),
        ),
        (
            "input_image data URL",
            part(json!({"type": "input_image", "image_url": "data:image/webp;base64,UklGRg=="})),
        ),
        (
            "image_url part",
            part(json!({"type": "image_url", "image_url": "https://img.example/a.png"})),
        ),
        (
            "image part",
            part(
                json!({"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}}),
            ),
        ),
        (
            "function tool",
            with(
                "tools",
                json!([{"type": "function", "name": "f", "parameters": null, "strict": null}]),
            ),
        ),
        (
            "tool_choice function",
            both(
                ("tools", json!([{"type": "function", "name": "f"}])),
                ("tool_choice", json!({"type": "function", "name": "f"})),
            ),
        ),
        (
            "tool_choice required",
            with("tool_choice", json!("required")),
        ),
        (
            "text format text",
            with("text", json!({"format": {"type": "text"}})),
        ),
        (
            "text format json_object",
            with("text", json!({"format": {"type": "json_object"}})),
        ),
        (
            "include",
            with("include", json!(["reasoning.encrypted_content"])),
        ),
        ("stream true", with("stream", json!(true))),
    ];
    rejection::check_accepted(parse_request, &accepted);
}

#[test]
fn what_the_parser_keeps() {
    // C-09: the alias alone is the effort; equal values are one effort.
    let req = parse_request(&with("reasoning_effort", json!("minimal"))).unwrap();
    assert_eq!(req.reasoning.effort.as_deref(), Some("minimal"));
    // C-08: no effort is ever synthesized.
    let req = parse_request(&with("reasoning", Value::Null)).unwrap();
    assert_eq!(req.reasoning.effort, None);
    // C-06: null is omitted.
    let req = parse_request(&with("max_output_tokens", Value::Null)).unwrap();
    assert_eq!(req.sampling.max_output_tokens, None);
    // Every request is marked as a Responses one.
    assert_eq!(req.inbound, Some(Protocol::Responses));
    // C-13: unknown fields are dropped; vetted ones kept natively.
    let req = parse_request(&both(
        ("x_custom", json!(1)),
        ("metadata", json!({"k": "v"})),
    ))
    .unwrap();
    let native = req.native.unwrap();
    assert_eq!(native.protocol, Some(Protocol::Responses));
    assert_eq!(native.fields.keys().collect::<Vec<_>>(), ["metadata"]);
    // service_tier and background are never forwarded.
    let req = parse_request(&both(
        ("service_tier", json!("priority")),
        ("background", json!(false)),
    ))
    .unwrap();
    assert!(req.native.is_none());
    // Common routing fields are read like on every surface (C-16).
    let (_, routing) =
        codecs::parse_routed(&ResponsesClient, &(), &with("zdr", json!(true))).unwrap();
    assert!(routing.zdr);
    // `user`, else `safety_identifier`, is the end user.
    let req = parse_request(&with("safety_identifier", json!("u-1"))).unwrap();
    assert_eq!(req.end_user.as_deref(), Some("u-1"));
    // A refusal part is only carried natively.
    let req = parse_request(&assistant_part(json!({"type": "refusal", "refusal": "no"}))).unwrap();
    assert_eq!(req.native_only.as_deref(), Some("input[0].content[0]"));
    // json_object format.
    let req = parse_request(&with("text", json!({"format": {"type": "json_object"}}))).unwrap();
    assert_eq!(req.response_format, Some(ResponseFormat::JsonObject));
    // instructions lead as a system message.
    let req = parse_request(&with("instructions", json!("Be brief"))).unwrap();
    assert_eq!(req.messages[0].role, Role::System);
    assert_eq!(req.messages[0].joined_text(), "Be brief");
}

#[test]
fn string_or_array_members_say_what_they_expect() {
    let err = parse_request(&with("input", json!(5))).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("input"));
    assert!(
        err.message
            .contains("expected a string or an array of input items"),
        "{}",
        err.message
    );
    let err = parse_request(&item(json!({"role": "user", "content": 5}))).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("input[0].content"));
    assert!(
        err.message
            .contains("expected a string or an array of content parts"),
        "{}",
        err.message
    );
    // An element of the array is named by its index.
    let err = parse_request(&item(json!({"role": "user", "content": [5]}))).unwrap_err();
    assert_eq!(err.param.as_deref(), Some("input[0].content[0]"));
}
