//! A/B experiments (F-01..F-06, GP-10, GP-44, GP-45, H-06): the operator's
//! lifecycle, and what the mock supplier receives with `X-CI-Experiment`.

use crate::harness::*;
use crate::routing_policies::{SURFACES, Surface};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

async fn create(r: &TestRouter, account: &str, body: Value) -> (u16, Value) {
    r.admin(
        Method::POST,
        &format!("/admin/accounts/{account}/experiments"),
        Some(body),
    )
    .await
}

async fn set_status(r: &TestRouter, account: &str, slug: &str, body: Value) -> (u16, Value) {
    r.admin(
        Method::PATCH,
        &format!("/admin/accounts/{account}/experiments/{slug}"),
        Some(body),
    )
    .await
}

/// Create `slug` with `variants` and move it to `running`.
async fn running(r: &TestRouter, account: &str, slug: &str, variants: Value) {
    let (status, body) = create(r, account, json!({"slug": slug, "variants": variants})).await;
    assert_eq!(status, 201, "{body}");
    let (status, body) = set_status(r, account, slug, json!({"status": "running"})).await;
    assert_eq!(status, 200, "{body}");
}

fn two_systems() -> Value {
    json!([
        {"name": "a", "weight": 1, "system": "VARIANT-A-SYSTEM"},
        {"name": "b", "weight": 1, "system": "VARIANT-B-SYSTEM", "system_mode": "replace"}
    ])
}

/// Which variant's system instruction the body carries.
fn variant_seen(body: &Value) -> Option<&'static str> {
    let text = body.to_string();
    match (
        text.contains("VARIANT-A-SYSTEM"),
        text.contains("VARIANT-B-SYSTEM"),
    ) {
        (true, false) => Some("a"),
        (false, true) => Some("b"),
        _ => None,
    }
}

