//! A database outage, with the real `router` binary behind a TCP proxy to
//! PostgreSQL that the test cuts: every surface answers a retryable 503
//! `service_unavailable` with `Retry-After`, never a 500 (issue 30), and
//! the router serves again once the database is back.

use crate::harness::*;
use router_mock_supplier::MockSupplier;
use router_store::test_support::TestDatabase;
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::net::{TcpListener, TcpStream};

/// A loopback TCP proxy to PostgreSQL; while `down`, it closes every
/// connection it holds or accepts, as a database that went away.
struct DatabaseProxy {
    url: String,
    down: Arc<AtomicBool>,
    cut: tokio::sync::watch::Sender<u64>,
}

impl DatabaseProxy {
    async fn start(db_url: &str) -> DatabaseProxy {
        let mut url = url::Url::parse(db_url).unwrap();
        let target = format!("{}:{}", url.host_str().unwrap(), url.port().unwrap_or(5432));
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        url.set_host(Some("127.0.0.1")).unwrap();
        url.set_port(Some(listener.local_addr().unwrap().port()))
            .unwrap();
        let down = Arc::new(AtomicBool::new(false));
        let (cut, _) = tokio::sync::watch::channel(0u64);
        let proxy = DatabaseProxy {
            url: url.to_string(),
            down: down.clone(),
            cut: cut.clone(),
        };
        tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                if down.load(Ordering::SeqCst) {
                    continue; // dropped: closed at once
                }
                let target = target.clone();
                let mut cut = cut.subscribe();
                tokio::spawn(async move {
                    let Ok(mut server) = TcpStream::connect(&target).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut client, &mut server) => {}
                        _ = cut.changed() => {}
                    }
                });
            }
        });
        proxy
    }

    fn set_down(&self, down: bool) {
        self.down.store(down, Ordering::SeqCst);
        if down {
            self.cut.send_modify(|n| *n += 1);
        }
    }
}

/// The body of `resp`, after asserting it is a retryable 503.
async fn retryable_body(resp: reqwest::Response) -> Value {
    let (status, headers) = (resp.status().as_u16(), resp.headers().clone());
    let body: Value = resp.json().await.unwrap();
    assert_retryable(status, &headers, &body);
    body
}

