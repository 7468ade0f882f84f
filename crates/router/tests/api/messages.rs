//! `POST /v1/messages` end to end (area D): headers, routing of native-only
//! content, native pass-through, the message object and its stream, errors
//! in the Messages envelope, and the 8 MiB limit.

use crate::harness::*;
use router_mock_supplier::{MockReply, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};

async fn balance(r: &TestRouter, c: &Customer) -> i64 {
    r.account(&c.account_id).await["balance_nano_usd"]
        .as_i64()
        .unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn minimal_request_returns_a_message_object_with_request_id() {
    // D-01, D-15, D-29, D-34 (request-id), CF-12.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage {
            cached_tokens: Some(4),
            ..MockUsage::tokens(10, 3)
        }),
        ..MockReply::text("Hello!")
    }));
    let resp = r.messages(&c.key, &messages_hello("m-claude")).await;
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["request-id"].to_str().unwrap().to_owned();
    assert_eq!(resp.headers()["x-request-id"], id.as_str());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["type"], "message");
    assert_eq!(body["role"], "assistant");
    assert_eq!(body["model"], "m-claude");
    assert!(body["id"].as_str().unwrap().starts_with("msg_"));
    assert_eq!(body["content"], json!([{"type": "text", "text": "Hello!"}]));
    assert_eq!(body["stop_reason"], "end_turn");
    assert_eq!(body["stop_sequence"], Value::Null);
    // Messages counts input without cache reads: 10 - 4.
    assert_eq!(body["usage"]["input_tokens"], 6);
    assert_eq!(body["usage"]["cache_read_input_tokens"], 4);
    assert_eq!(body["usage"]["cache_creation_input_tokens"], 0);
    assert_eq!(body["usage"]["output_tokens"], 3);
    assert!(body.get("cost").is_none(), "GP-03: no cost on the message");
    // Served natively, with the vendor headers.
    let call = &r.mock.calls()[0];
    assert_eq!(call.path, "/v1/messages");
    assert_eq!(call.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(call.header("x-api-key"), Some("supplier-secret-key"));
    assert_eq!(call.body["model"], "up-claude-native");
    // Charged once: 6 uncached input at 1, 4 cache reads at 0.1, 3 output at 2 (USD/MTok).
    let record = r.request_record(&id).await;
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["charged_nano_usd"], 6_000 + 400 + 6_000, "{record}");
}

