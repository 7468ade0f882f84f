//! Digest channels end to end (issue 20, section M): the state machine,
//! the channel API, operator provisioning, reports from the ledger
//! delivered to real loopback receivers (an SMTP sink; an HTTP receiver for
//! Slack, Discord and Telegram), the send-report limits, delivery failures,
//! and the scheduler and outbox passes.

use crate::harness::*;
use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::RunQueryDsl;
use router_mock_supplier::webhook_sink::{Answer, WebhookSink};
use serde_json::{Value, json};
use std::time::Duration;

const WAIT: Duration = Duration::from_secs(10);

/// A signed-in account: its id, a session cookie and keys.
struct Holder {
    account_id: String,
    cookie: String,
    read_key: String,
    write_key: String,
    inference_key: String,
}

async fn holder(r: &TestRouter) -> Holder {
    let c = r.customer(1_000_000_000_000, &["inference"]).await;
    let read = key(r, &c.account_id, &["account:read"]).await;
    let write = key(r, &c.account_id, &["account:write"]).await;
    Holder {
        cookie: r.session_cookie(&c.account_id).await,
        account_id: c.account_id,
        read_key: read,
        write_key: write,
        inference_key: c.key,
    }
}

async fn key(r: &TestRouter, account: &str, scopes: &[&str]) -> String {
    let key = r
        .new_key(json!({"account_id": account, "scopes": scopes}))
        .await;
    key["key"].as_str().unwrap().to_owned()
}

/// A session request from the router's own origin (or `origin`).
fn session(
    r: &TestRouter,
    method: reqwest::Method,
    path: &str,
    cookie: &str,
    origin: &str,
) -> reqwest::RequestBuilder {
    r.client
        .request(method, format!("{}{path}", r.base))
        .header("cookie", cookie)
        .header("origin", origin)
}

