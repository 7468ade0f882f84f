//! Prompt-cache routing affinity (F-09, F-13..F-17, CF-10, G-23, GP-34):
//! `x-ci-prompt-cache-affinity` is `new`, `hit`, `stale` or `miss` on chat,
//! responses and messages when the cacheable prefix participates.

use crate::harness::*;
use crate::routing_policies::{LISTED, Surface};
use diesel_async::RunQueryDsl;
use router_mock_supplier::Script;
use serde_json::{Value, json};
use std::time::Duration;

/// A system instruction long enough (about 1,500 tokens) to participate
/// without markers.
fn long_system() -> String {
    "You are a careful assistant. ".repeat(200)
}

/// A request whose prefix (the system instruction) participates.
fn long_body(surface: Surface, model: &str, extra: Value) -> Value {
    let system = long_system();
    let mut body = match surface {
        Surface::Chat => json!({"model": model, "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": "hi"}
        ]}),
        Surface::Responses => json!({"model": model, "instructions": system, "input": "hi"}),
        Surface::Messages => json!({"model": model, "max_tokens": 16, "system": system,
            "messages": [{"role": "user", "content": "hi"}]}),
        Surface::Completions => json!({"model": model, "prompt": system}),
    };
    if let Value::Object(fields) = extra {
        for (k, v) in fields {
            body[k] = v;
        }
    }
    body
}

fn affinity(resp: &reqwest::Response) -> Option<String> {
    resp.headers()
        .get("x-ci-prompt-cache-affinity")
        .map(|v| v.to_str().unwrap().to_owned())
}

async fn state(
    r: &TestRouter,
    surface: Surface,
    key: &str,
    body: &Value,
    headers: &[(&str, &str)],
) -> Option<String> {
    let resp = surface.send(r, key, body, headers).await;
    assert_eq!(resp.status(), 200, "{surface:?}");
    affinity(&resp)
}

