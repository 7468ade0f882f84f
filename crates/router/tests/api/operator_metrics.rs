//! The metrics an operator pages on (issue 30, item 8) after a mixed run,
//! and who may scrape them: `ROUTER_METRICS_TOKEN`, and the admin API on
//! its own listener (`ROUTER_ADMIN_LISTEN`, item 7) with the real binary.

use crate::harness::*;
use router_mock_supplier::{MockReply, MockSupplier, MockUsage, Script};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// The value of the sample `name{labels...}` whose labels include `labels`
/// (summed over the others); `None` when no sample matches.
fn sample(text: &str, name: &str, labels: &[(&str, &str)]) -> Option<f64> {
    let values = metric_samples(text, name, labels);
    (!values.is_empty()).then(|| values.iter().sum())
}

fn value(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    sample(text, name, labels).unwrap_or_else(|| panic!("no {name}{labels:?} in\n{text}"))
}

async fn scrape(r: &TestRouter) -> String {
    let resp = r
        .client
        .get(format!("{}/metrics", r.base))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    resp.text().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_mixed_run_shows_money_tokens_holds_jobs_pool_and_process() {
    let r = TestRouter::start().await;
    let c = r.rich_customer().await;

    // Chat: one plain success (10 in, 5 out at 1 and 2 USD/MTok).
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(10, 5)),
        ..MockReply::text("counted")
    }));
    assert_eq!(r.chat(&c.key, &hello("m-text")).await.status(), 200);
    // A capped settlement: far more output reported than max_tokens allowed.
    let mut capped = hello("m-text");
    capped["max_tokens"] = json!(10);
    r.mock.enqueue(Script::Reply(MockReply {
        usage: Some(MockUsage::tokens(12, 100_000)),
        ..MockReply::text("much more than asked")
    }));
    let resp = r.chat(&c.key, &capped).await;
    assert_eq!(resp.status(), 200);
    let capped_id = request_id(&resp);
    resp.text().await.unwrap();
    let capped_record = r.request_record(&capped_id).await;
    let shortfall = capped_record["shortfall_nano_usd"].as_i64().unwrap();
    assert!(shortfall > 0, "{capped_record}");
    // An image (0.04 USD) and a video submitted, then polled.
    let image = r
        .post(
            "/v1/images/generations",
            &c.key,
            &json!({"model": "m-img", "prompt": "a cat"}),
        )
        .await;
    assert_eq!(image.status(), 200);
    image.text().await.unwrap();
    let video = r
        .post(
            "/v1/videos",
            &c.key,
            &json!({"model": "m-video", "prompt": "a cat surfing", "mode": "references",
                    "resolution": "720p", "duration": 5, "client_task_id": "metrics-1"}),
        )
        .await;
    let video_status = video.status();
    let video_body = video.text().await.unwrap();
    assert_eq!(video_status, 200, "{video_body}");
    r.run_job("video-poller").await;
    // Credits granted through the admin API.
    let other = r.customer(123_456_789, &["inference"]).await;
    // Another instance's job pass, recorded in the shared lease table.
    sql(
        &r,
        "INSERT INTO job_leases (name, leased_until, leased_by, last_started_at,
                                 last_finished_at, last_processed, last_error)
         VALUES ('outbox', now(), 'other-instance', now() - interval '2 seconds',
                 now() - interval '1 second', 0, 'smtp down')",
    )
    .await;

    // A request held while scraping: its hold is outstanding.
    r.mock.enqueue(Script::Stall);
    let pending = tokio::spawn({
        let client = r.client.clone();
        let url = format!("{}/v1/chat/completions", r.base);
        let key = other.key.clone();
        async move {
            client
                .post(url)
                .bearer_auth(key)
                .json(&hello("m-text"))
                .send()
                .await
        }
    });
    let start = Instant::now();
    let held = loop {
        let held = r.account(&other.account_id).await["held_nano_usd"]
            .as_i64()
            .unwrap();
        if held > 0 || start.elapsed() > Duration::from_secs(10) {
            break held;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(held > 0);
    // The video's hold lasts until its job ends.
    let video_held = r.account(&c.account_id).await["held_nano_usd"]
        .as_i64()
        .unwrap();
    let live = count(
        &r,
        "SELECT count(*) AS n FROM holds WHERE released_at IS NULL",
    )
    .await;
    assert_eq!(live, 1 + i64::from(video_held > 0));

    let text = scrape(&r).await;
    // Holds outstanding, across instances, from the database.
    assert_eq!(
        value(&text, "router_holds_outstanding", &[]),
        live as f64,
        "{text}"
    );
    assert_eq!(
        value(&text, "router_holds_outstanding_nano_usd", &[]),
        (held + video_held) as f64
    );
    assert!(value(&text, "router_holds_oldest_age_seconds", &[]) >= 0.0);
    assert_eq!(value(&text, "router_holds_expired", &[]), 0.0);
    // Charged nano-USD and tokens by model; the shortfall of the capped one.
    let text_model = [("model", "m-text")];
    let capped_charge = capped_record["charged_nano_usd"].as_i64().unwrap();
    assert_eq!(
        value(&text, "router_charged_nano_usd_total", &text_model),
        (10 * 1_000 + 5 * 2_000 + capped_charge) as f64
    );
    assert_eq!(
        value(
            &text,
            "router_tokens_total",
            &[("model", "m-text"), ("kind", "input")]
        ),
        22.0
    );
    assert_eq!(
        value(
            &text,
            "router_tokens_total",
            &[("model", "m-text"), ("kind", "output")]
        ),
        100_005.0
    );
    assert_eq!(
        value(&text, "router_settlement_shortfalls_total", &text_model),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "router_settlement_shortfall_nano_usd_total",
            &text_model
        ),
        shortfall as f64
    );
    assert_eq!(
        value(
            &text,
            "router_charged_nano_usd_total",
            &[("model", "m-img")]
        ),
        40_000_000.0
    );
    // Credits: the rich customer's and the other's.
    assert_eq!(
        value(&text, "router_credits_granted_nano_usd_total", &[]),
        (1_000_000_000_000_i64 + 123_456_789) as f64
    );
    // Image and video supplier calls.
    assert_eq!(
        value(
            &text,
            "router_attempts_total",
            &[("route", "img-route"), ("outcome", "succeeded")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "router_video_supplier_calls_total",
            &[
                ("route", "video-gen"),
                ("call", "submit"),
                ("outcome", "succeeded")
            ]
        ),
        1.0
    );
    assert!(
        value(
            &text,
            "router_video_supplier_calls_total",
            &[("call", "poll")]
        ) >= 1.0,
        "{text}"
    );
    // Job passes of this instance; the last pass of every instance.
    assert_eq!(
        value(
            &text,
            "router_job_passes_total",
            &[("job", "video-poller"), ("outcome", "succeeded")]
        ),
        1.0
    );
    assert_eq!(
        value(
            &text,
            "router_job_duration_seconds_count",
            &[("job", "video-poller")]
        ),
        1.0
    );
    assert_eq!(
        value(&text, "router_job_last_failed", &[("job", "outbox")]),
        1.0
    );
    let finished = value(
        &text,
        "router_job_last_finished_timestamp_seconds",
        &[("job", "outbox")],
    );
    let now = chrono::Utc::now().timestamp() as f64;
    assert!(
        (now - 30.0..=now).contains(&finished),
        "{finished} vs {now}"
    );
    // The pool, the build and the process.
    assert!(value(&text, "router_db_connections_max", &[]) >= 1.0);
    assert_eq!(value(&text, "router_db_pool_waiting", &[]), 0.0);
    assert_eq!(
        value(
            &text,
            "router_build_info",
            &[("version", env!("CARGO_PKG_VERSION"))]
        ),
        1.0
    );
    assert!(value(&text, "process_resident_memory_bytes", &[]) > 1_000_000.0);
    assert!(value(&text, "process_open_fds", &[]) >= 3.0);
    assert!(value(&text, "process_max_fds", &[]) >= value(&text, "process_open_fds", &[]));
    assert!(sample(&text, "process_cpu_seconds_total", &[]).is_some());
    // The start time is read from /proc (boot time in whole seconds plus
    // clock ticks), so it may be a tick or a rounding past the wall clock.
    assert!(value(&text, "process_start_time_seconds", &[]) <= now + 2.0);
    assert!(value(&text, "process_start_time_seconds", &[]) > now - 600.0);
    assert!(value(&text, "process_threads", &[]) >= 1.0);
    assert_eq!(value(&text, "router_metrics_scrape_errors", &[]), 0.0);
    // Every series is described (a `# HELP` line) and none is a float of money.
    for name in [
        "router_holds_outstanding_nano_usd",
        "router_charged_nano_usd_total",
        "router_job_passes_total",
        "process_cpu_seconds_total",
    ] {
        assert!(text.contains(&format!("# HELP {name} ")), "{name}");
    }
    // The series an operator pages on, for the record (`--no-capture`).
    for line in text.lines().filter(|l| {
        !l.starts_with('#')
            && [
                "router_holds",
                "router_charged",
                "router_tokens",
                "router_settlement",
                "router_credits",
                "router_job_",
                "router_video_supplier",
                "router_db_pool",
                "router_db_connections_max",
                "router_build_info",
                "process_",
            ]
            .iter()
            .any(|p| l.starts_with(p))
            && !l.contains("_bucket")
    }) {
        eprintln!("{line}");
    }
    pending.abort();
}

/// A free loopback port.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

async fn status(client: &reqwest::Client, url: &str, token: Option<&str>) -> u16 {
    let mut req = client.get(url);
    if let Some(token) = token {
        req = req.bearer_auth(token);
    }
    req.send().await.unwrap().status().as_u16()
}

const SCRAPER_TOKEN: &str = "scrape-only-token-0123456789";

/// `ROUTER_METRICS_TOKEN` opens `/metrics` and nothing else.
/// Credits granted by the CLI reach `/metrics` too (issue 30, item 8): the
/// gauge is read from the ledger, so every path and every instance count,
/// while the per-instance counter sees only this instance's admin API.
#[tokio::test(flavor = "multi_thread")]
async fn credits_granted_by_the_cli_are_in_the_ledger_gauge() {
    let r = TestRouter::start().await;
    let c = r.customer(3_000_000_000, &["inference"]).await;
    let before = scrape(&r).await;
    assert_eq!(value(&before, "router_credits_granted_nano_usd", &[]), 3e9);

    let catalog =
        std::env::temp_dir().join(format!("router-metrics-{}.toml", uuid::Uuid::new_v4()));
    std::fs::write(&catalog, CATALOG.replace("{BASE}", "http://127.0.0.1:9/v1")).unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .args(["accounts", "credit", &c.account_id, "--usd", "2.5"])
        .env("DATABASE_URL", r.db.url())
        .env("ROUTER_CATALOG", &catalog)
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let after = scrape(&r).await;
    assert_eq!(value(&after, "router_credits_granted_nano_usd", &[]), 5.5e9);
    // This instance's admin API granted only the first 3 USD.
    assert_eq!(
        value(&after, "router_credits_granted_nano_usd_total", &[]),
        3e9
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_scraper_token_opens_the_metrics_only() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_METRICS_TOKEN", SCRAPER_TOKEN)],
    )
    .await;
    let client = reqwest::Client::new();
    let metrics = format!("{}/metrics", router.base);
    assert_eq!(status(&client, &metrics, Some(SCRAPER_TOKEN)).await, 200);
    assert_eq!(status(&client, &metrics, Some(ADMIN_TOKEN)).await, 200);
    assert_eq!(status(&client, &metrics, None).await, 401);
    assert_eq!(
        status(&client, &metrics, Some("scrape-only-token-wrong")).await,
        401
    );
    let account = format!("{}/admin/accounts/{}", router.base, uuid::Uuid::new_v4());
    assert_eq!(status(&client, &account, Some(SCRAPER_TOKEN)).await, 401);
    assert_eq!(status(&client, &account, Some(ADMIN_TOKEN)).await, 404);
    let text = client
        .get(&metrics)
        .bearer_auth(SCRAPER_TOKEN)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert!(text.contains("router_build_info{"), "{text}");
    mock.shutdown();
}

/// `ROUTER_ADMIN_LISTEN`: the admin API and `/metrics` answer only on the
/// admin listener; the public one answers 404 for them, and the admin one
/// serves nothing else but the health checks.
#[tokio::test(flavor = "multi_thread")]
async fn the_admin_api_lives_on_its_own_listener() {
    let mock = mock_answering("hi").await;
    let db = TestDatabase::new().await;
    let admin_base = format!("http://127.0.0.1:{}", free_port());
    let admin_addr = admin_base.trim_start_matches("http://").to_owned();
    let router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_ADMIN_LISTEN", admin_addr.as_str())],
    )
    .await;
    let client = reqwest::Client::new();
    let public = &router.base;

    // The public listener: no admin API, no metrics, even with the token.
    let created = client
        .post(format!("{public}/admin/accounts"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"email": "public@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(created.status(), 404);
    let body: Value = created.json().await.unwrap();
    assert_eq!(body["error"]["code"], "not_found");
    assert_eq!(
        status(&client, &format!("{public}/metrics"), Some(ADMIN_TOKEN)).await,
        404
    );
    assert_eq!(
        status(&client, &format!("{public}/healthz"), None).await,
        200
    );

    // The admin listener: the admin API with the token, metrics without one.
    let account: Value = client
        .post(format!("{admin_base}/admin/accounts"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"email": "admin@example.com"}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let account_id = account["id"].as_str().unwrap();
    let unauthorized = client
        .post(format!("{admin_base}/admin/accounts/{account_id}/credits"))
        .json(&json!({"amount_nano_usd": 1}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        unauthorized.status(),
        401,
        "the token still guards the admin API"
    );
    let credited = client
        .post(format!("{admin_base}/admin/accounts/{account_id}/credits"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"amount_nano_usd": 1_000_000_000_000_i64}))
        .send()
        .await
        .unwrap();
    assert_eq!(credited.status(), 200);
    assert_eq!(
        status(&client, &format!("{admin_base}/metrics"), None).await,
        200
    );
    assert_eq!(
        status(&client, &format!("{admin_base}/readyz"), None).await,
        200
    );
    assert_eq!(
        status(&client, &format!("{admin_base}/v1/models"), None).await,
        404
    );

    // A key made on the admin listener serves on the public one only.
    let key: Value = client
        .post(format!("{admin_base}/admin/api-keys"))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({"account_id": account_id, "scopes": ["inference"]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let key = key["key"].as_str().unwrap();
    for (base, expected) in [(public.as_str(), 200), (admin_base.as_str(), 404)] {
        let resp = client
            .post(format!("{base}/v1/chat/completions"))
            .bearer_auth(key)
            .json(&hello("m-text"))
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status(), expected, "{base}");
    }
    mock.shutdown();
}

/// A bad `ROUTER_ADMIN_LISTEN` or `ROUTER_METRICS_TOKEN` stops start-up
/// with one line naming it.
#[tokio::test(flavor = "multi_thread")]
async fn bad_admin_listen_and_metrics_token_stop_start_up_naming_them() {
    let dir = std::env::temp_dir().join(format!("router-ops-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let catalog = dir.join("catalog.toml");
    std::fs::write(&catalog, CATALOG.replace("{BASE}", "http://127.0.0.1:9/v1")).unwrap();
    let cases = [
        ("ROUTER_ADMIN_LISTEN", "localhost"),
        ("ROUTER_ADMIN_LISTEN", "127.0.0.1:18080"),
        ("ROUTER_METRICS_TOKEN", "short"),
        ("ROUTER_METRICS_TOKEN", ADMIN_TOKEN),
        ("ROUTER_METRICS_TOKEN", "has a space in it somewhere"),
    ];
    for (name, value) in cases {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
            .arg("serve")
            .env_remove("ROUTER_LOG")
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .env("ROUTER_CATALOG", &catalog)
            .env("ROUTER_LISTEN", "127.0.0.1:18080")
            .env("ROUTER_ADMIN_TOKEN", ADMIN_TOKEN)
            .env(name, value)
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{name}={value} started");
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stderr = stderr.trim();
        assert_eq!(stderr.lines().count(), 1, "{name}={value}: {stderr}");
        assert!(stderr.contains(name), "{name}={value}: {stderr}");
        assert!(!stderr.contains(ADMIN_TOKEN) || name != "ROUTER_METRICS_TOKEN");
    }
}
