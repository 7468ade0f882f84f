//! Operating the gateway (issue 19): `/metrics` moves by exactly what was
//! driven through it, and the real binary's logs carry one structured line
//! per request and never a key, a supplier secret or request content.

use crate::harness::*;
use router_mock_supplier::Script;
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::time::Duration;

/// The value of the sample `name{labels...}` whose labels include `labels`
/// (0 when absent).
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    metric_samples(text, name, labels).into_iter().sum()
}

async fn scrape(r: &TestRouter) -> String {
    let resp = r.get("/metrics", ADMIN_TOKEN).await;
    assert_eq!(resp.status(), 200);
    assert!(
        resp.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain")
    );
    resp.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn metrics_count_what_was_driven_through_the_router() {
    let (r, c) = TestRouter::start_rich().await;
    let before = scrape(&r).await;
    let chat = [("surface", "/v1/chat/completions")];
    assert_eq!(sample(&before, "router_requests_total", &chat), 0.0);

    // Two successes, one of them streamed.
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    let mut streamed = hello("m-text");
    streamed["stream"] = json!(true);
    let resp = r.chat(&c.key, &streamed).await;
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap();
    // A 500 on the primary route, retried there, then served by the fallback.
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    // Refused by the guard; and an unknown model (no model label for it).
    assert_eq!(r.chat("sk-rt-wrong", &hello("m-text")).await.status(), 401);
    assert_eq!(r.chat(&c.key, &hello("no-such-model")).await.status(), 404);

    let text = scrape(&r).await;
    let ok = [
        ("surface", "/v1/chat/completions"),
        ("model", "m-text"),
        ("status", "200"),
    ];
    assert_eq!(sample(&text, "router_requests_total", &ok), 3.0, "{text}");
    assert_eq!(
        sample(
            &text,
            "router_requests_total",
            &[("status", "401"), ("code", "invalid_api_key")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            "router_requests_total",
            &[
                ("status", "404"),
                ("model", "-"),
                ("code", "model_not_found")
            ]
        ),
        1.0
    );
    assert!(
        !text.contains("no-such-model"),
        "a client's model name became a label"
    );
    let attempts = |route: &str, outcome: &str| {
        sample(
            &text,
            "router_attempts_total",
            &[("route", route), ("outcome", outcome)],
        )
    };
    assert_eq!(attempts("text-primary", "succeeded"), 2.0);
    assert_eq!(attempts("text-primary", "status"), 2.0, "{text}");
    assert_eq!(attempts("text-fallback", "succeeded"), 1.0);
    assert_eq!(
        sample(&text, "router_retries_total", &[("kind", "same_route")]),
        1.0
    );
    assert_eq!(
        sample(&text, "router_retries_total", &[("kind", "fallback")]),
        1.0
    );
    let reservations =
        |event: &str| sample(&text, "router_reservations_total", &[("event", event)]);
    assert_eq!(reservations("reserved"), 3.0);
    assert_eq!(reservations("settled"), 3.0);
    assert_eq!(reservations("voided"), 0.0);
    // One stream's first byte; latency histograms count every attempt.
    assert_eq!(
        sample(
            &text,
            "router_upstream_first_byte_seconds_count",
            &[("route", "text-primary")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &text,
            "router_upstream_latency_seconds_count",
            &[("route", "text-primary")]
        ),
        3.0
    );
    assert_eq!(sample(&text, "router_open_streams", &[]), 0.0);
    assert!(sample(&text, "router_db_connections_open", &[]) >= 1.0);
    assert!(sample(&text, "router_catalog_routes", &[]) >= 2.0);

    // The operator token guards it.
    let resp = r.get_plain("/metrics").await;
    assert_eq!(resp.status(), 401);
}

const SUPPLIER_SECRET: &str = "sk-supplier-SECRET-8c1f";
const CLIENT_CONTENT: &str = "PRIVATE-PROMPT-4b7e";
const SUPPLIER_CONTENT: &str = "PRIVATE-REPLY-91d2";

/// Drives a full round through a router process (success, stream, supplier
/// failures, bad keys, admin calls) and returns its log and the secrets it
/// must not contain.
async fn logged_round(level: &str) -> (String, Vec<String>) {
    let mock = mock_answering(SUPPLIER_CONTENT).await;
    let db = TestDatabase::new().await;
    let RouterProcess {
        mut child,
        base,
        stderr,
    } = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[
            ("TEST_SUPPLIER_KEY", SUPPLIER_SECRET),
            ("ROUTER_LOG", level),
            ("ROUTER_LOG_FORMAT", "json"),
        ],
    )
    .await;
    let client = reqwest::Client::new();
    let admin = |method: reqwest::Method, path: &str, body: Value| {
        client
            .request(method, format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
    };
    let account: Value = admin(
        reqwest::Method::POST,
        "/admin/accounts",
        json!({"email": "logs@example.com"}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let account_id = account["id"].as_str().unwrap();
    admin(
        reqwest::Method::POST,
        &format!("/admin/accounts/{account_id}/credits"),
        json!({"amount_nano_usd": 1_000_000_000_000_i64}),
    )
    .await
    .unwrap();
    let key: Value = admin(
        reqwest::Method::POST,
        "/admin/api-keys",
        json!({"account_id": account_id, "scopes": ["inference"]}),
    )
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let key = key["key"].as_str().unwrap().to_owned();
    let forged = format!("sk-rt-{}", "f".repeat(48));
    let body =
        json!({"model": "m-text", "messages": [{"role": "user", "content": CLIENT_CONTENT}]});
    let chat = |key: &str, body: &Value| {
        client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(key)
            .json(body)
            .send()
    };
    let ok = chat(&key, &body).await.unwrap();
    assert_eq!(ok.status(), 200);
    ok.text().await.unwrap();
    let mut streamed = body.clone();
    streamed["stream"] = json!(true);
    chat(&key, &streamed).await.unwrap().text().await.unwrap();
    // A supplier rejection whose body carries content, on both routes (a
    // rejection is not retried on its route).
    for upstream in ["up-text-primary", "up-text-fallback"] {
        mock.enqueue_for(
            upstream,
            Script::Status {
                status: 400,
                body: Some(json!({"error": {"message": SUPPLIER_CONTENT}})),
                retry_after: None,
            },
        );
    }
    chat(&key, &body).await.unwrap().text().await.unwrap();
    assert_eq!(chat(&forged, &body).await.unwrap().status(), 401);
    let x_api_key = client
        .post(format!("{base}/v1/chat/completions"))
        .header("x-api-key", &key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(x_api_key.status(), 200);

    child.start_kill().unwrap();
    child.wait().await.unwrap();
    let log = tokio::time::timeout(Duration::from_secs(10), stderr)
        .await
        .expect("stderr closes with the process")
        .unwrap();
    let secrets = vec![
        key,
        forged,
        SUPPLIER_SECRET.to_owned(),
        ADMIN_TOKEN.to_owned(),
    ];
    (log, secrets)
}

#[tokio::test(flavor = "multi_thread")]
async fn request_lines_carry_the_facts_and_no_secret_or_content() {
    let (log, secrets) = logged_round("info").await;
    for secret in &secrets {
        assert!(!log.contains(secret.as_str()), "a secret is in the log");
    }
    for content in [CLIENT_CONTENT, SUPPLIER_CONTENT] {
        assert!(!log.contains(content), "{content} is in the info log");
    }
    let lines: Vec<Value> = log
        .lines()
        .map(|line| serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}")))
        .collect();
    let requests: Vec<&Value> = lines
        .iter()
        .filter(|l| l["target"] == "router::request")
        .collect();
    let chats: Vec<&&Value> = requests
        .iter()
        .filter(|l| l["fields"]["route"] == "/v1/chat/completions")
        .collect();
    assert_eq!(chats.len(), 5, "one line per chat request: {chats:?}");
    let settled: Vec<_> = chats
        .iter()
        .filter(|l| l["fields"]["charged_nano_usd"].is_u64())
        .collect();
    assert_eq!(settled.len(), 3, "{chats:?}");
    for line in &settled {
        let f = &line["fields"];
        assert_eq!(f["status"], 200);
        assert_eq!(f["model"], "m-text");
        assert_eq!(f["route_id"], "text-primary");
        assert_eq!(f["attempts"], 1);
        assert!(f["account_id"].is_string() && f["key_id"].is_string());
        assert!(f["request_id"].is_string() && f["latency_ms"].is_u64());
        // Issue 30: who asked, how soon the answer started, how much of it.
        assert_eq!(f["client"], "127.0.0.1");
        let ttfb = f["ttfb_ms"].as_u64().expect("ttfb_ms");
        assert!(ttfb <= f["latency_ms"].as_u64().unwrap(), "{f}");
        assert!(f["bytes_sent"].as_u64().unwrap() > 100, "{f}");
    }
    let refused = chats.iter().find(|l| l["fields"]["status"] == 401).unwrap();
    assert_eq!(refused["fields"]["code"], "invalid_api_key");
    assert!(refused["fields"]["bytes_sent"].as_u64().unwrap() > 0);
    assert!(refused["fields"].get("key_id").is_none());
    let failed = chats.iter().find(|l| l["fields"]["status"] == 502).unwrap();
    assert_eq!(failed["fields"]["code"], "upstream_error");
    assert_eq!(failed["fields"]["attempts"], 2);
    assert_eq!(failed["fields"]["route_id"], "text-fallback");
}

#[tokio::test(flavor = "multi_thread")]
async fn even_debug_logs_carry_no_key_or_supplier_secret() {
    let (log, secrets) = logged_round("debug").await;
    assert!(log.lines().count() > 20, "debug logging is on");
    for secret in &secrets {
        assert!(
            !log.contains(secret.as_str()),
            "a secret is in the debug log"
        );
    }
}
