//! The operator admin API and health endpoints.

use crate::harness::*;
use reqwest::Method;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn admin_creates_accounts_grants_credits_and_issues_keys() {
    let r = TestRouter::start().await;
    let c = r.customer(5_000, &["inference"]).await;
    let account = r.account(&c.account_id).await;
    assert_eq!(account["balance_nano_usd"], 5_000);
    assert_eq!(account["held_nano_usd"], 0);
    assert!(c.key.starts_with("sk-rt-"));
    // The key is shown once: the store keeps only its hash.
    let (status, body) = r
        .admin(
            Method::POST,
            &format!("/admin/accounts/{}/credits", c.account_id),
            Some(json!({"amount_nano_usd": 7})),
        )
        .await;
    assert_eq!(
        (status, body["balance_nano_usd"].as_i64()),
        (200, Some(5_007))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_requires_the_operator_token() {
    let r = TestRouter::start().await;
    let account = json!({"email": "a@b.c"});
    let url = format!("{}/admin/accounts", r.base);
    let resp = r.client.post(url).json(&account).send().await.unwrap();
    expect_error(resp, 401, "invalid_api_key").await;
    let resp = r.post("/admin/accounts", "wrong", &account).await;
    expect_error(resp, 401, "invalid_api_key").await;
    // A customer key is not an operator token.
    let c = r.rich_customer().await;
    let resp = r
        .get(&format!("/admin/accounts/{}", c.account_id), &c.key)
        .await;
    expect_error(resp, 401, "invalid_api_key").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn admin_rejects_bad_bodies_and_unknown_ids() {
    let r = TestRouter::start().await;
    let (status, body) = r
        .admin(
            Method::POST,
            "/admin/api-keys",
            Some(json!({"account_id": uuid::Uuid::new_v4(), "scopes": ["inference"]})),
        )
        .await;
    assert_eq!(status, 400, "{body}");
    let c = r.rich_customer().await;
    let (status, body) = r
        .admin(
            Method::POST,
            "/admin/api-keys",
            Some(json!({"account_id": c.account_id, "scopes": ["root"]})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("scopes[0]"))
    );
    let (status, _) = r
        .admin(
            Method::GET,
            &format!("/admin/accounts/{}", uuid::Uuid::new_v4()),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = r
        .admin(Method::GET, "/admin/requests/not-a-uuid", None)
        .await;
    assert_eq!(status, 404);
}

/// Values past what the store can hold are refused, not crashed on (both
/// found by schemathesis: an `expires_at` past the clock's range ended the
/// connection without an answer, a grant past i64 nano-USD answered 500).
#[tokio::test(flavor = "multi_thread")]
async fn admin_refuses_values_past_what_the_store_holds() {
    let r = TestRouter::start().await;
    let c = r.customer(1, &["inference"]).await;
    for expires_at in [
        json!(9_223_372_036_854_775_808_u64),
        json!(253_402_300_800_u64),
    ] {
        let (status, body) = r
            .admin(
                Method::POST,
                "/admin/api-keys",
                Some(json!({"account_id": c.account_id, "scopes": ["inference"], "expires_at": expires_at})),
            )
            .await;
        assert_eq!(
            (status, body["error"]["param"].as_str()),
            (400, Some("expires_at")),
            "{body}"
        );
    }
    r.new_key(json!({"account_id": c.account_id, "scopes": ["inference"], "expires_at": 253_402_300_799_u64})).await;
    let credits = format!("/admin/accounts/{}/credits", c.account_id);
    let (status, body) = r
        .admin(
            Method::POST,
            &credits,
            Some(json!({"amount_nano_usd": i64::MAX})),
        )
        .await;
    assert_eq!(
        (status, body["error"]["param"].as_str()),
        (400, Some("amount_nano_usd")),
        "{body}"
    );
    let (status, body) = r
        .admin(
            Method::POST,
            &credits,
            Some(json!({"amount_nano_usd": i64::MAX - 1})),
        )
        .await;
    assert_eq!(
        (status, body["balance_nano_usd"].as_i64()),
        (200, Some(i64::MAX)),
        "{body}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn health_and_readiness() {
    let r = TestRouter::start().await;
    let resp = r.get_plain("/healthz").await;
    assert_eq!(resp.status(), 200);
    assert!(resp.headers().contains_key("x-request-id"));
    let resp = r.get_plain("/readyz").await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_paths_are_404_and_wrong_methods_405() {
    let (r, c) = TestRouter::start_rich().await;
    for path in ["/v1/files", "/v1/audio/transcriptions"] {
        let resp = r.call(Method::POST, path, &c.key).await;
        assert_eq!(resp.status(), 404, "{path}");
    }
    let resp = r.get("/v1/chat/completions", &c.key).await;
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "POST");
    assert_eq!(r.mock.call_count(), 0);
}
