//! `POST /v1/responses` end to end (area C): the stateless rules, the
//! `response` object with usage and cost, and the `response.*` stream.

use crate::harness::*;
use router_mock_supplier::{MockReply, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};

async fn responses(r: &TestRouter, key: &str, body: &Value) -> reqwest::Response {
    r.post("/v1/responses", key, body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn minimal_request_returns_a_response_with_usage_and_cost() {
    // C-01, C-15, GP-03.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text("Hi there")
    }));
    let resp = responses(&r, &c.key, &json!({"model": "m-text", "input": "hi"})).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "response");
    assert_eq!(body["status"], "completed");
    assert_eq!(body["model"], "m-text");
    assert!(body["id"].as_str().unwrap().starts_with("resp_"));
    let output = body["output"].as_array().unwrap();
    assert_eq!(output[0]["type"], "message");
    assert_eq!(output[0]["content"][0]["type"], "output_text");
    assert_eq!(output[0]["content"][0]["text"], "Hi there");
    assert_eq!(body["usage"]["input_tokens"], 5);
    assert_eq!(body["usage"]["output_tokens"], 7);
    assert_eq!(body["usage"]["total_tokens"], 12);
    // 5 * 1 + 7 * 2 = 19,000 nano-USD, equal to the ledger charge.
    assert_eq!(body["usage"]["cost"], json!(0.000019));
    let record = r.request_record(&id).await;
    assert_eq!(record["charged_nano_usd"], 19_000);
    assert_eq!(record["inbound_protocol"], "responses");
    // A Chat route served it: the supplier saw a Chat body.
    let call = &r.mock.calls()[0];
    assert_eq!(call.path, "/v1/chat/completions");
    assert_eq!(call.body["messages"][0]["content"], "hi");
}

#[tokio::test(flavor = "multi_thread")]
async fn rejections_are_openai_errors_and_cost_nothing() {
    // C-02..C-07, C-09, C-11, C-14, CF-07, GP-49.
    let (r, c) = TestRouter::start_rich().await;
    let bad = [
        json!({"input": "hi"}),
        json!({"model": "m-text"}),
        json!({"model": "m-text", "input": 5}),
        json!({"model": "m-text", "input": [5]}),
        json!({"model": "m-text", "input": []}),
        json!({"model": "m-text", "input": [{"role": "user"}]}),
        json!({"model": "m-text", "input": [{"role": "user", "content": 5}]}),
        json!({"model": "m-text", "input": "hi", "store": true}),
        json!({"model": "m-text", "input": "hi", "store": "false"}),
        json!({"model": "m-text", "input": "hi", "instructions": 1}),
        json!({"model": "m-text", "input": "hi", "max_output_tokens": 0}),
        json!({"model": "m-text", "input": "hi", "max_output_tokens": 1.5}),
        json!({"model": "m-text", "input": "hi", "tools": {}}),
        json!({"model": "m-text", "input": "hi", "tools": [{"type": "web_search"}]}),
        json!({"model": "m-text", "input": "hi", "reasoning_effort": "low", "reasoning": {"effort": "high"}}),
        json!({"model": "m-text", "input": "hi", "previous_response_id": "resp_x"}),
        json!({"model": "m-text", "input": [{"type": "item_reference", "id": "msg_1"}]}),
        json!({"model": "m-text", "input": "hi", "temperature": 2.01}),
    ];
    let before = r.account(&c.account_id).await["balance_nano_usd"].clone();
    for body in bad {
        let resp = responses(&r, &c.key, &body).await;
        expect_error(resp, 400, "invalid_parameter").await;
    }
    let resp = responses(
        &r,
        &c.key,
        &json!({"model": "m-text", "input": "hi", "zdr": true}),
    )
    .await;
    expect_error(resp, 503, "zdr_capacity_unavailable").await;
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(r.account(&c.account_id).await["balance_nano_usd"], before);
}

