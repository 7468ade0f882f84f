//! Queues and the call log are shared by the three protocols.

use router_mock_supplier::{MockReply, Script};
use serde_json::Value;

use crate::harness::{ALL, Protocol, client, start};

async fn reply_text(
    mock: &router_mock_supplier::MockSupplier,
    protocol: Protocol,
    model: &str,
) -> String {
    let response = protocol.post(mock, &protocol.body(model, false)).await;
    assert_eq!(response.status(), 200);
    protocol.reply_text(&response.json().await.unwrap())
}

#[tokio::test(flavor = "multi_thread")]
async fn model_queues_serve_whichever_protocol_asks() {
    let mock = start().await;
    mock.set_default(Script::reply("default"));
    mock.enqueue(Script::reply("global 1"));
    mock.enqueue_for("claude-a", Script::reply("claude 1"));
    mock.enqueue_for("claude-a", Script::reply("claude 2"));
    mock.enqueue_for("gpt-b", Script::reply("gpt 1"));

    assert_eq!(
        reply_text(&mock, Protocol::Messages, "claude-a").await,
        "claude 1"
    );
    assert_eq!(
        reply_text(&mock, Protocol::Responses, "gpt-b").await,
        "gpt 1"
    );
    assert_eq!(
        reply_text(&mock, Protocol::Chat, "claude-a").await,
        "claude 2"
    );
    assert_eq!(
        reply_text(&mock, Protocol::Responses, "claude-a").await,
        "global 1"
    );
    assert_eq!(
        reply_text(&mock, Protocol::Messages, "gpt-b").await,
        "default"
    );

    assert_eq!(mock.call_count(), 5);
    let paths: Vec<String> = mock
        .calls_for("claude-a")
        .into_iter()
        .map(|call| call.path)
        .collect();
    assert_eq!(
        paths,
        ["/v1/messages", "/v1/chat/completions", "/v1/responses"]
    );
    assert_eq!(mock.calls_for("gpt-b").len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn every_protocol_is_recorded_with_path_headers_and_body() {
    let mock = start().await;
    let body = Protocol::Messages.body("claude-a", true);
    client()
        .post(format!("{}/messages", mock.base_url()))
        .header("x-api-key", "sk-ant-upstream")
        .header("anthropic-version", "2023-06-01")
        .header("anthropic-beta", "beta-one,beta-two")
        .json(&body)
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    // Any prefix works as long as the path ends with the endpoint.
    client()
        .post(format!(
            "http://{}/openai/v1/responses?api-version=1",
            mock.addr()
        ))
        .bearer_auth("sk-upstream")
        .json(&Protocol::Responses.body("gpt-b", false))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    let count_tokens = client()
        .post(format!("{}/messages/count_tokens", mock.base_url()))
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(count_tokens.status(), 404, "count_tokens is not served");

    let calls = mock.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].path, "/v1/messages");
    assert_eq!(calls[0].body, body);
    assert_eq!(calls[0].model(), Some("claude-a"));
    assert_eq!(calls[0].header("x-api-key"), Some("sk-ant-upstream"));
    assert_eq!(calls[0].header("Anthropic-Version"), Some("2023-06-01"));
    assert_eq!(calls[0].header("anthropic-beta"), Some("beta-one,beta-two"));
    assert_eq!(calls[1].path, "/openai/v1/responses");
    assert_eq!(calls[1].header("authorization"), Some("Bearer sk-upstream"));
    assert_eq!(calls[1].body["input"], Value::from("hi"));
}

#[tokio::test(flavor = "multi_thread")]
async fn pacing_applies_to_every_protocol() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::Reply(MockReply {
            text: "a b".into(),
            delay_ms: 20,
            first_chunk_delay_ms: 30,
            chunk_delay_ms: 10,
            ..MockReply::default()
        }));
        let started = std::time::Instant::now();
        let mut response = protocol.post(&mock, &protocol.body("m", true)).await;
        assert!(started.elapsed() >= std::time::Duration::from_millis(20));
        let first = response.chunk().await.unwrap().unwrap();
        let first_at = started.elapsed();
        let mut reads = 1;
        while response.chunk().await.unwrap().is_some() {
            reads += 1;
        }
        // Only lower bounds on time, so a loaded machine cannot fail the test.
        assert!(
            first_at >= std::time::Duration::from_millis(50),
            "{protocol:?} {first_at:?}"
        );
        assert!(
            started.elapsed() >= first_at + std::time::Duration::from_millis(40),
            "{protocol:?}: at least 5 more events, 10 ms apart"
        );
        assert!(reads >= 3, "{protocol:?}: events arrive separately");
        assert!(!first.is_empty());
    }
}
