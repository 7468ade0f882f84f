//! Every 400 rule of `POST /v1/messages` and `/v1/messages/count_tokens`
//! (D-03..D-28, D-38, D-40, CF-03, CF-05, CF-21, CF-22) with the `param` it
//! must name, the boundaries that must be accepted, what pins a request to
//! a native route (GP-53, D-26), and the header rules (D-03..D-05, D-07).
//!
//! Long by design: one table of cases per rule set, each case a line or two.

use router_canonical::{ErrorCode, ToolChoice};
use router_messages::{ApiError, ClientCodec, HeaderSource, MessagesClient, Request};
use router_wire_testkit::RoutingOptions;
use router_wire_testkit::codecs;
use router_wire_testkit::rejection;
use serde_json::{Value, json};

/// The headers of a call, by lower-case name.
#[derive(Debug, Clone, Copy)]
struct Headers<'a> {
    content_type: Option<&'a str>,
    version: Option<&'a str>,
    beta: Option<&'a str>,
    browser: Option<&'a str>,
}

impl HeaderSource for Headers<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        match name {
            "content-type" => self.content_type,
            "anthropic-version" => self.version,
            "anthropic-beta" => self.beta,
            "anthropic-dangerous-direct-browser-access" => self.browser,
            _ => None,
        }
    }
}

/// A JSON body with the supported version and no other header.
const JSON: Headers<'static> = Headers {
    content_type: Some("application/json"),
    version: Some("2023-06-01"),
    beta: None,
    browser: None,
};

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&MessagesClient, &JSON, body)
}

/// As the gateway parses it: the routing fields are validated too.
fn parse_count_tokens(body: &[u8]) -> Result<Request, ApiError> {
    MessagesClient.parse_count_tokens_with(&JSON, body, &mut RoutingOptions::default())
}

fn base() -> Value {
    json!({"model": "m", "max_tokens": 2048, "messages": [{"role": "user", "content": "hi"}]})
}

fn body(value: &Value) -> Vec<u8> {
    rejection::body(value)
}

/// The base request with one top-level field set.
fn with(field: &str, value: Value) -> Vec<u8> {
    rejection::with(base(), field, value)
}

/// The base request with several top-level fields set.
fn with_all(fields: &[(&str, Value)]) -> Vec<u8> {
    rejection::with_all(base(), fields)
}

fn without(field: &str) -> Vec<u8> {
    rejection::without(base(), field)
}

/// The base request whose messages are `messages`.
fn messages(messages: Value) -> Vec<u8> {
    with("messages", messages)
}

/// A user message whose single block is `block`.
fn user_block(block: Value) -> Vec<u8> {
    messages(json!([{"role": "user", "content": [block]}]))
}

/// A user question, then an assistant message whose single block is `block`.
fn assistant_block(block: Value) -> Vec<u8> {
    messages(json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": [block]}
    ]))
}

fn tool(name: &str) -> Value {
    json!({"name": name, "input_schema": {"type": "object", "properties": {}}})
}

fn tools(n: usize) -> Value {
    Value::Array((0..n).map(|i| tool(&format!("t{i}"))).collect())
}

fn png(media_type: &str) -> Value {
    json!({"type": "image", "source": {"type": "base64", "media_type": media_type, "data": "iVBORw0KGgo="}})
}

fn minimal_messages(n: usize) -> Value {
    Value::Array(
        (0..n)
            .map(|i| json!({"role": if i % 2 == 0 { "user" } else { "assistant" }, "content": "a"}))
            .collect(),
    )
}

