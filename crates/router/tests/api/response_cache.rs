//! The exact-response cache (issue 16; G-20, H-10, J-09): off unless the
//! key opts in; a hit calls no supplier, holds and charges nothing, says
//! `x-ci-cache: hit` and is recorded as a cache hit.

use crate::harness::*;
use crate::routing_policies::{LISTED, SURFACES, Surface};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// A key of `account_id` with the cache on for `ttl` seconds.
async fn caching_key(r: &TestRouter, account_id: &str, ttl: u64) -> String {
    let key = r.new_key(json!({ "account_id": account_id, "scopes": ["inference"], "response_cache_ttl_seconds": ttl })).await;
    assert_eq!(key["policy"]["response_cache_ttl_seconds"], ttl);
    key["key"].as_str().unwrap().to_owned()
}

async fn balance(r: &TestRouter, account: &str) -> (i64, i64) {
    let a = r.account(account).await;
    (
        a["balance_nano_usd"].as_i64().unwrap(),
        a["held_nano_usd"].as_i64().unwrap(),
    )
}

fn cache_header(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get("x-ci-cache")
        .map(|v| v.to_str().unwrap().to_owned())
}

/// The reply's text, whatever the surface.
fn reply_text(surface: Surface, body: &Value) -> String {
    match surface {
        Surface::Chat => body["choices"][0]["message"]["content"].to_string(),
        Surface::Responses => body["output"][0]["content"].to_string(),
        Surface::Messages => body["content"].to_string(),
        Surface::Completions => body["choices"][0]["text"].to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_identical_request_is_answered_from_the_cache_for_free() {
    let (r, c) = TestRouter::start_rich().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    for surface in SURFACES {
        let body = surface.body("m-text", json!({}));
        let calls = r.mock.call_count();
        let first = surface.send(&r, &key, &body, &[]).await;
        assert_eq!(first.status(), 200, "{surface:?}");
        assert_eq!(cache_header(&first).as_deref(), Some("miss"), "{surface:?}");
        let first: Value = first.json().await.unwrap();
        assert_eq!(r.mock.call_count(), calls + 1);
        let after_first = balance(&r, &c.account_id).await;

        let second = surface.send(&r, &key, &body, &[]).await;
        assert_eq!(second.status(), 200, "{surface:?}");
        assert_eq!(cache_header(&second).as_deref(), Some("hit"), "{surface:?}");
        let id = request_id(&second);
        let second: Value = second.json().await.unwrap();
        assert_eq!(
            r.mock.call_count(),
            calls + 1,
            "{surface:?}: no supplier call"
        );
        assert_eq!(reply_text(surface, &second), reply_text(surface, &first));
        assert_eq!(
            balance(&r, &c.account_id).await,
            after_first,
            "{surface:?}: nothing held or charged"
        );
        let record = r.request_record(&id).await;
        assert_eq!(record["cache_hit"], true, "{record}");
        assert_eq!(record["status"], "succeeded", "{record}");
        assert_eq!(record["charged_nano_usd"], 0, "{record}");
        assert!(record["hold"].is_null(), "{record}");
        assert_eq!(record["ledger"], json!([]), "{record}");
        if let Surface::Chat = surface {
            assert_eq!(
                second["usage"]["cost"],
                router_canonical::NanoUsd::ZERO.to_usd_json()
            );
        }
    }
}

async fn send(r: &TestRouter, key: &str, body: &Value) -> reqwest::Response {
    Surface::Chat.send(r, key, body, &[]).await
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cache_is_off_unless_the_key_opts_in() {
    let (r, c) = TestRouter::start_rich().await;
    for _ in 0..2 {
        let resp = r.chat(&c.key, &hello("m-text")).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(cache_header(&resp), None);
    }
    assert_eq!(r.mock.call_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn only_an_identical_non_streaming_request_of_the_same_account_hits() {
    let (r, c) = TestRouter::start_rich().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    let same_account = caching_key(&r, &c.account_id, 300).await;
    let other = r.rich_customer().await;
    let other_key = caching_key(&r, &other.account_id, 300).await;
    let base = hello("m-text");
    assert_eq!(
        cache_header(&send(&r, &key, &base).await).as_deref(),
        Some("miss")
    );
    // Another key of the same account shares the account's entries.
    assert_eq!(
        cache_header(&send(&r, &same_account, &base).await).as_deref(),
        Some("hit")
    );
    // Never across accounts.
    assert_eq!(
        cache_header(&send(&r, &other_key, &base).await).as_deref(),
        Some("miss")
    );
    // A different body or option is another request.
    let mut warmer = base.clone();
    warmer["temperature"] = json!(0.5);
    assert_eq!(
        cache_header(&send(&r, &key, &warmer).await).as_deref(),
        Some("miss")
    );
    let mut other_text = base.clone();
    other_text["messages"][0]["content"] = json!("hello!");
    assert_eq!(
        cache_header(&send(&r, &key, &other_text).await).as_deref(),
        Some("miss")
    );
    // Streams are never cached.
    let mut stream = base.clone();
    stream["stream"] = json!(true);
    let calls = r.mock.call_count();
    let resp = send(&r, &key, &stream).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(cache_header(&resp), None);
    let _ = resp.text().await;
    assert_eq!(r.mock.call_count(), calls + 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_entry_older_than_the_keys_ttl_is_not_used() {
    let (r, c) = TestRouter::start_rich().await;
    let key = caching_key(&r, &c.account_id, 1).await;
    let resp = r.chat(&key, &hello("m-text")).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    // Past the one-second TTL (a wait, not a timing assertion).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let resp = r.chat(&key, &hello("m-text")).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    assert_eq!(r.mock.call_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn clearing_the_accounts_cache_forgets_its_answers() {
    // J-09: what enabling account ZDR does (`clear_response_cache`).
    let (r, c) = TestRouter::start_rich().await;
    let other = r.rich_customer().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    let other_key = caching_key(&r, &other.account_id, 300).await;
    for k in [&key, &other_key] {
        let resp = r.chat(k, &hello("m-text")).await;
        assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    }
    let account = uuid::Uuid::parse_str(&c.account_id).unwrap();
    let cleared = r.db.database().clear_response_cache(account).await.unwrap();
    assert_eq!(cleared, 1);
    let resp = r.chat(&key, &hello("m-text")).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    assert_eq!(r.mock.call_count(), 3);
    // Another account's entries stay.
    let resp = r.chat(&other_key, &hello("m-text")).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("hit"));
}

#[tokio::test(flavor = "multi_thread")]
async fn image_input_and_zdr_requests_bypass_the_cache() {
    // H-10, G-20: the same image request twice → two supplier calls and two
    // charges; a `zdr` request is never stored or answered from the cache.
    let r = TestRouter::start_with_catalog(LISTED).await;
    let c = r.rich_customer().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    let image = json!({"model": "m-gpt-only", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    ]}]});
    let mut charged = Vec::new();
    for _ in 0..2 {
        let resp = r.chat(&key, &image).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(cache_header(&resp), None);
        let id = request_id(&resp);
        let body: Value = resp.json().await.unwrap();
        assert_eq!(body["model"], "m-gpt-only");
        let record = r.request_record(&id).await;
        assert_eq!(record["cache_hit"], false);
        charged.push(record["charged_nano_usd"].as_i64().unwrap());
    }
    assert!(charged.iter().all(|c| *c > 0), "{charged:?}");
    assert_eq!(r.mock.call_count(), 2);
    let zdr = Surface::Chat.body("m-listed", json!({"zdr": true}));
    for _ in 0..2 {
        let resp = r.chat(&key, &zdr).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(cache_header(&resp), None);
    }
    assert_eq!(r.mock.call_count(), 4);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ttl_is_set_and_cleared_by_the_operator() {
    let (r, c) = TestRouter::start_rich().await;
    let key = r
        .new_key(json!({"account_id": c.account_id, "scopes": ["inference"]}))
        .await;
    assert!(key["policy"]["response_cache_ttl_seconds"].is_null());
    let path = format!("/admin/api-keys/{}", key["id"].as_str().unwrap());
    for bad in [json!(0), json!(86401), json!(-1), json!("60")] {
        let (status, _) = r
            .admin(
                Method::PATCH,
                &path,
                Some(json!({"response_cache_ttl_seconds": bad})),
            )
            .await;
        assert_eq!(status, 400, "{bad}");
    }
    let (status, view) = r
        .admin(
            Method::PATCH,
            &path,
            Some(json!({"response_cache_ttl_seconds": 60})),
        )
        .await;
    assert_eq!(
        (status, view["policy"]["response_cache_ttl_seconds"].clone()),
        (200, json!(60))
    );
    let secret = key["key"].as_str().unwrap();
    let resp = r.chat(secret, &hello("m-text")).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    let (status, view) = r
        .admin(
            Method::PATCH,
            &path,
            Some(json!({"response_cache_ttl_seconds": null})),
        )
        .await;
    assert_eq!(
        (status, view["policy"]["response_cache_ttl_seconds"].clone()),
        (200, Value::Null)
    );
    let resp = r.chat(secret, &hello("m-text")).await;
    assert_eq!(cache_header(&resp), None);
}

/// Deletes the account's rows behind the routers' backs (no NOTIFY), so
/// only an instance's in-process front can still answer.
async fn delete_rows_silently(r: &TestRouter, account_id: &str) {
    use diesel_async::RunQueryDsl;
    let mut conn = r.db.database().connection().await.unwrap();
    let account = uuid::Uuid::parse_str(account_id).unwrap();
    let deleted = diesel::sql_query("DELETE FROM response_cache WHERE account_id = $1")
        .bind::<diesel::sql_types::Uuid, _>(account)
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(deleted, 1);
}

/// `PATCH /api/data-protection` on the second instance, with a session.
async fn set_zdr_on(second: &SecondRouter, cookie: &str, on: bool) {
    let resp = second
        .client
        .patch(format!("{}/api/data-protection", second.base))
        .header("cookie", cookie)
        .header("origin", &second.base)
        .json(&json!({"zero_data_retention": on}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

/// Sends until `done` says the reply is the awaited one: notifications
/// travel asynchronously, so a bounded number of tries, never a timed
/// assertion. Returns the last reply's status and cache header.
async fn chat_until(
    r: &TestRouter,
    key: &str,
    body: &Value,
    done: impl Fn(u16, Option<&str>) -> bool,
) -> (u16, Option<String>) {
    let mut last = (0, None);
    for _ in 0..100 {
        let resp = r.chat(key, body).await;
        last = (resp.status().as_u16(), cache_header(&resp));
        if done(last.0, last.1.as_deref()) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    last
}

#[tokio::test(flavor = "multi_thread")]
async fn zdr_through_another_instance_empties_this_instance_s_front() {
    // Issue 16 item 5, J-09: an answer held in instance A's in-process
    // front (the row is gone, A still answers), then account ZDR turned on
    // through instance B. A refuses while ZDR is on (J-06: no ZDR supply
    // here) and, once it is off again, asks the supplier: the NOTIFY from
    // B's clearing dropped A's entry.
    let r = TestRouter::start().await;
    let b = r.second_router().await;
    let c = r.rich_customer().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    let body = hello("m-text");
    let resp = r.chat(&key, &body).await;
    assert_eq!(cache_header(&resp).as_deref(), Some("miss"));
    delete_rows_silently(&r, &c.account_id).await;
    let resp = r.chat(&key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        cache_header(&resp).as_deref(),
        Some("hit"),
        "served by A's front"
    );
    assert_eq!(r.mock.call_count(), 1);

    let cookie = r.session_cookie(&c.account_id).await;
    set_zdr_on(&b, &cookie, true).await;
    let (status, _) = chat_until(&r, &key, &body, |status, _| status == 503).await;
    assert_eq!(status, 503, "A refuses under ZDR");
    assert_eq!(
        r.mock.call_count(),
        1,
        "never answered from the front under ZDR"
    );
    set_zdr_on(&b, &cookie, false).await;
    let (status, cache) = chat_until(&r, &key, &body, |status, _| status == 200).await;
    assert_eq!(status, 200);
    assert_eq!(
        cache.as_deref(),
        Some("miss"),
        "A's front forgot the answer"
    );
    assert_eq!(r.mock.call_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_lost_listener_empties_the_front() {
    // Issue 16 item 5: while the LISTEN connection is down a clearing
    // could be missed, so the front is emptied and bypassed until it is
    // back (and starts empty then).
    use diesel_async::RunQueryDsl;
    let (r, c) = TestRouter::start_rich().await;
    let key = caching_key(&r, &c.account_id, 300).await;
    let body = hello("m-text");
    assert_eq!(
        cache_header(&r.chat(&key, &body).await).as_deref(),
        Some("miss")
    );
    delete_rows_silently(&r, &c.account_id).await;
    assert_eq!(
        cache_header(&r.chat(&key, &body).await).as_deref(),
        Some("hit")
    );

    let mut conn = r.db.database().connection().await.unwrap();
    let before = listener_pids(&mut conn).await;
    assert_eq!(before.len(), 1);
    diesel::sql_query("SELECT pg_terminate_backend($1)")
        .bind::<diesel::sql_types::Integer, _>(before[0])
        .execute(&mut conn)
        .await
        .unwrap();
    // Wait (bounded) for the listener to notice and come back.
    let mut back = false;
    for _ in 0..100 {
        let now = listener_pids(&mut conn).await;
        if r.db.database().response_front_is_on() && now.len() == 1 && now[0] != before[0] {
            back = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(back, "the listener reconnected");
    let resp = r.chat(&key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(
        cache_header(&resp).as_deref(),
        Some("miss"),
        "the front started over"
    );
    assert_eq!(r.mock.call_count(), 2);
}

/// The server processes of this database's change listeners.
async fn listener_pids(conn: &mut diesel_async::AsyncPgConnection) -> Vec<i32> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Pid {
        #[diesel(sql_type = diesel::sql_types::Integer)]
        pid: i32,
    }
    diesel::sql_query(
        "SELECT pid FROM pg_stat_activity
         WHERE application_name = $1 AND datname = current_database()",
    )
    .bind::<diesel::sql_types::Text, _>(router_store::listener::APPLICATION_NAME)
    .load::<Pid>(conn)
    .await
    .unwrap()
    .into_iter()
    .map(|p| p.pid)
    .collect()
}
