//! Key policies over HTTP: allowed models (A-18, GP-46), IP allowlists and
//! trusted proxies (A-19, CF-27), the prompt-cache default (F-07), changes
//! that take effect at once, the policy_changed race, and the admin
//! interface for them.

use crate::harness::*;
use reqwest::Method;
use router_http::client_addr::TrustedProxies;
use serde_json::{Value, json};
use std::time::Duration;

/// A funded account's key created with `policy` merged into the request.
async fn key_with(r: &TestRouter, policy: Value) -> (String, Value) {
    let c = r.rich_customer().await;
    let mut body = json!({"account_id": c.account_id, "scopes": ["inference"]});
    for (k, v) in policy.as_object().unwrap() {
        body[k] = v.clone();
    }
    let key = r.new_key(body).await;
    (key["key"].as_str().unwrap().to_owned(), key)
}

/// The body each surface takes for `model`.
fn body_for(path: &str, model: &str) -> Value {
    match path {
        "/v1/chat/completions" => hello(model),
        "/v1/responses" => json!({"model": model, "input": "hi"}),
        "/v1/completions" => json!({"model": model, "prompt": "hi", "max_tokens": 8}),
        _ => messages_hello(model),
    }
}

const SURFACES: [&str; 5] = [
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/messages",
    "/v1/messages/count_tokens",
    "/v1/completions",
];

async fn call(r: &TestRouter, path: &str, key: &str, model: &str) -> reqwest::Response {
    if path.starts_with("/v1/messages") {
        r.messages_at(path, key, &body_for(path, model)).await
    } else {
        r.post(path, key, &body_for(path, model)).await
    }
}