fn last_body(r: &TestRouter) -> Value {
    r.mock.calls().last().unwrap().body.clone()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_operator_runs_an_experiments_lifecycle() {
    let (r, c) = TestRouter::start_rich().await;
    let a = &c.account_id;
    let (status, body) = create(&r, a, json!({"slug": "tone", "variants": two_systems()})).await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(body["status"], "draft");
    assert_eq!(body["variants"][1]["system_mode"], "replace");
    assert_eq!(body["variants"][0]["assignments"], 0);
    // A duplicate slug in the same account.
    let (status, body) = create(&r, a, json!({"slug": "tone", "variants": two_systems()})).await;
    assert_eq!(
        (status, body["error"]["code"].clone()),
        (409, json!("conflict"))
    );
    // Bodies are checked strictly.
    for bad in [
        json!({"slug": "x", "variants": []}),
        json!({"slug": "bad slug", "variants": two_systems()}),
        json!({"slug": "x", "variants": [{"name": "a", "weight": 0}]}),
        json!({"slug": "x", "variants": [{"name": "a", "weight": 1, "system": "s", "system_mode": "append"}]}),
        json!({"slug": "x", "variants": [{"name": "a", "weight": 1, "model": "no-such-model"}]}),
        json!({"slug": "x", "variants": [{"name": "a", "weight": 1}, {"name": "a", "weight": 1}]}),
        json!({"slug": "x", "variants": [{"name": "a", "weight": 1, "colour": "red"}]}),
        json!({"slug": "x", "variants": two_systems(), "extra": 1}),
    ] {
        let (status, body) = create(&r, a, bad.clone()).await;
        assert_eq!(status, 400, "{bad} → {body}");
    }
    let unknown = uuid::Uuid::new_v4();
    let (status, _) = create(
        &r,
        &unknown.to_string(),
        json!({"slug": "x", "variants": two_systems()}),
    )
    .await;
    assert_eq!(status, 404);

    // draft → only running.
    for to in [
        json!({"status": "paused"}),
        json!({"status": "completed"}),
        json!({"status": "promoted", "winner": "a"}),
    ] {
        let (status, body) = set_status(&r, a, "tone", to.clone()).await;
        assert_eq!(status, 409, "{to} → {body}");
    }
    let steps = [
        (json!({"status": "running"}), 200),
        (json!({"status": "running"}), 409),
        (json!({"status": "paused"}), 200),
        (json!({"status": "running"}), 200),
        (json!({"status": "promoted"}), 400),
        (json!({"status": "promoted", "winner": "zzz"}), 400),
        (json!({"status": "paused", "winner": "a"}), 400),
        (json!({"status": "draft"}), 400),
        (json!({"status": "promoted", "winner": "b"}), 200),
        (json!({"status": "running"}), 409),
        (json!({"status": "completed"}), 409),
    ];
    for (body, expected) in steps {
        let (status, reply) = set_status(&r, a, "tone", body.clone()).await;
        assert_eq!(status, expected, "{body} → {reply}");
    }
    let (status, body) = r
        .admin(
            Method::GET,
            &format!("/admin/accounts/{a}/experiments/tone"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (body["status"].clone(), body["winner"].clone()),
        (json!("promoted"), json!("b"))
    );
    // running/paused → completed.
    running(&r, a, "second", two_systems()).await;
    let (status, _) = set_status(&r, a, "second", json!({"status": "paused"})).await;
    assert_eq!(status, 200);
    let (status, body) = set_status(&r, a, "second", json!({"status": "completed"})).await;
    assert_eq!((status, body["status"].clone()), (200, json!("completed")));
    let (status, body) = r
        .admin(
            Method::GET,
            &format!("/admin/accounts/{a}/experiments"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    let slugs: Vec<&str> = body["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["slug"].as_str().unwrap())
        .collect();
    assert_eq!(slugs, ["tone", "second"]);
    let (status, _) = r
        .admin(
            Method::GET,
            &format!("/admin/accounts/{a}/experiments/nope"),
            None,
        )
        .await;
    assert_eq!(status, 404);
    let (status, _) = set_status(&r, a, "nope", json!({"status": "running"})).await;
    assert_eq!(status, 404);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_running_experiment_reaches_each_supplier_dialect() {
    // F-01 on all four surfaces and the three route dialects: the variant's
    // system instruction is in what the supplier received.
    let (r, c) = TestRouter::start_rich().await;
    running(&r, &c.account_id, "tone", two_systems()).await;
    for model in ["m-via-chat", "m-via-messages", "m-via-responses"] {
        for surface in SURFACES {
            let body = surface.body(model, json!({}));
            let resp = surface
                .send(&r, &c.key, &body, &[("x-ci-experiment", "tone")])
                .await;
            assert_eq!(resp.status(), 200, "{model} {surface:?}");
            let sent = last_body(&r);
            let variant = variant_seen(&sent);
            assert!(variant.is_some(), "{model} {surface:?}: {sent}");
            // Each dialect's own place for the system instruction.
            match model {
                "m-via-chat" => assert_eq!(sent["messages"][0]["role"], "system", "{sent}"),
                "m-via-messages" => {
                    assert!(variant_seen(&sent["system"]).is_some(), "{sent}");
                }
                _ => {
                    let instructions = variant_seen(&sent["instructions"]);
                    let first_input = variant_seen(&sent["input"][0]);
                    assert!(instructions.or(first_input).is_some(), "{sent}");
                }
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn replace_drops_the_clients_system_and_prepend_keeps_it() {
    let (r, c) = TestRouter::start_rich().await;
    running(
        &r,
        &c.account_id,
        "only-a",
        json!([{"name": "a", "weight": 1, "system": "VARIANT-A-SYSTEM"}]),
    )
    .await;
    running(
        &r,
        &c.account_id,
        "only-b",
        json!([{"name": "b", "weight": 1, "system": "VARIANT-B-SYSTEM", "system_mode": "replace"}]),
    )
    .await;
    let body = json!({"model": "m-via-chat", "messages": [
        {"role": "system", "content": "CLIENT-SYSTEM"},
        {"role": "user", "content": "hi"}
    ]});
    let send = |slug: &'static str| {
        r.client
            .post(format!("{}/v1/chat/completions", r.base))
            .bearer_auth(&c.key)
            .header("x-ci-experiment", slug)
            .json(&body)
            .send()
    };
    assert_eq!(send("only-a").await.unwrap().status(), 200);
    let sent = last_body(&r).to_string();
    assert!(
        sent.contains("VARIANT-A-SYSTEM") && sent.contains("CLIENT-SYSTEM"),
        "{sent}"
    );
    assert!(
        sent.find("VARIANT-A-SYSTEM") < sent.find("CLIENT-SYSTEM"),
        "{sent}"
    );
    assert_eq!(send("only-b").await.unwrap().status(), 200);
    let sent = last_body(&r).to_string();
    assert!(
        sent.contains("VARIANT-B-SYSTEM") && !sent.contains("CLIENT-SYSTEM"),
        "{sent}"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_promoted_experiment_always_uses_the_winner() {
    // F-02: 10 requests, the winner every time.
    let (r, c) = TestRouter::start_rich().await;
    running(&r, &c.account_id, "tone", two_systems()).await;
    let (status, _) = set_status(
        &r,
        &c.account_id,
        "tone",
        json!({"status": "promoted", "winner": "a"}),
    )
    .await;
    assert_eq!(status, 200);
    for _ in 0..10 {
        let resp = Surface::Chat
            .send(&r, &c.key, &hello("m-text"), &[("x-ci-experiment", "tone")])
            .await;
        assert_eq!(resp.status(), 200);
        assert_eq!(variant_seen(&last_body(&r)), Some("a"));
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn draft_paused_and_completed_experiments_change_nothing() {
    // F-03: the supplier receives exactly what it would without the header.
    let (r, c) = TestRouter::start_rich().await;
    let a = &c.account_id;
    let (status, _) = create(&r, a, json!({"slug": "draft", "variants": two_systems()})).await;
    assert_eq!(status, 201);
    running(&r, a, "paused", two_systems()).await;
    assert_eq!(
        set_status(&r, a, "paused", json!({"status": "paused"}))
            .await
            .0,
        200
    );
    running(&r, a, "completed", two_systems()).await;
    assert_eq!(
        set_status(&r, a, "completed", json!({"status": "completed"}))
            .await
            .0,
        200
    );
    for surface in SURFACES {
        let body = surface.body("m-text", json!({}));
        let resp = surface.send(&r, &c.key, &body, &[]).await;
        assert_eq!(resp.status(), 200);
        let plain = last_body(&r);
        for slug in ["draft", "paused", "completed"] {
            let resp = surface
                .send(&r, &c.key, &body, &[("x-ci-experiment", slug)])
                .await;
            assert_eq!(resp.status(), 200, "{surface:?} {slug}");
            assert_eq!(last_body(&r), plain, "{surface:?} {slug}");
        }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn unknown_and_foreign_slugs_are_the_same_404() {
    // F-04, GP-10: nothing reveals another account's experiment.
    let r = TestRouter::start().await;
    let owner = r.rich_customer().await;
    let other = r.rich_customer().await;
    running(&r, &owner.account_id, "secret", two_systems()).await;
    for surface in SURFACES {
        let body = surface.body("m-text", json!({}));
        let unknown = surface
            .send(
                &r,
                &other.key,
                &body,
                &[("x-ci-experiment", "no-such-slug")],
            )
            .await;
        let unknown = surface
            .expect_error(unknown, 404, "experiment_not_found")
            .await;
        let foreign = surface
            .send(&r, &other.key, &body, &[("x-ci-experiment", "secret")])
            .await;
        let foreign = surface
            .expect_error(foreign, 404, "experiment_not_found")
            .await;
        assert_eq!(unknown, foreign, "{surface:?}");
    }
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn an_end_user_keeps_one_variant_and_the_history_records_it() {
    // F-06: 20 requests of one end user → one variant; the request history
    // and the assignment counts record it.
    let (r, c) = TestRouter::start_rich().await;
    running(&r, &c.account_id, "tone", two_systems()).await;
    let mut seen = Vec::new();
    let mut last_id = String::new();
    for _ in 0..20 {
        let resp = Surface::Chat
            .send(
                &r,
                &c.key,
                &hello("m-text"),
                &[("x-ci-experiment", "tone"), ("x-ci-end-user", "user-42")],
            )
            .await;
        assert_eq!(resp.status(), 200);
        last_id = request_id(&resp);
        seen.push(variant_seen(&last_body(&r)).unwrap());
    }
    assert!(seen.iter().all(|v| *v == seen[0]), "{seen:?}");
    // The assignment is written beside the reply: wait for the last one.
    let path = format!("/admin/accounts/{}/experiments/tone", c.account_id);
    let mut counts = Value::Null;
    for _ in 0..100 {
        let (_, body) = r.admin(Method::GET, &path, None).await;
        counts = body["variants"].clone();
        let total: i64 = counts
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["assignments"].as_i64().unwrap())
            .sum();
        if total == 20 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let assigned = counts
        .as_array()
        .unwrap()
        .iter()
        .find(|v| v["name"] == seen[0])
        .unwrap();
    assert_eq!(assigned["assignments"], 20, "{counts}");
    let record = r.request_record(&last_id).await;
    assert_eq!(record["experiment_variant"], seen[0], "{record}");
    assert!(record["experiment_id"].is_string(), "{record}");
}

#[tokio::test(flavor = "multi_thread")]
async fn end_users_spread_over_the_variants() {
    // GP-44: different end users, and no end user at all, reach both
    // variants (deterministic for the end users: a fixed hash).
    let (r, c) = TestRouter::start_rich().await;
    running(&r, &c.account_id, "tone", two_systems()).await;
    let mut by_user = std::collections::HashSet::new();
    for i in 0..16 {
        let user = format!("user-{i}");
        let resp = Surface::Chat
            .send(
                &r,
                &c.key,
                &hello("m-text"),
                &[("x-ci-experiment", "tone"), ("x-ci-end-user", &user)],
            )
            .await;
        assert_eq!(resp.status(), 200);
        by_user.insert(variant_seen(&last_body(&r)).unwrap());
    }
    assert_eq!(by_user.len(), 2, "{by_user:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_model_variant_is_served_by_that_models_routes() {
    let (r, c) = TestRouter::start_rich().await;
    running(
        &r,
        &c.account_id,
        "switch",
        json!([{"name": "supply", "weight": 1, "model": "m-supply"}]),
    )
    .await;
    let resp = Surface::Chat
        .send(
            &r,
            &c.key,
            &hello("m-text"),
            &[("x-ci-experiment", "switch")],
        )
        .await;
    assert_eq!(resp.status(), 200);
    let id = request_id(&resp);
    let body: Value = resp.json().await.unwrap();
    assert_eq!(body["model"], "m-supply");
    assert_eq!(r.mock.calls().last().unwrap().model(), Some("up-supply-a"));
    assert_eq!(r.request_record(&id).await["model"], "m-supply");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rewriting_experiment_refuses_image_input() {
    // H-06, GP-45: 400 incompatible_image_input, nothing called or held.
    let (r, c) = TestRouter::start_rich().await;
    running(&r, &c.account_id, "tone", two_systems()).await;
    let body = json!({"model": "m-gpt-only", "messages": [{"role": "user", "content": [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}}
    ]}]});
    let resp = Surface::Chat
        .send(&r, &c.key, &body, &[("x-ci-experiment", "tone")])
        .await;
    expect_error(resp, 400, "incompatible_image_input").await;
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(r.account(&c.account_id).await["held_nano_usd"], 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_change_through_one_instance_reaches_another_s_experiment_front() {
    // Issue 16 item 3: the inference path reads experiments from an
    // in-process front; every admin change is announced by a trigger, so a
    // second instance stops applying a paused experiment (F-03) and starts
    // applying a new one whose slug it had cached as unknown (F-04).
    let r = TestRouter::start().await;
    let second = r.second_router().await;
    let c = r.rich_customer().await;
    let a = &c.account_id;
    let send = |slug: &'static str| {
        let (second, key) = (&second, c.key.clone());
        async move {
            second
                .client
                .post(format!("{}/v1/chat/completions", second.base))
                .bearer_auth(key)
                .header("x-ci-experiment", slug)
                .json(&hello("m-text"))
                .send()
                .await
                .unwrap()
        }
    };
    let one_system = json!([{"name": "a", "weight": 1, "system": "VARIANT-A-SYSTEM"}]);
    running(&r, a, "tone", one_system.clone()).await;
    assert_eq!(send("tone").await.status(), 200);
    assert_eq!(variant_seen(&last_body(&r)), Some("a"));
    // Unknown on the second instance, and remembered as such.
    assert_eq!(send("later").await.status(), 404);
    assert_eq!(send("later").await.status(), 404);

    let (status, _) = set_status(&r, a, "tone", json!({"status": "paused"})).await;
    assert_eq!(status, 200);
    running(&r, a, "later", one_system).await;
    // The notification travels asynchronously: bounded tries, no timing.
    let mut seen = Some("a");
    for _ in 0..100 {
        assert_eq!(send("tone").await.status(), 200);
        seen = variant_seen(&last_body(&r));
        if seen.is_none() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(seen, None, "paused: forwarded untouched");
    let resp = send("later").await;
    assert_eq!(resp.status(), 200, "the new experiment is found");
    assert_eq!(variant_seen(&last_body(&r)), Some("a"));
}
