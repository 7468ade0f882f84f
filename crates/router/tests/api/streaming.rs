//! Streaming over SSE: chunks, final usage with cost, failures (B-22, G-14, G-24).

use crate::harness::*;
use futures::StreamExt;
use router_mock_supplier::{MockReply, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn stream_relays_chunks_then_usage_with_cost_then_done() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text("one two three")
    }));
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "text/event-stream");
    let id = request_id(&resp);
    let lines = data_lines(resp).await;
    assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
    let chunks: Vec<Value> = lines[..lines.len() - 1]
        .iter()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let text: String = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"]["content"].as_str())
        .collect();
    assert_eq!(text, "one two three");
    assert!(
        chunks
            .iter()
            .all(|c| c["object"] == "chat.completion.chunk" && c["model"] == "m-text")
    );
    assert_eq!(chunks[0]["choices"][0]["delta"]["role"], "assistant");
    let usage_chunk = chunks.last().unwrap();
    assert_eq!(usage_chunk["choices"], json!([]));
    assert_eq!(usage_chunk["usage"]["prompt_tokens"], 5);
    // 5 * 1 + 7 * 2 = 19 USD/MTok-tokens = 19,000 nano-USD.
    assert_eq!(usage_chunk["usage"]["cost"], json!(0.000019));
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "stop")
    );
    let record = r.request_record(&id).await;
    assert_eq!(record["status"], "succeeded");
    assert_eq!(record["charged_nano_usd"], 19_000);
    assert_eq!(record["stream"], true);
}

#[tokio::test(flavor = "multi_thread")]
async fn streamed_tool_call_arguments_arrive_in_pieces() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        tool_calls: vec![MockToolCall::new(
            "call_1",
            "lookup",
            "{\"city\": \"Paris\", \"days\": 3}",
        )],
        ..MockReply::text("")
    }));
    let body = hello_stream("m-text");
    let lines = data_lines(r.chat(&c.key, &body).await).await;
    let chunks: Vec<Value> = lines
        .iter()
        .filter(|l| *l != "[DONE]")
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let calls: Vec<&Value> = chunks
        .iter()
        .filter_map(|c| c["choices"][0]["delta"].get("tool_calls"))
        .collect();
    assert!(calls.len() >= 2);
    assert_eq!(calls[0][0]["id"], "call_1");
    assert_eq!(calls[0][0]["function"]["name"], "lookup");
    let args: String = calls
        .iter()
        .filter_map(|c| c[0]["function"]["arguments"].as_str())
        .collect();
    assert_eq!(args, "{\"city\": \"Paris\", \"days\": 3}");
    assert!(
        chunks
            .iter()
            .any(|c| c["choices"][0]["finish_reason"] == "tool_calls")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_cut_midway_ends_in_an_error_and_is_not_charged() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let lines = data_lines(resp).await;
    assert_ne!(lines.last().map(String::as_str), Some("[DONE]"));
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_error");
    assert_eq!(
        r.mock.call_count(),
        1,
        "a started stream is never retried (G-14)"
    );
    let record = r.request_record(&id).await;
    assert_eq!(record["status"], "failed");
    // The stream's attempt is recorded with the release, as failed.
    assert_eq!(record["attempts"].as_array().unwrap().len(), 1);
    assert_eq!(record["attempts"][0]["outcome"], "failed");
    assert_eq!(
        r.account(&c.account_id).await["balance_nano_usd"],
        1_000_000_000_000i64
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn client_leaving_a_stream_before_any_output_releases_the_hold() {
    // GP-48: the role chunk carries no content; the first word is two
    // seconds away when the client leaves.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        chunk_delay_ms: 2_000,
        ..MockReply::text("a b c d")
    }));
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    let id = request_id(&resp);
    let mut stream = resp.bytes_stream();
    let first = stream.next().await.unwrap().unwrap();
    assert!(
        !String::from_utf8_lossy(&first).contains("\"content\":\"a"),
        "the first frame must carry no content: {first:?}"
    );
    drop(stream);
    let record = r.request_record(&id).await;
    assert_eq!(record["status"], "failed");
    assert_eq!(r.account(&c.account_id).await["held_nano_usd"], 0);
    assert_eq!(
        r.account(&c.account_id).await["balance_nano_usd"],
        1_000_000_000_000i64
    );
    // The abandoned attempt is recorded with the release, not lost.
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{record}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["failure_kind"], "client_cancelled");
}

/// Streams a Chat request for `m-text`, reads until the first word ("a")
/// has arrived, then leaves; returns the request's id.
async fn leave_after_the_first_word(r: &TestRouter, key: &str) -> String {
    let body = hello_stream("m-text");
    let resp = r.chat(key, &body).await;
    let id = request_id(&resp);
    let mut stream = resp.bytes_stream();
    let mut seen = Vec::new();
    while !String::from_utf8_lossy(&seen).contains("\"content\":\"a") {
        seen.extend_from_slice(&stream.next().await.unwrap().unwrap());
    }
    id
}

/// The request's record once it leaves `reserved`, waiting up to `limit`.
async fn settled_record(r: &TestRouter, id: &str, limit: Duration) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (status, body) = r
            .admin(reqwest::Method::GET, &format!("/admin/requests/{id}"), None)
            .await;
        assert_eq!(status, 200, "{body}");
        if body["status"] != "reserved" || started.elapsed() > limit {
            return body;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn client_leaving_a_stream_after_output_is_charged_as_if_it_had_stayed() {
    // GP-48 as revised: the client has part of the answer and the supplier
    // bills the whole of it, so the router reads the stream to its end and
    // settles from the supplier's usage.
    let (r, c) = TestRouter::start_rich().await;
    let reply = MockReply {
        chunk_delay_ms: 60,
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text("a b c d e f g h i j")
    };
    r.mock.enqueue(Script::Reply(reply.clone()));
    let id = leave_after_the_first_word(&r, &c.key).await;
    let record = settled_record(&r, &id, Duration::from_secs(10)).await;
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["charged_nano_usd"], 19_000, "{record}");
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{record}");
    assert_eq!(attempts[0]["outcome"], "succeeded");
    let account = r.account(&c.account_id).await;
    assert_eq!(account["held_nano_usd"], 0);
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000i64 - 19_000);
    assert_eq!(r.mock.call_count(), 1, "never retried");

    // The same reply read to its end by a client that stays costs the same.
    r.mock.enqueue(Script::Reply(reply));
    let body = hello_stream("m-text");
    let stayed = r.chat(&c.key, &body).await;
    let stayed_id = request_id(&stayed);
    let lines = data_lines(stayed).await;
    assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
    let stayed = r.request_record(&stayed_id).await;
    assert_eq!(stayed["charged_nano_usd"], record["charged_nano_usd"]);
}

#[tokio::test(flavor = "multi_thread")]
async fn client_leaving_a_stream_that_is_then_cut_is_not_charged() {
    // GP-48: after output, only a valid end is charged; a cut releases.
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        chunk_delay_ms: 60,
        cut_after_chunks: Some(6),
        ..MockReply::text("a b c d e f g h")
    }));
    let id = leave_after_the_first_word(&r, &c.key).await;
    let record = settled_record(&r, &id, Duration::from_secs(10)).await;
    assert_eq!(record["status"], "failed", "{record}");
    assert_eq!(record["attempts"][0]["outcome"], "failed", "{record}");
    let account = r.account(&c.account_id).await;
    assert_eq!(account["held_nano_usd"], 0);
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000i64);
}
