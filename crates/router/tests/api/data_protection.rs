//! The account's zero-data-retention switch end to end (section J, GP-37,
//! GP-38, issue 18): who may read and change it, its body rule, and each
//! effect of turning it on, on this instance and on a second one.

use crate::harness::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};

const PATH: &str = "/api/data-protection";

/// `PATCH` with a session cookie from `origin`, the body sent as is.
async fn patch_raw(r: &TestRouter, cookie: &str, origin: &str, body: &str) -> reqwest::Response {
    r.client
        .patch(format!("{}{PATH}", r.base))
        .header("cookie", cookie)
        .header("origin", origin)
        .header("content-type", "application/json")
        .body(body.to_owned())
        .send()
        .await
        .unwrap()
}

/// Turns the switch to `on` through a same-origin session; asserts 200 and
/// the record.
pub async fn set_zdr(r: &TestRouter, cookie: &str, on: bool) {
    let resp = patch_raw(
        r,
        cookie,
        &r.base,
        &json!({"zero_data_retention": on}).to_string(),
    )
    .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body, json!({"zero_data_retention": on}));
}

#[tokio::test(flavor = "multi_thread")]
async fn reading_takes_account_read_or_a_session_and_is_never_cached() {
    // J-01, J-02: default false, `no-store`; an inference key is 403.
    let r = TestRouter::start().await;
    let reader = r.customer(0, &["account:read"]).await;
    let resp = r.get(PATH, &reader.key).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    assert!(resp.headers().contains_key("x-request-id"));
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body, json!({"zero_data_retention": false}));

    let inference = r.customer(0, &["inference"]).await;
    expect_error(r.get(PATH, &inference.key).await, 403, "insufficient_scope").await;

    let cookie = r.session_cookie(&reader.account_id).await;
    let resp = r.get_with_cookie(PATH, &cookie).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["zero_data_retention"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn changing_takes_a_same_origin_session_only() {
    // J-03: a key (even account:write) is 403 session_required; another
    // origin's session is 403; no credential is 401.
    let r = TestRouter::start().await;
    let writer = r.customer(0, &["account:write", "account:read"]).await;
    let resp = r
        .client
        .patch(format!("{}{PATH}", r.base))
        .bearer_auth(&writer.key)
        .json(&json!({"zero_data_retention": true}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 403, "session_required").await;

    let cookie = r.session_cookie(&writer.account_id).await;
    let body = json!({"zero_data_retention": true}).to_string();
    let resp = patch_raw(&r, &cookie, "https://evil.example", &body).await;
    expect_error(resp, 403, "cross_origin_forbidden").await;
    let resp = r
        .client
        .patch(format!("{}{PATH}", r.base))
        .json(&json!({"zero_data_retention": true}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 401);
    // Nothing changed.
    let body: Value = r.get(PATH, &writer.key).await.json().await.unwrap();
    assert_eq!(body["zero_data_retention"], false);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_body_is_exactly_one_boolean_and_patch_is_idempotent() {
    // J-04, J-05, J-11, GP-37.
    let r = TestRouter::start().await;
    let c = r.customer(0, &["account:read"]).await;
    let cookie = r.session_cookie(&c.account_id).await;
    for bad in [
        r#"{"zero_data_retention":true,"x":1}"#,
        r#"{"zero_data_retention":"yes"}"#,
        r#"{"zero_data_retention":null}"#,
        "{}",
        "null",
        "[true]",
        "{not json",
    ] {
        let resp = patch_raw(&r, &cookie, &r.base, bad).await;
        expect_error(resp, 400, "invalid_data_protection").await;
    }
    set_zdr(&r, &cookie, true).await;
    set_zdr(&r, &cookie, true).await;
    let body: Value = r.get(PATH, &c.key).await.json().await.unwrap();
    assert_eq!(body["zero_data_retention"], true);
    set_zdr(&r, &cookie, false).await;
    let body: Value = r.get(PATH, &c.key).await.json().await.unwrap();
    assert_eq!(body["zero_data_retention"], false);

    // The audit trail: one row per change (not per call), naming the session.
    let mut conn = r.db.connection().await.unwrap();
    #[derive(diesel::QueryableByName)]
    struct Change {
        #[diesel(sql_type = diesel::sql_types::Bool)]
        zero_data_retention: bool,
        #[diesel(sql_type = diesel::sql_types::Uuid)]
        session_id: uuid::Uuid,
    }
    let changes: Vec<Change> = diesel::sql_query(
        "SELECT zero_data_retention, session_id FROM data_protection_changes
         WHERE account_id = $1 ORDER BY changed_at, id",
    )
    .bind::<diesel::sql_types::Uuid, _>(c.account_id.parse::<uuid::Uuid>().unwrap())
    .load(&mut conn)
    .await
    .unwrap();
    assert_eq!(
        changes
            .iter()
            .map(|c| c.zero_data_retention)
            .collect::<Vec<_>>(),
        [true, false]
    );
    let (session_id, _) = session_of(&r, &cookie).await;
    assert!(changes.iter().all(|c| c.session_id == session_id));
}

/// The session's id and account, as `GET /api/auth/session` shows them.
async fn session_of(r: &TestRouter, cookie: &str) -> (uuid::Uuid, String) {
    let resp = r.get_with_cookie("/api/auth/session", cookie).await;
    let body: Value = resp.json().await.unwrap();
    (
        body["id"].as_str().unwrap().parse().unwrap(),
        body["account_id"].as_str().unwrap().to_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn enabling_needs_verified_zdr_supply_for_inference_and_images_but_not_count_tokens() {
    // J-06, J-14, GP-38, J-12: the harness catalog has no `zdr` route.
    let (r, c) = TestRouter::start_rich().await;
    // The key is used (and cached) before the switch flips.
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    let cookie = r.session_cookie(&c.account_id).await;
    set_zdr(&r, &cookie, true).await;
    let calls = r.mock.call_count();

    let mut body = hello("m-text");
    body["zdr"] = json!(false);
    expect_error(r.chat(&c.key, &body).await, 503, "zdr_capacity_unavailable").await;
    for (path, body) in [
        ("/v1/responses", json!({"model": "m-text", "input": "hi"})),
        (
            "/v1/images/generations",
            json!({"model": "m-img", "prompt": "a cat"}),
        ),
    ] {
        let resp = r.post(path, &c.key, &body).await;
        expect_error(resp, 503, "zdr_capacity_unavailable").await;
    }
    expect_messages_error(
        r.messages(&c.key, &messages_hello("m-claude")).await,
        503,
        "overloaded_error",
    )
    .await;
    // J-14: video creation too (the video envelope), before any hold.
    let resp = r
        .post(
            "/v1/videos",
            &c.key,
            &json!({"model": "m-video", "prompt": "a cat", "mode": "references",
                    "resolution": "720p", "duration": 5, "client_task_id": "zdr"}),
        )
        .await;
    assert_eq!(resp.status(), 503);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["error"]["code"], "zdr_capacity_unavailable", "{body}");
    let resp = r
        .messages_at(
            "/v1/messages/count_tokens",
            &c.key,
            &messages_hello("m-claude"),
        )
        .await;
    assert_eq!(resp.status(), 200);
    assert_eq!(r.mock.call_count(), calls, "no supplier call under ZDR");

    // Disabling re-allows inference at once (J-12).
    set_zdr(&r, &cookie, false).await;
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_flip_reaches_another_instance_s_key_cache() {
    // The switch rides on the key record; a second instance that cached the
    // key hears of the flip by NOTIFY (every one of the account's keys).
    let r = TestRouter::start().await;
    let second = r.second_router().await;
    let c = r.rich_customer().await;
    assert_eq!(second.chat(&c.key, &hello("m-text")).await.status(), 200);
    assert_eq!(second.chat(&c.key, &hello("m-text")).await.status(), 200);
    let cookie = r.session_cookie(&c.account_id).await;
    set_zdr(&r, &cookie, true).await;
    // The notification travels asynchronously: a bounded number of tries,
    // never a timed assertion (the cache's own TTL is 30 s, far above this).
    let mut status = 0;
    for _ in 0..50 {
        status = second
            .chat(&c.key, &hello("m-text"))
            .await
            .status()
            .as_u16();
        if status == 503 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    assert_eq!(status, 503);
    // And on this instance, at once.
    expect_error(
        r.chat(&c.key, &hello("m-text")).await,
        503,
        "zdr_capacity_unavailable",
    )
    .await;
}

/// J-09 with issue 16's cache: turning the switch on deletes the account's
/// exact-response cache entries in the same transaction, and a cached key
/// of the account then goes to the supplier again (no cache while ZDR is on).
#[tokio::test(flavor = "multi_thread")]
async fn enabling_clears_the_accounts_response_cache() {
    let (r, c) = TestRouter::start_rich().await;
    let key = r.new_key(json!({"account_id": c.account_id, "scopes": ["inference"], "response_cache_ttl_seconds": 600})).await;
    let key = key["key"].as_str().unwrap().to_owned();
    let body = hello("m-text");
    assert_eq!(r.chat(&key, &body).await.status(), 200);
    let hit = r.chat(&key, &body).await;
    assert_eq!(hit.headers()["x-ci-cache"], "hit");
    let entries = format!(
        "SELECT 1 FROM response_cache WHERE account_id = '{}'",
        c.account_id
    );
    let mut conn = r.db.database().connection().await.unwrap();
    let before = diesel::sql_query(&entries)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(before, 1);

    let cookie = r.session_cookie(&c.account_id).await;
    set_zdr(&r, &cookie, true).await;
    let after = diesel::sql_query(&entries)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(after, 0);
}
