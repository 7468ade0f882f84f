//! Chat endpoint over real HTTP: JSON and streamed replies, statuses, queue
//! order and call recording.

#![expect(
    clippy::unwrap_used,
    reason = "helpers outside #[test] fns: a failed step must fail the test"
)]

mod common;

use std::time::{Duration, Instant};

use common::{client, start};
use router_mock_supplier::{MockReply, MockSupplier, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};

fn chat(model: &str, stream: bool) -> Value {
    let mut body = json!({
        "model": model,
        "messages": [{"role": "user", "content": "What is the weather in Paris?"}],
    });
    if stream {
        body["stream"] = json!(true);
        body["stream_options"] = json!({"include_usage": true});
    }
    body
}

async fn post(mock: &MockSupplier, body: &Value) -> reqwest::Response {
    client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(body)
        .send()
        .await
        .unwrap()
}

/// The JSON payloads of an SSE body, `[DONE]` kept as a string.
fn sse_data(text: &str) -> Vec<String> {
    text.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| event.strip_prefix("data: ").unwrap().to_owned())
        .collect()
}

async fn reply_text(mock: &MockSupplier, model: &str) -> String {
    let body: Value = post(mock, &chat(model, false)).await.json().await.unwrap();
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn json_reply_carries_text_and_scripted_usage() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "It is sunny.".into(),
        usage: Some(MockUsage {
            prompt_tokens: 42,
            completion_tokens: 7,
            cached_tokens: Some(40),
            cache_creation_tokens: None,
            reasoning_tokens: None,
        }),
        ..MockReply::default()
    }));
    let response = post(&mock, &chat("gpt-up", false)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(
        response.headers()["content-type"],
        "application/json",
        "non-streaming replies are JSON"
    );
    assert!(response.content_length().is_some());
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["object"], "chat.completion");
    assert_eq!(body["model"], "gpt-up");
    assert_eq!(body["choices"][0]["message"]["role"], "assistant");
    assert_eq!(body["choices"][0]["message"]["content"], "It is sunny.");
    assert_eq!(body["choices"][0]["finish_reason"], "stop");
    assert_eq!(
        body["usage"],
        json!({
            "prompt_tokens": 42,
            "completion_tokens": 7,
            "total_tokens": 49,
            "prompt_tokens_details": {"cached_tokens": 40},
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn json_reply_estimates_usage_when_not_scripted() {
    let mock = start().await;
    mock.enqueue(Script::reply("12345678"));
    let body: Value = post(&mock, &chat("m", false)).await.json().await.unwrap();
    // "What is the weather in Paris?" is 29 characters.
    assert_eq!(body["usage"]["prompt_tokens"], 29 / 4 + 1);
    assert_eq!(body["usage"]["completion_tokens"], 3);
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_reply_reassembles_text_tool_calls_and_usage() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "Let me check the weather for you.".into(),
        tool_calls: vec![
            MockToolCall::new("call_1", "get_weather", r#"{"city": "Paris", "unit": "C"}"#),
            MockToolCall::new("call_2", "get_time", r#"{"tz": "Europe/Paris"}"#),
        ],
        usage: Some(MockUsage {
            prompt_tokens: 11,
            completion_tokens: 22,
            cached_tokens: None,
            cache_creation_tokens: None,
            reasoning_tokens: Some(3),
        }),
        ..MockReply::default()
    }));
    let response = post(&mock, &chat("gpt-up", true)).await;
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let events = sse_data(&response.text().await.unwrap());
    assert_eq!(events.last().unwrap(), "[DONE]");
    let chunks: Vec<Value> = events[..events.len() - 1]
        .iter()
        .map(|data| serde_json::from_str(data).unwrap())
        .collect();
    assert!(
        chunks
            .iter()
            .all(|chunk| chunk["object"] == "chat.completion.chunk" && chunk["model"] == "gpt-up")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");

    let mut text = String::new();
    let mut calls: Vec<(String, String, String)> = Vec::new();
    let mut finish_reason = None;
    let mut text_deltas = 0;
    for chunk in &chunks[..chunks.len() - 1] {
        let choice = &chunk["choices"][0];
        if let Some(piece) = choice["delta"]["content"].as_str() {
            text.push_str(piece);
            if !piece.is_empty() {
                text_deltas += 1;
            }
        }
        for call in choice["delta"]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let index = call["index"].as_u64().unwrap() as usize;
            if let Some(id) = call["id"].as_str() {
                assert_eq!(index, calls.len(), "a tool call head comes once, in order");
                assert_eq!(call["type"], "function");
                assert_eq!(call["function"]["arguments"], "");
                let name = call["function"]["name"].as_str().unwrap();
                calls.push((id.to_owned(), name.to_owned(), String::new()));
            } else {
                assert!(call.get("id").is_none());
                let fragment = call["function"]["arguments"].as_str().unwrap();
                calls[index].2.push_str(fragment);
            }
        }
        if let Some(reason) = choice["finish_reason"].as_str() {
            finish_reason = Some(reason.to_owned());
        }
    }
    assert_eq!(text, "Let me check the weather for you.");
    assert!(text_deltas > 1, "text is split into several deltas");
    assert_eq!(
        calls,
        vec![
            (
                "call_1".to_owned(),
                "get_weather".to_owned(),
                r#"{"city": "Paris", "unit": "C"}"#.to_owned()
            ),
            (
                "call_2".to_owned(),
                "get_time".to_owned(),
                r#"{"tz": "Europe/Paris"}"#.to_owned()
            ),
        ]
    );
    assert_eq!(finish_reason.as_deref(), Some("tool_calls"));
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(
        usage_chunk["usage"],
        json!({
            "prompt_tokens": 11,
            "completion_tokens": 22,
            "total_tokens": 33,
            "completion_tokens_details": {"reasoning_tokens": 3},
        })
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_without_include_usage_has_no_usage_chunk() {
    let mock = start().await;
    mock.enqueue(Script::reply("one two"));
    let mut body = chat("m", true);
    body["stream_options"] = json!({"include_usage": false});
    let events = sse_data(&post(&mock, &body).await.text().await.unwrap());
    assert_eq!(events.last().unwrap(), "[DONE]");
    let last_chunk: Value = serde_json::from_str(&events[events.len() - 2]).unwrap();
    assert_eq!(last_chunk["choices"][0]["finish_reason"], "stop");
    assert!(
        events[..events.len() - 1]
            .iter()
            .all(|data| !data.contains("\"usage\""))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_is_paced_and_flushed_chunk_by_chunk() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "a b c".into(),
        first_chunk_delay_ms: 60,
        chunk_delay_ms: 25,
        ..MockReply::default()
    }));
    let started = Instant::now();
    let mut response = post(&mock, &chat("m", true)).await;
    let first = response.chunk().await.unwrap().unwrap();
    let first_at = started.elapsed();
    let mut received = first.to_vec();
    let mut reads = 1;
    while let Some(chunk) = response.chunk().await.unwrap() {
        received.extend_from_slice(&chunk);
        reads += 1;
    }
    let done_at = started.elapsed();
    // role, a, b, c, finish, usage, [DONE]: 6 gaps of 25 ms after the first.
    // Only lower bounds on time, so a loaded machine cannot fail the test.
    assert!(first_at >= Duration::from_millis(60), "{first_at:?}");
    assert!(
        done_at >= first_at + Duration::from_millis(150),
        "{done_at:?}"
    );
    assert!(reads >= 3, "events arrive separately, got {reads} reads");
    let text = String::from_utf8(received).unwrap();
    assert!(text.ends_with("data: [DONE]\n\n"));
    assert!(first.starts_with(b"data: {"));
}

#[tokio::test(flavor = "multi_thread")]
async fn status_script_sends_envelope_and_retry_after() {
    let mock = start().await;
    mock.enqueue(Script::Status {
        status: 429,
        body: None,
        retry_after: Some("2".into()),
    });
    mock.enqueue(Script::Status {
        status: 503,
        body: Some(json!({"custom": true})),
        retry_after: None,
    });
    let response = post(&mock, &chat("m", false)).await;
    assert_eq!(response.status(), 429);
    assert_eq!(response.headers()["retry-after"], "2");
    let body: Value = response.json().await.unwrap();
    assert_eq!(body["error"]["type"], "rate_limit_error");
    assert!(body["error"]["message"].is_string());

    let response = post(&mock, &chat("m", true)).await;
    assert_eq!(response.status(), 503);
    assert!(response.headers().get("retry-after").is_none());
    assert_eq!(
        response.json::<Value>().await.unwrap(),
        json!({"custom": true})
    );

    mock.enqueue(Script::status(101));
    let response = post(&mock, &chat("m", false)).await;
    assert_eq!(response.status(), 500, "a script error says so");
}

#[tokio::test(flavor = "multi_thread")]
async fn model_queue_is_used_before_global_queue_then_default() {
    let mock = start().await;
    mock.set_default(Script::reply("default"));
    mock.enqueue(Script::reply("global 1"));
    mock.enqueue(Script::reply("global 2"));
    mock.enqueue_for("model-a", Script::reply("a 1"));
    assert_eq!(reply_text(&mock, "model-b").await, "global 1");
    assert_eq!(reply_text(&mock, "model-a").await, "a 1");
    assert_eq!(reply_text(&mock, "model-a").await, "global 2");
    assert_eq!(reply_text(&mock, "model-a").await, "default");
    assert_eq!(reply_text(&mock, "model-b").await, "default");
    assert_eq!(mock.call_count(), 5);
    assert_eq!(mock.calls_for("model-a").len(), 3);
    assert_eq!(mock.calls_for("model-b").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn built_in_default_replies_when_nothing_is_scripted() {
    let mock = start().await;
    assert_eq!(
        reply_text(&mock, "m").await,
        "Hello from the mock supplier."
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn calls_are_recorded_with_path_headers_and_body() {
    let mock = start().await;
    let client = client();
    let first = chat("model-a", false);
    let second = chat("model-b", true);
    let before = Instant::now();
    client
        .post(format!("{}/chat/completions", mock.base_url()))
        .bearer_auth("sk-upstream")
        .header("x-trace", "t-1")
        .json(&first)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // Any prefix works as long as the path ends in /chat/completions.
    client
        .post(format!(
            "http://{}/openai/deployments/x/chat/completions?api-version=1",
            mock.addr()
        ))
        .header("api-key", "az-key")
        .json(&second)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let missing = client
        .get(format!("{}/models", mock.base_url()))
        .send()
        .await
        .unwrap();
    assert_eq!(missing.status(), 404);

    let calls = mock.calls();
    assert_eq!(calls.len(), 2, "only chat calls are recorded");
    assert_eq!(calls[0].path, "/v1/chat/completions");
    assert_eq!(calls[0].body, first);
    assert_eq!(calls[0].header("authorization"), Some("Bearer sk-upstream"));
    assert_eq!(calls[0].header("X-Trace"), Some("t-1"));
    assert!(calls[0].received_at >= before);
    assert_eq!(calls[1].path, "/openai/deployments/x/chat/completions");
    assert_eq!(calls[1].body, second);
    assert!(calls[1].received_at >= calls[0].received_at);
    assert_eq!(mock.calls_for("model-b")[0].body, second);

    mock.enqueue(Script::reply("queued"));
    mock.reset();
    assert_eq!(mock.call_count(), 0);
    assert_eq!(
        reply_text(&mock, "m").await,
        "Hello from the mock supplier.",
        "reset clears the queues"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn non_json_body_is_recorded_as_a_string() {
    let mock = start().await;
    let response = client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .body("not json")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(mock.calls()[0].body, json!("not json"));
}

#[tokio::test(flavor = "multi_thread")]
async fn delay_ms_holds_the_response() {
    let mock = start().await;
    mock.enqueue(Script::Reply(MockReply {
        text: "late".into(),
        delay_ms: 80,
        ..MockReply::default()
    }));
    let started = Instant::now();
    let response = post(&mock, &chat("m", false)).await;
    assert!(started.elapsed() >= Duration::from_millis(80));
    assert_eq!(response.status(), 200);
}