#[test]
fn every_messages_rule_rejects_with_its_param() {
    let cases: Vec<rejection::Case> = vec![
        // body (P-07)
        ("body not JSON", b"{".to_vec(), None),
        ("body not an object", b"42".to_vec(), None),
        ("body an array", b"[]".to_vec(), None),
        ("trailing garbage", b"{\"model\":\"m\"} x".to_vec(), None),
        // unknown top-level fields (D-28, CF-03, D-27)
        ("unknown field foo", with("foo", json!(1)), Some("foo")),
        ("top_k", with("top_k", json!(5)), Some("top_k")),
        (
            "service_tier",
            with("service_tier", json!("auto")),
            Some("service_tier"),
        ),
        (
            "mcp_servers",
            with(
                "mcp_servers",
                json!([{"type": "url", "url": "https://mcp.example.com", "name": "x"}]),
            ),
            Some("mcp_servers"),
        ),
        (
            "container",
            with("container", json!("c")),
            Some("container"),
        ),
        ("n", with("n", json!(1)), Some("n")),
        // model (D-08, F-18)
        ("model missing", without("model"), Some("model")),
        ("model 5", with("model", json!(5)), Some("model")),
        // max_tokens (D-08)
        (
            "max_tokens missing",
            without("max_tokens"),
            Some("max_tokens"),
        ),
        (
            "max_tokens 0",
            with("max_tokens", json!(0)),
            Some("max_tokens"),
        ),
        (
            "max_tokens 1.5",
            with("max_tokens", json!(1.5)),
            Some("max_tokens"),
        ),
        (
            "max_tokens -1",
            with("max_tokens", json!(-1)),
            Some("max_tokens"),
        ),
        (
            "max_tokens \"5\"",
            with("max_tokens", json!("5")),
            Some("max_tokens"),
        ),
        // messages (D-09, CF-06)
        ("messages missing", without("messages"), Some("messages")),
        ("messages []", messages(json!([])), Some("messages")),
        ("messages \"hi\"", messages(json!("hi")), Some("messages")),
        (
            "100,001 messages",
            messages(minimal_messages(100_001)),
            Some("messages"),
        ),
        (
            "message not an object",
            messages(json!([1])),
            Some("messages[0]"),
        ),
        (
            "unknown message member",
            messages(json!([{"role": "user", "content": "a", "name": "n"}])),
            Some("messages[0].name"),
        ),
        // role (D-10)
        (
            "role tool",
            messages(json!([{"role": "tool", "content": "a"}])),
            Some("messages[0].role"),
        ),
        (
            "role developer",
            messages(json!([{"role": "developer", "content": "a"}])),
            Some("messages[0].role"),
        ),
        (
            "role missing",
            messages(json!([{"content": "a"}])),
            Some("messages[0].role"),
        ),
        // content (D-11)
        (
            "content 5",
            messages(json!([{"role": "user", "content": 5}])),
            Some("messages[0].content"),
        ),
        (
            "content {}",
            messages(json!([{"role": "user", "content": {}}])),
            Some("messages[0].content"),
        ),
        (
            "content null",
            messages(json!([{"role": "user", "content": null}])),
            Some("messages[0].content"),
        ),
        (
            "content missing",
            messages(json!([{"role": "user"}])),
            Some("messages[0].content"),
        ),
        // system (D-12)
        ("system \"\"", with("system", json!("")), Some("system")),
        ("system 5", with("system", json!(5)), Some("system")),
        (
            "system image block",
            with("system", json!([png("image/png")])),
            Some("system[0].type"),
        ),
        (
            "system text without text",
            with("system", json!([{"type": "text"}])),
            Some("system[0].text"),
        ),
        (
            "system block with citations",
            with(
                "system",
                json!([{"type": "text", "text": "x", "citations": [{"type": "char_location"}]}]),
            ),
            Some("system[0].citations"),
        ),
        // stop_sequences (D-13, CF-22)
        (
            "5 stop sequences",
            with("stop_sequences", json!(["a", "b", "c", "d", "e"])),
            Some("stop_sequences"),
        ),
        (
            "empty stop sequence",
            with("stop_sequences", json!([""])),
            Some("stop_sequences[0]"),
        ),
        (
            "second stop sequence empty",
            with("stop_sequences", json!(["a", ""])),
            Some("stop_sequences[1]"),
        ),
        (
            "stop_sequences null",
            with("stop_sequences", Value::Null),
            Some("stop_sequences"),
        ),
        (
            "stop_sequences string",
            with("stop_sequences", json!("END")),
            Some("stop_sequences"),
        ),
        (
            "stop_sequences [1]",
            with("stop_sequences", json!([1])),
            Some("stop_sequences[0]"),
        ),
        // temperature, top_p (D-14, CF-01)
        (
            "temperature 1.01",
            with("temperature", json!(1.01)),
            Some("temperature"),
        ),
        (
            "temperature -0.1",
            with("temperature", json!(-0.1)),
            Some("temperature"),
        ),
        (
            "temperature 2",
            with("temperature", json!(2)),
            Some("temperature"),
        ),
        (
            "temperature \"1\"",
            with("temperature", json!("1")),
            Some("temperature"),
        ),
        ("top_p -0.1", with("top_p", json!(-0.1)), Some("top_p")),
        ("top_p 1.5", with("top_p", json!(1.5)), Some("top_p")),
        // stream (D-15)
        (
            "stream \"yes\"",
            with("stream", json!("yes")),
            Some("stream"),
        ),
        // tools (D-16, D-17)
        ("129 tools", with("tools", tools(129)), Some("tools")),
        ("tools {}", with("tools", json!({})), Some("tools")),
        ("tools [1]", with("tools", json!([1])), Some("tools[0]")),
        (
            "tool without input_schema",
            with("tools", json!([{"name": "f"}])),
            Some("tools[0].input_schema"),
        ),
        (
            "input_schema \"x\"",
            with("tools", json!([{"name": "f", "input_schema": "x"}])),
            Some("tools[0].input_schema"),
        ),
        (
            "input_schema []",
            with("tools", json!([{"name": "f", "input_schema": []}])),
            Some("tools[0].input_schema"),
        ),
        (
            "tool without name",
            with("tools", json!([{"input_schema": {"type": "object"}}])),
            Some("tools[0].name"),
        ),
        (
            "tool name 5",
            with(
                "tools",
                json!([{"name": 5, "input_schema": {"type": "object"}}]),
            ),
            Some("tools[0].name"),
        ),
        (
            "second tool bad",
            with("tools", json!([tool("a"), {"name": "b"}])),
            Some("tools[1].input_schema"),
        ),
        (
            "web_search tool",
            with(
                "tools",
                json!([{"type": "web_search_20250305", "name": "web_search"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "bash tool",
            with("tools", json!([{"type": "bash_20250124", "name": "bash"}])),
            Some("tools[0].type"),
        ),
        (
            "text_editor tool",
            with(
                "tools",
                json!([{"type": "text_editor_20250728", "name": "str_replace_based_edit_tool"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "computer tool",
            with(
                "tools",
                json!([{"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "code_execution tool",
            with(
                "tools",
                json!([{"type": "code_execution_20250825", "name": "code_execution"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "web_fetch tool",
            with(
                "tools",
                json!([{"type": "web_fetch_20250910", "name": "web_fetch"}]),
            ),
            Some("tools[0].type"),
        ),
        (
            "unknown tool member",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "allowed_callers": []}]),
            ),
            Some("tools[0].allowed_callers"),
        ),
        (
            "eager_input_streaming not a boolean",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": "yes"}]),
            ),
            Some("tools[0].eager_input_streaming"),
        ),
        (
            "input example not an object",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "input_examples": [{"a": 1}, 2]}]),
            ),
            Some("tools[0].input_examples[1]"),
        ),
        (
            "tool cache_control ttl 2h",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral", "ttl": "2h"}}]),
            ),
            Some("tools[0].cache_control.ttl"),
        ),
        // tool_choice (D-18)
        (
            "tool_choice \"auto\"",
            with("tool_choice", json!("auto")),
            Some("tool_choice"),
        ),
        (
            "tool_choice without type",
            with("tool_choice", json!({})),
            Some("tool_choice.type"),
        ),
        (
            "tool_choice required",
            with("tool_choice", json!({"type": "required"})),
            Some("tool_choice.type"),
        ),
        (
            "tool_choice none with disable",
            with(
                "tool_choice",
                json!({"type": "none", "disable_parallel_tool_use": true}),
            ),
            Some("tool_choice.disable_parallel_tool_use"),
        ),
        (
            "tool_choice tool without name",
            with("tool_choice", json!({"type": "tool"})),
            Some("tool_choice.name"),
        ),
        (
            "tool_choice auto with name",
            with("tool_choice", json!({"type": "auto", "name": "f"})),
            Some("tool_choice.name"),
        ),
        (
            "disable \"yes\"",
            with(
                "tool_choice",
                json!({"type": "auto", "disable_parallel_tool_use": "yes"}),
            ),
            Some("tool_choice.disable_parallel_tool_use"),
        ),
        (
            "tool_choice unknown member",
            with("tool_choice", json!({"type": "auto", "x": 1})),
            Some("tool_choice.x"),
        ),
        // thinking (D-19..D-21)
        (
            "thinking true",
            with("thinking", json!(true)),
            Some("thinking"),
        ),
        (
            "thinking type other",
            with("thinking", json!({"type": "other"})),
            Some("thinking.type"),
        ),
        (
            "thinking without type",
            with("thinking", json!({"budget_tokens": 1024})),
            Some("thinking.type"),
        ),
        (
            "enabled without budget",
            with("thinking", json!({"type": "enabled"})),
            Some("thinking.budget_tokens"),
        ),
        (
            "budget 1023",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1023}),
            ),
            Some("thinking.budget_tokens"),
        ),
        (
            "budget == max_tokens",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 2048}),
            ),
            Some("thinking.budget_tokens"),
        ),
        (
            "budget > max_tokens",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 4096}),
            ),
            Some("thinking.budget_tokens"),
        ),
        (
            "budget \"2000\"",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": "2000"}),
            ),
            Some("thinking.budget_tokens"),
        ),
        (
            "adaptive with budget",
            with(
                "thinking",
                json!({"type": "adaptive", "budget_tokens": 1024}),
            ),
            Some("thinking.budget_tokens"),
        ),
        (
            "display updates",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024, "display": "updates"}),
            ),
            Some("thinking.display"),
        ),
        (
            "thinking unknown member",
            with("thinking", json!({"type": "disabled", "x": 1})),
            Some("thinking.x"),
        ),
        (
            "enabled + any",
            with_all(&[
                (
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1024}),
                ),
                ("tool_choice", json!({"type": "any"})),
            ]),
            Some("tool_choice.type"),
        ),
        (
            "enabled + tool",
            with_all(&[
                (
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1024}),
                ),
                ("tool_choice", json!({"type": "tool", "name": "t"})),
            ]),
            Some("tool_choice.type"),
        ),
        (
            "adaptive + any",
            with_all(&[
                ("thinking", json!({"type": "adaptive"})),
                ("tool_choice", json!({"type": "any"})),
            ]),
            Some("tool_choice.type"),
        ),
        // context_management, metadata, output_config (D-23)
        (
            "context_management \"x\"",
            with("context_management", json!("x")),
            Some("context_management"),
        ),
        (
            "metadata \"x\"",
            with("metadata", json!("x")),
            Some("metadata"),
        ),
        (
            "metadata.user_id 5",
            with("metadata", json!({"user_id": 5})),
            Some("metadata.user_id"),
        ),
        (
            "metadata unknown member",
            with("metadata", json!({"team": "a"})),
            Some("metadata.team"),
        ),
        (
            "output_config 5",
            with("output_config", json!(5)),
            Some("output_config"),
        ),
        (
            "output_config.effort 5",
            with("output_config", json!({"effort": 5})),
            Some("output_config.effort"),
        ),
        (
            "output_config.format \"x\"",
            with("output_config", json!({"format": "x"})),
            Some("output_config.format"),
        ),
        (
            "output_config.format json_object",
            with("output_config", json!({"format": {"type": "json_object"}})),
            Some("output_config.format.type"),
        ),
        (
            "output_config.format without schema",
            with("output_config", json!({"format": {"type": "json_schema"}})),
            Some("output_config.format.schema"),
        ),
        // user blocks (D-24, D-27)
        (
            "block not an object",
            user_block(json!(1)),
            Some("messages[0].content[0]"),
        ),
        (
            "block without type",
            user_block(json!({"text": "a"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "block type 1",
            user_block(json!({"type": 1})),
            Some("messages[0].content[0].type"),
        ),
        (
            "unknown block type",
            user_block(json!({"type": "video", "source": {}})),
            Some("messages[0].content[0].type"),
        ),
        (
            "document block",
            user_block(
                json!({"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}),
            ),
            Some("messages[0].content[0].type"),
        ),
        (
            "search_result block",
            user_block(
                json!({"type": "search_result", "source": "s", "title": "t", "content": []}),
            ),
            Some("messages[0].content[0].type"),
        ),
        (
            "container_upload block",
            user_block(json!({"type": "container_upload", "file_id": "f"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "text without text",
            user_block(json!({"type": "text"})),
            Some("messages[0].content[0].text"),
        ),
        (
            "text 1",
            user_block(json!({"type": "text", "text": 1})),
            Some("messages[0].content[0].text"),
        ),
        (
            "non-empty citations",
            user_block(
                json!({"type": "text", "text": "a", "citations": [{"type": "char_location", "cited_text": "a"}]}),
            ),
            Some("messages[0].content[0].citations"),
        ),
        (
            "citations \"x\"",
            user_block(json!({"type": "text", "text": "a", "citations": "x"})),
            Some("messages[0].content[0].citations"),
        ),
        (
            "unknown text member",
            user_block(json!({"type": "text", "text": "a", "x": 1})),
            Some("messages[0].content[0].x"),
        ),
        (
            "cache_control \"x\"",
            user_block(json!({"type": "text", "text": "a", "cache_control": "x"})),
            Some("messages[0].content[0].cache_control"),
        ),
        (
            "cache_control type persistent",
            user_block(
                json!({"type": "text", "text": "a", "cache_control": {"type": "persistent"}}),
            ),
            Some("messages[0].content[0].cache_control.type"),
        ),
        (
            "cache_control ttl 2h",
            user_block(
                json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "2h"}}),
            ),
            Some("messages[0].content[0].cache_control.ttl"),
        ),
        (
            "image bmp",
            user_block(png("image/bmp")),
            Some("messages[0].content[0].source.media_type"),
        ),
        (
            "image media_type missing",
            user_block(json!({"type": "image", "source": {"type": "base64", "data": "AA=="}})),
            Some("messages[0].content[0].source.media_type"),
        ),
        (
            "image without source",
            user_block(json!({"type": "image"})),
            Some("messages[0].content[0].source"),
        ),
        (
            "image unknown source type",
            user_block(json!({"type": "image", "source": {"type": "blob"}})),
            Some("messages[0].content[0].source.type"),
        ),
        (
            "image ftp url",
            user_block(json!({"type": "image", "source": {"type": "url", "url": "ftp://x/a.png"}})),
            Some("messages[0].content[0].source.url"),
        ),
        (
            "image data: url source",
            user_block(
                json!({"type": "image", "source": {"type": "url", "url": "data:image/png;base64,AA=="}}),
            ),
            Some("messages[0].content[0].source.url"),
        ),
        (
            "image source unknown member",
            user_block(
                json!({"type": "image", "source": {"type": "url", "url": "https://img.example/a.png", "x": 1}}),
            ),
            Some("messages[0].content[0].source.x"),
        ),
        (
            "user tool_use",
            user_block(json!({"type": "tool_use", "id": "t", "name": "f", "input": {}})),
            Some("messages[0].content[0].type"),
        ),
        (
            "user thinking",
            user_block(json!({"type": "thinking", "thinking": "t", "signature": "s"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "user redacted_thinking",
            user_block(json!({"type": "redacted_thinking", "data": "d"})),
            Some("messages[0].content[0].type"),
        ),
        (
            "tool_result without tool_use_id",
            user_block(json!({"type": "tool_result", "content": "x"})),
            Some("messages[0].content[0].tool_use_id"),
        ),
        (
            "tool_result content 5",
            user_block(json!({"type": "tool_result", "tool_use_id": "t", "content": 5})),
            Some("messages[0].content[0].content"),
        ),
        (
            "tool_result is_error \"yes\"",
            user_block(json!({"type": "tool_result", "tool_use_id": "t", "is_error": "yes"})),
            Some("messages[0].content[0].is_error"),
        ),
        (
            "tool_result document",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "document", "source": {}}]}),
            ),
            Some("messages[0].content[0].content[0].type"),
        ),
        (
            "tool_result tool_use",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]}),
            ),
            Some("messages[0].content[0].content[0].type"),
        ),
        (
            "tool_result image bmp",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [png("image/bmp")]}),
            ),
            Some("messages[0].content[0].content[0].source.media_type"),
        ),
        (
            "tool_result text citations",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "a", "citations": [{}]}]}),
            ),
            Some("messages[0].content[0].content[0].citations"),
        ),
        (
            "path of a later message",
            messages(json!([
                {"role": "user", "content": "a"},
                {"role": "assistant", "content": "b"},
                {"role": "user", "content": [{"type": "text", "text": "c"}, png("image/tiff")]}
            ])),
            Some("messages[2].content[1].source.media_type"),
        ),
        // assistant blocks (D-25)
        (
            "assistant server_tool_use",
            assistant_block(
                json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}),
            ),
            Some("messages[1].content[0].type"),
        ),
        (
            "assistant web_search_tool_result",
            assistant_block(
                json!({"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []}),
            ),
            Some("messages[1].content[0].type"),
        ),
        (
            "assistant mcp_tool_use",
            assistant_block(
                json!({"type": "mcp_tool_use", "id": "m", "name": "n", "server_name": "s", "input": {}}),
            ),
            Some("messages[1].content[0].type"),
        ),
        (
            "assistant image",
            assistant_block(png("image/png")),
            Some("messages[1].content[0].type"),
        ),
        (
            "assistant tool_result",
            assistant_block(json!({"type": "tool_result", "tool_use_id": "t"})),
            Some("messages[1].content[0].type"),
        ),
        (
            "tool_use input \"x\"",
            assistant_block(json!({"type": "tool_use", "id": "t", "name": "f", "input": "x"})),
            Some("messages[1].content[0].input"),
        ),
        (
            "tool_use without id",
            assistant_block(json!({"type": "tool_use", "name": "f", "input": {}})),
            Some("messages[1].content[0].id"),
        ),
        (
            "tool_use without input",
            assistant_block(json!({"type": "tool_use", "id": "t", "name": "f"})),
            Some("messages[1].content[0].input"),
        ),
        (
            "thinking without signature",
            assistant_block(json!({"type": "thinking", "thinking": "t"})),
            Some("messages[1].content[0].signature"),
        ),
        (
            "redacted_thinking without data",
            assistant_block(json!({"type": "redacted_thinking"})),
            Some("messages[1].content[0].data"),
        ),
        // a system turn holds text only
        (
            "system turn image",
            messages(json!([{"role": "system", "content": [png("image/png")]}])),
            Some("messages[0].content[0].type"),
        ),
        // common routing fields (F-21, F-26)
        (
            "min_discount_percent 100",
            with("min_discount_percent", json!(100)),
            Some("min_discount_percent"),
        ),
        ("zdr \"true\"", with("zdr", json!("true")), Some("zdr")),
    ];
    rejection::check_rejected(parse_request, &cases);
}