async fn json_of(resp: reqwest::Response) -> (u16, Value) {
    let status = resp.status().as_u16();
    let text = resp.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

async fn connect_email(r: &TestRouter, h: &Holder, body: Value) -> (u16, Value) {
    json_of(
        session(
            r,
            reqwest::Method::POST,
            "/api/channels/email",
            &h.cookie,
            &r.base,
        )
        .json(&body)
        .send()
        .await
        .unwrap(),
    )
    .await
}

async fn get_channel(r: &TestRouter, key: &str, id: &str) -> reqwest::Response {
    r.get(&format!("/v1/channels/{id}"), key).await
}

async fn patch(r: &TestRouter, key: &str, id: &str, body: Value) -> reqwest::Response {
    r.client
        .patch(format!("{}/v1/channels/{id}", r.base))
        .bearer_auth(key)
        .json(&body)
        .send()
        .await
        .unwrap()
}

async fn send_report(r: &TestRouter, key: &str, id: &str) -> reqwest::Response {
    let path = format!("/v1/channels/{id}/send-report");
    r.call(reqwest::Method::POST, &path, key).await
}

async fn provision(r: &TestRouter, account: &str, body: Value) -> (u16, Value) {
    r.admin(
        reqwest::Method::POST,
        &format!("/admin/accounts/{account}/channels"),
        Some(body),
    )
    .await
}

#[derive(QueryableByName)]
struct S {
    #[diesel(sql_type = Text)]
    s: String,
}

async fn text(r: &TestRouter, query: &str) -> String {
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query(query)
        .get_result::<S>(&mut conn)
        .await
        .unwrap()
        .s
}

/// Makes `n` settled chat requests and moves them into yesterday (UTC),
/// where a daily (or `off`) report looks.
async fn usage_yesterday(r: &TestRouter, h: &Holder, n: usize) {
    for _ in 0..n {
        let resp = r.chat(&h.inference_key, &hello("m-text")).await;
        assert_eq!(resp.status(), 200);
    }
    sql(
        r,
        &format!(
            "UPDATE requests SET finished_at = date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '12 hours'
             WHERE account_id = '{}'",
            h.account_id
        ),
    )
    .await;
}

/// The account's wallet charges for requests finished yesterday, from the
/// ledger, as the report must print them.
async fn ledger_spend_yesterday(r: &TestRouter, account: &str) -> i64 {
    count(
        r,
        &format!(
            "SELECT coalesce(-sum(l.amount_nano), 0)::bigint AS n FROM ledger_entries l
             JOIN requests q ON q.id = l.request_id
             WHERE l.account_id = '{account}' AND l.kind = 'charge' AND l.ledger_account = 'wallet'
               AND q.finished_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' - interval '1 day'
               AND q.finished_at <  date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'"
        ),
    )
    .await
}

fn usd(nano: i64) -> String {
    let mut fraction = format!("{:09}", nano % 1_000_000_000);
    while fraction.len() > 2 && fraction.ends_with('0') {
        fraction.pop();
    }
    format!("${}.{fraction}", nano / 1_000_000_000)
}

#[tokio::test(flavor = "multi_thread")]
async fn email_channel_state_machine() {
    // M-24..M-31, M-34, GP-63, GP-64.
    let r = TestRouter::start_with_mail().await;
    let h = holder(&r).await;
    let (status, body) = json_of(
        session(
            &r,
            reqwest::Method::GET,
            "/api/channels/email",
            &h.cookie,
            &r.base,
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["configured"], true);
    assert_eq!(body["email_verified"], true);
    assert_eq!(body["channel"], Value::Null);

    // GP-63: consent, frequency, no destination.
    for bad in [
        json!({"consent": false, "frequency": "daily"}),
        json!({"consent": "yes", "frequency": "daily"}),
        json!({"frequency": "daily"}),
        json!({"consent": true}),
        json!({"consent": true, "frequency": "hourly"}),
        json!({"consent": true, "frequency": "daily", "email": "x@y.example"}),
        json!({"consent": true, "frequency": "daily", "destination": "x@y.example"}),
    ] {
        let (status, body) = connect_email(&r, &h, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {body}");
        assert_eq!(body["error"]["code"], "invalid_parameter");
    }

    // M-25: 201, no report sent.
    let (status, created) =
        connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    assert_eq!(status, 201, "{created}");
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["platform"], "email");
    assert_eq!(created["frequency"], "daily");
    assert_eq!(created["events"], json!([]));
    assert_eq!(created["status"], "connected");
    assert!(created["report_hour_utc"].is_i64());
    let destination = created["destination"].as_str().unwrap();
    assert!(
        destination.contains("***@example.com"),
        "masked: {destination}"
    );
    // M-27: identical → 200, same id.
    let (status, again) =
        connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    assert_eq!((status, again["id"].as_str()), (200, Some(id.as_str())));
    // M-28: another frequency → 409, unchanged.
    let (status, conflict) =
        connect_email(&r, &h, json!({"consent": true, "frequency": "weekly"})).await;
    assert_eq!(status, 409);
    assert_eq!(conflict["error"]["code"], "channel_already_connected");
    let (_, shown) = json_of(get_channel(&r, &h.read_key, &id).await).await;
    assert_eq!(shown["frequency"], "daily");

    // Saved events survive a reconnect (GP-64).
    let resp = patch(
        &r,
        &h.write_key,
        &id,
        json!({"events": ["api_key_created"]}),
    )
    .await;
    assert_eq!(resp.status(), 200);

    // M-31: disconnect; foreign and unknown ids are 404.
    let other = holder(&r).await;
    let resp = session(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/channels/email/{id}"),
        &other.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    expect_error(resp, 404, "channel_not_found").await;
    // a cross-origin session mutation changes nothing.
    let resp = session(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/channels/email/{id}"),
        &h.cookie,
        "https://evil.example",
    )
    .send()
    .await
    .unwrap();
    expect_error(resp, 403, "cross_origin_forbidden").await;
    let resp = session(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/channels/email/{id}"),
        &h.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    let (status, gone) = json_of(resp).await;
    assert_eq!(status, 200);
    assert_eq!(gone, json!({"id": id, "status": "disconnected"}));
    // M-03, M-05: disconnected is neither listed nor shown.
    expect_error(
        get_channel(&r, &h.read_key, &id).await,
        404,
        "channel_not_found",
    )
    .await;
    let (_, list) = json_of(r.get("/v1/channels", &h.read_key).await).await;
    assert_eq!(list["data"], json!([]));
    let resp = session(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/channels/email/{id}"),
        &h.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    expect_error(resp, 404, "channel_not_found").await;

    // M-29: reconnect → 200, same id, events kept, frequency from the request.
    let (status, back) =
        connect_email(&r, &h, json!({"consent": true, "frequency": "weekly"})).await;
    assert_eq!(status, 200, "{back}");
    assert_eq!(back["id"].as_str(), Some(id.as_str()));
    assert_eq!(back["events"], json!(["api_key_created"]));
    assert_eq!(back["frequency"], "weekly");

    // M-25: nothing was mailed by connecting.
    assert!(r.smtp.as_ref().unwrap().received().is_empty());
}

#[tokio::test(flavor = "multi_thread")]
async fn email_needs_a_verified_address_and_a_transport() {
    // M-30: unverified → 403; no SMTP transport → 503 email_unavailable.
    let r = TestRouter::start_with_mail().await;
    let (status, account) = r
        .admin(
            reqwest::Method::POST,
            "/admin/accounts",
            Some(json!({"email": "unverified@example.com"})),
        )
        .await;
    assert_eq!(status, 201);
    let cookie = r.session_cookie(account["id"].as_str().unwrap()).await;
    let resp = session(
        &r,
        reqwest::Method::POST,
        "/api/channels/email",
        &cookie,
        &r.base,
    )
    .json(&json!({"consent": true, "frequency": "daily"}))
    .send()
    .await
    .unwrap();
    expect_error(resp, 403, "email_verification_required").await;

    let r = TestRouter::start().await;
    let h = holder(&r).await;
    let (status, body) =
        connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "email_unavailable");
    let (_, status_view) = json_of(
        session(
            &r,
            reqwest::Method::GET,
            "/api/channels/email",
            &h.cookie,
            &r.base,
        )
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(status_view["configured"], false);
    // A-14, CF-18: an API key on a session-only route.
    let resp = r.get("/api/channels/email", &h.read_key).await;
    expect_error(resp, 403, "session_required").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn channel_api_list_show_patch() {
    // M-01, M-02, M-05..M-12, CF-26, GP-66, GP-72, A-08, A-09, A-22.
    let r = TestRouter::start_with_mail().await;
    let h = holder(&r).await;
    let (_, created) = connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    let id = created["id"].as_str().unwrap().to_owned();

    let resp = r.get("/v1/channels", &h.read_key).await;
    assert_eq!(resp.headers()["cache-control"], "no-store");
    let (status, list) = json_of(resp).await;
    assert_eq!(status, 200);
    assert_eq!(list["object"], "list");
    assert_eq!(list["data"][0]["id"].as_str(), Some(id.as_str()));
    let events: Vec<String> = list["available_events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_owned())
        .collect();
    let mut distinct = events.clone();
    distinct.sort();
    distinct.dedup();
    assert_eq!((events.len(), distinct.len()), (9, 9));
    // a session lists too.
    let (status, _) = json_of(
        session(&r, reqwest::Method::GET, "/v1/channels", &h.cookie, &r.base)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);

    let resp = get_channel(&r, &h.read_key, &id).await;
    assert_eq!(resp.headers()["cache-control"], "no-store");
    assert_eq!(resp.status(), 200);
    // One 404 for unknown, foreign and malformed (A-22, GP-72).
    let other = holder(&r).await;
    let foreign = get_channel(&r, &other.read_key, &id)
        .await
        .text()
        .await
        .unwrap();
    let unknown = get_channel(&r, &h.read_key, &uuid::Uuid::new_v4().to_string())
        .await
        .text()
        .await
        .unwrap();
    let malformed = get_channel(&r, &h.read_key, "not-a-uuid")
        .await
        .text()
        .await
        .unwrap();
    assert!(foreign.contains("channel_not_found"), "{foreign}");
    assert_eq!(foreign, unknown);
    assert_eq!(foreign, malformed);
    // scopes.
    expect_error(
        get_channel(&r, &h.inference_key, &id).await,
        403,
        "insufficient_scope",
    )
    .await;
    expect_error(
        patch(&r, &h.read_key, &id, json!({"frequency": "weekly"})).await,
        403,
        "insufficient_scope",
    )
    .await;

    // M-06, M-09, M-10: refused bodies.
    for bad in [
        json!({}),
        json!({"frequency": "hourly"}),
        json!({"destination": "x@y.example"}),
        json!({"report_hour": 5}),
        json!({"report_hour_utc": 5}),
        json!({"events": "low_balance"}),
        json!({"events": [1]}),
    ] {
        let resp = patch(&r, &h.write_key, &id, bad.clone()).await;
        assert_eq!(resp.status(), 400, "{bad}");
        expect_error(resp, 400, "invalid_parameter").await;
    }
    // M-08: one bogus event refuses the whole update.
    let valid = events[0].clone();
    let resp = patch(
        &r,
        &h.write_key,
        &id,
        json!({"frequency": "weekly", "events": [valid, "bogus"]}),
    )
    .await;
    expect_error(resp, 400, "invalid_parameter").await;
    let (_, shown) = json_of(get_channel(&r, &h.read_key, &id).await).await;
    assert_eq!(
        (shown["frequency"].as_str(), &shown["events"]),
        (Some("daily"), &json!([]))
    );
    // M-07, GP-66: events only, deduplicated in order; frequency unchanged.
    let (status, updated) = json_of(
        patch(
            &r,
            &h.write_key,
            &id,
            json!({"events": [events[2], events[0], events[2]]}),
        )
        .await,
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(updated["events"], json!([events[2], events[0]]));
    assert_eq!(updated["frequency"], "daily");
    // M-11: frequency off leaves events alone.
    let (_, updated) =
        json_of(patch(&r, &h.write_key, &id, json!({"frequency": "off"})).await).await;
    assert_eq!(updated["frequency"], "off");
    assert_eq!(updated["events"], json!([events[2], events[0]]));
    let (_, updated) = json_of(patch(&r, &h.write_key, &id, json!({"events": []})).await).await;
    assert_eq!(updated["events"], json!([]));
    // M-12: foreign → 404; a cross-origin session → 403 and no change.
    expect_error(
        patch(&r, &other.write_key, &id, json!({"frequency": "daily"})).await,
        404,
        "channel_not_found",
    )
    .await;
    let resp = session(
        &r,
        reqwest::Method::PATCH,
        &format!("/v1/channels/{id}"),
        &h.cookie,
        "https://evil.example",
    )
    .json(&json!({"frequency": "monthly"}))
    .send()
    .await
    .unwrap();
    expect_error(resp, 403, "cross_origin_forbidden").await;
    let (status, updated) = json_of(
        session(
            &r,
            reqwest::Method::PATCH,
            &format!("/v1/channels/{id}"),
            &h.cookie,
            &r.base,
        )
        .json(&json!({"frequency": "monthly"}))
        .send()
        .await
        .unwrap(),
    )
    .await;
    assert_eq!(
        (status, updated["frequency"].as_str()),
        (200, Some("monthly"))
    );
    // M-32, M-35: no public deletion, no webhook registration.
    let resp = r
        .call(
            reqwest::Method::DELETE,
            &format!("/v1/channels/{id}"),
            &h.write_key,
        )
        .await;
    assert_eq!(resp.status(), 405);
    let resp = r
        .call(reqwest::Method::POST, "/v1/webhooks", &h.write_key)
        .await;
    assert_eq!(resp.status(), 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn operator_provisions_slack_discord_and_telegram() {
    // GP-17, M-33, M-34: provisioning, status views, masked secrets.
    let r = TestRouter::start().await;
    let h = holder(&r).await;
    let secret = "T0001/B0001/VERYSECRETTOKEN";
    let (status, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("https://hooks.slack.example/services/{secret}")}),
    )
    .await;
    assert_eq!(status, 201, "{slack}");
    assert!(!slack.to_string().contains("VERYSECRET"), "{slack}");
    assert_eq!(slack["destination"], "https://hooks.slack.example/…");
    let (status, again) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("https://hooks.slack.example/services/{secret}")}),
    )
    .await;
    assert_eq!((status, &again["id"]), (200, &slack["id"]));
    let (status, conflict) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "weekly", "webhook_url": "https://hooks.slack.example/x"}),
    )
    .await;
    assert_eq!(status, 409);
    assert_eq!(conflict["error"]["code"], "channel_already_connected");
    let (status, telegram) = provision(
        &r,
        &h.account_id,
        json!({"platform": "telegram", "frequency": "weekly", "chat_id": "-1001234567890"}),
    )
    .await;
    assert_eq!(status, 201, "{telegram}");
    assert_eq!(telegram["destination"], "chat …7890");
    for bad in [
        json!({"platform": "email", "frequency": "daily"}),
        json!({"platform": "slack", "frequency": "daily"}),
        json!({"platform": "discord", "frequency": "daily", "webhook_url": "ftp://x"}),
        json!({"platform": "telegram", "frequency": "daily"}),
        json!({"platform": "discord", "frequency": "never", "webhook_url": "https://d.example/a"}),
        json!({"platform": "discord", "frequency": "daily", "webhook_url": "https://d.example/a", "extra": 1}),
    ] {
        let (status, body) = provision(&r, &h.account_id, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {body}");
    }
    let (status, _) = provision(
        &r,
        &uuid::Uuid::new_v4().to_string(),
        json!({"platform": "discord", "frequency": "daily", "webhook_url": "https://d.example/a"}),
    )
    .await;
    assert_eq!(status, 404);

    // The holder sees each platform's status.
    for (platform, connected) in [("slack", true), ("discord", false), ("telegram", true)] {
        let resp = session(
            &r,
            reqwest::Method::GET,
            &format!("/api/channels/{platform}"),
            &h.cookie,
            &r.base,
        )
        .send()
        .await
        .unwrap();
        let (status, view) = json_of(resp).await;
        assert_eq!(status, 200);
        assert_eq!(view["platform"], platform);
        assert_eq!(view["configured"], true);
        assert_eq!(view["connected"], connected, "{view}");
        assert!(!view.to_string().contains("VERYSECRET"));
    }
    let resp = session(
        &r,
        reqwest::Method::GET,
        "/api/channels/email2",
        &h.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 404);
    let resp = session(
        &r,
        reqwest::Method::POST,
        "/api/channels/slack",
        &h.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "GET");
    let (_, list) = json_of(r.get("/v1/channels", &h.read_key).await).await;
    assert_eq!(list["data"].as_array().unwrap().len(), 2);
    assert!(!list.to_string().contains("VERYSECRET"));

    // The operator disconnects; the holder's view follows.
    let (status, gone) = r
        .admin(
            reqwest::Method::DELETE,
            &format!("/admin/channels/{}", slack["id"].as_str().unwrap()),
            None,
        )
        .await;
    assert_eq!(
        (status, gone["status"].as_str()),
        (200, Some("disconnected"))
    );
    let status = r
        .admin_delete(&format!(
            "/admin/channels/{}",
            slack["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(status, 404);
    expect_error(
        get_channel(&r, &h.read_key, slack["id"].as_str().unwrap()).await,
        404,
        "channel_not_found",
    )
    .await;
}

#[tokio::test(flavor = "multi_thread")]
async fn send_report_delivers_the_ledger_totals_on_every_platform() {
    // M-13, M-14, M-04, GP-16: yesterday's usage, to the nano-USD, over SMTP
    // (text and HTML), Slack Block Kit, Discord embeds and Telegram HTML.
    let r = TestRouter::start_with_mail().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = holder(&r).await;
    // Another account's usage never appears (M-04).
    let stranger = holder(&r).await;
    usage_yesterday(&r, &stranger, 2).await;
    usage_yesterday(&r, &h, 3).await;
    let spend = ledger_spend_yesterday(&r, &h.account_id).await;
    assert!(spend > 0);
    let total = usd(spend);

    let (_, email) = connect_email(&r, &h, json!({"consent": true, "frequency": "off"})).await;
    let (_, slack) = provision(&r, &h.account_id, json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("{}/slack/T1/B1/secret", hooks.base_url())})).await;
    let (_, discord) = provision(&r, &h.account_id, json!({"platform": "discord", "frequency": "daily", "webhook_url": format!("{}/discord/api/webhooks/1/secret", hooks.base_url())})).await;
    let (_, telegram) = provision(&r, &h.account_id, json!({"platform": "telegram", "frequency": "daily", "chat_id": "4242", "api_base": hooks.base_url()})).await;

    for channel in [&email, &slack, &discord, &telegram] {
        let resp = send_report(&r, &h.write_key, channel["id"].as_str().unwrap()).await;
        let (status, body) = json_of(resp).await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["sent"], true, "{body}");
        assert_eq!(body["message"], Value::Null);
        // M-14: yesterday 00:00 to today 00:00 UTC.
        let today = chrono::Utc::now().date_naive();
        let yesterday = today - chrono::Duration::days(1);
        assert_eq!(body["period_start"], format!("{yesterday}T00:00:00Z"));
        assert_eq!(body["period_end"], format!("{today}T00:00:00Z"));
    }

    let mail = r.smtp.as_ref().unwrap().wait_for(1, WAIT).await;
    assert_eq!(mail.len(), 1);
    let account = r.account(&h.account_id).await;
    assert_eq!(
        mail[0].to,
        vec![account["email"].as_str().unwrap().to_owned()]
    );
    assert!(
        mail[0].data.contains("multipart/alternative"),
        "{}",
        mail[0].data
    );
    assert!(mail[0].data.contains("text/plain") && mail[0].data.contains("text/html"));
    let text = mail[0].data.replace("=\r\n", "");
    assert!(text.contains(&total), "{total} not in {text}");
    assert!(text.contains("3 requests"));

    let received = hooks.wait_for(3, WAIT).await;
    assert_eq!(received.len(), 3);
    let slack_body = &received
        .iter()
        .find(|m| m.path.starts_with("/slack/"))
        .unwrap()
        .body;
    assert!(slack_body["blocks"].is_array());
    assert!(slack_body.to_string().contains(&total), "{slack_body}");
    let discord_body = &received
        .iter()
        .find(|m| m.path.starts_with("/discord/"))
        .unwrap()
        .body;
    assert!(discord_body["embeds"][0]["fields"].is_array());
    assert!(discord_body.to_string().contains(&total));
    let tg = received
        .iter()
        .find(|m| m.path.ends_with("/sendMessage"))
        .unwrap();
    assert_eq!(tg.path, format!("/bot{TELEGRAM_TOKEN}/sendMessage"));
    assert_eq!(tg.body["chat_id"], "4242");
    assert_eq!(tg.body["parse_mode"], "HTML");
    assert!(tg.body["text"].as_str().unwrap().contains(&total));
    assert!(tg.body["text"].as_str().unwrap().contains("3 requests"));
}

#[tokio::test(flavor = "multi_thread")]
async fn send_report_limits_count_every_admitted_attempt() {
    // M-15..M-19, Q-22, Q-28, GP-65.
    let r = TestRouter::start_with_mail().await;
    let h = holder(&r).await;
    let (_, email) = connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    let id = email["id"].as_str().unwrap().to_owned();
    // M-15: no activity → sent:false with a message; nothing mailed.
    let (status, body) = json_of(send_report(&r, &h.write_key, &id).await).await;
    assert_eq!(status, 200);
    assert_eq!(body["sent"], false);
    assert!(body["message"].is_string());
    // M-16, M-18: the no-activity attempt counts.
    let resp = send_report(&r, &h.write_key, &id).await;
    let retry = resp.headers()["retry-after"].to_str().unwrap().to_owned();
    assert!(
        retry.parse::<u64>().is_ok_and(|s| (1..=60).contains(&s)),
        "{retry}"
    );
    assert!(!retry.starts_with('0'));
    expect_error(resp, 429, "rate_limited").await;
    // M-19: disconnect and reconnect reset nothing.
    let resp = session(
        &r,
        reqwest::Method::DELETE,
        &format!("/api/channels/email/{id}"),
        &h.cookie,
        &r.base,
    )
    .send()
    .await
    .unwrap();
    assert_eq!(resp.status(), 200);
    let (status, _) = connect_email(&r, &h, json!({"consent": true, "frequency": "daily"})).await;
    assert_eq!(status, 200);
    expect_error(
        send_report(&r, &h.write_key, &id).await,
        429,
        "rate_limited",
    )
    .await;
    // M-23: foreign, unknown → 404; cross-origin session → 403.
    let other = holder(&r).await;
    expect_error(
        send_report(&r, &other.write_key, &id).await,
        404,
        "channel_not_found",
    )
    .await;
    let resp = session(
        &r,
        reqwest::Method::POST,
        &format!("/v1/channels/{id}/send-report"),
        &h.cookie,
        "https://evil.example",
    )
    .send()
    .await
    .unwrap();
    expect_error(resp, 403, "cross_origin_forbidden").await;

    // M-17: the 21st admitted attempt of a UTC day. Twenty earlier today
    // (just after midnight, so none within the last minute unless the
    // day is that young, which answers 429 too).
    sql(
        &r,
        &format!("DELETE FROM channel_report_attempts WHERE channel_id = '{id}'"),
    )
    .await;
    sql(
        &r,
        &format!(
            "INSERT INTO channel_report_attempts (channel_id, attempted_at)
             SELECT '{id}', date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'
             FROM generate_series(1, 20)"
        ),
    )
    .await;
    let resp = send_report(&r, &h.write_key, &id).await;
    let retry: u64 = resp.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!((1..=86_400).contains(&retry));
    expect_error(resp, 429, "rate_limited").await;
    // 429s are not counted (GP-65).
    assert_eq!(
        count(
            &r,
            &format!("SELECT count(*) AS n FROM channel_report_attempts WHERE channel_id = '{id}'")
        )
        .await,
        20
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn delivery_failures_map_to_their_codes_and_unknown_outcomes_are_not_resent() {
    // M-21, M-22, M-18.
    let r = TestRouter::start().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let channel = |h: &Holder| {
        let body = json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("{}/slack/{}", hooks.base_url(), h.account_id)});
        (h.account_id.clone(), body)
    };

    // 503 from the platform: not delivered → queued for a retry.
    let h = holder(&r).await;
    usage_yesterday(&r, &h, 1).await;
    let (account, body) = channel(&h);
    let (_, slack) = provision(&r, &account, body).await;
    let id = slack["id"].as_str().unwrap().to_owned();
    hooks.push(Answer::Status(503, "busy".into()));
    expect_error(
        send_report(&r, &h.write_key, &id).await,
        503,
        "report_pending",
    )
    .await;
    // M-18: the failed attempt counts.
    expect_error(
        send_report(&r, &h.write_key, &id).await,
        429,
        "rate_limited",
    )
    .await;
    // The outbox retries it once due.
    sql(
        &r,
        &format!("UPDATE channel_deliveries SET next_attempt_at = now() WHERE channel_id = '{id}'"),
    )
    .await;
    assert_eq!(r.app.notify.outbox_pass().await.unwrap(), 1);
    assert_eq!(
        text(
            &r,
            &format!("SELECT status AS s FROM channel_deliveries WHERE channel_id = '{id}'")
        )
        .await,
        "delivered"
    );
    assert_eq!(
        hooks
            .received()
            .iter()
            .filter(|m| m.path.ends_with(&h.account_id))
            .count(),
        2
    );

    // 404: refused for good.
    let h = holder(&r).await;
    usage_yesterday(&r, &h, 1).await;
    let (account, body) = channel(&h);
    let (_, slack) = provision(&r, &account, body).await;
    hooks.push(Answer::Status(404, "no_service".into()));
    expect_error(
        send_report(&r, &h.write_key, slack["id"].as_str().unwrap()).await,
        503,
        "report_delivery_failed",
    )
    .await;

    // No answer: exactly one send, never resent (M-22).
    let h = holder(&r).await;
    usage_yesterday(&r, &h, 1).await;
    let (account, body) = channel(&h);
    let (_, slack) = provision(&r, &account, body).await;
    let id = slack["id"].as_str().unwrap().to_owned();
    hooks.push(Answer::Hang);
    expect_error(
        send_report(&r, &h.write_key, &id).await,
        503,
        "report_delivery_failed",
    )
    .await;
    assert_eq!(
        text(
            &r,
            &format!("SELECT status AS s FROM channel_deliveries WHERE channel_id = '{id}'")
        )
        .await,
        "ambiguous"
    );
    r.app.notify.outbox_pass().await.unwrap();
    assert_eq!(
        hooks
            .received()
            .iter()
            .filter(|m| m.path.ends_with(&h.account_id))
            .count(),
        1
    );
}

/// `POST {base}/admin/jobs/{name}/run` with `body` (or none).
async fn run_job(
    client: &reqwest::Client,
    base: &str,
    name: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut req = client
        .post(format!("{base}/admin/jobs/{name}/run"))
        .bearer_auth(ADMIN_TOKEN);
    if let Some(body) = body {
        req = req.json(&body);
    }
    json_of(req.send().await.unwrap()).await
}

async fn request_ids(r: &TestRouter, account: &str) -> Vec<String> {
    #[derive(QueryableByName)]
    struct Id {
        #[diesel(sql_type = Text)]
        id: String,
    }
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query(format!(
        "SELECT id::text AS id FROM requests WHERE account_id = '{account}' ORDER BY id"
    ))
    .load::<Id>(&mut conn)
    .await
    .unwrap()
    .into_iter()
    .map(|row| row.id)
    .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn two_instances_deliver_each_digest_once_and_a_manual_report_consumes_nothing() {
    // Issue 20 item 6, M-20, M-22: the scheduler and the outbox on two
    // instances at once; POST /admin/requests/backdate and `as_of`.
    let r = TestRouter::start().await;
    let two = r.second_router().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = holder(&r).await;
    for _ in 0..3 {
        assert_eq!(
            r.chat(&h.inference_key, &hello("m-text")).await.status(),
            200
        );
    }
    let ids = request_ids(&r, &h.account_id).await;
    assert_eq!(ids.len(), 3);
    let today = chrono::Utc::now().date_naive();
    let at = |date: chrono::NaiveDate, hour: u32| format!("{date}T{hour:02}:00:00Z");
    let yesterday = today - chrono::Duration::days(1);
    let tomorrow = today + chrono::Duration::days(1);
    // One request yesterday (the manual report's period), two today (the
    // period of tomorrow's digest).
    let (status, moved) = r
        .admin(
            reqwest::Method::POST,
            "/admin/requests/backdate",
            Some(json!({"request_ids": [ids[0]], "finished_at": at(yesterday, 12)})),
        )
        .await;
    assert_eq!((status, moved["moved"].as_u64()), (200, Some(1)), "{moved}");
    let (status, _) = r
        .admin(
            reqwest::Method::POST,
            "/admin/requests/backdate",
            Some(json!({"request_ids": [ids[1], ids[2]], "finished_at": at(today, 1)})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("{}/slack/digest", hooks.base_url())}),
    )
    .await;
    assert_eq!(status, 201);
    let id = slack["id"].as_str().unwrap().to_owned();

    // A manual report of yesterday (M-20: it neither moves nor consumes
    // the next scheduled digest).
    let (status, manual) = json_of(send_report(&r, &h.write_key, &id).await).await;
    assert_eq!((status, &manual["sent"]), (200, &json!(true)), "{manual}");
    assert_eq!(hooks.wait_for(1, WAIT).await.len(), 1);

    // Before the report hour of tomorrow nothing is due.
    let early = json!({"as_of": at(tomorrow, 5)});
    let (status, pass) = run_job(&r.client, &r.base, "digest-scheduler", Some(early)).await;
    assert_eq!(
        (status, pass["processed"].as_u64()),
        (200, Some(0)),
        "{pass}"
    );

    // Both instances run the scheduler, then the outbox, at once.
    let due = json!({"as_of": at(tomorrow, 7)});
    let (a, b) = tokio::join!(
        run_job(&r.client, &r.base, "digest-scheduler", Some(due.clone())),
        run_job(
            &two.client,
            &two.base,
            "digest-scheduler",
            Some(due.clone())
        ),
    );
    assert_eq!((a.0, b.0), (200, 200));
    assert_eq!(
        a.1["processed"].as_u64().unwrap() + b.1["processed"].as_u64().unwrap(),
        1,
        "one digest queued: {a:?} {b:?}"
    );
    let (a, b) = tokio::join!(
        run_job(&r.client, &r.base, "outbox", None),
        run_job(&two.client, &two.base, "outbox", None),
    );
    assert_eq!(
        a.1["processed"].as_u64().unwrap() + b.1["processed"].as_u64().unwrap(),
        1,
        "{a:?} {b:?}"
    );
    // Again: nothing more is queued or sent.
    let (_, again) = run_job(&two.client, &two.base, "digest-scheduler", Some(due)).await;
    assert_eq!(again["processed"], 0);
    let (_, again) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(again["processed"], 0);
    let received = hooks.received();
    assert_eq!(received.len(), 2, "the manual report and one digest");
    // The digest covers today, to the nano-USD of the ledger.
    let spend = count(
        &r,
        &format!(
            "SELECT (-sum(l.amount_nano))::bigint AS n FROM ledger_entries l
             WHERE l.kind = 'charge' AND l.ledger_account = 'wallet'
               AND l.request_id IN ('{}', '{}')",
            ids[1], ids[2]
        ),
    )
    .await;
    let digest = received[1].body.to_string();
    assert!(digest.contains(&usd(spend)), "{digest}");
    assert!(digest.contains("2 requests"), "{digest}");
    assert!(digest.contains(&format!("{today}")), "{digest}");
}

#[tokio::test(flavor = "multi_thread")]
async fn test_hooks_do_not_exist_without_the_switch() {
    let r = TestRouter::start().await;
    let off = r.second_router_with(false).await;
    let resp = off
        .client
        .post(format!("{}/admin/requests/backdate", off.base))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"request_ids": [], "finished_at": "2026-01-01T00:00:00Z"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 404);
    let (status, _) = run_job(
        &off.client,
        &off.base,
        "digest-scheduler",
        Some(json!({"as_of": "2026-01-01T00:00:00Z"})),
    )
    .await;
    assert_eq!(status, 404);
    let (status, pass) = run_job(&off.client, &off.base, "digest-scheduler", None).await;
    assert_eq!(
        (status, pass["name"].as_str()),
        (200, Some("digest-scheduler"))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn outbox_retries_what_certainly_did_not_arrive() {
    // Issue 20 item 6: retries with backoff for failures that certainly
    // did not deliver; a refusal fails for good.
    let r = TestRouter::start().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = holder(&r).await;
    let (_, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": format!("{}/slack/events", hooks.base_url())}),
    )
    .await;
    let id = slack["id"].as_str().unwrap().to_owned();
    let resp = patch(
        &r,
        &h.write_key,
        &id,
        json!({"events": ["api_key_created"]}),
    )
    .await;
    assert_eq!(resp.status(), 200);
    key(&r, &h.account_id, &["inference"]).await;
    hooks.push(Answer::Status(429, "rate_limited".into()));
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 1);
    assert_eq!(
        text(&r, &format!("SELECT status || ':' || attempts AS s FROM channel_deliveries WHERE channel_id = '{id}'")).await,
        "pending:1"
    );
    // Not yet due: the backoff holds it.
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 0);
    sql(
        &r,
        &format!("UPDATE channel_deliveries SET next_attempt_at = now() WHERE channel_id = '{id}'"),
    )
    .await;
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 1);
    assert_eq!(
        text(&r, &format!("SELECT status || ':' || attempts AS s FROM channel_deliveries WHERE channel_id = '{id}'")).await,
        "delivered:2"
    );
    let received = hooks.received();
    assert_eq!(received.len(), 2);
    assert!(
        received[1]
            .body
            .to_string()
            .contains("A new API key was created")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn key_events_reach_the_channels_that_selected_them_once() {
    // Issue 20 item 3: api_key_created (with the key) and api_key_expiring
    // (seven days ahead), once per occurrence, only where selected.
    let r = TestRouter::start_with_mail().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = holder(&r).await;
    let (_, email) = connect_email(&r, &h, json!({"consent": true, "frequency": "off"})).await;
    let (_, telegram) = provision(
        &r,
        &h.account_id,
        json!({"platform": "telegram", "frequency": "off", "chat_id": "77", "api_base": hooks.base_url()}),
    )
    .await;
    let (_, discord) = provision(
        &r,
        &h.account_id,
        json!({"platform": "discord", "frequency": "off", "webhook_url": format!("{}/discord/none", hooks.base_url())}),
    )
    .await;
    for channel in [&email, &telegram] {
        let resp = patch(
            &r,
            &h.write_key,
            channel["id"].as_str().unwrap(),
            json!({"events": ["api_key_created", "api_key_expiring"]}),
        )
        .await;
        assert_eq!(resp.status(), 200);
    }
    assert!(discord["id"].is_string());
    let in_three_days = chrono::Utc::now().timestamp() + 3 * 24 * 3600;
    let created = r.new_key(json!({"account_id": h.account_id, "scopes": ["inference"], "expires_at": in_three_days})).await;
    let prefix = created["prefix"]
        .as_str()
        .or(created["display_prefix"].as_str())
        .unwrap_or_default()
        .to_owned();
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 2, "email and telegram: {pass}");
    for _ in 0..2 {
        let (_, pass) = run_job(&r.client, &r.base, "digest-scheduler", None).await;
        assert!(pass["processed"].as_u64().is_some());
        run_job(&r.client, &r.base, "outbox", None).await;
    }
    let mail = r.smtp.as_ref().unwrap().wait_for(2, WAIT).await;
    assert_eq!(mail.len(), 2);
    let subjects: Vec<&str> = mail.iter().map(|m| m.header("subject").unwrap()).collect();
    assert!(
        subjects.contains(&"A new API key was created"),
        "{subjects:?}"
    );
    assert!(
        subjects.contains(&"An API key expires soon"),
        "{subjects:?}"
    );
    let received = hooks.received();
    assert_eq!(received.len(), 2, "telegram twice, discord never");
    assert!(received.iter().all(|m| m.path.ends_with("/sendMessage")));
    if !prefix.is_empty() {
        assert!(
            received
                .iter()
                .any(|m| m.body["text"].as_str().unwrap().contains(&prefix))
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn limit_refusals_and_a_low_balance_notify_once_per_occurrence() {
    // Issue 20 item 3: spend_limit_reached, monthly_budget_reached (from the
    // key limits' 429s, A-21) and low_balance.
    let r = TestRouter::start().await;
    let hooks = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let h = holder(&r).await;
    let events =
        json!({"events": ["spend_limit_reached", "monthly_budget_reached", "low_balance"]});
    let (_, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "off", "webhook_url": format!("{}/slack/rich", hooks.base_url())}),
    )
    .await;
    let resp = patch(
        &r,
        &h.write_key,
        slack["id"].as_str().unwrap(),
        events.clone(),
    )
    .await;
    assert_eq!(resp.status(), 200);
    let limited = |body: Value| {
        let r = &r;
        let account = h.account_id.clone();
        async move {
            let mut body = body;
            body["account_id"] = json!(account);
            body["scopes"] = json!(["inference"]);
            let key = r.new_key(body).await;
            key["key"].as_str().unwrap().to_owned()
        }
    };
    let spend =
        limited(json!({"spend_limits": [{"amount_nano_usd": 1, "window_seconds": 3600}]})).await;
    let budget = limited(json!({"monthly_budget_nano_usd": 1})).await;
    for _ in 0..2 {
        expect_error(
            r.chat(&spend, &hello("m-text")).await,
            429,
            "api_key_spend_limit_exceeded",
        )
        .await;
        expect_error(
            r.chat(&budget, &hello("m-text")).await,
            429,
            "api_key_monthly_budget_exceeded",
        )
        .await;
    }
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 2, "one per key and period: {pass}");
    let texts: Vec<String> = hooks
        .received()
        .iter()
        .map(|m| m.body.to_string())
        .collect();
    assert!(texts.iter().any(|t| t.contains("spend limit")), "{texts:?}");
    assert!(
        texts.iter().any(|t| t.contains("monthly budget")),
        "{texts:?}"
    );

    // An account under $1.00 of available credit.
    let poor = r.customer(400_000_000, &["inference"]).await;
    let (_, channel) = provision(
        &r,
        &poor.account_id,
        json!({"platform": "slack", "frequency": "off", "webhook_url": format!("{}/slack/poor", hooks.base_url())}),
    )
    .await;
    let write = key(&r, &poor.account_id, &["account:write"]).await;
    let resp = patch(&r, &write, channel["id"].as_str().unwrap(), events).await;
    assert_eq!(resp.status(), 200);
    for _ in 0..2 {
        run_job(&r.client, &r.base, "outbox", None).await;
    }
    let poor_msgs: Vec<_> = hooks
        .received()
        .into_iter()
        .filter(|m| m.path == "/slack/poor")
        .collect();
    assert_eq!(poor_msgs.len(), 1);
    assert!(
        poor_msgs[0].body.to_string().contains("$0.40"),
        "{:?}",
        poor_msgs[0].body
    );
    assert_eq!(
        hooks
            .received()
            .iter()
            .filter(|m| m.path == "/slack/rich")
            .count(),
        2
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn email_reports_refused_or_deferred_by_the_smtp_server() {
    // M-21 over SMTP: a 5xx refusal → 503 email_delivery_failed; a 4xx
    // deferral → 503 report_pending, then the outbox delivers it.
    let r = TestRouter::start_with_mail().await;
    let smtp = r.smtp.as_ref().unwrap();
    let refused = holder(&r).await;
    usage_yesterday(&r, &refused, 1).await;
    let (_, email) =
        connect_email(&r, &refused, json!({"consent": true, "frequency": "daily"})).await;
    smtp.refuse_next();
    let resp = send_report(&r, &refused.write_key, email["id"].as_str().unwrap()).await;
    expect_error(resp, 503, "email_delivery_failed").await;

    let deferred = holder(&r).await;
    usage_yesterday(&r, &deferred, 2).await;
    let (_, email) = connect_email(
        &r,
        &deferred,
        json!({"consent": true, "frequency": "daily"}),
    )
    .await;
    let id = email["id"].as_str().unwrap().to_owned();
    smtp.defer_next();
    expect_error(
        send_report(&r, &deferred.write_key, &id).await,
        503,
        "report_pending",
    )
    .await;
    assert!(smtp.received().is_empty());
    sql(
        &r,
        &format!("UPDATE channel_deliveries SET next_attempt_at = now() WHERE channel_id = '{id}'"),
    )
    .await;
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 1);
    let mail = smtp.wait_for(1, WAIT).await;
    assert_eq!(mail.len(), 1);
    assert!(mail[0].data.replace("=\r\n", "").contains("2 requests"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_catalog_release_that_reprices_notifies_once() {
    // Issue 20 item 3: model_price_changed from a catalog release, once per
    // release, only where selected; a reload of the same file is no change.
    let r = TestRouter::start_with_mail().await;
    let h = holder(&r).await;
    let (_, email) = connect_email(&r, &h, json!({"consent": true, "frequency": "off"})).await;
    let resp = patch(
        &r,
        &h.write_key,
        email["id"].as_str().unwrap(),
        json!({"events": ["model_price_changed"]}),
    )
    .await;
    assert_eq!(resp.status(), 200);

    let (status, _) = r.reload_catalog().await;
    assert_eq!(status, 200);
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(
        pass["processed"], 0,
        "an unchanged release notifies nobody: {pass}"
    );

    r.write_catalog(&CATALOG.replace(
        "rates = { input = 1_000_000_000, output = 2_000_000_000 }",
        "rates = { input = 1_100_000_000, output = 2_000_000_000 }",
    ));
    let (status, body) = r.reload_catalog().await;
    assert_eq!(status, 200, "{body}");
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 1, "{pass}");
    let (_, pass) = run_job(&r.client, &r.base, "outbox", None).await;
    assert_eq!(pass["processed"], 0, "once per release: {pass}");
    let mail = r.smtp.as_ref().unwrap().wait_for(1, WAIT).await;
    assert_eq!(mail.len(), 1);
    assert_eq!(mail[0].header("subject"), Some("Model prices changed"));
    assert!(
        mail[0].body_text().contains("m-text"),
        "{}",
        mail[0].body_text()
    );
}

/// Issue 33: a destination the router would post a webhook secret or the
/// bot token to must be https to a public host, without credentials;
/// literal loopback, private, link-local (metadata) and unique-local hosts
/// are refused in every spelling, naming the field.
#[tokio::test(flavor = "multi_thread")]
async fn channel_destinations_must_be_https_to_public_hosts() {
    let r = TestRouter::start_channel_urls(false).await;
    let h = holder(&r).await;
    let refused = [
        "http://hooks.slack.example/services/x",
        "https://127.0.0.1/services/x",
        "https://10.0.0.1/services/x",
        "https://169.254.169.254/latest/meta-data/",
        "https://[::1]/services/x",
        "https://[fd00::1]/services/x",
        "https://[::ffff:127.0.0.1]/services/x",
        "https://user:pass@hooks.slack.example/services/x",
        "http://0x7f000001/services/x",
        "https://0x7f000001/services/x",
        "https://2130706433/services/x",
        "https://localhost/services/x",
        "ftp://hooks.slack.example/x",
    ];
    for url in refused {
        for platform in ["slack", "discord"] {
            let body = json!({"platform": platform, "frequency": "daily", "webhook_url": url});
            let (status, error) = provision(&r, &h.account_id, body).await;
            assert_eq!(status, 400, "{platform} {url}: {error}");
            assert_eq!(error["error"]["code"], "invalid_parameter", "{error}");
            assert_eq!(error["error"]["param"], "webhook_url", "{error}");
            assert!(!error.to_string().contains("pass@"), "{error}");
        }
        let body =
            json!({"platform": "telegram", "frequency": "daily", "chat_id": "42", "api_base": url});
        let (status, error) = provision(&r, &h.account_id, body).await;
        assert_eq!(status, 400, "telegram {url}: {error}");
        assert_eq!(error["error"]["code"], "invalid_parameter", "{error}");
        assert_eq!(error["error"]["param"], "api_base", "{error}");
    }
    let (status, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": "https://hooks.slack.example/services/T0/B0/x"}),
    )
    .await;
    assert_eq!(status, 201, "{slack}");
    let (status, telegram) = provision(
        &r,
        &h.account_id,
        json!({"platform": "telegram", "frequency": "daily", "chat_id": "42", "api_base": "https://bot-api.example"}),
    )
    .await;
    assert_eq!(status, 201, "{telegram}");
}

/// With `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK` (the harness default: the sinks
/// listen on loopback) loopback hosts pass, over http too; nothing else is
/// relaxed.
#[tokio::test(flavor = "multi_thread")]
async fn allowing_loopback_relaxes_loopback_only() {
    let r = TestRouter::start().await;
    let h = holder(&r).await;
    for url in [
        "http://hooks.slack.example/services/x",
        "http://8.8.8.8/services/x",
        "https://10.0.0.1/services/x",
        "https://169.254.169.254/latest/meta-data/",
        "http://[::ffff:127.0.0.1]/services/x",
        "http://user:pass@127.0.0.1/services/x",
    ] {
        let body = json!({"platform": "discord", "frequency": "daily", "webhook_url": url});
        let (status, error) = provision(&r, &h.account_id, body).await;
        assert_eq!(status, 400, "{url}: {error}");
        assert_eq!(error["error"]["param"], "webhook_url", "{error}");
    }
    let body = json!({"platform": "discord", "frequency": "daily", "webhook_url": "http://127.0.0.1:9/discord/x"});
    let (status, discord) = provision(&r, &h.account_id, body).await;
    assert_eq!(status, 201, "{discord}");
}

/// A destination stored before these rules (or otherwise changed) is
/// checked again at delivery: refused without a connection, and the bot
/// token never leaves the router.
#[tokio::test(flavor = "multi_thread")]
async fn a_stored_private_destination_is_refused_at_delivery_without_a_connection() {
    let r = TestRouter::start_channel_urls(false).await;
    let canary = Canary::start().await;
    let h = holder(&r).await;
    usage_yesterday(&r, &h, 1).await;
    let (_, slack) = provision(
        &r,
        &h.account_id,
        json!({"platform": "slack", "frequency": "daily", "webhook_url": "https://hooks.slack.example/services/x"}),
    )
    .await;
    let (_, telegram) = provision(
        &r,
        &h.account_id,
        json!({"platform": "telegram", "frequency": "daily", "chat_id": "42", "api_base": "https://bot-api.example"}),
    )
    .await;
    let slack = slack["id"].as_str().unwrap().to_owned();
    let telegram = telegram["id"].as_str().unwrap().to_owned();
    sql(
        &r,
        &format!(
            "UPDATE channels SET destination = '{}/slack/x' WHERE id = '{slack}'",
            canary.base
        ),
    )
    .await;
    sql(
        &r,
        &format!(
            "UPDATE channels SET api_base = '{}' WHERE id = '{telegram}'",
            canary.base
        ),
    )
    .await;
    for id in [&slack, &telegram] {
        expect_error(
            send_report(&r, &h.write_key, id).await,
            503,
            "report_delivery_failed",
        )
        .await;
    }
    assert_eq!(
        canary.hits(),
        0,
        "nothing was sent to a refused destination"
    );
}
