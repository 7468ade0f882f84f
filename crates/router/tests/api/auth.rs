//! Authentication and scopes on the inference surface (A-01..A-06, A-11).

use crate::harness::*;
use std::time::Duration;

/// A Chat hello with exactly these (name, value) headers.
async fn hello_with(r: &TestRouter, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut request = r.client.post(format!("{}/v1/chat/completions", r.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.json(&hello("m-text")).send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn bearer_or_x_api_key_and_both_must_match() {
    let r = TestRouter::start().await;
    let a = r.rich_customer().await;
    let b = r.rich_customer().await;
    let bearer_a = format!("Bearer {}", a.key);
    let resp = hello_with(&r, &[("x-api-key", &a.key)]).await;
    assert_eq!(resp.status(), 200);
    let resp = hello_with(&r, &[("authorization", &bearer_a), ("x-api-key", &a.key)]).await;
    assert_eq!(resp.status(), 200);
    let calls = r.mock.call_count();
    let resp = hello_with(&r, &[("authorization", &bearer_a), ("x-api-key", &b.key)]).await;
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
    let body = hello("m-text");
    let resp = hello_with(&r, &[]).await;
    expect_error(resp, 401, "invalid_api_key").await;
    for auth in [
        "Basic abc",
        "Bearer ",
        "Bearer garbage",
        "Bearer sk-rt-000000000000000000000000000000000000000000000000",
    ] {
        let resp = hello_with(&r, &[("authorization", auth)]).await;
        expect_error(resp, 401, "invalid_api_key").await;
    }
    let c = r.rich_customer().await;
    let keys = r
        .new_key(serde_json::json!({"account_id": c.account_id, "scopes": ["inference"]}))
        .await;
    // Used once, so the key is cached when it is deleted.
    let resp = r.chat(keys["key"].as_str().unwrap(), &body).await;
    assert_eq!(resp.status(), 200);
    let status = r
        .admin_delete(&format!("/admin/api-keys/{}", keys["id"].as_str().unwrap()))
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
    assert_eq!(
        r.mock.call_count(),
        1,
        "only the deleted key's one use reached the supplier"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn missing_scope_is_403() {
    let body = refused_hello(1_000_000_000, &["usage:read"], 403, "insufficient_scope").await;
    assert_eq!(body["error"]["type"], "permission_error");
}

/// Keys are cached (no lookup per request) and a change announced by any
/// instance reaches the cache: A-05 holds across router processes.
#[tokio::test(flavor = "multi_thread")]
async fn cached_keys_are_dropped_when_another_instance_announces_a_change() {
    use diesel_async::RunQueryDsl;
    let r = TestRouter::start().await;
    assert!(r.db.database().key_cache_is_on());
    let c = r.rich_customer().await;
    let body = hello("m-text");
    assert_eq!(r.chat(&c.key, &body).await.status(), 200);

    // Deleted behind the router's back (triggers off, so no announcement):
    // the cached key still works, which shows the lookup is not repeated.
    let mut conn = r.db.database().connection().await.unwrap();
    let hash_hex: String = router_store::hash_api_key(&c.key)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    diesel::sql_query("SET session_replication_role = replica")
        .execute(&mut conn)
        .await
        .unwrap();
    let deleted = diesel::sql_query(format!(
        "UPDATE api_keys SET deleted_at = now() WHERE key_hash = '\\x{hash_hex}'::bytea"
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(deleted, 1);
    diesel::sql_query("SET session_replication_role = origin")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(r.chat(&c.key, &body).await.status(), 200);

    // Another instance's announcement, as its trigger would send it.
    diesel::sql_query(format!(
        "SELECT pg_notify('router_api_key_changed', '{hash_hex}')"
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    let mut status = 200;
    for _ in 0..100 {
        status = r.chat(&c.key, &body).await.status().as_u16();
        if status == 401 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        status, 401,
        "the announcement did not reach the cache within 5 s"
    );
}