async fn expect_refusal(resp: reqwest::Response, path: &str, status: u16, code: &str) {
    if path.starts_with("/v1/messages") {
        let kind = match status {
            403 => "permission_error",
            404 => "not_found_error",
            _ => "invalid_request_error",
        };
        let body = expect_messages_error(resp, status, kind).await;
        let _ = code; // the Messages envelope has no code (D-34)
        assert!(body["error"]["message"].is_string());
    } else {
        expect_error(resp, status, code).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn allowed_models_refuse_other_models_on_every_surface_and_unknown_ones_stay_404() {
    // A-18, GP-46: allowed by alias; the model is usable by ID and alias.
    let r = TestRouter::start().await;
    let (key, created) = key_with(&r, json!({"allowed_models": ["text-alias"]})).await;
    assert_eq!(created["policy"]["allowed_models"], json!(["text-alias"]));
    for model in ["m-text", "text-alias"] {
        let resp = r.chat(&key, &hello(model)).await;
        assert_eq!(resp.status(), 200, "{model}");
    }
    let calls = r.mock.call_count();
    for path in SURFACES {
        let resp = call(&r, path, &key, "m-gpt-only").await;
        expect_refusal(resp, path, 403, "model_not_allowed").await;
        let resp = call(&r, path, &key, "no-such-model").await;
        expect_refusal(resp, path, 404, "model_not_found").await;
    }
    assert_eq!(r.mock.call_count(), calls, "no supplier call for a refusal");

    // Allowed by ID: the alias is allowed too, on each surface.
    let (key, _) = key_with(&r, json!({"allowed_models": ["m-text"]})).await;
    for path in SURFACES {
        let resp = call(&r, path, &key, "text-alias").await;
        assert_eq!(resp.status(), 200, "{path}: {}", resp.text().await.unwrap());
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ipv4_allowlist_admits_only_its_networks_on_every_api_key_endpoint() {
    // A-19, CF-27: the harness connects from 127.0.0.1.
    let r = TestRouter::start().await;
    let (outside, _) = key_with(&r, json!({"ip_allowlist": ["10.0.0.0/8"]})).await;
    for path in SURFACES {
        let resp = call(&r, path, &outside, "m-text").await;
        expect_refusal(resp, path, 403, "ip_not_allowed").await;
    }
    assert_eq!(r.mock.call_count(), 0);
    let (inside, created) = key_with(
        &r,
        json!({"ip_allowlist": ["127.0.0.0/8", "2001:db8::/32"]}),
    )
    .await;
    assert_eq!(
        created["policy"]["ip_allowlist"],
        json!(["127.0.0.0/8", "2001:db8::/32"])
    );
    for path in SURFACES {
        let resp = call(&r, path, &inside, "m-text").await;
        assert_eq!(resp.status(), 200, "{path}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn an_ipv6_allowlist_admits_only_its_networks() {
    // A-19 over IPv6: the router listens on ::1, the client connects from ::1.
    let r = TestRouter::start_configured(
        Duration::from_secs(180),
        TrustedProxies::default(),
        "[::1]:0",
    )
    .await;
    assert!(r.base.starts_with("http://[::1]:"), "{}", r.base);
    let (v6, _) = key_with(&r, json!({"ip_allowlist": ["::1/128"]})).await;
    assert_eq!(r.chat(&v6, &hello("m-text")).await.status(), 200);
    for list in [json!(["2001:db8::/32"]), json!(["127.0.0.0/8"])] {
        let (key, _) = key_with(&r, json!({"ip_allowlist": list})).await;
        expect_error(r.chat(&key, &hello("m-text")).await, 403, "ip_not_allowed").await;
    }
}

async fn chat_via(r: &TestRouter, key: &str, headers: &[(&str, &str)]) -> reqwest::Response {
    let mut req = r
        .client
        .post(format!("{}/v1/chat/completions", r.base))
        .bearer_auth(key)
        .json(&hello("m-text"));
    for (name, value) in headers {
        req = req.header(*name, *value);
    }
    req.send().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn forwarding_headers_are_believed_only_from_trusted_proxies() {
    // behind a trusted proxy (the harness, 127.0.0.1) the client is
    // the right-most untrusted address of the chain.
    let proxies = TrustedProxies::new(vec!["127.0.0.1/32".parse().unwrap()]);
    let r = TestRouter::start_configured(Duration::from_secs(180), proxies, "127.0.0.1:0").await;
    let (key, _) = key_with(&r, json!({"ip_allowlist": ["203.0.113.0/24"]})).await;
    let ok = [
        vec![("x-forwarded-for", "203.0.113.9")],
        vec![("x-forwarded-for", "198.51.100.1, 203.0.113.9")],
        vec![("forwarded", "for=203.0.113.9;proto=https")],
    ];
    for headers in ok {
        assert_eq!(
            chat_via(&r, &key, &headers).await.status(),
            200,
            "{headers:?}"
        );
    }
    let refused = [
        vec![],
        vec![("x-forwarded-for", "203.0.113.9, 198.51.100.1")],
        vec![("x-forwarded-for", "not-an-address")],
        vec![
            ("x-forwarded-for", "203.0.113.9"),
            ("forwarded", "for=198.51.100.1"),
        ],
    ];
    for headers in refused {
        let resp = chat_via(&r, &key, &headers).await;
        expect_error(resp, 403, "ip_not_allowed").await;
    }

    // Without ROUTER_TRUSTED_PROXIES the header is ignored: the peer counts.
    let plain = TestRouter::start().await;
    let (key, _) = key_with(&plain, json!({"ip_allowlist": ["203.0.113.0/24"]})).await;
    let resp = chat_via(&plain, &key, &[("x-forwarded-for", "203.0.113.9")]).await;
    expect_error(resp, 403, "ip_not_allowed").await;
    let (local, _) = key_with(&plain, json!({"ip_allowlist": ["127.0.0.1"]})).await;
    let resp = chat_via(&plain, &local, &[("x-forwarded-for", "203.0.113.9")]).await;
    assert_eq!(resp.status(), 200);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bad_trusted_proxies_value_stops_start_up_naming_it() {
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .arg("serve")
        .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
        .env("ROUTER_TRUSTED_PROXIES", "10.0.0.0/8, 10.0.0.300")
        // As deployed: a backtrace only when asked for.
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(stderr.contains("ROUTER_TRUSTED_PROXIES"), "{stderr}");
    assert!(stderr.contains("10.0.0.300"), "{stderr}");
}

/// Whether any block of the body the mock received carries `cache_control`.
fn has_cache_control(value: &Value) -> bool {
    value.to_string().contains("cache_control")
}

#[tokio::test(flavor = "multi_thread")]
async fn prompt_cache_mode_is_the_keys_default_and_the_header_overrides_it() {
    // F-07 (and F-08/F-10 for what the supplier sees): `on` adds a marker on
    // the native Messages route; passthrough (the default) and `off` do not.
    let r = TestRouter::start().await;
    let (on, created) = key_with(&r, json!({"prompt_cache_mode": "on"})).await;
    assert_eq!(created["policy"]["prompt_cache_mode"], "on");
    let (plain, _) = key_with(&r, json!({})).await;
    let cases: [(&str, Option<&str>, bool); 4] = [
        (&on, None, true),
        (&on, Some("off"), false),
        (&plain, None, false),
        (&plain, Some("on"), true),
    ];
    for (key, header, marked) in cases {
        r.mock.reset();
        let mut req = r
            .client
            .post(format!("{}/v1/messages", r.base))
            .header("x-api-key", key)
            .header("anthropic-version", "2023-06-01")
            .json(&messages_hello("m-claude"));
        if let Some(mode) = header {
            req = req.header("x-ci-prompt-cache", mode);
        }
        let resp = req.send().await.unwrap();
        assert_eq!(resp.status(), 200, "{header:?}");
        let calls = r.mock.calls_for("up-claude-native");
        assert_eq!(calls.len(), 1);
        assert_eq!(
            has_cache_control(&calls[0].body),
            marked,
            "header {header:?}: {}",
            calls[0].body
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn patch_takes_effect_at_once_and_null_clears() {
    let r = TestRouter::start().await;
    let (key, created) = key_with(&r, json!({})).await;
    let id = created["id"].as_str().unwrap().to_owned();
    let path = format!("/admin/api-keys/{id}");
    // Cached after this call.
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);

    let (status, view) = r.admin(Method::GET, &path, None).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["scopes"], json!(["inference"]));
    assert_eq!(view["expires_at"], Value::Null);
    assert_eq!(
        view["policy"],
        json!({"allowed_models": null, "ip_allowlist": null, "prompt_cache_mode": null,
               "response_cache_ttl_seconds": null,
               "spend_limits": null, "monthly_budget_nano_usd": null,
               "requests_per_minute": null, "requests_per_day": null,
               "max_concurrent_requests": null, "version": 0})
    );

    let patch = json!({"allowed_models": ["m-gpt-only"], "ip_allowlist": ["10.0.0.0/8"]});
    let (status, view) = r.admin(Method::PATCH, &path, Some(patch)).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["policy"]["version"], 1);
    expect_error(r.chat(&key, &hello("m-text")).await, 403, "ip_not_allowed").await;

    let (status, view) = r
        .admin(Method::PATCH, &path, Some(json!({"ip_allowlist": null})))
        .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["policy"]["ip_allowlist"], Value::Null);
    assert_eq!(view["policy"]["allowed_models"], json!(["m-gpt-only"]));
    expect_error(
        r.chat(&key, &hello("m-text")).await,
        403,
        "model_not_allowed",
    )
    .await;

    let expires = 4_102_444_800_u64; // 2100-01-01
    let (status, view) = r
        .admin(
            Method::PATCH,
            &path,
            Some(
                json!({"allowed_models": null, "expires_at": expires, "prompt_cache_mode": "off"}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["expires_at"], expires);
    assert_eq!(view["policy"]["prompt_cache_mode"], "off");
    assert_eq!(view["policy"]["version"], 3);
    assert_eq!(r.chat(&key, &hello("m-text")).await.status(), 200);

    let (status, view) = r.admin(Method::GET, &path, None).await;
    assert_eq!(status, 200);
    assert_eq!(view["policy"]["allowed_models"], Value::Null);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_admin_interface_refuses_unknown_fields_reserved_limits_and_bad_values() {
    let (r, c) = TestRouter::start_rich().await;
    let (_, created) = key_with(&r, json!({})).await;
    let path = format!("/admin/api-keys/{}", created["id"].as_str().unwrap());
    let base = || json!({"account_id": c.account_id, "scopes": ["inference"]});
    let with = |field: &str, value: Value| {
        let mut body = base();
        body[field] = value;
        body
    };
    let cases = [
        (
            with("allowed_model", json!(["m-text"])),
            "invalid_parameter",
            "allowed_model",
        ),
        (
            with("allowed_models", json!(["m-nope"])),
            "invalid_parameter",
            "allowed_models[0]",
        ),
        (
            with("ip_allowlist", json!(["10.0.0.0/33"])),
            "invalid_parameter",
            "ip_allowlist[0]",
        ),
        (
            with("prompt_cache_mode", json!("maybe")),
            "invalid_parameter",
            "prompt_cache_mode",
        ),
        (
            with("spend_limits", json!([{"window": "1h"}])),
            "invalid_parameter",
            "spend_limits[0].window",
        ),
        (
            with(
                "spend_limits",
                json!([{"amount_nano_usd": 1, "window_seconds": 0}]),
            ),
            "invalid_parameter",
            "spend_limits[0].window_seconds",
        ),
        (
            with("monthly_budget_nano_usd", json!(-1)),
            "invalid_parameter",
            "monthly_budget_nano_usd",
        ),
        (
            with("requests_per_minute", json!("many")),
            "invalid_parameter",
            "requests_per_minute",
        ),
        (
            with("requests_per_day", json!(1.5)),
            "invalid_parameter",
            "requests_per_day",
        ),
        (
            with("max_concurrent_requests", json!(-2)),
            "invalid_parameter",
            "max_concurrent_requests",
        ),
    ];
    for (body, code, param) in cases {
        let (status, error) = r
            .admin(Method::POST, "/admin/api-keys", Some(body.clone()))
            .await;
        assert_eq!(status, 400, "{body}: {error}");
        assert_eq!(error["error"]["code"], code, "{error}");
        if code != "invalid_parameter" || param != "allowed_model" {
            assert_eq!(error["error"]["param"], param, "{error}");
        } else {
            assert!(
                error["error"]["message"]
                    .as_str()
                    .unwrap()
                    .contains("allowed_model")
            );
        }
        // The same through PATCH (without the creation-only fields).
        let mut patch = body;
        patch.as_object_mut().unwrap().remove("account_id");
        patch.as_object_mut().unwrap().remove("scopes");
        let (status, error) = r.admin(Method::PATCH, &path, Some(patch.clone())).await;
        assert_eq!(status, 400, "{patch}: {error}");
        assert_eq!(error["error"]["code"], code, "{error}");
    }
    let (status, view) = r.admin(Method::GET, &path, None).await;
    assert_eq!(
        view["policy"]["version"], 0,
        "refused patches change nothing"
    );
    assert_eq!(status, 200);

    let missing = format!("/admin/api-keys/{}", uuid::Uuid::now_v7());
    assert_eq!(r.admin(Method::GET, &missing, None).await.0, 404);
    assert_eq!(
        r.admin(Method::PATCH, &missing, Some(json!({}))).await.0,
        404
    );
    let resp = r.call(Method::PUT, &path, ADMIN_TOKEN).await;
    assert_eq!(resp.status(), 405);
    assert_eq!(resp.headers()["allow"], "GET, PATCH, DELETE");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_change_landing_during_admission_is_policy_changed_and_free() {
    // A-20, harness-assisted through the database: another instance's
    // policy change is in flight (its row locked, not yet committed) while
    // the request is admitted; it commits while the reservation waits.
    use diesel_async::SimpleAsyncConnection;
    let (r, c) = TestRouter::start_rich().await;
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    let before = r.account(&c.account_id).await;
    let calls = r.mock.call_count();

    let mut other = r.db.database().connection().await.unwrap();
    other
        .batch_execute(&format!(
            "BEGIN; UPDATE api_keys SET allowed_models = '{{m-gpt-only}}',
                    policy_version = policy_version + 1 WHERE account_id = '{}'",
            c.account_id
        ))
        .await
        .unwrap();
    let request = spawn_hello(&r.client, &r.base, &c.key);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!request.is_finished(), "admitted, waiting on the key row");
    other.batch_execute("COMMIT").await.unwrap();
    let resp = request.await.unwrap().unwrap();
    expect_error(resp, 403, "policy_changed").await;
    assert_eq!(r.mock.call_count(), calls, "no supplier call");
    let after = r.account(&c.account_id).await;
    assert_eq!(after["balance_nano_usd"], before["balance_nano_usd"]);
    assert_eq!(after["held_nano_usd"], 0);
    // And the new policy applies from then on.
    expect_error(
        r.chat(&c.key, &hello("m-text")).await,
        403,
        "model_not_allowed",
    )
    .await;
}
