//! Streaming over SSE: chunks, final usage with cost, failures (B-22, G-14, G-24).

use crate::harness::*;
use futures::StreamExt;
use router_mock_supplier::{MockReply, MockToolCall, MockUsage, Script};
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn stream_relays_chunks_then_usage_with_cost_then_done() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage {
            prompt_tokens: 5,
            completion_tokens: 7,
            cached_tokens: None,
            reasoning_tokens: None,
            cache_creation_tokens: None,
        }),
        ..MockReply::text("one two three")
    }));
    let mut body = hello("m-text");
    body["stream"] = json!(true);
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
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.enqueue(Script::Reply(MockReply {
        tool_calls: vec![MockToolCall::new(
            "call_1",
            "lookup",
            "{\"city\": \"Paris\", \"days\": 3}",
        )],
        ..MockReply::text("")
    }));
    let mut body = hello("m-text");
    body["stream"] = json!(true);
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
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
    let mut body = hello("m-text");
    body["stream"] = json!(true);
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
async fn client_leaving_a_stream_releases_the_hold() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.enqueue(Script::Reply(MockReply {
        chunk_delay_ms: 200,
        ..MockReply::text("a b c d e f g h i j k l m n o p")
    }));
    let mut body = hello("m-text");
    body["stream"] = json!(true);
    let resp = r.chat(&c.key, &body).await;
    let id = request_id(&resp);
    let mut stream = resp.bytes_stream();
    let _first = stream.next().await;
    drop(stream);
    let record = r.request_record(&id).await;
    assert_eq!(record["status"], "failed");
    assert_eq!(r.account(&c.account_id).await["held_nano_usd"], 0);
    // The abandoned attempt is recorded with the release, not lost.
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "{record}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["failure_kind"], "client_cancelled");
}
