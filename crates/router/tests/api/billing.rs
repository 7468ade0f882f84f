//! Reservation and settlement on PostgreSQL through the API (G-06, G-07, G-22;
//! the hold is a ceiling, RELIABILITY.md I4).

use crate::harness::*;
use router_canonical::NanoUsd;
use router_mock_supplier::{MockReply, MockUsage, Script};
use serde_json::{Value, json};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn empty_wallet_is_402_before_any_supplier_call() {
    let body = refused_hello(0, &["inference"], 402, "insufficient_credits").await;
    assert_eq!(body["error"]["type"], "billing_error");
}

#[tokio::test(flavor = "multi_thread")]
async fn success_writes_one_balanced_charge_equal_to_the_reported_cost() {
    let (r, c) = TestRouter::start_rich().await;
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

/// A wallet that can hold exactly K=5 requests at once (one nano-USD short
/// of a sixth) against 20 at once: exactly 5 are admitted and reach the
/// supplier, 15 are 402 (issue 33: "some but not all" passed whatever the
/// count).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_requests_never_overspend() {
    let r = TestRouter::start().await;
    let probe = r.rich_customer().await;
    let resp = r.chat(&probe.key, &hello("m-text")).await;
    let hold = r.request_record(&request_id(&resp)).await["hold"]["amount_nano"]
        .as_i64()
        .unwrap();
    let c = r.customer(6 * hold - 1, &["inference"]).await;
    r.mock.set_default(Script::Reply(MockReply {
        delay_ms: 1_500,
        ..MockReply::text("slow")
    }));
    let calls_before = r.mock.call_count();
    let handles: Vec<_> = (0..20)
        .map(|_| spawn_hello(&r.client, &r.base, &c.key))
        .collect();
    let mut statuses = Vec::new();
    for h in handles {
        statuses.push(h.await.unwrap().unwrap().status().as_u16());
    }
    let ok = statuses.iter().filter(|s| **s == 200).count();
    let poor = statuses.iter().filter(|s| **s == 402).count();
    assert_eq!((ok, poor), (5, 15), "{statuses:?}");
    assert_eq!(r.mock.call_count() - calls_before, 5);
    let account = r.account(&c.account_id).await;
    assert!(account["balance_nano_usd"].as_i64().unwrap() >= 0);
    assert_eq!(account["held_nano_usd"], 0);
    let reconciliation = r.db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn client_cancel_before_success_is_not_charged() {
    let (r, c) = TestRouter::start_rich().await;
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

/// RELIABILITY.md I5 (attempts equal the supplier's calls), G-22: a client
/// that leaves a non-streamed request while its supplier call is under way
/// is not charged, and the attempt the supplier saw is still in the
/// request's record, failed with `client_cancelled` (the failure kind a
/// stream's client leaving records too).
#[tokio::test(flavor = "multi_thread")]
async fn a_supplier_call_cut_by_the_client_leaving_is_recorded() {
    use diesel_async::RunQueryDsl;
    let (r, c) = TestRouter::start_rich().await;
    r.mock.enqueue(Script::Reply(MockReply {
        delay_ms: 1_500,
        ..MockReply::text("late")
    }));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_millis(300))
        .build()
        .unwrap();
    let left = client
        .post(format!("{}/v1/chat/completions", r.base))
        .bearer_auth(&c.key)
        .json(&hello("m-text"))
        .send()
        .await;
    assert!(left.is_err(), "the client left before the answer");
    assert_eq!(r.mock.call_count(), 1, "the supplier saw the call");
    #[derive(diesel::QueryableByName)]
    struct Id {
        #[diesel(sql_type = diesel::sql_types::Text)]
        id: String,
    }
    let mut conn = r.db.database().connection().await.unwrap();
    let ids: Vec<Id> = diesel::sql_query(format!(
        "SELECT id::text AS id FROM requests WHERE account_id = '{}'",
        c.account_id
    ))
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(ids.len(), 1, "one request");
    let record = r.request_record(&ids[0].id).await;
    assert_eq!(record["status"], "failed");
    assert_eq!(record["error_reason"], "client_cancelled", "{record}");
    let attempts = record["attempts"].as_array().unwrap();
    assert_eq!(attempts.len(), 1, "the cut attempt is recorded: {record}");
    assert_eq!(attempts[0]["outcome"], "failed");
    assert_eq!(attempts[0]["failure_kind"], "client_cancelled");
    assert_eq!(attempts[0]["attempt_no"], 1);
    assert!(
        attempts[0]["duration_ms"].as_i64().unwrap() >= 250,
        "{record}"
    );
    let account = r.account(&c.account_id).await;
    assert_eq!(account["held_nano_usd"], 0);
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000i64);
}

/// A reply whose usage claims far more output than `max_tokens` allowed.
fn overreported() -> Script {
    Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(12, 100_000)),
        ..MockReply::text("much more than asked")
    })
}