#[test]
fn every_count_tokens_rule_rejects_with_its_param() {
    let count = |fields: &[(&str, Value)], remove: &[&str]| {
        let mut b = base();
        let map = b.as_object_mut().unwrap();
        map.remove("max_tokens");
        for field in remove {
            map.remove(*field);
        }
        for (field, value) in fields {
            map.insert((*field).to_owned(), value.clone());
        }
        body(&b)
    };
    let cases: Vec<rejection::Case> = vec![
        ("body not JSON", b"{".to_vec(), None),
        ("model missing", count(&[], &["model"]), Some("model")),
        (
            "messages missing",
            count(&[], &["messages"]),
            Some("messages"),
        ),
        (
            "messages []",
            count(&[("messages", json!([]))], &[]),
            Some("messages"),
        ),
        (
            "role tool",
            count(
                &[("messages", json!([{"role": "tool", "content": "a"}]))],
                &[],
            ),
            Some("messages[0].role"),
        ),
        (
            "content 5",
            count(
                &[("messages", json!([{"role": "user", "content": 5}]))],
                &[],
            ),
            Some("messages[0].content"),
        ),
        (
            "system 5",
            count(&[("system", json!(5))], &[]),
            Some("system"),
        ),
        (
            "system image",
            count(&[("system", json!([png("image/png")]))], &[]),
            Some("system[0].type"),
        ),
        (
            "tools {}",
            count(&[("tools", json!({}))], &[]),
            Some("tools"),
        ),
        (
            "tools [1]",
            count(&[("tools", json!([1]))], &[]),
            Some("tools[0]"),
        ),
        // CF-04, D-40: media and opaque history cannot be counted locally
        (
            "image block",
            count(
                &[(
                    "messages",
                    json!([{"role": "user", "content": [png("image/png")]}]),
                )],
                &[],
            ),
            Some("messages[0].content[0].type"),
        ),
        (
            "image in a tool_result",
            count(
                &[(
                    "messages",
                    json!([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [png("image/png")]}]}]),
                )],
                &[],
            ),
            Some("messages[0].content[0].content[0].type"),
        ),
        (
            "document block",
            count(
                &[(
                    "messages",
                    json!([{"role": "user", "content": [{"type": "document"}]}]),
                )],
                &[],
            ),
            Some("messages[0].content[0].type"),
        ),
        (
            "thinking block",
            count(
                &[(
                    "messages",
                    json!([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}]),
                )],
                &[],
            ),
            Some("messages[1].content[0].type"),
        ),
        (
            "redacted_thinking block",
            count(
                &[(
                    "messages",
                    json!([{"role": "user", "content": "q"}, {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "d"}]}]),
                )],
                &[],
            ),
            Some("messages[1].content[0].type"),
        ),
        // only the count body is accepted (CF-03)
        (
            "unknown field",
            count(&[("foo", json!(1))], &[]),
            Some("foo"),
        ),
        (
            "temperature",
            count(&[("temperature", json!(0.5))], &[]),
            Some("temperature"),
        ),
        (
            "stop_sequences",
            count(&[("stop_sequences", json!(["x"]))], &[]),
            Some("stop_sequences"),
        ),
        (
            "stream",
            count(&[("stream", json!(false))], &[]),
            Some("stream"),
        ),
        (
            "metadata",
            count(&[("metadata", json!({}))], &[]),
            Some("metadata"),
        ),
        (
            "max_tokens 0",
            count(&[("max_tokens", json!(0))], &[]),
            Some("max_tokens"),
        ),
        (
            "thinking budget 1023",
            count(
                &[(
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1023}),
                )],
                &[],
            ),
            Some("thinking.budget_tokens"),
        ),
    ];
    rejection::check_rejected(parse_count_tokens, &cases);
}

