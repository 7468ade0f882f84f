//! Fault scripts as a client sees them: resets, broken bodies, stalls.

#![expect(
    clippy::unwrap_used,
    reason = "helpers outside #[test] fns: a failed step must fail the test"
)]

mod common;

use std::io::ErrorKind;
use std::time::Duration;

use common::{assert_connection_cut, client, start};
use router_mock_supplier::{MockSupplier, Script};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn chat(stream: bool) -> Value {
    json!({
        "model": "m",
        "stream": stream,
        "stream_options": {"include_usage": true},
        "messages": [{"role": "user", "content": "hi"}],
    })
}

async fn post(mock: &MockSupplier, stream: bool) -> reqwest::Result<reqwest::Response> {
    client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .json(&chat(stream))
        .send()
        .await
}

/// Sends one chat request on a raw socket and returns everything received
/// and how the read ended.
async fn raw_exchange(mock: &MockSupplier, stream: bool) -> (Vec<u8>, std::io::Result<usize>) {
    let body = chat(stream).to_string();
    let request = format!(
        "POST /v1/chat/completions HTTP/1.1\r\nhost: mock\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut socket = TcpStream::connect(mock.addr()).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let ended = tokio::time::timeout(Duration::from_secs(5), socket.read_to_end(&mut received))
        .await
        .unwrap();
    (received, ended)
}

/// Reads a body chunk by chunk until it ends or fails.
async fn read_body(mut response: reqwest::Response) -> (Vec<u8>, reqwest::Result<()>) {
    let mut received = Vec::new();
    loop {
        match response.chunk().await {
            Ok(Some(chunk)) => received.extend_from_slice(&chunk),
            Ok(None) => return (received, Ok(())),
            Err(error) => return (received, Err(error)),
        }
    }
}

fn sse_data(text: &str) -> Vec<&str> {
    text.split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| event.strip_prefix("data: ").unwrap())
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_gives_a_client_error_without_any_response() {
    let mock = start().await;
    mock.enqueue(Script::Reset);
    let error = post(&mock, false).await.unwrap_err();
    assert!(!error.is_timeout());
    assert!(error.status().is_none());
    assert_eq!(
        mock.call_count(),
        1,
        "the call is recorded before the reset"
    );

    mock.enqueue(Script::Reset);
    let (received, ended) = raw_exchange(&mock, false).await;
    assert!(received.is_empty(), "no response byte: {received:?}");
    assert_eq!(ended.unwrap_err().kind(), ErrorKind::ConnectionReset);
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_after_headers_gives_headers_then_a_body_error() {
    let mock = start().await;
    mock.enqueue(Script::ResetAfterHeaders);
    let response = post(&mock, false).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let (received, ended) = read_body(response).await;
    assert!(received.is_empty());
    assert_connection_cut(&ended.unwrap_err());

    mock.enqueue(Script::ResetAfterHeaders);
    let response = post(&mock, true).await.unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    assert_connection_cut(&response.bytes().await.unwrap_err());

    mock.enqueue(Script::ResetAfterHeaders);
    let (received, _) = raw_exchange(&mock, true).await;
    let text = String::from_utf8(received).unwrap();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200 OK"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    assert_eq!(
        rest, "",
        "not one body byte, not even the chunked terminator"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_json_is_a_200_that_does_not_parse() {
    let mock = start().await;
    mock.enqueue(Script::InvalidJson);
    let response = post(&mock, false).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "application/json");
    let text = response.text().await.unwrap();
    assert!(!text.is_empty());
    assert!(serde_json::from_str::<Value>(&text).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_stream_sends_valid_chunks_then_drops_the_connection() {
    let mock = start().await;
    mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
    let response = post(&mock, true).await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let (received, ended) = read_body(response).await;
    assert_connection_cut(&ended.unwrap_err());
    let text = String::from_utf8(received).unwrap();
    let events = sse_data(&text);
    assert_eq!(events.len(), 2, "{text}");
    for data in events {
        let chunk: Value = serde_json::from_str(data).unwrap();
        assert_eq!(chunk["object"], "chat.completion.chunk");
    }
    assert!(!text.contains("[DONE]"));
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_stream_cuts_a_json_reply_short() {
    let mock = start().await;
    mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
    let response = post(&mock, false).await.unwrap();
    assert_eq!(response.status(), 200);
    let (received, ended) = read_body(response).await;
    assert_connection_cut(&ended.unwrap_err());
    assert!(received.starts_with(b"{"));
    assert!(serde_json::from_slice::<Value>(&received).is_err());
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_stream_sends_valid_chunks_then_a_bad_frame() {
    let mock = start().await;
    mock.enqueue(Script::MalformedStream { after_chunks: 3 });
    let text = post(&mock, true).await.unwrap().text().await.unwrap();
    let events = sse_data(&text);
    assert_eq!(events.len(), 4, "{text}");
    for data in &events[..3] {
        serde_json::from_str::<Value>(data).unwrap();
    }
    assert_eq!(events[3], "{not json");
}

#[tokio::test(flavor = "multi_thread")]
async fn stall_holds_until_the_client_gives_up_or_the_server_stops() {
    let mock = start().await;
    mock.set_default(Script::Stall);
    let error = client()
        .post(format!("{}/chat/completions", mock.base_url()))
        .timeout(Duration::from_millis(150))
        .json(&chat(false))
        .send()
        .await
        .unwrap_err();
    assert!(error.is_timeout());

    let stalled = tokio::spawn({
        let mock = mock.clone();
        async move { post(&mock, false).await }
    });
    while mock.call_count() < 2 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    mock.shutdown();
    let outcome = tokio::time::timeout(Duration::from_secs(2), stalled)
        .await
        .expect("shutdown ends stalled connections")
        .unwrap();
    assert!(outcome.is_err());
    assert!(TcpStream::connect(mock.addr()).await.is_err());
}