async fn second_key(r: &TestRouter, account_id: &str) -> String {
    let key = r
        .new_key(json!({"account_id": account_id, "scopes": ["inference"]}))
        .await;
    key["key"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_same_prefix_is_new_then_hit_on_chat_responses_and_messages() {
    let (r, c) = TestRouter::start_rich().await;
    // One model per surface: the same prefix of one model in one scope is
    // one preference, whichever surface sends it.
    for (surface, model) in [
        (Surface::Chat, "m-text"),
        (Surface::Responses, "m-gpt-only"),
        (Surface::Messages, "m-claude"),
    ] {
        let body = long_body(surface, model, json!({}));
        assert_eq!(
            state(&r, surface, &c.key, &body, &[]).await.as_deref(),
            Some("new")
        );
        assert_eq!(
            state(&r, surface, &c.key, &body, &[]).await.as_deref(),
            Some("hit")
        );
        // F-17: the header is about routing, not the supplier's cache.
    }
    // CF-10: Completions never carries the header.
    let body = long_body(Surface::Completions, "m-text", json!({}));
    assert_eq!(
        state(&r, Surface::Completions, &c.key, &body, &[]).await,
        None
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn off_and_short_unmarked_prompts_do_not_participate() {
    // F-09: `off` disables affinity and keeps the client's markers.
    let (r, c) = TestRouter::start_rich().await;
    let long = long_body(Surface::Chat, "m-text", json!({}));
    let off = [("x-ci-prompt-cache", "off")];
    assert_eq!(state(&r, Surface::Chat, &c.key, &long, &off).await, None);
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &hello("m-text"), &[]).await,
        None
    );
    // A marker makes a short prefix participate.
    let marked = json!({"model": "m-gpt-only", "messages": [
        {"role": "system", "content": [{"type": "text", "text": "short", "cache_control": {"type": "ephemeral"}}]},
        {"role": "user", "content": "hi"}
    ]});
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &marked, &[])
            .await
            .as_deref(),
        Some("new")
    );
    assert_eq!(state(&r, Surface::Chat, &c.key, &marked, &off).await, None);
    let sent = r.mock.calls().last().unwrap().body.clone();
    assert!(sent.to_string().contains("cache_control"), "{sent}");
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &marked, &[])
            .await
            .as_deref(),
        Some("hit")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn scopes_keep_sessions_users_and_accounts_apart() {
    // F-14, GP-34: one account, two keys, two labels, two end users.
    let (r, c) = TestRouter::start_rich().await;
    let key2 = second_key(&r, &c.account_id).await;
    let body = long_body(Surface::Chat, "m-text", json!({}));
    let chat = |key: &str, headers: &'static [(&'static str, &'static str)]| {
        let key = key.to_owned();
        let body = body.clone();
        let r = &r;
        async move { state(r, Surface::Chat, &key, &body, headers).await }
    };
    // session (the default): per key and label.
    assert_eq!(chat(&c.key, &[]).await.as_deref(), Some("new"));
    assert_eq!(chat(&key2, &[]).await.as_deref(), Some("new"));
    assert_eq!(chat(&c.key, &[]).await.as_deref(), Some("hit"));
    const LABEL_A: &[(&str, &str)] = &[("x-ci-prompt-cache-session", "a")];
    const LABEL_B: &[(&str, &str)] = &[("x-ci-prompt-cache-session", "b")];
    assert_eq!(chat(&c.key, LABEL_A).await.as_deref(), Some("new"));
    assert_eq!(chat(&c.key, LABEL_B).await.as_deref(), Some("new"));
    assert_eq!(chat(&c.key, LABEL_A).await.as_deref(), Some("hit"));
    // org: the whole account, across keys.
    const ORG: &[(&str, &str)] = &[("x-ci-prompt-cache-scope", "org")];
    assert_eq!(chat(&c.key, ORG).await.as_deref(), Some("new"));
    assert_eq!(chat(&key2, ORG).await.as_deref(), Some("hit"));
    // user: the key and the end user.
    const USER_1: &[(&str, &str)] = &[
        ("x-ci-prompt-cache-scope", "user"),
        ("x-ci-end-user", "user-1"),
    ];
    const USER_2: &[(&str, &str)] = &[
        ("x-ci-prompt-cache-scope", "user"),
        ("x-ci-end-user", "user-2"),
    ];
    assert_eq!(chat(&c.key, USER_1).await.as_deref(), Some("new"));
    assert_eq!(chat(&c.key, USER_2).await.as_deref(), Some("new"));
    assert_eq!(chat(&c.key, USER_1).await.as_deref(), Some("hit"));
    assert_eq!(chat(&key2, USER_1).await.as_deref(), Some("new"));
    // Another account's org scope is its own.
    let other = r.rich_customer().await;
    assert_eq!(chat(&other.key, ORG).await.as_deref(), Some("new"));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_fallback_is_miss_and_then_preferred() {
    // G-23, F-16: the primary fails twice, the fallback serves → `miss`;
    // the same prefix then goes to the fallback first → `hit`.
    let (r, c) = TestRouter::start_rich().await;
    let body = long_body(Surface::Chat, "m-text", json!({}));
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("miss")
    );
    let calls = r.mock.call_count();
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("hit")
    );
    assert_eq!(r.mock.calls()[calls].model(), Some("up-text-fallback"));
    // A same-route retry keeps the first attempt's state.
    let r2 = TestRouter::start().await;
    let c2 = r2.rich_customer().await;
    r2.mock.enqueue_for("up-text-primary", Script::status(500));
    assert_eq!(
        state(&r2, Surface::Chat, &c2.key, &body, &[])
            .await
            .as_deref(),
        Some("new")
    );
    assert_eq!(r2.mock.call_count(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_expired_or_ineligible_preference_is_stale() {
    // F-16 with a one-second preference (ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS).
    let settings = PromptCacheSettings {
        affinity_ttl: Duration::from_secs(1),
        ..PromptCacheSettings::default()
    };
    let r = TestRouter::start_prompt_cache(settings, LISTED).await;
    let c = r.rich_customer().await;
    let body = long_body(Surface::Chat, "m-text", json!({}));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("new")
    );
    // Past the preference (a wait, not a timing assertion).
    tokio::time::sleep(Duration::from_millis(1100)).await;
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("stale")
    );
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("hit")
    );

    // Ineligible: the preferred route is not a ZDR route. ZDR wins (F-12's
    // rule for every filter): the ZDR route serves, `stale`.
    let listed = long_body(Surface::Chat, "m-listed", json!({}));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &listed, &[])
            .await
            .as_deref(),
        Some("new")
    );
    assert_eq!(
        r.mock.calls().last().unwrap().model(),
        Some("up-listed-deep")
    );
    let zdr = long_body(Surface::Chat, "m-listed", json!({"zdr": true}));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &zdr, &[]).await.as_deref(),
        Some("stale")
    );
    assert_eq!(
        r.mock.calls().last().unwrap().model(),
        Some("up-listed-even")
    );
    // F-12: affinity never relaxes a discount floor either.
    let floor = long_body(
        Surface::Chat,
        "m-listed",
        json!({"min_discount_percent": 99.99}),
    );
    let resp = Surface::Chat
        .send(&r, &c.key, &floor, &[("x-ci-prompt-cache", "on")])
        .await;
    expect_error(resp, 503, "min_discount_unavailable").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failed_affinity_read_is_miss_not_an_error() {
    let (r, c) = TestRouter::start_rich().await;
    let mut conn = r.db.database().connection().await.unwrap();
    diesel::sql_query("DROP TABLE prompt_cache_affinity")
        .execute(&mut conn)
        .await
        .unwrap();
    let body = long_body(Surface::Chat, "m-text", json!({}));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("miss")
    );
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("miss")
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn another_instance_s_newer_choice_wins_within_the_front_s_lifetime() {
    // F-14, F-16 with the in-process front (issue 16 item 2): instance A
    // prefers the primary for a prefix; instance B then serves the same
    // prefix from the fallback (G-23) and records it. A's front holds its
    // own choice for at most `router_store::affinity::FRONT_TTL`, then
    // reads the shared row: A's next requests go to the fallback first.
    let r = TestRouter::start().await;
    let b = r.second_router().await;
    let c = r.rich_customer().await;
    let body = long_body(Surface::Chat, "m-text", json!({}));
    assert_eq!(
        state(&r, Surface::Chat, &c.key, &body, &[])
            .await
            .as_deref(),
        Some("new")
    );
    assert_eq!(
        r.mock.calls().last().unwrap().model(),
        Some("up-text-primary")
    );
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    r.mock.enqueue_for("up-text-primary", Script::status(500));
    let resp = b.chat(&c.key, &body).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(affinity(&resp).as_deref(), Some("miss"));
    // Bounded tries (a wait, not a timing assertion).
    let mut first = None;
    for _ in 0..40 {
        let calls = r.mock.call_count();
        let resp = Surface::Chat.send(&r, &c.key, &body, &[]).await;
        assert_eq!(resp.status(), 200);
        assert_eq!(affinity(&resp).as_deref(), Some("hit"));
        first = r.mock.calls()[calls].model().map(str::to_owned);
        if first.as_deref() == Some("up-text-fallback") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(first.as_deref(), Some("up-text-fallback"));
}