#[test]
fn the_boundaries_of_each_rule_are_accepted() {
    let accepted: Vec<(&str, Vec<u8>)> = vec![
        ("minimal (D-01)", body(&base())),
        ("max_tokens 1", with("max_tokens", json!(1))),
        ("1 message", messages(minimal_messages(1))),
        ("100,000 messages", messages(minimal_messages(100_000))),
        (
            "empty string content",
            messages(json!([{"role": "user", "content": ""}])),
        ),
        ("system string", with("system", json!("Be brief."))),
        (
            "system text blocks",
            with(
                "system",
                json!([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]),
            ),
        ),
        ("stop_sequences []", with("stop_sequences", json!([]))),
        (
            "4 stop sequences",
            with("stop_sequences", json!(["a", "b", "c", "d"])),
        ),
        ("temperature 1", with("temperature", json!(1))),
        ("temperature 0", with("temperature", json!(0))),
        ("top_p 1", with("top_p", json!(1))),
        ("stream true", with("stream", json!(true))),
        ("128 tools", with("tools", tools(128))),
        (
            "custom tool type",
            with(
                "tools",
                json!([{"type": "custom", "name": "f", "input_schema": {"type": "object"}, "strict": true, "description": "d"}]),
            ),
        ),
        (
            "tool_choice any with disable",
            with_all(&[
                ("tools", tools(1)),
                (
                    "tool_choice",
                    json!({"type": "any", "disable_parallel_tool_use": true}),
                ),
            ]),
        ),
        (
            "tool_choice tool with disable",
            with_all(&[
                ("tools", tools(1)),
                (
                    "tool_choice",
                    json!({"type": "tool", "name": "t0", "disable_parallel_tool_use": false}),
                ),
            ]),
        ),
        (
            "tool_choice none",
            with("tool_choice", json!({"type": "none"})),
        ),
        (
            "budget 1024 < max_tokens 1025",
            with_all(&[
                ("max_tokens", json!(1025)),
                (
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1024}),
                ),
            ]),
        ),
        (
            "thinking disabled",
            with("thinking", json!({"type": "disabled"})),
        ),
        (
            "thinking adaptive",
            with("thinking", json!({"type": "adaptive"})),
        ),
        (
            "display summarized",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024, "display": "summarized"}),
            ),
        ),
        (
            "display omitted",
            with(
                "thinking",
                json!({"type": "adaptive", "display": "omitted"}),
            ),
        ),
        (
            "enabled + auto",
            with_all(&[
                (
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1024}),
                ),
                ("tool_choice", json!({"type": "auto"})),
            ]),
        ),
        (
            "enabled + none",
            with_all(&[
                (
                    "thinking",
                    json!({"type": "enabled", "budget_tokens": 1024}),
                ),
                ("tool_choice", json!({"type": "none"})),
            ]),
        ),
        (
            "citations []",
            user_block(json!({"type": "text", "text": "a", "citations": []})),
        ),
        (
            "citations null",
            user_block(json!({"type": "text", "text": "a", "citations": null})),
        ),
        (
            "cache_control 1h",
            user_block(
                json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "1h"}}),
            ),
        ),
        (
            "cache_control 5m",
            user_block(
                json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral", "ttl": "5m"}}),
            ),
        ),
        (
            "each image type",
            messages(
                json!([{"role": "user", "content": [png("image/jpeg"), png("image/png"), png("image/gif"), png("image/webp")]}]),
            ),
        ),
        (
            "image url",
            user_block(
                json!({"type": "image", "source": {"type": "url", "url": "https://img.example/a.png"}}),
            ),
        ),
        (
            "image http url",
            user_block(
                json!({"type": "image", "source": {"type": "url", "url": "http://img.example/a.png"}}),
            ),
        ),
        (
            "image file_id",
            user_block(json!({"type": "image", "source": {"type": "file", "file_id": "upl_1"}})),
        ),
        (
            "tool_result string",
            user_block(json!({"type": "tool_result", "tool_use_id": "t", "content": "ok"})),
        ),
        (
            "tool_result without content",
            user_block(json!({"type": "tool_result", "tool_use_id": "t", "is_error": true})),
        ),
        (
            "tool_result with image",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [png("image/png")]}),
            ),
        ),
        (
            "assistant blocks",
            messages(json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "redacted_thinking", "data": "d"},
                    {"type": "text", "text": "a"},
                    {"type": "tool_use", "id": "toolu_1", "name": "f", "input": {"a": [1, 2]}}
                ]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "text", "text": "r"}]}]}
            ])),
        ),
        (
            "system role (CF-05)",
            messages(json!([{"role": "system", "content": "s"}, {"role": "user", "content": "u"}])),
        ),
        (
            "context_management",
            with("context_management", json!({"edits": []})),
        ),
        ("metadata", with("metadata", json!({"user_id": "u1"}))),
        (
            "metadata user_id null",
            with("metadata", json!({"user_id": null})),
        ),
        (
            "output_config",
            with(
                "output_config",
                json!({"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}}),
            ),
        ),
        (
            "min_discount_percent 0",
            with("min_discount_percent", json!(0)),
        ),
        (
            "min_discount_percent 99.99",
            with("min_discount_percent", json!(99.99)),
        ),
        ("zdr true", with("zdr", json!(true))),
        (
            "current Anthropic tool members",
            with(
                "tools",
                json!([{"type": "custom", "name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": true, "defer_loading": false, "input_examples": [{"a": 1}], "cache_control": {"type": "ephemeral"}}]),
            ),
        ),
    ];
    rejection::check_accepted(parse_request, &accepted);
}