fn assert_retryable(status: u16, headers: &reqwest::header::HeaderMap, body: &Value) {
    assert_eq!(status, 503, "{body}");
    let retry_after: u64 = headers
        .get("retry-after")
        .expect("Retry-After on a database outage")
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(retry_after >= 1);
    assert!(headers.contains_key("x-request-id"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_outage_is_a_retryable_503_on_every_surface() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let proxy = DatabaseProxy::start(db.url()).await;
    let mut router = spawn_router_process(
        &proxy.url,
        &mock.base_url(),
        &[("ROUTER_LOG_FORMAT", "json")],
    )
    .await;
    let client = reqwest::Client::new();
    let base = router.base.clone();
    let admin = |method: reqwest::Method, path: &str, body: Option<Value>| {
        let mut request = client
            .request(method, format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN);
        if let Some(body) = body {
            request = request.json(&body);
        }
        request.send()
    };
    let (account_id, key) =
        funded_account_over_http(&client, &base, "outage@example.com", 1_000_000_000_000).await;
    let chat = |key: String| {
        client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(key)
            .json(&hello("m-text"))
            .send()
    };
    assert_eq!(chat(key.clone()).await.unwrap().status(), 200);

    proxy.set_down(true);
    let went_down = std::time::Instant::now();
    // Inference (OpenAI envelope), by a known and by an unknown key.
    for key in [key.clone(), "sk-unknown-key-0000".to_owned()] {
        let resp = chat(key).await.unwrap();
        let body = retryable_body(resp).await;
        assert_eq!(body["error"]["code"], "service_unavailable", "{body}");
    }
    // Inference (Messages envelope).
    let resp = client
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", &key)
        .header("anthropic-version", "2023-06-01")
        .json(&messages_hello("m-claude"))
        .send()
        .await
        .unwrap();
    let body = retryable_body(resp).await;
    assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
    // The operator's API, and the request history.
    for path in [
        format!("/admin/accounts/{account_id}"),
        format!("/admin/accounts/{account_id}/api-keys"),
    ] {
        let resp = admin(reqwest::Method::GET, &path, None).await.unwrap();
        let body = retryable_body(resp).await;
        assert_eq!(
            body["error"]["code"], "service_unavailable",
            "{path}: {body}"
        );
    }
    // A key's listing of models.
    let resp = client
        .get(format!("{base}/v1/models"))
        .bearer_auth(&key)
        .send()
        .await
        .unwrap();
    retryable_body(resp).await;
    // Readiness says so too.
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);

    // Requests keep failing for a while: the warnings do not keep pace.
    while went_down.elapsed() < Duration::from_secs(4) {
        let _ = chat(key.clone()).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // Back: the first request after the database returns succeeds within
    // a few seconds (the pool replaces its dead connections).
    proxy.set_down(false);
    let start = std::time::Instant::now();
    loop {
        let status = chat(key.clone()).await.unwrap().status();
        if status == 200 {
            break;
        }
        assert_eq!(status, 503);
        assert!(start.elapsed() < Duration::from_secs(15), "never recovered");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let reconciliation = db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
    let pid = router.child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    router.child.wait().await.unwrap();
    let log = (&mut router.stderr).await.unwrap();
    let count = |text: &str| log.lines().filter(|l| l.contains(text)).count();
    // A LISTEN connection lost warns once, then backs off (it warned every
    // 500 ms); the outage answers at most once a second (~4 s down).
    assert_eq!(count("catalog release listener lost"), 1, "{log}");
    assert_eq!(count("change listener lost"), 1, "{log}");
    let unavailable = count("\"database unavailable\"");
    assert!((1..=6).contains(&unavailable), "{unavailable} lines: {log}");
    mock.shutdown();
}

/// Issue 33 (RELIABILITY.md D5): a router started while PostgreSQL is
/// unreachable does not exit (an orchestrator would restart it in a loop):
/// it listens, is alive (`/healthz` 200) but not ready (`/readyz` 503),
/// answers inference a retryable 503 in the protocol's envelope, and is
/// ready and serving once the database is reachable.
#[tokio::test(flavor = "multi_thread")]
async fn a_router_started_without_its_database_waits_not_ready_and_then_serves() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let proxy = DatabaseProxy::start(db.url()).await;
    proxy.set_down(true);
    let mut router = spawn_router_process_alive(&proxy.url, &mock.base_url(), &[]).await;
    let client = reqwest::Client::new();
    let base = router.base.clone();
    let ready = client.get(format!("{base}/readyz")).send().await.unwrap();
    assert_eq!(ready.status(), 503);
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["status"], "database unavailable", "{body}");
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth("sk-any-key-0000")
        .json(&hello("m-text"))
        .send()
        .await
        .unwrap();
    let body = retryable_body(resp).await;
    assert_eq!(body["error"]["code"], "service_unavailable", "{body}");
    let resp = client
        .post(format!("{base}/v1/messages"))
        .header("x-api-key", "sk-any-key-0000")
        .header("anthropic-version", "2023-06-01")
        .json(&messages_hello("m-claude"))
        .send()
        .await
        .unwrap();
    let body = retryable_body(resp).await;
    assert_eq!(body["error"]["type"], "overloaded_error", "{body}");
    assert!(
        router.child.try_wait().unwrap().is_none(),
        "the router exited"
    );

    proxy.set_down(false);
    let back = std::time::Instant::now();
    loop {
        let ready = client.get(format!("{base}/readyz")).send().await;
        if ready.is_ok_and(|r| r.status() == 200) {
            break;
        }
        assert!(back.elapsed() < Duration::from_secs(15), "never ready");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, key) =
        funded_account_over_http(&client, &base, "late@example.com", 1_000_000_000_000).await;
    let resp = client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&hello("m-text"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}
