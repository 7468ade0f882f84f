//! Key limits over HTTP (A-21, G-21, GP-08): spend windows and the monthly
//! budget are hard caps checked with the reservation, request rates and
//! concurrency across router instances, Retry-After, and the admin view.

use crate::harness::*;
use futures::future::join_all;
use reqwest::Method;
use serde_json::{Value, json};

/// A rich account's key created with `limits` merged into the request.
async fn limited_key(r: &TestRouter, limits: Value) -> (String, String) {
    let c = r.rich_customer().await;
    let mut body = json!({"account_id": c.account_id, "scopes": ["inference"]});
    for (k, v) in limits.as_object().unwrap() {
        body[k] = v.clone();
    }
    let key = r.new_key(body).await;
    (
        key["key"].as_str().unwrap().to_owned(),
        key["id"].as_str().unwrap().to_owned(),
    )
}

/// What one `hello` chat reserves at the harness prices (`m-text`).
async fn reservation_of_hello(r: &TestRouter) -> i64 {
    let (key, _) = limited_key(r, json!({})).await;
    let resp = r.chat(&key, &hello("m-text")).await;
    assert_eq!(resp.status(), 200);
    let record = r.request_record(&request_id(&resp)).await;
    record["reserved_nano_usd"].as_i64().unwrap()
}

async fn chat_at(client: &reqwest::Client, base: &str, key: &str) -> reqwest::Response {
    client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(key)
        .json(&hello("m-text"))
        .send()
        .await
        .unwrap()
}

