//! The dashboard's session JSON (issue 35): `/api/keys` for the signed-in
//! owner only (A-14, CF-18: a key is refused with `session_required`),
//! its mutations from the router's own origin (A-16, GP-36), foreign keys
//! unknown, bodies validated by the operator wing's rules; and
//! `/api/usage`, `/api/requests` computed from the ledger, without any
//! supplier identity.

use crate::harness::*;
use serde_json::{Value, json};

/// `method path` with a session cookie from `origin` (none when `None`),
/// and a JSON body when given.
async fn session_call(
    r: &TestRouter,
    method: reqwest::Method,
    path: &str,
    cookie: &str,
    origin: Option<&str>,
    body: Option<Value>,
) -> reqwest::Response {
    let mut request = r
        .client
        .request(method, format!("{}{path}", r.base))
        .header("cookie", cookie);
    if let Some(origin) = origin {
        request = request.header("origin", origin);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    request.send().await.unwrap()
}

async fn json_of(resp: reqwest::Response, status: u16) -> Value {
    let actual = resp.status().as_u16();
    let body: Value = resp.json().await.unwrap();
    assert_eq!(actual, status, "{body}");
    body
}

/// A customer with a session cookie.
async fn signed_in(r: &TestRouter, credits: i64) -> (Customer, String) {
    let customer = r.customer(credits, &["inference"]).await;
    let cookie = r.session_cookie(&customer.account_id).await;
    (customer, cookie)
}

/// The owner's keys as `GET /api/keys` lists them.
async fn list(r: &TestRouter, cookie: &str) -> Vec<Value> {
    let body = json_of(r.get_with_cookie("/api/keys", cookie).await, 200).await;
    assert_eq!(body["object"], "list");
    body["data"].as_array().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn an_owner_creates_uses_changes_and_revokes_a_key() {
    let r = TestRouter::start().await;
    let (customer, cookie) = signed_in(&r, 1_000_000_000_000).await;
    let origin = Some(r.base.as_str());

    let resp = session_call(
        &r,
        reqwest::Method::POST,
        "/api/keys",
        &cookie,
        origin,
        Some(json!({"scopes": ["inference"], "monthly_budget_nano_usd": 5_000_000_000_u64})),
    )
    .await;
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let issued = json_of(resp, 201).await;
    let secret = issued["key"].as_str().unwrap().to_owned();
    let id = issued["id"].as_str().unwrap().to_owned();
    assert_eq!(issued["account_id"], customer.account_id);
    assert_eq!(
        issued["policy"]["monthly_budget_nano_usd"],
        5_000_000_000_i64
    );

    // The new key works, and its charge shows in the list as this month's spend.
    let resp = r.chat(&secret, &hello("m-text")).await;
    assert_eq!(resp.status(), 200);
    let charged = r.request_record(&request_id(&resp)).await["charged_nano_usd"]
        .as_i64()
        .unwrap();
    assert!(charged > 0);
    let keys = list(&r, &cookie).await;
    assert_eq!(keys.len(), 2, "{keys:?}");
    let new = keys.iter().find(|k| k["id"] == id.as_str()).unwrap();
    assert_eq!(new["spend_this_month"]["nano_usd"], charged);
    assert!(
        new["spend_this_month"]["usd"]
            .as_str()
            .unwrap()
            .starts_with('$')
    );
    assert!(new["last_used_at"].is_string(), "{new}");
    assert!(new["revoked_at"].is_null());
    assert!(
        new.get("key").is_none(),
        "the secret is never listed: {new}"
    );
    assert_eq!(new["prefix"], issued["prefix"]);

    // A policy change: allowed models, then another model is refused.
    let changed = json_of(
        session_call(
            &r,
            reqwest::Method::PATCH,
            &format!("/api/keys/{id}"),
            &cookie,
            origin,
            Some(json!({"allowed_models": ["m-text"]})),
        )
        .await,
        200,
    )
    .await;
    assert_eq!(changed["policy"]["allowed_models"], json!(["m-text"]));
    expect_error(
        r.chat(&secret, &hello("m-supply")).await,
        403,
        "model_not_allowed",
    )
    .await;

    // Revoked: refused at once, listed with `revoked_at`, not revocable twice.
    let resp = session_call(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/keys/{id}"),
        &cookie,
        origin,
        None,
    )
    .await;
    assert_eq!(resp.status(), 204);
    expect_error(
        r.chat(&secret, &hello("m-text")).await,
        401,
        "invalid_api_key",
    )
    .await;
    let keys = list(&r, &cookie).await;
    let revoked = keys.iter().find(|k| k["id"] == id.as_str()).unwrap();
    assert!(revoked["revoked_at"].is_string(), "{revoked}");
    assert_eq!(
        keys.last().unwrap()["id"],
        id.as_str(),
        "revoked keys come last"
    );
    let resp = session_call(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/keys/{id}"),
        &cookie,
        origin,
        None,
    )
    .await;
    expect_error(resp, 404, "not_found").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_accounts_key_is_unknown() {
    // B's key looks exactly like a missing one to A.
    let r = TestRouter::start().await;
    let (_a, a_cookie) = signed_in(&r, 0).await;
    let (b, b_cookie) = signed_in(&r, 1_000_000_000_000).await;
    let b_keys = list(&r, &b_cookie).await;
    let b_key_id = b_keys[0]["id"].as_str().unwrap().to_owned();
    let origin = Some(r.base.as_str());

    for (method, body) in [
        (
            reqwest::Method::PATCH,
            Some(json!({"requests_per_minute": 1})),
        ),
        (reqwest::Method::DELETE, None),
    ] {
        for path in [
            format!("/api/keys/{b_key_id}"),
            format!("/api/keys/{}", uuid::Uuid::now_v7()),
            "/api/keys/not-a-uuid".to_owned(),
        ] {
            let resp =
                session_call(&r, method.clone(), &path, &a_cookie, origin, body.clone()).await;
            let error = expect_error(resp, 404, "not_found").await;
            assert_eq!(error["error"]["message"], "No such API key.", "{path}");
        }
    }
    // A's list has only A's key; B's key is untouched and still works.
    let a_keys = list(&r, &a_cookie).await;
    assert_eq!(a_keys.len(), 1);
    assert_ne!(a_keys[0]["id"], b_key_id.as_str());
    assert_eq!(r.chat(&b.key, &hello("m-text")).await.status(), 200);
    let b_keys = list(&r, &b_cookie).await;
    assert!(b_keys[0]["policy"]["requests_per_minute"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn key_mutations_need_the_routers_origin() {
    // A-16, GP-36: no origin, another origin, or a cross-site fetch is 403
    // `cross_origin_forbidden`, and nothing changes.
    let r = TestRouter::start().await;
    let (_c, cookie) = signed_in(&r, 0).await;
    let before = list(&r, &cookie).await;
    let id = before[0]["id"].as_str().unwrap().to_owned();
    let new = json!({"scopes": ["inference"]});
    for origin in [None, Some("https://evil.example.com"), Some("null")] {
        let resp = session_call(
            &r,
            reqwest::Method::POST,
            "/api/keys",
            &cookie,
            origin,
            Some(new.clone()),
        )
        .await;
        expect_error(resp, 403, "cross_origin_forbidden").await;
        let resp = session_call(
            &r,
            reqwest::Method::PATCH,
            &format!("/api/keys/{id}"),
            &cookie,
            origin,
            Some(json!({"requests_per_day": 1})),
        )
        .await;
        expect_error(resp, 403, "cross_origin_forbidden").await;
        let resp = session_call(
            &r,
            reqwest::Method::DELETE,
            &format!("/api/keys/{id}"),
            &cookie,
            origin,
            None,
        )
        .await;
        expect_error(resp, 403, "cross_origin_forbidden").await;
    }
    // The right origin with `Sec-Fetch-Site: cross-site` is a cross-site form post.
    let resp = r
        .client
        .post(format!("{}/api/keys", r.base))
        .header("cookie", &cookie)
        .header("origin", &r.base)
        .header("sec-fetch-site", "cross-site")
        .header("content-type", "application/x-www-form-urlencoded")
        .body("scopes=inference")
        .send()
        .await
        .unwrap();
    expect_error(resp, 403, "cross_origin_forbidden").await;
    let after = list(&r, &cookie).await;
    assert_eq!(after.len(), before.len());
    assert!(after[0]["revoked_at"].is_null());
    assert!(after[0]["policy"]["requests_per_day"].is_null());
}

#[tokio::test(flavor = "multi_thread")]
async fn api_keys_cannot_call_the_session_endpoints() {
    // A-14, CF-18: a key, even with every scope, is 403 `session_required`;
    // no credential is 401.
    let r = TestRouter::start().await;
    let writer = r
        .customer(
            0,
            &["inference", "account:read", "account:write", "usage:read"],
        )
        .await;
    for path in ["/api/keys", "/api/usage", "/api/requests"] {
        expect_error(r.get(path, &writer.key).await, 403, "session_required").await;
        let resp = r.get_plain(path).await;
        assert_eq!(resp.status(), 401, "{path}");
    }
    let resp = r
        .client
        .post(format!("{}/api/keys", r.base))
        .bearer_auth(&writer.key)
        .header("origin", &r.base)
        .json(&json!({"scopes": ["inference"]}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 403, "session_required").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn key_bodies_are_validated() {
    let r = TestRouter::start().await;
    let (_c, cookie) = signed_in(&r, 0).await;
    let origin = Some(r.base.as_str());
    let cases = [
        (
            json!({"scopes": ["inference"], "account_id": uuid::Uuid::now_v7()}),
            "account_id",
        ),
        (json!({"scopes": ["inference"], "colour": "blue"}), "colour"),
        (json!({"scopes": ["root"]}), "scopes[0]"),
        (
            json!({"scopes": ["inference"], "allowed_models": ["m-text", "no-such-model"]}),
            "allowed_models[1]",
        ),
        (
            json!({"scopes": ["inference"], "ip_allowlist": ["10.0.0.0/8", "nowhere"]}),
            "ip_allowlist[1]",
        ),
        (
            json!({"scopes": ["inference"], "spend_limits": [{"amount_nano_usd": 1, "window_seconds": 0}]}),
            "spend_limits[0].window_seconds",
        ),
        (
            json!({"scopes": ["inference"], "requests_per_minute": -1}),
            "requests_per_minute",
        ),
        (json!({}), "scopes"),
    ];
    for (body, param) in cases {
        let resp = session_call(
            &r,
            reqwest::Method::POST,
            "/api/keys",
            &cookie,
            origin,
            Some(body.clone()),
        )
        .await;
        let error = expect_error(resp, 400, "invalid_parameter").await;
        let named = error["error"]["param"].as_str().unwrap_or_default();
        assert!(
            named.contains(param) || error["error"]["message"].as_str().unwrap().contains(param),
            "{body}: {error}"
        );
    }
    assert_eq!(list(&r, &cookie).await.len(), 1, "nothing was created");
}

#[tokio::test(flavor = "multi_thread")]
async fn usage_and_requests_are_the_ledgers_without_suppliers() {
    let r = TestRouter::start().await;
    let (customer, cookie) = signed_in(&r, 1_000_000_000_000).await;
    let resp = r.chat(&customer.key, &hello("m-text")).await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let record = r.request_record(&id).await;
    let charged = record["charged_nano_usd"].as_i64().unwrap();
    let account = r.account(&customer.account_id).await;

    let usage = json_of(r.get_with_cookie("/api/usage", &cookie).await, 200).await;
    assert_eq!(usage["balance"]["nano_usd"], account["balance_nano_usd"]);
    assert_eq!(
        usage["balance"]["nano_usd"],
        1_000_000_000_000_i64 - charged
    );
    assert_eq!(usage["held"]["nano_usd"], 0);
    assert_eq!(usage["available"]["nano_usd"], usage["balance"]["nano_usd"]);
    assert_eq!(usage["total"]["nano_usd"], charged);
    let days = usage["days"].as_array().unwrap();
    assert_eq!(days.len(), 30);
    let today = chrono::Utc::now().format("%Y-%m-%d").to_string();
    assert_eq!(days[29]["day"], today.as_str());
    assert_eq!(days[29]["spend"]["nano_usd"], charged);
    assert_eq!(days[29]["requests"], 1);
    assert_eq!(
        usage["by_model"],
        json!([{"model": "m-text", "requests": 1, "spend": {"nano_usd": charged, "usd": usage["total"]["usd"]}}])
    );
    assert_eq!(usage["by_key"][0]["spend"]["nano_usd"], charged);

    let listed = json_of(r.get_with_cookie("/api/requests", &cookie).await, 200).await;
    assert_eq!(listed["data"][0]["id"], id.as_str());
    assert_eq!(listed["data"][0]["charge"]["nano_usd"], charged);
    assert_eq!(listed["data"][0]["status"], "succeeded");
    let key_id = listed["data"][0]["api_key_id"].as_str().unwrap().to_owned();
    for (query, count) in [
        ("model=m-text&status=succeeded", 1),
        ("model=m-supply", 0),
        ("status=failed", 0),
        (&*format!("key={key_id}&from={today}&to={today}"), 1),
        ("to=2000-01-01", 0),
    ] {
        let body = json_of(
            r.get_with_cookie(&format!("/api/requests?{query}"), &cookie)
                .await,
            200,
        )
        .await;
        assert_eq!(body["data"].as_array().unwrap().len(), count, "{query}");
    }
    for (query, param) in [
        ("status=done", "status"),
        ("key=x", "key"),
        ("from=tomorrow", "from"),
        ("limit=0", "limit"),
    ] {
        let resp = r
            .get_with_cookie(&format!("/api/requests?{query}"), &cookie)
            .await;
        let error = expect_error(resp, 400, "invalid_parameter").await;
        assert_eq!(error["error"]["param"], param);
    }

    let resp = r
        .get_with_cookie(&format!("/api/requests/{id}"), &cookie)
        .await;
    let text = resp.text().await.unwrap();
    for private in [
        "acme-secret-supplier",
        "text-primary",
        "up-text",
        "supplier",
    ] {
        assert!(!text.contains(private), "{private} in {text}");
    }
    let detail: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(detail["charge"]["nano_usd"], charged);
    assert_eq!(detail["attempts"][0]["route_protocol"], "chat");
    assert_eq!(detail["attempts"][0]["outcome"], "succeeded");

    // Another account's request is unknown.
    let (_other, other_cookie) = signed_in(&r, 0).await;
    let resp = r
        .get_with_cookie(&format!("/api/requests/{id}"), &other_cookie)
        .await;
    expect_error(resp, 404, "not_found").await;
    let body = json_of(r.get_with_cookie("/api/requests", &other_cookie).await, 200).await;
    assert_eq!(body["data"], json!([]));
}

#[tokio::test(flavor = "multi_thread")]
async fn the_pages_and_assets_are_served_from_the_binary() {
    let r = TestRouter::start().await;
    for path in [
        "/",
        "/account/usage",
        "/account/keys",
        "/account/sign-in",
        "/account/digests",
    ] {
        let resp = r.get_plain(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        assert!(
            resp.headers()["content-security-policy"]
                .to_str()
                .unwrap()
                .contains("default-src 'self'")
        );
        assert!(
            resp.text()
                .await
                .unwrap()
                .contains("/dashboard/assets/app.js")
        );
    }
    for (path, kind) in [
        ("/dashboard/assets/app.js", "text/javascript"),
        ("/dashboard/assets/app.css", "text/css"),
    ] {
        let resp = r.get_plain(path).await;
        assert_eq!(resp.status(), 200, "{path}");
        assert!(
            resp.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with(kind)
        );
    }
    for path in [
        "/account/nope",
        "/account/requests/nope",
        "/dashboard/assets/nope.js",
    ] {
        expect_error(r.get_plain(path).await, 404, "not_found").await;
    }
}