#[test]
fn count_tokens_accepts_its_looser_shapes() {
    let accepted: Vec<(&str, Value)> = vec![
        (
            "no max_tokens (D-37)",
            json!({"model": "m", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "empty system (CF-21)",
            json!({"model": "m", "system": "", "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "system blocks",
            json!({"model": "m", "system": [{"type": "text", "text": "s"}], "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "hosted tool object",
            json!({"model": "m", "tools": [{"type": "web_search_20250305", "name": "web_search"}], "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "tool without input_schema",
            json!({"model": "m", "tools": [{"name": "f"}], "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "tool_choice and thinking",
            json!({"model": "m", "tool_choice": {"type": "auto"}, "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": [{"role": "user", "content": "hi"}]}),
        ),
        (
            "tool history",
            json!({"model": "m", "messages": [
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "r"}]}
            ]}),
        ),
        (
            "system role (CF-05)",
            json!({"model": "m", "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]}),
        ),
    ];
    for (name, value) in accepted {
        if let Err(err) = parse_count_tokens(&body(&value)) {
            panic!("{name}: rejected: {err:?}");
        }
    }
    let request = parse_count_tokens(
        br#"{"model":"m","system":"","messages":[{"role":"user","content":"hi"}]}"#,
    )
    .unwrap();
    assert_eq!(request.messages.len(), 1, "an empty system counts nothing");
    assert_eq!(request.sampling.max_output_tokens, None);
}

/// What pins a request to a native Messages route, and what does not (GP-53, D-26, CF-05).
#[test]
fn native_only_names_the_first_native_feature() {
    let cases: Vec<(&str, Vec<u8>, Option<&str>)> = vec![
        ("plain", body(&base()), None),
        (
            "system role",
            messages(json!([{"role": "user", "content": "u"}, {"role": "system", "content": "s"}])),
            Some("messages[1].role"),
        ),
        (
            "adaptive thinking (D-22)",
            with("thinking", json!({"type": "adaptive"})),
            Some("thinking.type"),
        ),
        (
            "thinking display (D-20)",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024, "display": "omitted"}),
            ),
            Some("thinking.display"),
        ),
        (
            "enabled thinking",
            with(
                "thinking",
                json!({"type": "enabled", "budget_tokens": 1024}),
            ),
            None,
        ),
        (
            "context_management",
            with("context_management", json!({"edits": []})),
            Some("context_management"),
        ),
        (
            "output_config",
            with("output_config", json!({"effort": "low"})),
            Some("output_config"),
        ),
        (
            "image tool result",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [png("image/png")]}),
            ),
            Some("messages[0].content[0].content[0]"),
        ),
        (
            "text tool result",
            user_block(
                json!({"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "r"}]}),
            ),
            None,
        ),
        (
            "metadata is an annotation",
            with("metadata", json!({"user_id": "u"})),
            None,
        ),
        (
            "cache_control is an annotation",
            user_block(
                json!({"type": "text", "text": "a", "cache_control": {"type": "ephemeral"}}),
            ),
            None,
        ),
        ("plain image", user_block(png("image/png")), None),
        (
            "tool input_examples change what the model sees",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "input_examples": [{"a": 1}]}]),
            ),
            Some("tools[0].input_examples"),
        ),
        (
            "eager_input_streaming and defer_loading only stream or load",
            with(
                "tools",
                json!([{"name": "f", "input_schema": {"type": "object"}, "eager_input_streaming": true, "defer_loading": true}]),
            ),
            None,
        ),
    ];
    for (name, body, expected) in cases {
        let request = parse_request(&body).unwrap_or_else(|err| panic!("{name}: {err:?}"));
        assert_eq!(request.native_only.as_deref(), expected, "{name}");
        assert_eq!(
            request.requirements().native_only,
            expected.is_some(),
            "{name}"
        );
    }
}

#[test]
fn fields_map_to_the_canonical_request() {
    let request = parse_request(&body(&json!({
        "model": "m", "max_tokens": 4000,
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [tool("t0")],
        "tool_choice": {"type": "any", "disable_parallel_tool_use": true},
        "metadata": {"user_id": "u-1"},
        "output_config": {"effort": "high", "format": {"type": "json_schema", "schema": {"type": "object"}}},
        "min_discount_percent": 5,
        "zdr": true
    })))
    .unwrap();
    assert_eq!(request.tool_choice, Some(ToolChoice::Required));
    assert_eq!(request.parallel_tool_calls, Some(false));
    assert_eq!(request.end_user.as_deref(), Some("u-1"));
    assert_eq!(request.reasoning.effort.as_deref(), Some("high"));
    assert!(request.response_format.is_some());
    let (_, routing) = codecs::parse_routed(
        &MessagesClient,
        &JSON,
        &body(&json!({
            "model": "m", "max_tokens": 4000,
            "messages": [{"role": "user", "content": "hi"}],
            "min_discount_percent": 5,
            "zdr": true
        })),
    )
    .unwrap();
    assert!(routing.zdr);
    assert!(routing.min_discount.is_some());
    let native = request.native.unwrap();
    assert_eq!(
        native.fields.len(),
        2,
        "metadata and output_config kept verbatim"
    );
    assert_eq!(request.inbound, Some(router_canonical::Protocol::Messages));
}

// ---------------------------------------------------------------------------
// Headers (D-03..D-05, GP-31, GP-32)

fn headers<'a>(
    version: Option<&'a str>,
    beta: Option<&'a str>,
    browser: Option<&'a str>,
) -> Headers<'a> {
    Headers {
        version,
        beta,
        browser,
        ..JSON
    }
}

