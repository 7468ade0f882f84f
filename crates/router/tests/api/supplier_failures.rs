//! A failure the supplier reports is not an invalid reply (issue 14 item 5,
//! GP-47, G-12): the codec's typed error keeps its kind all the way to the
//! public code.

use crate::harness::*;
use router_mock_supplier::Script;
use serde_json::{Value, json};

#[tokio::test(flavor = "multi_thread")]
async fn an_error_body_in_a_success_reply_is_upstream_error_after_the_fallback() {
    let (r, c) = TestRouter::start_rich().await;
    let failure = json!({"error": {"message": "overloaded", "type": "server_error", "code": 529}});
    for route in ["up-text-primary", "up-text-fallback"] {
        r.mock.enqueue_for(
            route,
            Script::Status {
                status: 200,
                body: Some(failure.clone()),
                retry_after: None,
            },
        );
    }
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let id = request_id(&resp);
    let body = expect_error(resp, 502, "upstream_error").await;
    assert!(
        !body.to_string().contains("overloaded"),
        "P-08: no supplier text reaches the client: {body}"
    );
    // Reported, so not retried on the same route, but the fallback is tried.
    let models = r.called_models();
    assert_eq!(models, ["up-text-primary", "up-text-fallback"]);
    let record = r.request_record(&id).await;
    let kinds: Vec<&str> = record["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["failure_kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["reported", "reported"], "{record}");
    assert_nothing_charged(&r, &c, &id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_unreadable_reply_stays_invalid_upstream_response() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::InvalidJson);
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let id = request_id(&resp);
    expect_error(resp, 502, "invalid_upstream_response").await;
    assert_eq!(
        r.mock.call_count(),
        1,
        "G-12: a reply arrived, never retried"
    );
    assert_nothing_charged(&r, &c, &id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_before_any_output_is_upstream_error() {
    let (r, c) = TestRouter::start_rich().await;
    for route in ["up-text-primary", "up-text-fallback"] {
        r.mock.enqueue_for(route, Script::stream_error(0));
    }
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    let id = request_id(&resp);
    expect_error(resp, 502, "upstream_error").await;
    assert_eq!(r.mock.call_count(), 2, "the fallback route was tried");
    assert_nothing_charged(&r, &c, &id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn an_error_event_after_output_ends_the_stream_with_upstream_error() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::stream_error(2));
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let lines = data_lines(resp).await;
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["error"]["code"], "upstream_error", "{lines:?}");
    assert_eq!(r.mock.call_count(), 1, "a started stream is never retried");
    assert_nothing_charged(&r, &c, &id).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_malformed_frame_after_output_ends_the_stream_with_invalid_upstream_response() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::MalformedStream { after_chunks: 2 });
    let body = hello_stream("m-text");
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let lines = data_lines(resp).await;
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(
        last["error"]["code"], "invalid_upstream_response",
        "{lines:?}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_messages_error_event_is_upstream_error_for_a_messages_client() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::stream_error(0));
    r.mock.enqueue(Script::stream_error(0));
    let body = json!({
        "model": "m-claude", "max_tokens": 32, "stream": true,
        "messages": [{"role": "user", "content": "Hi"}]
    });
    let resp = r.messages(&c.key, &body).await;
    let error = expect_messages_error(resp, 502, "api_error").await;
    assert!(!error.to_string().contains("invalid"), "{error}");
}

/// The failure kinds and upstream statuses of a request's attempts.
async fn attempts_of(r: &TestRouter, id: &str) -> Vec<(String, Value)> {
    let record = r.request_record(id).await;
    record["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["failure_kind"].as_str().unwrap_or("none").to_owned(),
                a["upstream_status"].clone(),
            )
        })
        .collect()
}

/// Issue 33: a supplier's redirect is never followed (the prompt would be
/// replayed to any host, the supplier key with it); it is a reported
/// failure that goes to the next route, never retried on the same one.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_is_not_followed_and_the_next_route_serves() {
    let (r, c) = TestRouter::start_rich().await;
    let canary = Canary::start().await;
    for (status, stream) in [(307, false), (308, true), (302, false), (303, true)] {
        r.mock.enqueue_for(
            "up-text-primary",
            Script::Redirect {
                status,
                location: format!("{}/v1/chat/completions", canary.base),
            },
        );
        let mut body = hello("m-text");
        body["stream"] = json!(stream);
        let resp = r.chat(&c.key, &body).await;
        assert_eq!(resp.status(), 200, "{status}");
        let id = request_id(&resp);
        let _ = resp.bytes().await.unwrap();
        let record = r.request_record(&id).await;
        assert_eq!(record["route_id"], "text-fallback", "{status}: {record}");
        assert_eq!(
            attempts_of(&r, &id).await,
            [
                ("status".to_owned(), json!(status)),
                ("none".to_owned(), Value::Null)
            ],
            "{status}: one attempt on the redirecting route, then the fallback"
        );
    }
    assert_eq!(canary.hits(), 0, "the redirect target was never reached");
}

/// The same on a Messages route (whose key travels in `x-api-key`) with no
/// other route: 502 upstream_error in the Messages envelope, nothing held
/// or charged, the redirect target never reached.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirect_on_the_only_route_is_upstream_error_and_free() {
    let (r, c) = TestRouter::start_rich().await;
    let canary = Canary::start().await;
    r.mock.enqueue_for(
        "up-via-messages",
        Script::Redirect {
            status: 307,
            location: format!("{}/v1/messages", canary.base),
        },
    );
    let resp = r.messages(&c.key, &messages_hello("m-via-messages")).await;
    let id = request_id(&resp);
    expect_messages_error(resp, 502, "api_error").await;
    assert_eq!(r.mock.call_count(), 1, "a redirect is not retried");
    assert_eq!(
        attempts_of(&r, &id).await,
        [("status".to_owned(), json!(307))]
    );
    assert_nothing_charged(&r, &c, &id).await;
    assert_eq!(canary.hits(), 0, "the redirect target was never reached");
}
