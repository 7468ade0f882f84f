//! Retries and fallback over real HTTP (G-08..G-17).

use crate::harness::*;
use router_mock_supplier::Script;
use serde_json::Value;
use std::time::{Duration, Instant};

#[tokio::test(flavor = "multi_thread")]
async fn two_attempts_then_fallback_keeps_the_public_model_and_price() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    r.mock.enqueue_for("up-text-primary", Script::status(503));
    let resp = r.chat(&c.key, &hello("m-text")).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "m-text");
    let models = r.called_models();
    assert_eq!(
        models,
        ["up-text-primary", "up-text-primary", "up-text-fallback"]
    );
    let record = r.request_record(&id).await;
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3);
    assert_eq!(attempts[0]["upstream_status"], 500);
    assert_eq!(attempts[2]["outcome"], "succeeded");
    assert_eq!(record["route_id"], "text-fallback");
}

#[tokio::test(flavor = "multi_thread")]
async fn transport_failures_before_output_are_retried() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reset);
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    assert_eq!(r.mock.call_count(), 2);
    r.mock.reset();
    r.mock.enqueue(Script::ResetAfterHeaders);
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    assert_eq!(
        r.mock.call_count(),
        2,
        "G-11: a failed body read after headers may retry"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn rejection_on_every_route_is_502_upstream_error() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue_for("up-text-primary", Script::status(422));
    r.mock.enqueue_for("up-text-fallback", Script::status(400));
    let resp = r.chat(&c.key, &hello("m-text")).await;
    expect_error(resp, 502, "upstream_error").await;
    assert_eq!(
        r.mock.call_count(),
        2,
        "a rejection is not retried on the same route (G-10)"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn retry_after_is_honoured_when_it_fits() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Status {
        status: 429,
        body: None,
        retry_after: Some("1".into()),
    });
    let start = Instant::now();
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    let calls = r.mock.calls();
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[1].body["model"], "up-text-primary");
    assert!(calls[1].received_at - calls[0].received_at >= Duration::from_secs(1));
    assert!(start.elapsed() < Duration::from_secs(10));
}

#[tokio::test(flavor = "multi_thread")]
async fn disabled_routes_give_503_route_unavailable() {
    let (r, c) = TestRouter::start_rich().await;
    let resp = r.chat(&c.key, &hello("m-off")).await;
    expect_error(resp, 503, "route_unavailable").await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn stalled_suppliers_end_at_the_deadline_with_503() {
    let r = TestRouter::start_with(Duration::from_secs(2)).await;
    let c = r.rich_customer().await;
    r.mock.set_default(Script::Stall);
    let start = Instant::now();
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let elapsed = start.elapsed();
    let id = request_id(&resp);
    expect_error(resp, 503, "upstream_unavailable").await;
    assert!(
        elapsed >= Duration::from_secs(2) && elapsed < Duration::from_secs(6),
        "{elapsed:?}"
    );
    assert_eq!(r.request_record(&id).await["status"], "failed");
}

#[tokio::test(flavor = "multi_thread")]
async fn supply_priced_fallback_charges_the_used_quote() {
    let (r, c) = TestRouter::start_rich().await;
    let usage = router_mock_supplier::MockUsage::tokens(10, 10);
    let reply = || {
        Script::Reply(router_mock_supplier::MockReply {
            usage: Some(usage),
            ..router_mock_supplier::MockReply::text("ok")
        })
    };
    r.mock.set_default(reply());
    let body: Value = r
        .chat(&c.key, &hello("m-supply"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["usage"]["cost"], serde_json::json!(0.00002));
    r.mock.enqueue_for("up-supply-a", Script::status(401));
    let body: Value = r
        .chat(&c.key, &hello("m-supply"))
        .await
        .json()
        .await
        .unwrap();
    assert_eq!(body["usage"]["cost"], serde_json::json!(0.00006));
}

/// Issue 29: when every eligible route failed fast, the 503 says how the
/// last one failed, not that a deadline passed (G-09, G-10).
#[tokio::test(flavor = "multi_thread")]
async fn the_503_after_every_route_failed_fast_says_what_happened() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.set_default(Script::Status {
        status: 529,
        body: None,
        retry_after: None,
    });
    let start = Instant::now();
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let error = expect_error(resp, 503, "upstream_unavailable").await;
    assert!(start.elapsed() < Duration::from_secs(10));
    assert_eq!(
        error["error"]["message"],
        "Every eligible route failed; the last was overloaded."
    );
    assert!(r.mock.call_count() >= 2);
}