#[tokio::test(flavor = "multi_thread")]
async fn vendor_headers_are_checked() {
    // D-03, D-05, D-06, D-07.
    let (r, c) = TestRouter::start_rich().await;
    let send = |version: Option<&'static str>, extra: Option<(&'static str, &'static str)>| {
        let mut req = r
            .client
            .post(format!("{}/v1/messages", r.base))
            .header("x-api-key", c.key.clone())
            .json(&messages_hello("m-claude"));
        if let Some(v) = version {
            req = req.header("anthropic-version", v);
        }
        if let Some((k, v)) = extra {
            req = req.header(k, v);
        }
        req.send()
    };
    let resp = send(Some("2023-01-01"), None).await.unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    // Issue 29: the current SDKs' default version is refused, saying what
    // to send and how.
    let resp = send(Some("2026-10-21"), None).await.unwrap();
    let body = expect_messages_error(resp, 400, "invalid_request_error").await;
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("use 2023-06-01") && message.contains("default_headers"),
        "{message}"
    );
    let resp = send(None, None).await.unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    for bad in ["false", "yes"] {
        let browser = ("anthropic-dangerous-direct-browser-access", bad);
        let resp = send(Some("2023-06-01"), Some(browser)).await.unwrap();
        expect_messages_error(resp, 400, "invalid_request_error").await;
    }
    let resp = r
        .client
        .post(format!("{}/v1/messages", r.base))
        .header("x-api-key", c.key.clone())
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "text/plain")
        .body(messages_hello("m-claude").to_string())
        .send()
        .await
        .unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    assert_eq!(r.mock.call_count(), 0);

    let resp = send(
        Some("2023-06-01"),
        Some(("anthropic-dangerous-direct-browser-access", "true")),
    )
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = r
        .messages_at(
            "/v1/messages?beta=true",
            &c.key,
            &messages_hello("m-claude"),
        )
        .await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn beta_identifiers_must_be_allowed_by_the_route() {
    // D-04, GP-32.
    let (r, c) = TestRouter::start_rich().await;
    let with_beta = |beta: &'static str| {
        r.client
            .post(format!("{}/v1/messages", r.base))
            .header("x-api-key", c.key.clone())
            .header("anthropic-version", "2023-06-01")
            .header("anthropic-beta", beta)
            .json(&messages_hello("m-claude"))
            .send()
    };
    let resp = with_beta("bogus-2099-01-01").await.unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    // Issue 29: with allowed identifiers alongside, only the refused one is
    // named, with where an operator allows it.
    let resp = with_beta("context-1m-2025-08-07,bogus-2099-01-01")
        .await
        .unwrap();
    let body = expect_messages_error(resp, 400, "invalid_request_error").await;
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("`bogus-2099-01-01`")
            && !message.contains("context-1m")
            && message.contains("`betas`"),
        "{message}"
    );
    // Known to Anthropic but not on this route's allowlist.
    let resp = with_beta("files-api-2025-04-14").await.unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    assert_eq!(r.mock.call_count(), 0);

    let resp = with_beta("context-1m-2025-08-07, interleaved-thinking-2025-05-14")
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let call = &r.mock.calls()[0];
    assert_eq!(call.path, "/v1/messages");
    assert_eq!(
        call.header("anthropic-beta"),
        Some("context-1m-2025-08-07,interleaved-thinking-2025-05-14")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn max_tokens_above_the_model_maximum_is_rejected() {
    // D-08, GP-51: the maximum itself is accepted.
    let (r, c) = TestRouter::start_rich().await;
    let mut body = messages_hello("m-claude");
    body["max_tokens"] = json!(8193);
    let error = expect_messages_error(
        r.messages(&c.key, &body).await,
        400,
        "invalid_request_error",
    )
    .await;
    // Issue 29: the refusal names the maximum.
    let message = error["error"]["message"].as_str().unwrap();
    assert!(message.contains("at most 8192"), "{message}");
    body["max_tokens"] = json!(8192);
    assert_eq!(r.messages(&c.key, &body).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn system_role_and_native_fields_select_a_native_route() {
    // D-10, D-22, D-23, D-26, GP-53: never a lossy downgrade to Chat.
    let (r, c) = TestRouter::start_rich().await;
    let before = balance(&r, &c).await;
    let system_role = json!({"model": "m-gpt-only", "max_tokens": 16, "messages": [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "system", "content": "Be terse."},
        {"role": "user", "content": "again"}]});
    let native_fields = json!({"model": "m-gpt-only", "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
        "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]}});
    let output_config = json!({"model": "m-gpt-only", "max_tokens": 16,
        "messages": [{"role": "user", "content": "hi"}],
        "output_config": {"effort": "low"}});
    let adaptive = json!({"model": "m-gpt-only", "max_tokens": 2048,
        "messages": [{"role": "user", "content": "hi"}],
        "thinking": {"type": "adaptive"}});
    let image_tool_result = json!({"model": "m-gpt-only", "max_tokens": 16, "messages": [
        {"role": "user", "content": "look"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "tu_1", "name": "shot", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "tu_1", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}],
        "tools": [{"name": "shot", "input_schema": {"type": "object"}}]});
    for body in [
        &system_role,
        &native_fields,
        &output_config,
        &adaptive,
        &image_tool_result,
    ] {
        let resp = r.messages(&c.key, body).await;
        let error = expect_messages_error(resp, 400, "invalid_request_error").await;
        // Issue 29: it says the model needs a native Messages route.
        let message = error["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("needs a native route speaking the `messages` protocol")
                && message.contains("`protocols`"),
            "{message}"
        );
    }
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(balance(&r, &c).await, before);

    // The same requests on a model with a native route reach it unchanged.
    for mut body in [
        system_role,
        native_fields,
        output_config,
        adaptive,
        image_tool_result,
    ] {
        body["model"] = json!("m-claude");
        r.mock.reset();
        let resp = r.messages(&c.key, &body).await;
        assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
        let call = &r.mock.calls()[0];
        assert_eq!(call.path, "/v1/messages");
        for field in ["context_management", "output_config", "thinking"] {
            if let Some(sent) = body.get(field) {
                assert_eq!(&call.body[field], sent, "{field} forwarded unchanged");
            }
        }
        if body["messages"][2]["role"] == "system" {
            assert_eq!(call.body["messages"][2], body["messages"][2]);
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn coding_agent_envelope_passes_unchanged_on_a_native_route() {
    // D-23 and issue item 9: metadata, cache_control on blocks, system
    // blocks, tools with cache_control, thinking with a signature in history.
    let (r, c) = TestRouter::start_rich().await;
    let body = json!({
        "model": "m-claude",
        "max_tokens": 4096,
        "system": [
            {"type": "text", "text": "You are a coding agent.", "cache_control": {"type": "ephemeral"}},
            {"type": "text", "text": "Repository context...", "cache_control": {"type": "ephemeral", "ttl": "1h"}}
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Fix the bug."}]},
            {"role": "assistant", "content": [
                {"type": "thinking", "thinking": "Look at main.rs", "signature": "sig-abc"},
                {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "main.rs"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "fn main() {}",
                 "cache_control": {"type": "ephemeral"}}
            ]}
        ],
        "tools": [{"name": "read_file", "description": "Read a file",
                   "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]},
                   "cache_control": {"type": "ephemeral"}}],
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "metadata": {"user_id": "user-123"},
        "stream": false
    });
    let resp = r.messages(&c.key, &body).await;
    assert_eq!(resp.status(), 200, "{}", resp.text().await.unwrap());
    let sent = &r.mock.calls()[0].body;
    for field in [
        "system",
        "messages",
        "tools",
        "thinking",
        "metadata",
        "max_tokens",
    ] {
        assert_eq!(sent[field], body[field], "{field} changed on the way");
    }
    assert_eq!(sent["model"], "up-claude-native");
}

#[tokio::test(flavor = "multi_thread")]
async fn rejected_requests_reach_no_supplier_and_cost_nothing() {
    // D-17, D-27, D-28: rejected before generation, in the Messages envelope.
    let (r, c) = TestRouter::start_rich().await;
    let before = balance(&r, &c).await;
    let mut cases = Vec::new();
    let mut hosted = messages_hello("m-claude");
    hosted["tools"] = json!([{"type": "web_search_20250305", "name": "web_search"}]);
    cases.push(hosted);
    let mut mcp = messages_hello("m-claude");
    mcp["mcp_servers"] = json!([{"type": "url", "url": "https://example.com", "name": "x"}]);
    cases.push(mcp);
    let mut container = messages_hello("m-claude");
    container["container"] = json!("c");
    cases.push(container);
    let mut unknown = messages_hello("m-claude");
    unknown["top_k"] = json!(5);
    cases.push(unknown);
    let mut document = messages_hello("m-claude");
    document["messages"][0]["content"] = json!([{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}]);
    cases.push(document);
    let mut citations = messages_hello("m-claude");
    citations["messages"][0]["content"] =
        json!([{"type": "text", "text": "x", "citations": [{"type": "char_location"}]}]);
    cases.push(citations);
    for body in cases {
        let resp = r.messages(&c.key, &body).await;
        expect_messages_error(resp, 400, "invalid_request_error").await;
    }
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(balance(&r, &c).await, before);
    // An unknown model is a 404 in the same envelope.
    let resp = r.messages(&c.key, &messages_hello("nope")).await;
    expect_messages_error(resp, 404, "not_found_error").await;
    // Authentication failures too (D-02).
    let resp = r.messages("sk-rt-wrong", &messages_hello("m-claude")).await;
    expect_messages_error(resp, 401, "authentication_error").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn body_limit_is_eight_mebibytes() {
    // D-35, CF-02.
    let (r, c) = TestRouter::start_rich().await;
    let over = vec![b' '; 8 * 1024 * 1024 + 1];
    let resp = r
        .client
        .post(format!("{}/v1/messages", r.base))
        .header("x-api-key", c.key.clone())
        .header("anthropic-version", "2023-06-01")
        .header("content-type", "application/json")
        .body(over)
        .send()
        .await
        .unwrap();
    expect_messages_error(resp, 413, "request_too_large").await;
    // A 3 MiB valid body (over the 2 MiB limit of the OpenAI surfaces) is served.
    let mut body = messages_hello("m-claude");
    body["messages"][0]["content"] = json!("a ".repeat(3 * 1024 * 1024 / 2));
    let resp = r.messages(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn provider_extras_never_reach_the_client() {
    // D-30, CF-08.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.set_default(Script::Reply(MockReply {
        provider_extras: true,
        ..MockReply::text("fine")
    }));
    let resp = r.messages(&c.key, &messages_hello("m-claude")).await;
    let text = resp.text().await.unwrap();
    assert!(!text.contains("provider_"), "{text}");
    let mut body = messages_hello("m-claude");
    body["stream"] = json!(true);
    let text = r.messages(&c.key, &body).await.text().await.unwrap();
    assert!(!text.contains("provider_"), "{text}");
    assert!(text.contains("message_stop"), "{text}");
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_events_are_named_after_their_type() {
    // D-31, D-32: thinking with signature, text and tool use on a native route.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        reasoning_content: Some("Let me think.".into()),
        thinking_signature: Some("sig-123".into()),
        tool_calls: vec![MockToolCall::new(
            "toolu_9",
            "get_weather",
            r#"{"city":"Paris"}"#,
        )],
        usage: Some(MockUsage::tokens(20, 9)),
        ..MockReply::text("Checking.")
    }));
    let body = json!({"model": "m-claude", "max_tokens": 2048, "stream": true,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "tools": [{"name": "get_weather", "input_schema": {"type": "object"}}],
        "messages": [{"role": "user", "content": "Weather in Paris?"}]});
    let resp = r.messages(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    assert!(resp.headers().contains_key("request-id"));
    let events = sse_events(&resp.text().await.unwrap());
    let allowed = [
        "message_start",
        "ping",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ];
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str(), "event name equals data.type");
        assert!(allowed.contains(&name.as_str()), "{name}");
    }
    assert_eq!(events.first().unwrap().0, "message_start");
    assert_eq!(events.last().unwrap().0, "message_stop");
    assert_eq!(events[0].1["message"]["model"], "m-claude");
    let starts: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "content_block_start")
        .map(|(_, d)| d["content_block"]["type"].as_str().unwrap())
        .collect();
    assert_eq!(starts, ["thinking", "text", "tool_use"]);
    let deltas: Vec<&str> = events
        .iter()
        .filter(|(n, _)| n == "content_block_delta")
        .map(|(_, d)| d["delta"]["type"].as_str().unwrap())
        .collect();
    assert!(deltas.contains(&"thinking_delta"));
    assert!(deltas.contains(&"signature_delta"));
    assert!(deltas.contains(&"text_delta"));
    assert!(deltas.contains(&"input_json_delta"));
    let signature: String = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "signature_delta")
        .map(|(_, d)| d["delta"]["signature"].as_str().unwrap())
        .collect();
    assert_eq!(signature, "sig-123");
    let arguments: String = events
        .iter()
        .filter(|(_, d)| d["delta"]["type"] == "input_json_delta")
        .map(|(_, d)| d["delta"]["partial_json"].as_str().unwrap())
        .collect();
    assert_eq!(
        serde_json::from_str::<Value>(&arguments).unwrap(),
        json!({"city": "Paris"})
    );
    let delta = &events.iter().find(|(n, _)| n == "message_delta").unwrap().1;
    assert_eq!(delta["delta"]["stop_reason"], "tool_use");
    assert_eq!(delta["usage"]["output_tokens"], 9);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_failure_after_start_is_a_terminal_error_event() {
    // D-33, GP-48: stable public error, no retry, nothing charged.
    let (r, c) = TestRouter::start_rich().await;
    let before = balance(&r, &c).await;
    r.mock.enqueue(Script::TruncatedStream { after_chunks: 4 });
    let mut body = messages_hello("m-claude");
    body["stream"] = json!(true);
    let resp = r.messages(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let id = resp.headers()["request-id"].to_str().unwrap().to_owned();
    let text = resp.text().await.unwrap();
    let events = sse_events(&text);
    let (name, data) = events.last().unwrap();
    assert_eq!(name, "error", "{text}");
    assert_eq!(data["type"], "error");
    assert!(data["error"]["type"].is_string());
    assert!(
        !text.contains("acme") && !text.contains("up-claude"),
        "{text}"
    );
    assert_eq!(r.mock.call_count(), 1);
    let record = r.request_record(&id).await;
    assert_ne!(record["status"], "succeeded", "{record}");
    assert_eq!(balance(&r, &c).await, before);
}

#[tokio::test(flavor = "multi_thread")]
async fn fallback_to_chat_keeps_the_public_model_and_the_messages_shape() {
    // D-36, G-rules: the native route fails, the Chat route serves.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue_for("up-claude-native", Script::status(500));
    r.mock.enqueue_for("up-claude-native", Script::status(500));
    r.mock
        .enqueue_for("up-claude-chat", Script::reply("from chat"));
    let resp = r.messages(&c.key, &messages_hello("m-claude")).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "m-claude");
    assert_eq!(body["content"][0]["text"], "from chat");
    let paths: Vec<String> = r.mock.calls().iter().map(|c| c.path.clone()).collect();
    assert_eq!(
        paths,
        ["/v1/messages", "/v1/messages", "/v1/chat/completions"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_cache_header_controls_automatic_markers() {
    // F-07, F-08, F-10, F-11.
    let (r, c) = TestRouter::start_rich().await;
    let send = |model: &'static str, mode: Option<&'static str>| {
        let mut req = r
            .client
            .post(format!("{}/v1/messages", r.base))
            .header("x-api-key", c.key.clone())
            .header("anthropic-version", "2023-06-01")
            .json(&messages_hello(model));
        if let Some(mode) = mode {
            req = req.header("x-ci-prompt-cache", mode);
        }
        req.send()
    };
    let has_marker = |body: &Value| body.to_string().contains("cache_control");

    assert_eq!(send("m-claude", None).await.unwrap().status(), 200);
    assert!(
        !has_marker(&r.mock.calls()[0].body),
        "passthrough adds none"
    );
    r.mock.reset();
    assert_eq!(send("m-claude", Some("on")).await.unwrap().status(), 200);
    let sent = r.mock.calls()[0].body.clone();
    assert!(has_marker(&sent), "{sent}");
    assert!(!sent.to_string().contains("1h"), "{sent}");
    r.mock.reset();
    assert_eq!(send("m-gpt-only", Some("on")).await.unwrap().status(), 200);
    assert!(!has_marker(&r.mock.calls()[0].body), "non-Claude unchanged");
    // A native Messages route of a model that is not vendor Claude, or
    // whose route lacks `prompt_cache`: no automatic marker either.
    r.mock.reset();
    assert_eq!(
        send("m-via-messages", Some("on")).await.unwrap().status(),
        200
    );
    assert_eq!(r.mock.calls()[0].path, "/v1/messages");
    assert!(!has_marker(&r.mock.calls()[0].body), "not vendor Claude");
    let resp = send("m-claude", Some("maybe")).await.unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;

    // A Chat request converted to Messages keeps 5m markers; 1h is refused.
    r.mock.reset();
    let chat = |ttl: Option<&str>| {
        let mut marker = json!({"type": "ephemeral"});
        if let Some(ttl) = ttl {
            marker["ttl"] = json!(ttl);
        }
        json!({"model": "m-via-messages", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "long prefix", "cache_control": marker}]}]})
    };
    let resp = r.chat(&c.key, &chat(Some("1h"))).await;
    expect_error(resp, 400, "unsupported_conversion").await;
    let resp = r.chat(&c.key, &chat(Some("5m"))).await;
    assert_eq!(resp.status(), 200);
    let sent = r.mock.calls().last().unwrap().body.clone();
    assert_eq!(
        sent["messages"][0]["content"][0]["cache_control"]["type"],
        "ephemeral"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn count_tokens_is_a_free_local_estimate() {
    // D-37, D-39, D-42, CF-04: no supplier, no reservation, no record, no 402.
    let r = TestRouter::start().await;
    let broke = r.customer(0, &["inference"]).await;
    let body =
        json!({"model": "m-claude", "messages": [{"role": "user", "content": "hello world"}]});
    let resp = r
        .messages_at("/v1/messages/count_tokens", &broke.key, &body)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ci-token-count-estimated"], "true");
    let id = resp.headers()["request-id"].to_str().unwrap().to_owned();
    let short: Value = resp.json().await.unwrap();
    let short = short["input_tokens"].as_u64().unwrap();
    assert!(short > 0);
    let mut long = body.clone();
    long["messages"][0]["content"] = json!("hello world ".repeat(10));
    let resp = r
        .messages_at("/v1/messages/count_tokens", &broke.key, &long)
        .await;
    let long: Value = resp.json().await.unwrap();
    assert!(long["input_tokens"].as_u64().unwrap() > short);
    assert_eq!(r.mock.call_count(), 0);
    let (status, _) = r
        .admin(reqwest::Method::GET, &format!("/admin/requests/{id}"), None)
        .await;
    assert_eq!(status, 404, "count_tokens leaves no request record");
    assert_eq!(r.account(&broke.account_id).await["balance_nano_usd"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn count_tokens_validates_like_the_spec() {
    // D-38, D-40, GP-54.
    let (r, c) = TestRouter::start_rich().await;
    let bad = [
        json!({"model": "m-claude", "messages": []}),
        json!({"model": "m-claude", "messages": [{"role": "user", "content": "x"}], "tools": {}}),
        json!({"model": "m-claude", "messages": [{"role": "user", "content": "x"}], "system": 5}),
        json!({"model": "m-claude", "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}]}]}),
        json!({"model": "m-claude", "messages": [{"role": "assistant", "content": [
            {"type": "redacted_thinking", "data": "abc"}]}]}),
    ];
    for body in bad {
        let resp = r
            .messages_at("/v1/messages/count_tokens", &c.key, &body)
            .await;
        expect_messages_error(resp, 400, "invalid_request_error").await;
    }
    let resp = r
        .client
        .post(format!("{}/v1/messages/count_tokens", r.base))
        .header("x-api-key", c.key.clone())
        .json(&json!({"model": "m-claude", "messages": [{"role": "user", "content": "x"}]}))
        .send()
        .await
        .unwrap();
    expect_messages_error(resp, 400, "invalid_request_error").await;
    let resp = r
        .messages_at(
            "/v1/messages/count_tokens",
            &c.key,
            &json!({"model": "nope", "messages": [{"role": "user", "content": "x"}]}),
        )
        .await;
    expect_messages_error(resp, 404, "not_found_error").await;
    assert_eq!(r.mock.call_count(), 0);
}
