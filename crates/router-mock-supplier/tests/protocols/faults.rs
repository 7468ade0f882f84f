//! Failure scripts on every protocol: each runs over Chat, Messages and
//! Responses and checks the failure in that protocol's own terms.

use std::time::Duration;

use router_mock_supplier::{MockSupplier, Script};
use serde_json::{Value, json};

use crate::harness::{
    ALL, Protocol, SseEvent, assert_connection_cut, client, read_body, sse_events, start,
};

async fn post(mock: &MockSupplier, protocol: Protocol, stream: bool) -> reqwest::Response {
    protocol.post(mock, &protocol.body("m", stream)).await
}

/// Whether `event` ends a successful stream of `protocol`.
fn is_terminal(protocol: Protocol, event: &SseEvent) -> bool {
    match protocol {
        Protocol::Chat => event.data == "[DONE]",
        Protocol::Messages => event.event.as_deref() == Some("message_stop"),
        Protocol::Responses => matches!(
            event.event.as_deref(),
            Some("response.completed" | "response.incomplete")
        ),
    }
}

/// Asserts `events` are well-formed events of `protocol`, none terminal.
fn assert_valid_and_open(protocol: Protocol, events: &[SseEvent]) {
    for (number, event) in events.iter().enumerate() {
        assert!(!is_terminal(protocol, event), "{protocol:?}: {event:?}");
        let payload = event.json();
        match protocol {
            Protocol::Chat => {
                assert_eq!(event.event, None);
                assert_eq!(payload["object"], "chat.completion.chunk");
            }
            Protocol::Messages => {
                assert_eq!(event.event.as_deref(), payload["type"].as_str());
            }
            Protocol::Responses => {
                assert_eq!(event.event.as_deref(), payload["type"].as_str());
                assert_eq!(payload["sequence_number"], number);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn status_default_body_is_the_protocols_error_shape() {
    let mock = start().await;
    for protocol in ALL {
        for stream in [false, true] {
            mock.enqueue(Script::status(503));
            let response = post(&mock, protocol, stream).await;
            assert_eq!(response.status(), 503);
            assert_eq!(response.headers()["content-type"], "application/json");
            let body: Value = response.json().await.unwrap();
            let message = protocol.error_message(&body);
            assert!(message.contains("503"), "{message}");
        }
        mock.enqueue(Script::status(101));
        let response = post(&mock, protocol, false).await;
        assert_eq!(response.status(), 500, "a script error says so");
        protocol.error_message(&response.json().await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_gives_no_response() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::Reset);
        let error = client()
            .post(format!("{}{}", mock.base_url(), protocol.path()))
            .json(&protocol.body("m", true))
            .send()
            .await
            .unwrap_err();
        assert!(!error.is_timeout(), "{protocol:?}");
        assert!(error.status().is_none(), "{protocol:?}");
    }
    assert_eq!(mock.call_count(), 3, "calls are recorded before the reset");
}

#[tokio::test(flavor = "multi_thread")]
async fn reset_after_headers_cuts_an_empty_body() {
    let mock = start().await;
    for protocol in ALL {
        for (stream, content_type) in [(false, "application/json"), (true, "text/event-stream")] {
            mock.enqueue(Script::ResetAfterHeaders);
            let response = post(&mock, protocol, stream).await;
            assert_eq!(response.status(), 200);
            assert_eq!(response.headers()["content-type"], content_type);
            let (received, ended) = read_body(response).await;
            assert_eq!(received, "", "{protocol:?}");
            assert_connection_cut(&ended.unwrap_err());
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn invalid_json_is_a_200_that_does_not_parse() {
    let mock = start().await;
    for protocol in ALL {
        for stream in [false, true] {
            mock.enqueue(Script::InvalidJson);
            let response = post(&mock, protocol, stream).await;
            assert_eq!(response.status(), 200);
            assert_eq!(response.headers()["content-type"], "application/json");
            let text = response.text().await.unwrap();
            assert!(text.starts_with('{'), "{text}");
            assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_stream_sends_events_then_drops_the_connection() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
        let response = post(&mock, protocol, true).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (text, ended) = read_body(response).await;
        assert_connection_cut(&ended.unwrap_err());
        let events = sse_events(&text);
        assert_eq!(events.len(), 2, "{protocol:?}: {text}");
        assert_valid_and_open(protocol, &events);

        // Asking for more events than there are sends all but the terminal.
        mock.enqueue(Script::TruncatedStream { after_chunks: 1000 });
        let (text, ended) = read_body(post(&mock, protocol, true).await).await;
        assert_connection_cut(&ended.unwrap_err());
        let events = sse_events(&text);
        assert!(events.len() > 5, "{protocol:?}: {text}");
        assert_valid_and_open(protocol, &events);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn truncated_stream_cuts_a_json_reply_short() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::TruncatedStream { after_chunks: 2 });
        let response = post(&mock, protocol, false).await;
        assert_eq!(response.status(), 200);
        let (text, ended) = read_body(response).await;
        assert_connection_cut(&ended.unwrap_err());
        assert!(text.starts_with('{'), "{text}");
        assert!(serde_json::from_str::<Value>(&text).is_err(), "{text}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_stream_sends_events_then_a_bad_frame() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::MalformedStream { after_chunks: 3 });
        let response = post(&mock, protocol, true).await;
        let (text, ended) = read_body(response).await;
        ended.unwrap();
        let events = sse_events(&text);
        assert_eq!(events.len(), 4, "{protocol:?}: {text}");
        assert_valid_and_open(protocol, &events[..3]);
        let bad = &events[3];
        assert_eq!(bad.data, "{not json");
        let expected_name = match protocol {
            Protocol::Chat => None,
            Protocol::Messages => Some("content_block_delta"),
            Protocol::Responses => Some("response.output_text.delta"),
        };
        assert_eq!(bad.event.as_deref(), expected_name, "a known event name");

        mock.enqueue(Script::MalformedStream { after_chunks: 3 });
        let text = post(&mock, protocol, false).await.text().await.unwrap();
        assert!(serde_json::from_str::<Value>(&text).is_err());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stream_error_sends_events_then_the_protocols_error_event() {
    let mock = start().await;
    for protocol in ALL {
        mock.enqueue(Script::StreamError {
            after_chunks: 3,
            message: "upstream overloaded".into(),
        });
        let response = post(&mock, protocol, true).await;
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["content-type"], "text/event-stream");
        let (text, ended) = read_body(response).await;
        ended.unwrap();
        let events = sse_events(&text);
        assert_eq!(events.len(), 4, "{protocol:?}: {text}");
        assert_valid_and_open(protocol, &events[..3]);
        let error = &events[3];
        let payload = error.json();
        match protocol {
            Protocol::Chat => {
                assert_eq!(error.event, None);
                protocol.error_message(&payload);
                assert_eq!(payload["error"]["message"], "upstream overloaded");
                assert_eq!(payload["error"]["type"], "server_error");
            }
            Protocol::Messages => {
                assert_eq!(error.event.as_deref(), Some("error"));
                assert_eq!(
                    payload,
                    json!({"type": "error",
                           "error": {"type": "api_error", "message": "upstream overloaded"}})
                );
            }
            Protocol::Responses => {
                assert_eq!(error.event.as_deref(), Some("response.failed"));
                assert_eq!(payload["type"], "response.failed");
                assert_eq!(payload["sequence_number"], 3);
                let response = &payload["response"];
                assert_eq!(response["status"], "failed");
                assert_eq!(
                    response["error"],
                    json!({"code": "server_error", "message": "upstream overloaded"})
                );
                let created = events[0].json();
                assert_eq!(response["id"], created["response"]["id"], "same response");
            }
        }

        // Without a stream the failure is a 500 in the protocol's shape.
        mock.enqueue(Script::stream_error(3));
        let response = post(&mock, protocol, false).await;
        assert_eq!(response.status(), 500);
        let message = protocol.error_message(&response.json().await.unwrap());
        assert_eq!(message, router_mock_supplier::DEFAULT_STREAM_ERROR_MESSAGE);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn stall_holds_until_the_client_gives_up() {
    let mock = start().await;
    mock.set_default(Script::Stall);
    for protocol in ALL {
        let error = client()
            .post(format!("{}{}", mock.base_url(), protocol.path()))
            .timeout(Duration::from_millis(150))
            .json(&protocol.body("m", true))
            .send()
            .await
            .unwrap_err();
        assert!(error.is_timeout(), "{protocol:?}");
    }
    assert_eq!(mock.call_count(), 3);
}
