//! Crash recovery with the real `router` binary: a process killed with
//! SIGKILL mid-request leaves a hold that another instance's reaper releases.

use crate::harness::*;
use router_mock_supplier::{MockSupplier, Script};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

async fn spawn_router(db_url: &str, mock: &MockSupplier) -> RouterProcess {
    spawn_router_process(
        db_url,
        &mock.base_url(),
        &[
            ("ROUTER_HOLD_LEASE_SECS", "2"),
            ("ROUTER_REAPER_INTERVAL_SECS", "1"),
        ],
    )
    .await
}

async fn admin(
    client: &reqwest::Client,
    base: &str,
    method: reqwest::Method,
    path: &str,
    body: Option<Value>,
) -> Value {
    let mut req = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    req.send().await.unwrap().json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_killed_router_leaves_no_stuck_hold() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    mock.set_default(Script::Stall);
    let db = TestDatabase::new().await;
    let client = reqwest::Client::new();

    let mut first = spawn_router(db.url(), &mock).await;
    let account = admin(
        &client,
        &first.base,
        reqwest::Method::POST,
        "/admin/accounts",
        Some(json!({"email": "crash@example.com"})),
    )
    .await;
    let account_id = account["id"].as_str().unwrap().to_owned();
    admin(
        &client,
        &first.base,
        reqwest::Method::POST,
        &format!("/admin/accounts/{account_id}/credits"),
        Some(json!({"amount_nano_usd": 1_000_000_000_000i64})),
    )
    .await;
    let key = admin(
        &client,
        &first.base,
        reqwest::Method::POST,
        "/admin/api-keys",
        Some(json!({"account_id": account_id, "scopes": ["inference"]})),
    )
    .await;
    let key = key["key"].as_str().unwrap().to_owned();

    // A request that is reserved and waiting on a stalled supplier...
    let pending = spawn_hello(&client, &first.base, &key);
    let start = Instant::now();
    while mock.call_count() == 0 && start.elapsed() < Duration::from_secs(10) {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(mock.call_count(), 1);
    let path = format!("/admin/accounts/{account_id}");
    let held =
        admin(&client, &first.base, reqwest::Method::GET, &path, None).await["held_nano_usd"]
            .as_i64()
            .unwrap();
    assert!(held > 0);

    // ...when the process is killed outright.
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    assert!(pending.await.unwrap().is_err());

    // Another instance's reaper releases the orphaned hold after its lease.
    let second = spawn_router(db.url(), &mock).await;
    let start = Instant::now();
    loop {
        let account = admin(&client, &second.base, reqwest::Method::GET, &path, None).await;
        if account["held_nano_usd"] == 0 {
            assert_eq!(
                account["balance_nano_usd"], 1_000_000_000_000i64,
                "nothing was charged"
            );
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "hold was never reaped: {account}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let reconciliation = db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
    mock.shutdown();
}