#[test]
fn headers_are_checked_and_betas_recorded() {
    let rejected: Vec<(&str, Headers<'_>, &str)> = vec![
        (
            "version missing",
            headers(None, None, None),
            "anthropic-version",
        ),
        (
            "version 2023-01-01",
            headers(Some("2023-01-01"), None, None),
            "anthropic-version",
        ),
        (
            "version empty",
            headers(Some(""), None, None),
            "anthropic-version",
        ),
        (
            "browser false",
            headers(Some("2023-06-01"), None, Some("false")),
            "anthropic-dangerous-direct-browser-access",
        ),
        (
            "browser yes",
            headers(Some("2023-06-01"), None, Some("yes")),
            "anthropic-dangerous-direct-browser-access",
        ),
    ];
    for (name, h, param) in rejected {
        let err = MessagesClient
            .parse_request(&h, &body(&base()))
            .expect_err(name);
        assert_eq!(err.code, ErrorCode::InvalidParameter, "{name}");
        assert_eq!(err.param.as_deref(), Some(param), "{name}");
        let err = MessagesClient
            .parse_count_tokens(&h, &body(&base()))
            .expect_err(name);
        assert_eq!(err.param.as_deref(), Some(param), "{name} (count_tokens)");
    }

    let (request, ()) = MessagesClient
        .parse_request(
            &headers(Some("2023-06-01"), None, Some("true")),
            &body(&base()),
        )
        .unwrap();
    assert_eq!(request.native, None, "no betas, no native fields");
    assert_eq!(request.native_only, None);

    let (request, ()) = MessagesClient
        .parse_request(
            &headers(
                Some("2023-06-01"),
                Some(" a-2025-01-01 ,, b-2025-02-02 ,"),
                None,
            ),
            &with("metadata", json!({"user_id": "u"})),
        )
        .unwrap();
    let native = request.native.as_ref().unwrap();
    assert_eq!(native.betas, vec!["a-2025-01-01", "b-2025-02-02"]);
    assert_eq!(native.fields.len(), 1, "existing native fields are kept");
    assert_eq!(request.native_only.as_deref(), Some("anthropic-beta"));

    let (request, ()) = MessagesClient
        .parse_request(
            &headers(Some("2023-06-01"), Some(" , "), None),
            &body(&base()),
        )
        .unwrap();
    assert_eq!(request.native, None, "an empty beta list is no beta");

    // count_tokens accepts and ignores betas.
    let request = MessagesClient
        .parse_count_tokens(
            &headers(Some("2023-06-01"), Some("bogus-2099-01-01"), None),
            &body(&base()),
        )
        .unwrap();
    assert_eq!(request.native, None);
}

/// A body must be declared JSON (D-07, GP-52), on both endpoints; the
/// content type is checked before the body.
#[test]
fn the_content_type_must_be_json() {
    for content_type in [None, Some("text/plain"), Some("application/jsonx")] {
        let h = Headers {
            content_type,
            ..JSON
        };
        for err in [
            MessagesClient
                .parse_request(&h, b"{")
                .map(|_| ())
                .unwrap_err(),
            MessagesClient
                .parse_count_tokens(&h, b"{")
                .map(|_| ())
                .unwrap_err(),
        ] {
            assert_eq!(err.code, ErrorCode::InvalidParameter, "{content_type:?}");
            assert_eq!(
                err.param.as_deref(),
                Some("content-type"),
                "{content_type:?}"
            );
            assert_eq!(err.message, "`Content-Type` must be `application/json`.");
        }
    }
    let h = Headers {
        content_type: Some(" Application/JSON; charset=utf-8"),
        ..JSON
    };
    assert!(MessagesClient.parse_request(&h, &body(&base())).is_ok());
    assert!(
        MessagesClient
            .parse_count_tokens(&h, &body(&base()))
            .is_ok()
    );
}
