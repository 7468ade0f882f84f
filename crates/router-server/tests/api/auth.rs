//! Authentication and scopes on the inference surface (A-01..A-06, A-11).

use crate::harness::*;

#[tokio::test(flavor = "multi_thread")]
async fn bearer_or_x_api_key_and_both_must_match() {
    let r = TestRouter::start().await;
    let a = r.rich_customer().await;
    let b = r.rich_customer().await;
    let body = hello("m-text");
    let url = format!("{}/v1/chat/completions", r.base);
    let resp = r
        .client
        .post(&url)
        .header("x-api-key", &a.key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let resp = r
        .client
        .post(&url)
        .bearer_auth(&a.key)
        .header("x-api-key", &a.key)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let calls = r.mock.call_count();
    let resp = r
        .client
        .post(&url)
        .bearer_auth(&a.key)
        .header("x-api-key", &b.key)
        .json(&body)
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "invalid_api_key").await;
    assert_eq!(
        r.mock.call_count(),
        calls,
        "no supplier call on an auth failure"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_malformed_unknown_and_deleted_keys_are_401() {
    let r = TestRouter::start().await;
    let url = format!("{}/v1/chat/completions", r.base);
    let body = hello("m-text");
    let resp = r.client.post(&url).json(&body).send().await.unwrap();
    expect_error(resp, 401, "invalid_api_key").await;
    for auth in [
        "Basic abc",
        "Bearer ",
        "Bearer garbage",
        "Bearer sk-rt-000000000000000000000000000000000000000000000000",
    ] {
        let resp = r
            .client
            .post(&url)
            .header("authorization", auth)
            .json(&body)
            .send()
            .await
            .unwrap();
        expect_error(resp, 401, "invalid_api_key").await;
    }
    let c = r.rich_customer().await;
    let (status, keys) = r
        .admin(
            reqwest::Method::POST,
            "/admin/api-keys",
            Some(serde_json::json!({"account_id": c.account_id, "scopes": ["inference"]})),
        )
        .await;
    assert_eq!(status, 201);
    let (status, _) = r
        .admin(
            reqwest::Method::DELETE,
            &format!("/admin/api-keys/{}", keys["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(status, 204);
    let resp = r.chat(keys["key"].as_str().unwrap(), &body).await;
    expect_error(resp, 401, "invalid_api_key").await;
    let expired = r
        .admin(
            reqwest::Method::POST,
            "/admin/api-keys",
            Some(serde_json::json!({"account_id": c.account_id, "scopes": ["inference"], "expires_at": 1})),
        )
        .await
        .1;
    let resp = r.chat(expired["key"].as_str().unwrap(), &body).await;
    expect_error(resp, 401, "invalid_api_key").await;
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_scope_is_403() {
    let r = TestRouter::start().await;
    let c = r.customer(1_000_000_000, &["usage:read"]).await;
    let resp = r.chat(&c.key, &hello("m-text")).await;
    let body = expect_error(resp, 403, "insufficient_scope").await;
    assert_eq!(body["error"]["type"], "permission_error");
    assert_eq!(r.mock.call_count(), 0);
}