/// The history of a capped settlement: charged exactly the hold, the
/// reported cost (12 in + 100,000 out at 1 and 2 USD/MTok) kept beside it.
/// Returns the hold.
fn assert_capped(record: &Value) -> i64 {
    let hold = record["hold"]["amount_nano"].as_i64().unwrap();
    let reported = 12 * 1_000 + 100_000 * 2_000;
    assert!(hold < reported, "{record}");
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["reserved_nano_usd"], hold, "{record}");
    assert_eq!(record["charged_nano_usd"], hold, "{record}");
    assert_eq!(record["reported_nano_usd"], reported, "{record}");
    assert_eq!(record["shortfall_nano_usd"], reported - hold, "{record}");
    assert_eq!(record["usage"]["output_tokens"], 100_000, "{record}");
    let debits: Vec<i64> = record["ledger"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ledger_account"] == "wallet")
        .map(|e| e["amount_nano"].as_i64().unwrap())
        .collect();
    assert_eq!(debits, [-hold], "one debit, equal to the hold: {record}");
    hold
}

/// The hold is a ceiling (RELIABILITY.md I4; B-21, G-06, G-18): a supplier
/// reporting far more output than `max_tokens` costs the wallet exactly the
/// hold, `usage.cost` is that charge, and history shows the shortfall. A
/// wallet holding exactly the hold ends at zero, never below.
#[tokio::test(flavor = "multi_thread")]
async fn usage_beyond_max_tokens_is_charged_exactly_the_hold() {
    let (r, c) = TestRouter::start_rich().await;
    let mut body = hello("m-text");
    body["max_tokens"] = json!(10);
    r.mock.enqueue(overreported());
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let reply: Value = resp.json().await.unwrap();
    assert_eq!(reply["usage"]["completion_tokens"], 100_000);
    let record = r.request_record(&id).await;
    let hold = assert_capped(&record);
    assert_eq!(reply["usage"]["cost"], NanoUsd(hold).to_usd_json());
    let account = r.account(&c.account_id).await;
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000 - hold);
    assert_eq!(account["held_nano_usd"], 0);
    assert_eq!(account["shortfall_count"], 1);
    assert_eq!(
        account["shortfall_nano_usd"],
        record["shortfall_nano_usd"].clone()
    );

    // Without the ceiling this wallet would end at hold - reported < 0.
    let exact = r.customer(hold, &["inference"]).await;
    r.mock.enqueue(overreported());
    let resp = r.chat(&exact.key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_capped(&r.request_record(&request_id(&resp)).await);
    let account = r.account(&exact.account_id).await;
    assert_eq!(
        (&account["balance_nano_usd"], &account["held_nano_usd"]),
        (&json!(0), &json!(0))
    );
    let reconciliation = r.db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
}

/// The same for a live stream: the settle at its end is capped, and the
/// final usage chunk's `cost` is the charge (I4; B-22, G-18).
#[tokio::test(flavor = "multi_thread")]
async fn a_stream_beyond_max_tokens_is_charged_exactly_the_hold() {
    let (r, c) = TestRouter::start_rich().await;
    let mut body = hello("m-text");
    body["max_tokens"] = json!(10);
    body["stream"] = json!(true);
    r.mock.enqueue(overreported());
    let resp = r.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let lines = data_lines(resp).await;
    assert_eq!(lines.last().map(String::as_str), Some("[DONE]"));
    let usage_chunk: Value = serde_json::from_str(&lines[lines.len() - 2]).unwrap();
    assert_eq!(usage_chunk["usage"]["completion_tokens"], 100_000);
    let record = r.request_record(&id).await;
    assert_eq!(record["stream"], true);
    let hold = assert_capped(&record);
    assert_eq!(usage_chunk["usage"]["cost"], NanoUsd(hold).to_usd_json());
    let account = r.account(&c.account_id).await;
    assert_eq!(account["balance_nano_usd"], 1_000_000_000_000 - hold);
    assert_eq!(account["shortfall_count"], 1);
    let reconciliation = r.db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
}

/// Responses and Completions replies report the capped charge too (I4, GP-03).
#[tokio::test(flavor = "multi_thread")]
async fn responses_and_completions_report_the_capped_charge() {
    let (r, c) = TestRouter::start_rich().await;
    let cases = [
        (
            "/v1/responses",
            json!({"model": "m-text", "input": "hello", "max_output_tokens": 16}),
        ),
        (
            "/v1/completions",
            json!({"model": "m-text", "prompt": "hello", "max_tokens": 10}),
        ),
    ];
    for (path, body) in cases {
        r.mock.enqueue(overreported());
        let resp = r.post(path, &c.key, &body).await;
        assert_eq!(resp.status(), 200, "{path}");
        let id = request_id(&resp);
        let reply: Value = resp.json().await.unwrap();
        let hold = assert_capped(&r.request_record(&id).await);
        assert_eq!(
            reply["usage"]["cost"],
            NanoUsd(hold).to_usd_json(),
            "{path}"
        );
    }
}