fn retry_after(resp: &reqwest::Response) -> Option<u64> {
    resp.headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// N=200 parallel requests against a spend window that admits exactly K
/// reservations: exactly K succeed, the rest are 429 with no supplier call.
#[tokio::test(flavor = "multi_thread")]
async fn parallel_requests_never_overspend_a_spend_window() {
    let r = TestRouter::start().await;
    let hold = reservation_of_hello(&r).await;
    const K: i64 = 7;
    let (key, id) = limited_key(
        &r,
        json!({"spend_limits": [{"amount_nano_usd": K * hold + hold - 1, "window_seconds": 3600}]}),
    )
    .await;
    // Slow replies: no request settles (and frees room: a settlement charges
    // less than its hold) during the burst, even on a loaded machine where
    // admitting 200 requests takes seconds.
    r.mock.set_default(slow_reply(15_000));
    let calls = r.mock.call_count();
    let replies = join_all((0..200).map(|_| chat_at(&r.client, &r.base, &key))).await;
    let mut ok = 0;
    for resp in replies {
        match resp.status().as_u16() {
            200 => ok += 1,
            429 => {
                expect_error(resp, 429, "api_key_spend_limit_exceeded").await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, K as usize, "exactly the affordable number admitted");
    assert_eq!(
        r.mock.call_count() - calls,
        ok,
        "no supplier call without a hold"
    );
    let (status, view) = r
        .admin(Method::GET, &format!("/admin/api-keys/{id}"), None)
        .await;
    assert_eq!(status, 200);
    let spent = view["spend"]["windows"][0]["spent_nano_usd"]
        .as_i64()
        .unwrap();
    assert!(spent < K * hold + hold, "overspent: {view}");
    assert_eq!(view["policy"]["spend_limits"][0]["window_seconds"], 3600);
}

/// Exhausted spend limit → 429 api_key_spend_limit_exceeded, MOCK calls = 0
/// with Retry-After when the window's charges are what is in the way.
#[tokio::test(flavor = "multi_thread")]
async fn an_exhausted_spend_window_refuses_with_retry_after_and_no_call() {
    let r = TestRouter::start().await;
    let hold = reservation_of_hello(&r).await;
    let (key, _) = limited_key(
        &r,
        json!({"spend_limits": [{"amount_nano_usd": hold, "window_seconds": 60}]}),
    )
    .await;
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    let calls = r.mock.call_count();
    let resp = r.chat(&key, &hello("m-text")).await;
    let seconds = retry_after(&resp).expect("Retry-After");
    assert!((1..=60).contains(&seconds), "{seconds}");
    expect_error(resp, 429, "api_key_spend_limit_exceeded").await;
    assert_eq!(r.mock.call_count(), calls);
}

/// A spend window as long as the store's bigint allows (i64::MAX seconds,
/// beyond any interval PostgreSQL has) is "forever", not a 500: the first
/// request fits and is charged, the next one is refused with a Retry-After.
#[tokio::test(flavor = "multi_thread")]
async fn a_spend_window_of_i64_max_seconds_is_forever_not_a_failure() {
    let r = TestRouter::start().await;
    let hold = reservation_of_hello(&r).await;
    let (key, _) = limited_key(
        &r,
        json!({"spend_limits": [{"amount_nano_usd": hold, "window_seconds": i64::MAX}]}),
    )
    .await;
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    let resp = r.chat(&key, &hello("m-text")).await;
    assert!(retry_after(&resp).is_some_and(|s| s >= 1));
    expect_error(resp, 429, "api_key_spend_limit_exceeded").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_monthly_budget_refuses_with_the_next_month_as_retry_after() {
    let r = TestRouter::start().await;
    let hold = reservation_of_hello(&r).await;
    let (key, id) = limited_key(&r, json!({"monthly_budget_nano_usd": hold})).await;
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    let calls = r.mock.call_count();
    let resp = r.chat(&key, &hello("m-text")).await;
    let seconds = retry_after(&resp).expect("Retry-After");
    assert!((1..=31 * 86_400).contains(&seconds), "{seconds}");
    expect_error(resp, 429, "api_key_monthly_budget_exceeded").await;
    assert_eq!(r.mock.call_count(), calls);
    let (_, view) = r
        .admin(Method::GET, &format!("/admin/api-keys/{id}"), None)
        .await;
    assert!(
        view["spend"]["month_to_date_nano_usd"].as_i64().unwrap() > 0,
        "{view}"
    );
    // null clears the budget: the key is unlimited again.
    let (status, view) = r
        .admin(
            Method::PATCH,
            &format!("/admin/api-keys/{id}"),
            Some(json!({"monthly_budget_nano_usd": null})),
        )
        .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["policy"]["monthly_budget_nano_usd"], Value::Null);
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
}

/// Requests per minute are counted in PostgreSQL: two router instances on
/// one database share the count; Retry-After says when a slot frees.
#[tokio::test(flavor = "multi_thread")]
async fn requests_per_minute_hold_across_two_routers() {
    let r = TestRouter::start().await;
    let second = r.second_router().await;
    let (key, _) = limited_key(&r, json!({"requests_per_minute": 3})).await;
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    assert_eq!(second.chat(&key, &hello("m-text")).await.status(), 200);
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    for base in [&r.base, &second.base] {
        let resp = chat_at(&r.client, base, &key).await;
        let seconds = retry_after(&resp).expect("Retry-After");
        assert!((1..=60).contains(&seconds), "{seconds}");
        expect_error(resp, 429, "rate_limit_exceeded").await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn requests_per_day_refuse_with_daily_request_limit_exceeded() {
    let r = TestRouter::start().await;
    let (key, _) = limited_key(&r, json!({"requests_per_day": 1})).await;
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);
    let resp = r.chat(&key, &hello("m-text")).await;
    let seconds = retry_after(&resp).expect("Retry-After");
    assert!((1..=86_400).contains(&seconds), "{seconds}");
    expect_error(resp, 429, "daily_request_limit_exceeded").await;
}

/// N=200 parallel requests across two routers against a concurrency limit of
/// K, the supplier slow enough that they overlap: never more than K in
/// flight, so at most K per overlapping burst; each refusal is 429 with
/// Retry-After and no supplier call.
#[tokio::test(flavor = "multi_thread")]
async fn concurrency_limit_holds_across_two_routers_under_200_parallel_requests() {
    let r = TestRouter::start().await;
    let second = r.second_router().await;
    const K: usize = 5;
    let (key, _) = limited_key(&r, json!({"max_concurrent_requests": K})).await;
    r.mock.set_default(slow_reply(3_000));
    let calls = r.mock.call_count();
    let replies = join_all((0..200).map(|i| {
        let base = if i % 2 == 0 { &r.base } else { &second.base };
        chat_at(&r.client, base, &key)
    }))
    .await;
    let mut ok = 0;
    for resp in replies {
        match resp.status().as_u16() {
            200 => ok += 1,
            429 => {
                assert!(retry_after(&resp).is_some());
                expect_error(resp, 429, "concurrency_limit_exceeded").await;
            }
            other => panic!("unexpected {other}"),
        }
    }
    assert_eq!(ok, K, "exactly K admitted while the first K are in flight");
    assert_eq!(r.mock.call_count() - calls, K);
}

#[tokio::test(flavor = "multi_thread")]
async fn limits_round_trip_through_the_admin_api() {
    let r = TestRouter::start().await;
    let limits = json!({
        "spend_limits": [
            {"amount_nano_usd": 1_000, "window_seconds": 60},
            {"amount_nano_usd": 5_000, "window_seconds": 3600}
        ],
        "monthly_budget_nano_usd": 9_000,
        "requests_per_minute": 10,
        "requests_per_day": 100,
        "max_concurrent_requests": 2
    });
    let (_, id) = limited_key(&r, limits.clone()).await;
    let path = format!("/admin/api-keys/{id}");
    let (status, view) = r.admin(Method::GET, &path, None).await;
    assert_eq!(status, 200);
    for (field, value) in limits.as_object().unwrap() {
        assert_eq!(&view["policy"][field], value, "{field}");
    }
    assert_eq!(view["spend"]["windows"].as_array().unwrap().len(), 2);
    assert_eq!(view["spend"]["month_to_date_nano_usd"], 0);
    let (status, view) = r
        .admin(
            Method::PATCH,
            &path,
            Some(json!({"spend_limits": null, "requests_per_minute": 20})),
        )
        .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["policy"]["spend_limits"], Value::Null);
    assert_eq!(view["policy"]["requests_per_minute"], 20);
    assert_eq!(view["policy"]["requests_per_day"], 100);
    let (status, error) = r
        .admin(Method::PATCH, &path, Some(json!({"requests_per_hour": 1})))
        .await;
    assert_eq!(status, 400, "{error}");
}
