//! Tracing (issue 30, item 9): a client's W3C `traceparent` is joined and
//! each supplier attempt goes out as a child span with the router's
//! request id; a well-formed client `x-request-id` is kept on the answer;
//! the supplier's own request id is kept on every attempt's record and in
//! the request's log line (the real binary).

use crate::harness::*;
use router_mock_supplier::{RecordedCall, Script};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::time::Duration;

const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
const TRACEPARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

/// `(version, trace id, span id, flags)` of a `traceparent` the supplier got.
fn traceparent_of(call: &RecordedCall) -> (String, String, String, String) {
    let header = call.header("traceparent").expect("traceparent sent");
    let parts: Vec<&str> = header.split('-').collect();
    assert_eq!(parts.len(), 4, "{header}");
    assert_eq!(header.len(), 55, "{header}");
    (
        parts[0].to_owned(),
        parts[1].to_owned(),
        parts[2].to_owned(),
        parts[3].to_owned(),
    )
}

/// The router's request id the supplier was told.
fn router_id_of(call: &RecordedCall) -> String {
    let id = call.header("x-request-id").expect("x-request-id sent");
    uuid::Uuid::parse_str(id).expect("the router's request id is its UUID");
    assert_eq!(call.header("x-client-request-id"), Some(id));
    id.to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_client_trace_reaches_the_supplier_and_its_request_id_is_kept() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let resp = hello_with_headers(
        &r.client,
        &r.base,
        &c.key,
        "m-text",
        &[
            ("traceparent", TRACEPARENT),
            ("tracestate", "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"),
            ("x-request-id", "client-abc:123/x"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 200);
    // The client's well-formed id is kept on the answer.
    assert_eq!(request_id(&resp), "client-abc:123/x");
    let body: Value = resp.json().await.unwrap();
    assert!(body["id"].as_str().unwrap().starts_with("chatcmpl-"));

    let calls = r.mock.calls();
    assert_eq!(calls.len(), 1);
    let (version, trace, span, flags) = traceparent_of(&calls[0]);
    assert_eq!(version, "00");
    assert_eq!(trace, TRACE_ID, "the attempt joins the client's trace");
    assert_ne!(span, CLIENT_SPAN, "the attempt is a child span");
    assert_eq!(flags, "01", "the client's sampling decision is kept");
    assert_eq!(
        calls[0].header("tracestate"),
        Some("congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
    );
    let router_id = router_id_of(&calls[0]);
    assert_ne!(router_id, "client-abc:123/x");

    // The history is the router's id's; the attempt has the supplier's id.
    let record = r.request_record(&router_id).await;
    assert_eq!(record["status"], "succeeded", "{record}");
    let attempt = &record["attempts"][0];
    let supplier_id = attempt["supplier_request_id"].as_str().unwrap();
    assert!(supplier_id.starts_with("req_mock_"), "{record}");
}

#[tokio::test(flavor = "multi_thread")]
async fn every_attempt_is_its_own_span_and_keeps_its_supplier_id() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    // Two 500s on the primary route, then the fallback serves.
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    let resp = hello_with_headers(
        &r.client,
        &r.base,
        &c.key,
        "m-text",
        &[("traceparent", TRACEPARENT)],
    )
    .await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    let calls = r.mock.calls();
    assert_eq!(calls.len(), 3);
    let spans: Vec<String> = calls.iter().map(|c| traceparent_of(c).2).collect();
    for call in &calls {
        assert_eq!(traceparent_of(call).1, TRACE_ID);
        // No tracestate came in, so none goes out.
        assert_eq!(call.header("tracestate"), None);
    }
    assert!(
        spans[0] != spans[1] && spans[1] != spans[2] && spans[0] != spans[2],
        "{spans:?}"
    );
    let router_id = router_id_of(&calls[0]);
    assert!(calls.iter().all(|c| router_id_of(c) == router_id));

    let record = r.request_record(&router_id).await;
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 3, "{record}");
    let ids: Vec<&str> = attempts
        .iter()
        .map(|a| a["supplier_request_id"].as_str().unwrap())
        .collect();
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[2]["outcome"], "succeeded");
    assert!(ids.iter().all(|id| id.starts_with("req_mock_")), "{ids:?}");
    assert!(ids[0] != ids[1] && ids[1] != ids[2], "{ids:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn malformed_ids_are_replaced_and_a_missing_trace_is_started() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let too_long = "a".repeat(129);
    for (sent_id, traceparent) in [
        (
            "has space",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        ),
        (too_long.as_str(), "not a traceparent"),
        ("", ""),
    ] {
        r.mock.reset();
        let resp = r
            .client
            .post(format!("{}/v1/chat/completions", r.base))
            .bearer_auth(&c.key)
            .header("traceparent", traceparent)
            .header("tracestate", "congo=dropped")
            .header("x-request-id", sent_id)
            .json(&hello("m-text"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 200);
        let answered = request_id(&resp);
        assert_ne!(answered, sent_id);
        resp.text().await.unwrap();
        let calls = r.mock.calls();
        // The answer then carries the router's own id, the one the supplier got.
        assert_eq!(answered, router_id_of(&calls[0]));
        let (version, trace, _, flags) = traceparent_of(&calls[0]);
        assert_eq!(version, "00");
        assert_ne!(trace, TRACE_ID, "a malformed parent starts a new trace");
        assert_ne!(trace, "0".repeat(32));
        assert_eq!(flags, "00");
        // A tracestate without a valid traceparent is dropped.
        assert_eq!(calls[0].header("tracestate"), None);
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn messages_answers_keep_the_client_id_and_read_anthropic_request_ids() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let resp = r
        .client
        .post(format!("{}/v1/messages", r.base))
        .header("x-api-key", &c.key)
        .header("anthropic-version", "2023-06-01")
        .header("x-request-id", "support-ticket-42")
        .json(&messages_hello("m-claude"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["request-id"], "support-ticket-42");
    assert_eq!(resp.headers()["x-request-id"], "support-ticket-42");
    resp.text().await.unwrap();
    let calls = r.mock.calls();
    assert_eq!(calls[0].path, "/v1/messages");
    let record = r.request_record(&router_id_of(&calls[0])).await;
    // The mock answers Messages with Anthropic's `request-id` header.
    assert!(
        record["attempts"][0]["supplier_request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_mock_"),
        "{record}"
    );

    // An error answer keeps the client's id too (P-02's header).
    let resp = r
        .client
        .post(format!("{}/v1/messages", r.base))
        .header("x-api-key", "sk-rt-wrong")
        .header("anthropic-version", "2023-06-01")
        .header("x-request-id", "support-ticket-43")
        .json(&messages_hello("m-claude"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["request-id"], "support-ticket-43");
    expect_messages_error(resp, 401, "authentication_error").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stream_records_its_supplier_id_with_the_charge() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let mut body = hello("m-text");
    body["stream"] = json!(true);
    let resp = r
        .client
        .post(format!("{}/v1/chat/completions", r.base))
        .bearer_auth(&c.key)
        .header("traceparent", TRACEPARENT)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    let calls = r.mock.calls();
    assert_eq!(traceparent_of(&calls[0]).1, TRACE_ID);
    let record = r.request_record(&router_id_of(&calls[0])).await;
    assert_eq!(record["status"], "succeeded", "{record}");
    assert!(
        record["attempts"][0]["supplier_request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_mock_")
    );
}

/// The real binary's request line names the client's id, the trace and the
/// supplier's id; a failed attempt's line names its supplier's id.
#[tokio::test(flavor = "multi_thread")]
async fn the_log_line_carries_the_ids() {
    let mock = mock_answering("traced").await;
    let db = TestDatabase::new().await;
    let RouterProcess {
        mut child,
        base,
        stderr,
    } = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_LOG", "info"), ("ROUTER_LOG_FORMAT", "json")],
    )
    .await;
    let client = reqwest::Client::new();
    let key = &funded_key_over_http(&client, &base, "trace@example.com", 1_000_000_000_000).await;
    mock.enqueue_for("up-text-primary", Script::status(400));
    let resp = hello_with_headers(
        &client,
        &base,
        key,
        "m-text",
        &[
            ("traceparent", TRACEPARENT),
            ("x-request-id", "client-line-1"),
        ],
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(request_id(&resp), "client-line-1");
    resp.text().await.unwrap();
    let calls = mock.calls();
    assert_eq!(
        calls.len(),
        2,
        "rejected on the primary, served by the fallback"
    );
    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let log = tokio::time::timeout(Duration::from_secs(10), stderr)
        .await
        .unwrap()
        .unwrap();
    let lines: Vec<Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    let request = lines
        .iter()
        .find(|l| l["fields"]["client_request_id"] == "client-line-1")
        .unwrap_or_else(|| panic!("no request line: {log}"));
    let fields = &request["fields"];
    assert_eq!(fields["trace_id"], TRACE_ID);
    assert_eq!(fields["request_id"], router_id_of(&calls[0]).as_str());
    assert!(
        fields["supplier_request_id"]
            .as_str()
            .unwrap()
            .starts_with("req_mock_"),
        "{fields}"
    );
    let failed = lines
        .iter()
        .find(|l| l["fields"]["message"] == "attempt failed")
        .unwrap_or_else(|| panic!("no attempt line: {log}"));
    let failed_id = failed["fields"]["supplier_request_id"].as_str().unwrap();
    assert!(failed_id.starts_with("req_mock_"));
    assert_ne!(Some(failed_id), fields["supplier_request_id"].as_str());
    mock.shutdown();
}

/// An image generation's one supplier call is identified like an attempt
/// of an inference request: a child span of the client's trace, the
/// router's request id; the supplier's request id is kept on the attempt.
#[tokio::test(flavor = "multi_thread")]
async fn an_image_generation_reaches_its_supplier_traced_and_its_request_id_is_kept() {
    let (r, c) = TestRouter::start_rich().await;
    let resp = r
        .client
        .post(format!("{}/v1/images/generations", r.base))
        .bearer_auth(&c.key)
        .header("traceparent", TRACEPARENT)
        .json(&json!({"model": "m-img", "prompt": "a cat"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let calls = r.mock.calls();
    assert_eq!(calls.len(), 1);
    let (_, trace, span, _) = traceparent_of(&calls[0]);
    assert_eq!(trace, TRACE_ID);
    assert_ne!(span, CLIENT_SPAN);
    assert_eq!(router_id_of(&calls[0]), id);
    let record = r.request_record(&id).await;
    let supplier_id = record["attempts"][0]["supplier_request_id"]
        .as_str()
        .unwrap();
    assert!(supplier_id.starts_with("req_mock_"), "{record}");
}
