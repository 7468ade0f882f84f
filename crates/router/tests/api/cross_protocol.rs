//! The translation matrix: every inbound protocol (chat, responses,
//! messages, completions) x every route protocol (chat, responses,
//! messages) x stream on/off. Text, tool calls, the stop reason and usage
//! must survive the trip, and the supplier must receive the system prompt
//! and the tool-result turn in its own dialect.

use crate::harness::*;
use router_mock_supplier::{MockReply, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Inbound {
    Chat,
    Responses,
    Messages,
    Completions,
}

/// A model, and the supplier path its only route is called at without
/// and with a stream.
type RouteCell = (&'static str, &'static str, &'static str);

const ROUTES: [RouteCell; 3] = [
    ("m-via-chat", "/v1/chat/completions", "/v1/chat/completions"),
    ("m-via-responses", "/v1/responses", "/v1/responses"),
    ("m-via-messages", "/v1/messages", "/v1/messages"),
];

/// Models served only by a supplier-only dialect: Gemini (the API key
/// header) and Claude on Bedrock (SigV4, checked by the mock).
const DIALECT_ROUTES: [RouteCell; 3] = [
    (
        "m-gemini-only",
        "/v1/models/up-gemini:generateContent",
        "/v1/models/up-gemini:streamGenerateContent",
    ),
    (
        "m-bedrock-only",
        "/v1/model/up-bedrock-claude/invoke",
        "/v1/model/up-bedrock-claude/invoke-with-response-stream",
    ),
    (
        "m-converse-only",
        "/v1/model/up-converse/converse",
        "/v1/model/up-converse/converse-stream",
    ),
];

const DIALECT_CATALOG: &str = r#"
[[suppliers]]
id = "gemini-supplier"
base_url = "{BASE}"
api_key_env = "TEST_GEMINI_KEY"

[[suppliers]]
id = "bedrock-supplier"
base_url = "{BASE}"
auth = { type = "sigv4", region = "us-east-1", service = "bedrock", access_key_id_env = "TEST_AWS_ACCESS_KEY_ID", secret_access_key_env = "TEST_AWS_SECRET_ACCESS_KEY" }

[[models]]
id = "m-gemini-only"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-gemini"
model = "m-gemini-only"
supplier = "gemini-supplier"
upstream_model = "up-gemini"
protocol = "gemini"
capabilities = ["tools", "stop", "streaming", "reasoning", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-bedrock-only"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-bedrock"
model = "m-bedrock-only"
supplier = "bedrock-supplier"
upstream_model = "up-bedrock-claude"
protocol = "bedrock_messages"
capabilities = ["tools", "stop", "streaming", "thinking", "vision", "response_format"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-converse-only"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 4096

[[routes]]
id = "via-converse"
model = "m-converse-only"
supplier = "bedrock-supplier"
upstream_model = "up-converse"
protocol = "bedrock_converse"
capabilities = ["tools", "stop", "streaming", "thinking", "vision"]
internal_cost = { input = 1, output = 1 }
"#;

const SYSTEM: &str = "Be brief and exact.";
const TOOL_RESULT: &str = "It is 42 degrees.";

/// What the client saw, normalised across dialects.
#[derive(Debug, Default, PartialEq)]
struct Seen {
    text: String,
    tool_calls: Vec<(String, Value)>,
    tool_use_stop: bool,
    input_tokens: u64,
    output_tokens: u64,
}

fn request_body(inbound: Inbound, model: &str, stream: bool) -> Value {
    let tool_schema = json!({"type": "object", "properties": {"city": {"type": "string"}}});
    match inbound {
        Inbound::Chat => json!({
            "model": model, "stream": stream,
            "stream_options": if stream { json!({"include_usage": true}) } else { Value::Null },
            "messages": [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "call_prev", "type": "function",
                    "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]},
                {"role": "tool", "tool_call_id": "call_prev", "content": TOOL_RESULT},
                {"role": "user", "content": "And in Rome?"}
            ],
            "tools": [{"type": "function", "function": {"name": "get_weather", "parameters": tool_schema}}]
        }),
        Inbound::Responses => json!({
            "model": model, "stream": stream, "instructions": SYSTEM,
            "input": [
                {"role": "user", "content": "Weather in Paris?"},
                {"type": "function_call", "call_id": "call_prev", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
                {"type": "function_call_output", "call_id": "call_prev", "output": TOOL_RESULT},
                {"role": "user", "content": "And in Rome?"}
            ],
            "tools": [{"type": "function", "name": "get_weather", "parameters": tool_schema}]
        }),
        Inbound::Messages => json!({
            "model": model, "stream": stream, "max_tokens": 256, "system": SYSTEM,
            "messages": [
                {"role": "user", "content": "Weather in Paris?"},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "call_prev", "name": "get_weather", "input": {"city": "Paris"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_prev", "content": TOOL_RESULT},
                                             {"type": "text", "text": "And in Rome?"}]}
            ],
            "tools": [{"name": "get_weather", "input_schema": tool_schema}]
        }),
        Inbound::Completions => {
            json!({"model": model, "stream": stream, "prompt": format!("{SYSTEM} Weather?")})
        }
    }
}

async fn send(r: &TestRouter, key: &str, inbound: Inbound, body: &Value) -> reqwest::Response {
    match inbound {
        Inbound::Chat => r.post("/v1/chat/completions", key, body).await,
        Inbound::Responses => r.post("/v1/responses", key, body).await,
        Inbound::Messages => r.messages(key, body).await,
        Inbound::Completions => r.post("/v1/completions", key, body).await,
    }
}

fn args(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or(Value::String(text.to_owned()))
}

fn read_json(inbound: Inbound, body: &Value) -> Seen {
    let mut seen = Seen::default();
    match inbound {
        Inbound::Chat => {
            let message = &body["choices"][0]["message"];
            seen.text = message["content"].as_str().unwrap_or("").to_owned();
            for call in message["tool_calls"].as_array().into_iter().flatten() {
                seen.tool_calls.push((
                    call["function"]["name"].as_str().unwrap().to_owned(),
                    args(call["function"]["arguments"].as_str().unwrap()),
                ));
            }
            seen.tool_use_stop = body["choices"][0]["finish_reason"] == "tool_calls";
            seen.input_tokens = body["usage"]["prompt_tokens"].as_u64().unwrap();
            seen.output_tokens = body["usage"]["completion_tokens"].as_u64().unwrap();
        }
        Inbound::Responses => {
            for item in body["output"].as_array().unwrap() {
                match item["type"].as_str().unwrap() {
                    "message" => {
                        for part in item["content"].as_array().unwrap() {
                            seen.text.push_str(part["text"].as_str().unwrap_or(""));
                        }
                    }
                    "function_call" => seen.tool_calls.push((
                        item["name"].as_str().unwrap().to_owned(),
                        args(item["arguments"].as_str().unwrap()),
                    )),
                    _ => {}
                }
            }
            seen.tool_use_stop = !seen.tool_calls.is_empty() && body["status"] == "completed";
            seen.input_tokens = body["usage"]["input_tokens"].as_u64().unwrap();
            seen.output_tokens = body["usage"]["output_tokens"].as_u64().unwrap();
        }
        Inbound::Messages => {
            for block in body["content"].as_array().unwrap() {
                match block["type"].as_str().unwrap() {
                    "text" => seen.text.push_str(block["text"].as_str().unwrap()),
                    "tool_use" => seen.tool_calls.push((
                        block["name"].as_str().unwrap().to_owned(),
                        block["input"].clone(),
                    )),
                    _ => {}
                }
            }
            seen.tool_use_stop = body["stop_reason"] == "tool_use";
            let usage = &body["usage"];
            seen.input_tokens = usage["input_tokens"].as_u64().unwrap()
                + usage["cache_read_input_tokens"].as_u64().unwrap()
                + usage["cache_creation_input_tokens"].as_u64().unwrap();
            seen.output_tokens = usage["output_tokens"].as_u64().unwrap();
        }
        Inbound::Completions => {
            seen.text = body["choices"][0]["text"].as_str().unwrap().to_owned();
            seen.input_tokens = body["usage"]["prompt_tokens"].as_u64().unwrap();
            seen.output_tokens = body["usage"]["completion_tokens"].as_u64().unwrap();
        }
    }
    seen
}

fn read_stream(inbound: Inbound, text: &str) -> Seen {
    let events = sse_events(text);
    let mut seen = Seen::default();
    match inbound {
        Inbound::Chat | Inbound::Completions => {
            assert_eq!(events.last().unwrap().1, json!("[DONE]"), "{text}");
            let mut calls: Vec<(String, String)> = Vec::new();
            for (_, chunk) in &events[..events.len() - 1] {
                if let Some(usage) = chunk.get("usage").filter(|u| !u.is_null()) {
                    seen.input_tokens = usage["prompt_tokens"].as_u64().unwrap();
                    seen.output_tokens = usage["completion_tokens"].as_u64().unwrap();
                }
                let Some(choice) = chunk["choices"].get(0) else {
                    continue;
                };
                if choice["finish_reason"] == "tool_calls" {
                    seen.tool_use_stop = true;
                }
                if inbound == Inbound::Completions {
                    seen.text.push_str(choice["text"].as_str().unwrap_or(""));
                    continue;
                }
                seen.text
                    .push_str(choice["delta"]["content"].as_str().unwrap_or(""));
                for call in choice["delta"]["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                {
                    let index = call["index"].as_u64().unwrap() as usize;
                    if index >= calls.len() {
                        calls.push((String::new(), String::new()));
                    }
                    if let Some(name) = call["function"]["name"].as_str() {
                        calls[index].0.push_str(name);
                    }
                    if let Some(a) = call["function"]["arguments"].as_str() {
                        calls[index].1.push_str(a);
                    }
                }
            }
            seen.tool_calls = calls.into_iter().map(|(n, a)| (n, args(&a))).collect();
        }
        Inbound::Responses => {
            let (last, done) = events.last().unwrap();
            assert_eq!(last, "response.completed", "{text}");
            let response = &done["response"];
            let from_final = read_json(Inbound::Responses, response);
            seen = from_final;
            let streamed: String = events
                .iter()
                .filter(|(n, _)| n == "response.output_text.delta")
                .map(|(_, d)| d["delta"].as_str().unwrap())
                .collect();
            assert_eq!(streamed, seen.text, "deltas agree with the final object");
        }
        Inbound::Messages => {
            assert_eq!(events.last().unwrap().0, "message_stop", "{text}");
            let mut calls: Vec<(String, String)> = Vec::new();
            for (name, data) in &events {
                assert_eq!(data["type"], name.as_str());
                match name.as_str() {
                    "message_start" => {
                        let usage = &data["message"]["usage"];
                        seen.input_tokens = usage["input_tokens"].as_u64().unwrap_or(0);
                    }
                    "content_block_start" if data["content_block"]["type"] == "tool_use" => {
                        calls.push((
                            data["content_block"]["name"].as_str().unwrap().to_owned(),
                            String::new(),
                        ));
                    }
                    "content_block_delta" => match data["delta"]["type"].as_str().unwrap() {
                        "text_delta" => seen.text.push_str(data["delta"]["text"].as_str().unwrap()),
                        "input_json_delta" => calls
                            .last_mut()
                            .unwrap()
                            .1
                            .push_str(data["delta"]["partial_json"].as_str().unwrap()),
                        _ => {}
                    },
                    "message_delta" => {
                        seen.tool_use_stop = data["delta"]["stop_reason"] == "tool_use";
                        let usage = &data["usage"];
                        seen.output_tokens = usage["output_tokens"].as_u64().unwrap();
                        if let Some(input) = usage["input_tokens"].as_u64() {
                            seen.input_tokens = input
                                + usage["cache_read_input_tokens"].as_u64().unwrap_or(0)
                                + usage["cache_creation_input_tokens"].as_u64().unwrap_or(0);
                        }
                    }
                    _ => {}
                }
            }
            seen.tool_calls = calls.into_iter().map(|(n, a)| (n, args(&a))).collect();
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread")]
async fn every_inbound_protocol_over_every_route_protocol() {
    let r = TestRouter::start().await;
    let failures = matrix(&r, &ROUTES).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// The same matrix for models served only by a Gemini route and only by a
/// Bedrock route: plain and streamed, with a tool-call round trip (the
/// history's call and result reach the supplier in its dialect) and exact
/// usage.
#[tokio::test(flavor = "multi_thread")]
async fn every_inbound_protocol_over_the_supplier_only_dialects() {
    let r = TestRouter::start_with_catalog(DIALECT_CATALOG).await;
    let failures = matrix(&r, &DIALECT_ROUTES).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
    let c = r.rich_customer().await;
    r.mock.reset();
    for model in ["m-gemini-only", "m-bedrock-only", "m-converse-only"] {
        let resp = r.chat(&c.key, &hello(model)).await;
        assert_answered(resp, model).await;
    }
    let calls = r.mock.calls();
    let gemini = calls
        .iter()
        .find(|c| c.path.contains(":generateContent"))
        .expect("a Gemini call");
    assert_eq!(gemini.header("x-goog-api-key"), Some("supplier-secret-key"));
    assert_eq!(gemini.query, None);
    assert_eq!(gemini.header("authorization"), None);
    let bedrock = calls
        .iter()
        .find(|c| c.path.ends_with("/invoke"))
        .expect("a Bedrock call");
    assert!(
        bedrock
            .header("authorization")
            .is_some_and(|a| a.starts_with("AWS4-HMAC-SHA256 Credential=AKIDMOCKSUPPLIER/")),
        "{:?}",
        bedrock.headers
    );
    assert_eq!(bedrock.body["anthropic_version"], "bedrock-2023-05-31");
    let converse = calls
        .iter()
        .find(|c| c.path.ends_with("/converse"))
        .expect("a Converse call");
    assert!(converse.header("authorization").is_some());
    assert_eq!(converse.body["messages"][0]["content"][0]["text"], "hello");
}

/// The mock checks what Bedrock checks: a request signed with another
/// secret is refused (403), which the router reports as the supplier's
/// failure; nothing is charged.
#[tokio::test(flavor = "multi_thread")]
async fn a_bedrock_request_signed_with_the_wrong_secret_is_refused() {
    let catalog = DIALECT_CATALOG.replace("TEST_AWS_SECRET_ACCESS_KEY", "TEST_SOME_OTHER_SECRET");
    let r = TestRouter::start_with_catalog(&catalog).await;
    let c = r.rich_customer().await;
    let resp = r.chat(&c.key, &hello("m-bedrock-only")).await;
    let body = expect_error(resp, 502, "upstream_error").await;
    assert!(!body.to_string().contains("signature"), "{body}");
    let calls = r.mock.calls();
    assert_eq!(calls.len(), 1, "a 403 is not retried on the same route");
    assert!(calls[0].header("authorization").is_some());
}

/// Each inbound protocol against each of `routes`, plain and streamed: the
/// cells that went wrong.
async fn matrix(r: &TestRouter, routes: &[RouteCell]) -> Vec<String> {
    let c = r.rich_customer().await;
    let mut failures = Vec::new();
    for inbound in [
        Inbound::Chat,
        Inbound::Responses,
        Inbound::Messages,
        Inbound::Completions,
    ] {
        for &(model, plain_path, stream_path) in routes {
            for stream in [false, true] {
                let path = if stream { stream_path } else { plain_path };
                r.mock.reset();
                let tools = inbound != Inbound::Completions;
                r.mock.enqueue(Script::Reply(MockReply {
                    tool_calls: if tools {
                        vec![MockToolCall::new(
                            "call_new",
                            "get_weather",
                            r#"{"city":"Rome"}"#,
                        )]
                    } else {
                        Vec::new()
                    },
                    usage: Some(MockUsage {
                        cached_tokens: Some(3),
                        ..MockUsage::tokens(11, 13)
                    }),
                    ..MockReply::text("alpha beta")
                }));
                let cell = format!("{inbound:?} -> {model} stream={stream}");
                let body = request_body(inbound, model, stream);
                let resp = send(r, &c.key, inbound, &body).await;
                let status = resp.status().as_u16();
                let text = resp.text().await.unwrap();
                if status != 200 {
                    failures.push(format!("{cell}: HTTP {status}: {text}"));
                    continue;
                }
                let seen = if stream {
                    read_stream(inbound, &text)
                } else {
                    read_json(inbound, &serde_json::from_str(&text).unwrap())
                };
                let expected = Seen {
                    text: "alpha beta".into(),
                    tool_calls: if tools {
                        vec![("get_weather".into(), json!({"city": "Rome"}))]
                    } else {
                        Vec::new()
                    },
                    tool_use_stop: tools,
                    input_tokens: 11,
                    output_tokens: 13,
                };
                if seen != expected {
                    failures.push(format!("{cell}: saw {seen:?}\n{text}"));
                }
                let calls = r.mock.calls();
                let Some(call) = calls.first() else {
                    failures.push(format!("{cell}: no supplier call"));
                    continue;
                };
                if call.path != path {
                    failures.push(format!("{cell}: supplier path {}", call.path));
                }
                let sent = call.body.to_string();
                if !sent.contains(SYSTEM) {
                    failures.push(format!("{cell}: system prompt lost: {sent}"));
                }
                if tools && !sent.contains(TOOL_RESULT) {
                    failures.push(format!("{cell}: tool result lost: {sent}"));
                }
            }
        }
    }
    failures
}

#[tokio::test(flavor = "multi_thread")]
async fn combinations_that_cannot_be_served_losslessly_are_refused() {
    // CF-01: temperature above 1 never rides a Messages route; B-19: stop
    // never rides a Responses route. Both: 400 before any supplier call.
    let (r, c) = TestRouter::start_rich().await;
    let mut hot = hello("m-via-messages");
    hot["temperature"] = json!(1.5);
    expect_error(r.chat(&c.key, &hot).await, 400, "invalid_parameter").await;
    let mut penalised = hello("m-via-messages");
    penalised["frequency_penalty"] = json!(0.5);
    expect_error(r.chat(&c.key, &penalised).await, 400, "invalid_parameter").await;
    let hot_responses = json!({"model": "m-via-messages", "input": "hi", "temperature": 1.5});
    expect_error(
        r.post("/v1/responses", &c.key, &hot_responses).await,
        400,
        "invalid_parameter",
    )
    .await;
    let stop = json!({"model": "m-via-responses", "prompt": "x", "stop": ["END"]});
    expect_error(
        r.post("/v1/completions", &c.key, &stop).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refusal_names_the_requirement_no_route_meets() {
    // The only route speaks Messages and streams: a streamed temperature of
    // 1.5 is refused for its temperature (CF-01), not for streaming; the same
    // holds for penalties, and stop on a Responses-only model names `stop`.
    let (r, c) = TestRouter::start_rich().await;
    let mut hot = hello("m-via-messages");
    hot["temperature"] = json!(1.5);
    hot["stream"] = json!(true);
    let body = expect_error(r.chat(&c.key, &hot).await, 400, "invalid_parameter").await;
    assert_eq!(body["error"]["param"], "temperature", "{body}");
    assert_eq!(
        body["error"]["message"], "This model cannot take a temperature above 1.",
        "{body}"
    );
    let hot_responses =
        json!({"model": "m-via-messages", "input": "hi", "temperature": 1.5, "stream": true});
    let body = expect_error(
        r.post("/v1/responses", &c.key, &hot_responses).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "temperature", "{body}");
    let mut penalised = hello("m-via-messages");
    penalised["presence_penalty"] = json!(0.5);
    penalised["stream"] = json!(true);
    let body = expect_error(r.chat(&c.key, &penalised).await, 400, "invalid_parameter").await;
    assert_eq!(body["error"]["param"], "frequency_penalty", "{body}");
    let stop = json!({"model": "m-via-responses", "prompt": "x", "stop": ["END"], "stream": true});
    let body = expect_error(
        r.post("/v1/completions", &c.key, &stop).await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "stop", "{body}");
    assert_eq!(r.mock.call_count(), 0);
}

/// An Azure OpenAI deployment (the deployment in the path, the key in
/// `api-key`, `api-version` in the query) and a local OpenAI-compatible
/// server with compat options (no key, `developer` sent as `system`,
/// `max_tokens`) are ordinary Chat routes with connection settings.
#[tokio::test(flavor = "multi_thread")]
async fn azure_and_local_servers_are_chat_routes_with_their_settings() {
    let catalog = r#"
[[suppliers]]
id = "azure"
base_url = "{BASE}/openai/deployments/{model}"
auth = { type = "header", name = "api-key", key_env = "TEST_AZURE_KEY" }
query = { api-version = "2024-10-21" }
headers = { x-ms-client-name = "router" }

[[suppliers]]
id = "local"
base_url = "{BASE}"
auth = { type = "none" }

[[models]]
id = "m-azure"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }

[[routes]]
id = "azure-deployment"
model = "m-azure"
supplier = "azure"
upstream_model = "gpt-4o-prod"
protocol = "chat"
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }

[[models]]
id = "m-local"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }

[[routes]]
id = "local-llama"
model = "m-local"
supplier = "local"
upstream_model = "llama3.1:8b"
protocol = "chat"
compat = ["developer_as_system", "max_tokens"]
capabilities = ["streaming"]
internal_cost = { input = 1, output = 1 }
"#;
    let r = TestRouter::start_with_catalog(catalog).await;
    let c = r.rich_customer().await;
    for model in ["m-azure", "m-local"] {
        let body = json!({"model": model, "max_completion_tokens": 50, "messages": [
            {"role": "developer", "content": "Be brief."},
            {"role": "user", "content": "Hello"}
        ]});
        let resp = r.chat(&c.key, &body).await;
        assert_answered(resp, model).await;
    }
    let calls = r.mock.calls();
    let azure = &calls[0];
    assert!(
        azure
            .path
            .ends_with("/openai/deployments/gpt-4o-prod/chat/completions"),
        "{}",
        azure.path
    );
    assert_eq!(azure.query.as_deref(), Some("api-version=2024-10-21"));
    assert_eq!(azure.header("api-key"), Some("supplier-secret-key"));
    assert_eq!(azure.header("x-ms-client-name"), Some("router"));
    assert_eq!(azure.header("authorization"), None);
    assert_eq!(azure.body["messages"][0]["role"], "developer");
    let local = &calls[1];
    assert_eq!(local.header("authorization"), None);
    assert_eq!(local.body["messages"][0]["role"], "system");
    assert_eq!(local.body["max_tokens"], 50);
    assert!(local.body.get("max_completion_tokens").is_none());
}

#[tokio::test(flavor = "multi_thread")]
async fn content_a_route_cannot_carry_is_refused_naming_the_conversation() {
    // Issue 31 (fidelity): an assistant's `refusal` part is Chat content
    // that a Messages route cannot carry. The Messages encoder's refusal
    // names the field in the caller's terms (`messages` for Chat), and
    // nothing reaches the supplier.
    let (r, c) = TestRouter::start_rich().await;
    let body = json!({
        "model": "m-via-messages",
        "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "refusal", "refusal": "I can't."}]},
            {"role": "user", "content": "why?"}
        ]
    });
    let resp = r.chat(&c.key, &body).await;
    let error = expect_error(resp, 400, "unsupported_conversion").await;
    assert_eq!(error["error"]["param"], "messages", "{error}");
    assert_eq!(r.mock.call_count(), 0);
}
