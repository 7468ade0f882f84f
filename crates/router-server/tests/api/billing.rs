//! Reservation and settlement on PostgreSQL through the API (G-06, G-07, G-22).

use crate::harness::*;
use router_mock_supplier::{MockReply, Script};
use serde_json::Value;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn empty_wallet_is_402_before_any_supplier_call() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &["inference"]).await;
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let body = expect_error(resp, 402, "insufficient_credits").await;
    assert_eq!(body["error"]["type"], "billing_error");
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn success_writes_one_balanced_charge_equal_to_the_reported_cost() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    let record = r.request_record(&id).await;
    let charged = record["charged_nano_usd"].as_i64().unwrap();
    assert!(charged > 0);
    let cost_usd = body["usage"]["cost"].to_string();
    assert_eq!(
        cost_usd,
        router_canonical::NanoUsd(charged).to_usd_json().to_string()
    );
    let ledger = record["ledger"].as_array().unwrap();
    assert_eq!(ledger.len(), 2);
    assert_eq!(
        ledger
            .iter()
            .map(|e| e["amount_nano"].as_i64().unwrap())
            .sum::<i64>(),
        0
    );
    assert_eq!(record["hold"]["status"], "settled");
    let account = r.account(&c.account_id).await;
    assert_eq!(
        account["balance_nano_usd"].as_i64().unwrap(),
        1_000_000_000_000 - charged
    );
    assert_eq!(account["held_nano_usd"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_never_overspend() {
    let r = TestRouter::start().await;
    // Worst case of one request: (bytes of input bound) * 1 + 1000 out * 2 USD/MTok;
    // a wallet for a handful of reservations admits only that many at once.
    let c = r.customer(10_000_000, &["inference"]).await;
    r.mock.set_default(Script::Reply(MockReply {
        delay_ms: 300,
        ..MockReply::text("slow")
    }));
    let mut handles = Vec::new();
    for _ in 0..12 {
        let client = r.client.clone();
        let url = format!("{}/v1/chat/completions", r.base);
        let key = c.key.clone();
        handles.push(tokio::spawn(async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&hello("m-text"))
                .send()
                .await
                .unwrap()
                .status()
                .as_u16()
        }));
    }
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap());
    }
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let poor = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!(ok + poor, 12, "{statuses:?}");
    assert!(
        ok >= 1 && poor >= 1,
        "the wallet admits some but not all at once: {statuses:?}"
    );
    let account = r.account(&c.account_id).await;
    assert!(account["balance_nano_usd"].as_i64().unwrap() >= 0);
    assert_eq!(account["held_nano_usd"], 0);
    let reconciliation = r.db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_cancel_before_success_is_not_charged() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;
    r.mock.enqueue(Script::Reply(MockReply {
        delay_ms: 1_000,
        ..MockReply::text("late")
    }));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(200))
        .build()
        .unwrap();
    let err = client
        .post(format!("{}/v1/chat/completions", r.base))
        .bearer_auth(&c.key)
        .json(&hello("m-text"))
        .send()
        .await;
    assert!(err.is_err());
    for _ in 0..100 {
        let account = r.account(&c.account_id).await;
        if account["held_nano_usd"] == 0 {
            assert_eq!(account["balance_nano_usd"], 1_000_000_000_000i64);
            return;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    panic!("the hold of a cancelled request was not released");
}
