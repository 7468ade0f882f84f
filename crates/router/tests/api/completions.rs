//! `POST /v1/completions` end to end (area E): it rides the Chat path with
//! the same authentication, retries and single settlement.

use crate::harness::*;
use router_mock_supplier::{MockReply, MockUsage, Script};
use serde_json::{Value, json};

async fn completions(r: &TestRouter, key: &str, body: &Value) -> reqwest::Response {
    r.post("/v1/completions", key, body).await
}

#[tokio::test(flavor = "multi_thread")]
async fn minimal_prompt_returns_a_text_completion_through_chat() {
    // E-01, E-04, E-09, E-10.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::status(500));
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text(" there")
    }));
    let resp = completions(&r, &c.key, &json!({"model": "m-text", "prompt": "Say hi"})).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["object"], "text_completion");
    assert_eq!(body["model"], "m-text");
    assert_eq!(body["choices"][0]["text"], " there");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(body["usage"]["prompt_tokens"], 5);
    assert_eq!(body["usage"]["cost"], json!(0.000019));
    // Same-route retry, then one charge; the supplier saw Chat bodies.
    let calls = r.mock.calls();
    assert_eq!(calls.len(), 2);
    assert!(calls.iter().all(|c| c.path == "/v1/chat/completions"));
    assert_eq!(calls[1].body["messages"][0]["content"], "Say hi");
    let limit = calls[1].body["max_completion_tokens"]
        .as_u64()
        .or_else(|| calls[1].body["max_tokens"].as_u64());
    assert_eq!(limit, Some(128), "E-04 default");
    let record = r.request_record(&id).await;
    assert_eq!(record["charged_nano_usd"], 19_000);
    assert_eq!(record["protocol"], "chat", "E-10");
    assert_eq!(record["attempts"].as_array().unwrap().len(), 2);
    assert!(!record["ledger"].as_array().unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn echo_prepends_the_prompt() {
    // E-05, GP-55.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.set_default(Script::reply(" world"));
    let resp = completions(
        &r,
        &c.key,
        &json!({"model": "m-text", "prompt": ["Hello"], "echo": true}),
    )
    .await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["text"], "Hello world");
    let resp = completions(&r, &c.key, &json!({"model": "m-text", "prompt": "Hello"})).await;
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["choices"][0]["text"], " world");

    let resp = completions(
        &r,
        &c.key,
        &json!({"model": "m-text", "prompt": "Hello", "echo": true, "stream": true}),
    )
    .await;
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let events = sse_events(&resp.text().await.unwrap());
    assert_eq!(events.last().unwrap().1, json!("[DONE]"));
    let chunks: Vec<&Value> = events[..events.len() - 1].iter().map(|(_, d)| d).collect();
    assert!(chunks.iter().all(|c| c["object"] == "text_completion"));
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["text"].as_str())
        .collect();
    assert_eq!(text, "Hello world");
    assert_eq!(chunks[0]["choices"][0]["text"], "Hello");
    assert!(chunks.last().unwrap()["usage"]["cost"].is_number());
}

#[tokio::test(flavor = "multi_thread")]
async fn rejections_are_openai_errors_and_cost_nothing() {
    // E-02, E-03, E-05, E-06, E-07, E-12, E-14.
    let (r, c) = TestRouter::start_rich().await;
    let bad = [
        json!({"prompt": "x"}),
        json!({"model": "m-text"}),
        json!({"model": "m-text", "prompt": []}),
        json!({"model": "m-text", "prompt": ["a", "b"]}),
        json!({"model": "m-text", "prompt": [1, 2, 3]}),
        json!({"model": "m-text", "prompt": [[1, 2]]}),
        json!({"model": "m-text", "prompt": 5}),
        json!({"model": "m-text", "prompt": "x", "max_tokens": 0}),
        json!({"model": "m-text", "prompt": "x", "echo": "yes"}),
        json!({"model": "m-text", "prompt": "x", "n": 2}),
        json!({"model": "m-text", "prompt": "x", "best_of": 2}),
        json!({"model": "m-text", "prompt": "x", "logprobs": 5}),
        json!({"model": "m-text", "prompt": "x", "suffix": "y"}),
        json!({"model": "m-text", "prompt": "x", "temperature": 2.5}),
    ];
    for body in bad {
        let resp = completions(&r, &c.key, &body).await;
        expect_error(resp, 400, "invalid_parameter").await;
    }
    let resp = completions(
        &r,
        &c.key,
        &json!({"model": "m-text", "prompt": "x", "zdr": true}),
    )
    .await;
    expect_error(resp, 503, "zdr_capacity_unavailable").await;
    let over = json!({"model": "m-text", "prompt": "a".repeat(2 * 1024 * 1024)});
    let resp = completions(&r, &c.key, &over).await;
    expect_error(resp, 413, "payload_too_large").await;
    assert_eq!(r.mock.call_count(), 0);

    let ok = [
        json!({"model": "m-text", "prompt": "x", "n": 1, "best_of": 1}),
        json!({"model": "m-text", "prompt": "x", "logprobs": null, "suffix": null}),
        json!({"model": "m-text", "prompt": "x", "x_custom": 1}),
    ];
    for body in ok {
        let resp = completions(&r, &c.key, &body).await;
        assert_eq!(resp.status(), 200, "{body}");
    }
}
