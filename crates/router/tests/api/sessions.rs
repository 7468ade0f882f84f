//! Browser sessions end to end (issue 15, A-14..A-17, GP-36): a magic link
//! through a real SMTP server, redeemed once, the cookie's attributes,
//! sign-out, expiry, the operator's sessions, and a second instance.

use crate::harness::*;
use diesel_async::RunQueryDsl;
use serde_json::{Value, json};
use std::time::Duration;

/// How long a test waits for an email that should arrive.
const MAIL_WAIT: Duration = Duration::from_secs(10);

async fn account(r: &TestRouter, email: &str) -> String {
    let (status, body) = r
        .admin(
            reqwest::Method::POST,
            "/admin/accounts",
            Some(json!({"email": email})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

async fn ask_link(r: &TestRouter, email: &str) -> reqwest::Response {
    r.client
        .post(format!("{}/api/auth/magic-link", r.base))
        .json(&json!({"email": email}))
        .send()
        .await
        .unwrap()
}

/// The sign-in link in the `index`th email the sink received.
async fn link_in_mail(r: &TestRouter, index: usize) -> String {
    let mail = r
        .smtp
        .as_ref()
        .unwrap()
        .wait_for(index + 1, MAIL_WAIT)
        .await;
    let text = mail[index].body_text();
    text.split_whitespace()
        .find(|w| w.contains("/api/auth/sign-in?token="))
        .unwrap_or_else(|| panic!("no link in {text}"))
        .to_owned()
}

fn token_of(link: &str) -> String {
    link.split_once("token=").unwrap().1.to_owned()
}

/// Posts the page's form, from `origin`.
async fn redeem(r: &TestRouter, token: &str, origin: &str) -> reqwest::Response {
    r.client
        .post(format!("{}/api/auth/sign-in", r.base))
        .header("origin", origin)
        .header("content-type", "application/x-www-form-urlencoded")
        .body(format!("token={token}"))
        .send()
        .await
        .unwrap()
}

/// The `name=value` part of the reply's session cookie.
fn cookie_pair(resp: &reqwest::Response) -> String {
    let set = resp.headers()["set-cookie"].to_str().unwrap();
    set.split(';').next().unwrap().to_owned()
}

async fn whoami(base: &str, client: &reqwest::Client, cookie: &str) -> (u16, Value) {
    let resp = client
        .get(format!("{base}/api/auth/session"))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    let status = resp.status().as_u16();
    (status, resp.json().await.unwrap_or(Value::Null))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_magic_link_signs_in_once_with_a_safe_cookie() {
    let r = TestRouter::start_with_mail().await;
    let account_id = account(&r, "Pat@Example.com").await;

    // Any letter case finds the account; the answer is 202.
    let resp = ask_link(&r, "pat@example.COM").await;
    assert_eq!(resp.status(), 202);
    let mail = r.smtp.as_ref().unwrap().wait_for(1, MAIL_WAIT).await;
    assert_eq!(mail[0].to, vec!["Pat@Example.com"]);
    assert_eq!(mail[0].header("subject"), Some("Your Router sign-in link"));
    let link = link_in_mail(&r, 0).await;
    assert!(link.starts_with(&format!("{}/api/auth/sign-in?token=", r.base)));
    let token = token_of(&link);

    // Opening the link (twice: mail scanners do) shows a button and spends nothing.
    for _ in 0..2 {
        let page = r.client.get(&link).send().await.unwrap();
        assert_eq!(page.status(), 200);
        assert!(
            page.headers()["content-type"]
                .to_str()
                .unwrap()
                .starts_with("text/html")
        );
        let html = page.text().await.unwrap();
        assert!(html.contains(&format!("value=\"{token}\"")), "{html}");
    }

    let resp = redeem(&r, &token, &r.base).await;
    assert_eq!(resp.status(), 200);
    let set = resp.headers()["set-cookie"].to_str().unwrap().to_owned();
    assert!(set.starts_with("router_session="), "{set}");
    for attribute in ["HttpOnly", "SameSite=Lax", "Path=/", "Max-Age=604800"] {
        assert!(set.contains(attribute), "{attribute} missing: {set}");
    }
    // The router is reached over plain http here, so not Secure.
    assert!(!set.contains("Secure"), "{set}");
    let cookie = cookie_pair(&resp);

    let (status, me) = whoami(&r.base, &r.client, &cookie).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["account_id"], account_id.as_str());
    assert_eq!(me["email"], "Pat@Example.com");

    // Single use.
    let again = redeem(&r, &token, &r.base).await;
    expect_error(again, 400, "sign_in_link_invalid").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_answer_never_tells_whether_an_account_exists() {
    let r = TestRouter::start_with_mail().await;
    account(&r, "known@example.com").await;
    let known = ask_link(&r, "known@example.com").await;
    let unknown = ask_link(&r, "nobody@example.com").await;
    assert_eq!(known.status(), 202);
    assert_eq!(unknown.status(), 202);
    let known: Value = known.json().await.unwrap();
    let unknown: Value = unknown.json().await.unwrap();
    assert_eq!(known, unknown);
    // Only the known address gets mail; and asking again within a minute
    // sends nothing more (the inbox cannot be flooded), with the same answer.
    let again = ask_link(&r, "known@example.com").await;
    assert_eq!(again.status(), 202);
    let sink = r.smtp.as_ref().unwrap();
    let mail = sink.wait_for(1, MAIL_WAIT).await;
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].to, vec!["known@example.com"]);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(sink.received().len(), 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_requests_and_a_router_without_email() {
    let r = TestRouter::start_with_mail().await;
    let body = expect_error(
        ask_link(&r, "not an address").await,
        400,
        "invalid_parameter",
    )
    .await;
    assert_eq!(body["error"]["param"], "email");
    let resp = r
        .client
        .post(format!("{}/api/auth/magic-link", r.base))
        .json(&json!({"email": "a@example.com", "remember": true}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 400, "invalid_parameter").await;
    // A well-formed token nobody issued.
    let resp = redeem(&r, &"0".repeat(64), &r.base).await;
    expect_error(resp, 400, "sign_in_link_invalid").await;
    let resp = redeem(&r, "<script>", &r.base).await;
    expect_error(resp, 400, "sign_in_link_invalid").await;

    let plain = TestRouter::start().await;
    let resp = ask_link(&plain, "a@example.com").await;
    expect_error(resp, 503, "email_unavailable").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn another_site_cannot_redeem_a_link_and_it_stays_usable() {
    let r = TestRouter::start_with_mail().await;
    account(&r, "x@example.com").await;
    assert_eq!(ask_link(&r, "x@example.com").await.status(), 202);
    let token = token_of(&link_in_mail(&r, 0).await);

    let resp = redeem(&r, &token, "https://evil.example").await;
    expect_error(resp, 403, "cross_origin_forbidden").await;
    let resp = r
        .client
        .post(format!("{}/api/auth/sign-in", r.base))
        .header("origin", &r.base)
        .header("sec-fetch-site", "cross-site")
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    expect_error(resp, 403, "cross_origin_forbidden").await;
    // JSON works as well as the form, from our origin.
    let resp = r
        .client
        .post(format!("{}/api/auth/sign-in", r.base))
        .header("origin", &r.base)
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_link_is_refused() {
    let r = TestRouter::start_with_mail().await;
    account(&r, "late@example.com").await;
    assert_eq!(ask_link(&r, "late@example.com").await.status(), 202);
    let token = token_of(&link_in_mail(&r, 0).await);
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query("UPDATE magic_links SET expires_at = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    expect_error(
        redeem(&r, &token, &r.base).await,
        400,
        "sign_in_link_invalid",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn one_link_redeemed_in_parallel_opens_exactly_one_session() {
    let r = TestRouter::start_with_mail().await;
    account(&r, "race@example.com").await;
    assert_eq!(ask_link(&r, "race@example.com").await.status(), 202);
    let token = token_of(&link_in_mail(&r, 0).await);
    let attempts = (0..20).map(|_| redeem(&r, &token, &r.base));
    let statuses: Vec<u16> = futures::future::join_all(attempts)
        .await
        .iter()
        .map(|resp| resp.status().as_u16())
        .collect();
    assert_eq!(
        statuses.iter().filter(|s| **s == 200).count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses.iter().filter(|s| **s == 400).count(),
        19,
        "{statuses:?}"
    );
    let mut conn = r.db.database().connection().await.unwrap();
    let sessions = diesel::sql_query("SELECT 1 FROM browser_sessions")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(sessions, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn sign_out_ends_the_session_from_our_origin_only() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &["inference"]).await;
    let cookie = r.session_cookie(&c.account_id).await;

    let sign_out = |origin: &'static str| {
        let req = r
            .client
            .post(format!("{}/api/auth/sign-out", r.base))
            .header("cookie", &cookie);
        let req = match origin {
            "" => req,
            "ours" => req.header("origin", &r.base),
            other => req.header("origin", other),
        };
        req.send()
    };
    expect_error(sign_out("").await.unwrap(), 403, "cross_origin_forbidden").await;
    expect_error(
        sign_out("https://evil.example").await.unwrap(),
        403,
        "cross_origin_forbidden",
    )
    .await;
    assert_eq!(whoami(&r.base, &r.client, &cookie).await.0, 200);

    let resp = sign_out("ours").await.unwrap();
    assert_eq!(resp.status(), 204);
    let cleared = resp.headers()["set-cookie"].to_str().unwrap();
    assert!(
        cleared.contains("router_session=;") && cleared.contains("Max-Age=0"),
        "{cleared}"
    );
    let (status, body) = whoami(&r.base, &r.client, &cookie).await;
    assert_eq!(status, 401, "{body}");
    assert_eq!(body["error"]["code"], "authentication_required");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_session_is_never_a_credential_for_inference() {
    let (r, c) = TestRouter::start_rich().await;
    let cookie = r.session_cookie(&c.account_id).await;
    for (method, path) in [
        (reqwest::Method::POST, "/v1/chat/completions"),
        (reqwest::Method::POST, "/v1/messages"),
        (reqwest::Method::GET, "/v1/models"),
        (reqwest::Method::GET, "/v1/docs"),
        (reqwest::Method::POST, "/v1/images/generations"),
        (reqwest::Method::POST, "/v1/videos"),
    ] {
        let resp = r
            .client
            .request(method, format!("{}{path}", r.base))
            .header("cookie", &cookie)
            .header("origin", &r.base)
            .json(&hello("m-text"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), 401, "{path}");
    }
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn expired_and_revoked_sessions_open_nothing_and_every_instance_agrees() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &["inference"]).await;
    let second = r.second_router().await;

    // Opened through one instance, accepted by another.
    let cookie = r.session_cookie(&c.account_id).await;
    let (status, me) = whoami(&second.base, &second.client, &cookie).await;
    assert_eq!(status, 200, "{me}");
    assert_eq!(me["account_id"], c.account_id.as_str());

    // Revoked by the operator: gone everywhere at once.
    let status = r
        .admin_delete(&format!("/admin/sessions/{}", me["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 204);
    assert_eq!(whoami(&r.base, &r.client, &cookie).await.0, 401);
    assert_eq!(whoami(&second.base, &second.client, &cookie).await.0, 401);
    let status = r
        .admin_delete(&format!("/admin/sessions/{}", me["id"].as_str().unwrap()))
        .await;
    assert_eq!(status, 404);

    // Expired.
    let cookie = r.session_cookie(&c.account_id).await;
    assert_eq!(whoami(&r.base, &r.client, &cookie).await.0, 200);
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query("UPDATE browser_sessions SET expires_at = now() - interval '1 second'")
        .execute(&mut conn)
        .await
        .unwrap();
    assert_eq!(whoami(&r.base, &r.client, &cookie).await.0, 401);
    // A cookie that was never issued.
    assert_eq!(
        whoami(&r.base, &r.client, "router_session=abc").await.0,
        401
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_opens_sessions_with_a_lifetime() {
    let r = TestRouter::start().await;
    let c = r.customer(0, &[]).await;
    let path = format!("/admin/accounts/{}/sessions", c.account_id);
    let (status, body) = r
        .admin(
            reqwest::Method::POST,
            &path,
            Some(json!({"ttl_seconds": 120})),
        )
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["account_id"], c.account_id.as_str());
    assert_eq!(body["cookie_name"], "router_session");
    assert_eq!(body["cookie_value"].as_str().unwrap().len(), 64);
    assert!(body["expires_at"].as_str().unwrap().ends_with('Z'));
    // Only the hash is stored.
    let mut conn = r.db.database().connection().await.unwrap();
    let leaked = diesel::sql_query(format!(
        "SELECT 1 FROM browser_sessions WHERE position('{}'::bytea IN token_hash) > 0",
        body["cookie_value"].as_str().unwrap()
    ))
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(leaked, 0);

    for bad in [
        json!({"ttl_seconds": 0}),
        json!({"ttl_seconds": -5}),
        json!({"ttl": 5}),
    ] {
        let (status, body) = r.admin(reqwest::Method::POST, &path, Some(bad)).await;
        assert_eq!(status, 400, "{body}");
    }
    let (status, _) = r
        .admin(
            reqwest::Method::POST,
            &format!("/admin/accounts/{}/sessions", uuid::Uuid::new_v4()),
            Some(json!({})),
        )
        .await;
    assert_eq!(status, 404);
}