#[tokio::test(flavor = "multi_thread")]
async fn accepted_shapes_and_forwarded_fields() {
    // C-03, C-04, C-06, C-08, C-09, C-13 on a Responses route.
    let (r, c) = TestRouter::start_rich().await;
    let ok = [
        json!({"model": "m-via-responses", "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}]}),
        json!({"model": "m-via-responses", "input": "hi", "store": false, "x_custom": 1}),
        json!({"model": "m-via-responses", "input": "hi", "max_output_tokens": null}),
        json!({"model": "m-via-responses", "input": "hi", "max_output_tokens": 16}),
        json!({"model": "m-via-responses", "input": "hi", "reasoning": {"effort": "high"}}),
        json!({"model": "m-via-responses", "input": "hi", "reasoning_effort": "low", "reasoning": {"effort": "low"}}),
        json!({"model": "m-via-responses", "input": "hi", "reasoning": null}),
    ];
    for body in &ok {
        let resp = responses(&r, &c.key, body).await;
        assert_eq!(resp.status(), 200, "{body}: {}", resp.text().await.unwrap());
    }
    let sent: Vec<Value> = r.mock.calls().into_iter().map(|c| c.body).collect();
    assert!(
        sent.iter()
            .all(|b| b["store"] == false && b.get("x_custom").is_none())
    );
    assert!(sent[2].get("max_output_tokens").is_none());
    assert_eq!(sent[3]["max_output_tokens"], 16);
    assert_eq!(sent[4]["reasoning"]["effort"], "high");
    assert_eq!(sent[5]["reasoning"]["effort"], "low");
    assert!(sent[5].get("reasoning_effort").is_none());
    assert!(sent[6].get("reasoning").is_none());
    assert!(r.mock.calls().iter().all(|c| c.path == "/v1/responses"));
}

#[tokio::test(flavor = "multi_thread")]
async fn stop_sequences_never_ride_a_responses_route() {
    // B-19, GP-43: a Chat request with stop and only a Responses route.
    let (r, c) = TestRouter::start_rich().await;
    let mut body = hello("m-via-responses");
    body["stop"] = json!(["END"]);
    let resp = r.chat(&c.key, &body).await;
    expect_error(resp, 400, "invalid_parameter").await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_ends_with_response_completed_carrying_usage_and_cost() {
    // C-10, GP-04.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        tool_calls: vec![MockToolCall::new("call_1", "lookup", r#"{"q":"x"}"#)],
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text("one two")
    }));
    let body = json!({"model": "m-text", "input": "hi", "stream": true,
        "tools": [{"type": "function", "name": "lookup", "parameters": {"type": "object"}}]});
    let resp = responses(&r, &c.key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = sse_events(&resp.text().await.unwrap());
    for (name, data) in &events {
        assert_eq!(data["type"], name.as_str());
    }
    assert_eq!(events[0].0, "response.created");
    let (last, data) = events.last().unwrap();
    assert_eq!(last, "response.completed");
    assert_eq!(data["response"]["usage"]["cost"], json!(0.000019));
    assert_eq!(data["response"]["model"], "m-text");
    let text: String = events
        .iter()
        .filter(|(n, _)| n == "response.output_text.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "one two");
    let args: String = events
        .iter()
        .filter(|(n, _)| n == "response.function_call_arguments.delta")
        .map(|(_, d)| d["delta"].as_str().unwrap())
        .collect();
    assert_eq!(args, r#"{"q":"x"}"#);
    let numbers: Vec<u64> = events
        .iter()
        .map(|(_, d)| d["sequence_number"].as_u64().unwrap())
        .collect();
    assert!(numbers.windows(2).all(|w| w[1] > w[0]), "{numbers:?}");
}

/// Issue 29: `POST /v1/responses/input_tokens` answers like count_tokens
/// (D-37..D-42 on the Responses surface): a free local estimate, no
/// supplier call, no reservation, no request record, even at zero balance.
#[tokio::test(flavor = "multi_thread")]
async fn input_tokens_is_a_free_local_estimate() {
    let r = TestRouter::start().await;
    let broke = r.customer(0, &["inference"]).await;
    let body = json!({"model": "m-text", "instructions": "Be brief.", "input": "hello world"});
    let resp = r
        .post("/v1/responses/input_tokens", &broke.key, &body)
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-ci-token-count-estimated"], "true");
    let id = request_id(&resp);
    let short: Value = resp.json().await.unwrap();
    assert_eq!(short["object"], "response.input_tokens", "{short}");
    let short = short["input_tokens"].as_u64().unwrap();
    assert!(short > 0);
    // Monotonic in the input (D-42); tools count too.
    let mut long = body.clone();
    long["input"] = json!("hello world ".repeat(10));
    long["tools"] = json!([{"type": "function", "name": "f", "parameters": {"type": "object"}}]);
    let long: Value = r
        .post("/v1/responses/input_tokens", &broke.key, &long)
        .await
        .json()
        .await
        .unwrap();
    assert!(long["input_tokens"].as_u64().unwrap() > short, "{long}");
    // No input at all: instructions alone count.
    let resp = r
        .post(
            "/v1/responses/input_tokens",
            &broke.key,
            &json!({"model": "m-text", "instructions": "Be brief."}),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(r.mock.call_count(), 0);
    let (status, _) = r
        .admin(reqwest::Method::GET, &format!("/admin/requests/{id}"), None)
        .await;
    assert_eq!(status, 404, "input_tokens leaves no request record");
    assert_eq!(r.account(&broke.account_id).await["balance_nano_usd"], 0);

    // Refusals in the OpenAI envelope: no model, server-side state, an
    // image (not countable locally), an unknown model.
    for (body, status, code) in [
        (json!({"input": "x"}), 400, "invalid_parameter"),
        (
            json!({"model": "m-text", "input": "x", "previous_response_id": "resp_1"}),
            400,
            "invalid_parameter",
        ),
        (
            json!({"model": "m-text", "input": [{"role": "user", "content": [
                {"type": "input_image", "image_url": "https://example.com/a.png"}]}]}),
            400,
            "invalid_parameter",
        ),
        (
            json!({"model": "nope", "input": "x"}),
            404,
            "model_not_found",
        ),
    ] {
        let resp = r
            .post("/v1/responses/input_tokens", &broke.key, &body)
            .await;
        expect_error(resp, status, code).await;
    }
    assert_eq!(r.mock.call_count(), 0);
}

/// The first `function_call` item of a Responses `output` array.
fn function_call(output: &Value) -> Value {
    output
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["type"] == "function_call")
        .cloned()
        .unwrap()
}

/// Issue 29: Codex's `namespace` tool on a converted (Chat) route: its
/// functions reach the supplier as flat function tools, the history's
/// namespaced call by its flat name, and the reply's call comes back with
/// the namespace and name the client declared, complete and streamed; a
/// hosted tool is refused naming Codex's setting.
#[tokio::test(flavor = "multi_thread")]
async fn a_namespace_tool_is_flattened_on_a_converted_route_and_named_back() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let body = |stream: bool| {
        json!({"model": "m-text", "stream": stream,
        "input": [
            {"role": "user", "content": "file it"},
            {"type": "function_call", "call_id": "call_0", "namespace": "mcp__github__",
             "name": "search_issues", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "call_0", "output": "[]"}
        ],
        "tools": [{"type": "namespace", "name": "mcp__github__", "description": "GitHub.",
            "tools": [
                {"type": "function", "name": "search_issues", "parameters": {"type": "object"}},
                {"type": "function", "name": "create_issue", "parameters": {"type": "object"}}
            ]}]})
    };
    for stream in [false, true] {
        r.mock.enqueue(Script::Reply(MockReply {
            tool_calls: vec![MockToolCall::new(
                "call_1",
                "mcp__github__create_issue",
                r#"{"title":"t"}"#,
            )],
            ..MockReply::text("")
        }));
        let resp = responses(&r, &c.key, &body(stream)).await;
        assert_eq!(resp.status(), 200);
        let sent = r.mock.calls().last().unwrap().body.clone();
        let names: Vec<&str> = sent["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            ["mcp__github__search_issues", "mcp__github__create_issue"]
        );
        assert_eq!(
            sent["messages"][1]["tool_calls"][0]["function"]["name"], "mcp__github__search_issues",
            "{sent}"
        );
        let call = if stream {
            let events = sse_events(&resp.text().await.unwrap());
            let added = events
                .iter()
                .find(|(n, d)| {
                    n == "response.output_item.added" && d["item"]["type"] == "function_call"
                })
                .map(|(_, d)| d["item"].clone())
                .unwrap();
            assert_eq!(added["name"], "create_issue", "{added}");
            assert_eq!(added["namespace"], "mcp__github__", "{added}");
            let (_, done) = events.last().unwrap();
            function_call(&done["response"]["output"])
        } else {
            let body: Value = resp.json().await.unwrap();
            function_call(&body["output"])
        };
        assert_eq!(call["name"], "create_issue", "{call}");
        assert_eq!(call["namespace"], "mcp__github__", "{call}");
        assert_eq!(call["call_id"], "call_1");
    }

    // Hosted tools stay refused, and the refusal names Codex's setting.
    let calls = r.mock.call_count();
    let resp = responses(
        &r,
        &c.key,
        &json!({"model": "m-text", "input": "hi", "tools": [{"type": "web_search"}]}),
    )
    .await;
    let error = expect_error(resp, 400, "invalid_parameter").await;
    assert_eq!(error["error"]["param"], "tools[0].type");
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("function tools only") && message.contains("web_search = \"disabled\""),
        "{message}"
    );
    assert_eq!(r.mock.call_count(), calls);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_response_echoes_the_request_and_a_chat_route_takes_summary_auto() {
    // C-08; issue 31 (fidelity): the `response` object repeats what the
    // request set, like OpenAI's. `reasoning.summary: "auto"` (sent by
    // clients on every request) is accepted for a Chat route, which has no
    // field for it: nothing of it reaches the Chat supplier.
    let (r, c) = TestRouter::start_rich().await;
    let tool = json!({"type": "function", "name": "get_time", "parameters": {"type": "object"}});
    let request = json!({
        "model": "m-text",
        "input": "hi",
        "instructions": "Be terse.",
        "max_output_tokens": 64,
        "reasoning": {"effort": "high", "summary": "auto"},
        "tools": [tool],
        "tool_choice": "required",
        "temperature": 0.5,
    });
    let resp = responses(&r, &c.key, &request).await;
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["instructions"], "Be terse.");
    assert_eq!(body["max_output_tokens"], 64);
    assert_eq!(
        body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
    assert_eq!(body["tools"], json!([tool]));
    assert_eq!(body["tool_choice"], "required");
    assert_eq!(body["temperature"], 0.5);
    let call = &r.mock.calls()[0];
    assert_eq!(call.path, "/v1/chat/completions");
    assert_eq!(call.body["reasoning_effort"], "high");
    let sent = call.body.to_string();
    assert!(!sent.contains("summary"), "{sent}");

    // Streamed: `response.created` and `response.completed` repeat it too.
    let mut streamed = request.clone();
    streamed["stream"] = json!(true);
    let resp = responses(&r, &c.key, &streamed).await;
    assert_eq!(resp.status(), 200);
    let text = resp.text().await.unwrap();
    let objects: Vec<Value> = text
        .lines()
        .filter_map(|line| line.strip_prefix("data: "))
        .filter_map(|data| serde_json::from_str::<Value>(data).ok())
        .filter_map(|event| event.get("response").cloned())
        .collect();
    assert!(objects.len() >= 2, "{text}");
    for object in &objects {
        assert_eq!(object["instructions"], "Be terse.");
        assert_eq!(object["reasoning"]["summary"], "auto");
        assert_eq!(object["tools"], json!([tool]));
    }

    // A Responses route is sent the summary.
    let mut native = request.clone();
    native["model"] = json!("m-via-responses");
    let resp = responses(&r, &c.key, &native).await;
    assert_eq!(resp.status(), 200);
    let call = r.mock.calls().pop().unwrap();
    assert_eq!(call.path, "/v1/responses");
    assert_eq!(
        call.body["reasoning"],
        json!({"effort": "high", "summary": "auto"})
    );
}
