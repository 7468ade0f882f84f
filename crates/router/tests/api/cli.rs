//! The `router` binary as an operator uses it: the account, key and request
//! commands against a real database (the same operations as the admin
//! API), catalog and config checks, and start-up refusing each bad setting
//! with one line naming it (issue 19).

use crate::harness::*;
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::path::PathBuf;

struct Run {
    ok: bool,
    stdout: String,
    stderr: String,
}

impl Run {
    fn json(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.stdout))
    }

    /// A failure reported as one line on stderr that names `what`.
    fn refused_naming(&self, what: &str) {
        assert!(!self.ok, "succeeded: {}", self.stdout);
        let stderr = self.stderr.trim();
        assert_eq!(stderr.lines().count(), 1, "not one line: {stderr}");
        assert!(stderr.starts_with("router: "), "{stderr}");
        assert!(stderr.contains(what), "does not name {what}: {stderr}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
}

/// A catalog file (the API tests' catalog, its supplier on a closed port).
fn catalog_file() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("router-cli-{}", uuid::Uuid::new_v4()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("catalog.toml");
    std::fs::write(&path, CATALOG.replace("{BASE}", "http://127.0.0.1:9/v1")).unwrap();
    path
}

async fn router(env: &[(&str, &str)], args: &[&str]) -> Run {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"));
    command
        .args(args)
        .env_remove("RUST_BACKTRACE")
        .env_remove("RUST_LIB_BACKTRACE")
        .env_remove("ROUTER_LOG");
    for (name, value) in env {
        command.env(name, value);
    }
    let out = command.output().await.unwrap();
    Run {
        ok: out.status.success(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn accounts_keys_and_requests_through_the_cli() {
    let db = TestDatabase::new().await;
    let catalog = catalog_file();
    let catalog = catalog.to_str().unwrap();
    let env = [("DATABASE_URL", db.url()), ("ROUTER_CATALOG", catalog)];
    let cli = |args: &'static [&'static str]| router(&env, args);

    let created = router(
        &env,
        &["accounts", "create", "--email", "ops@example.com", "--json"],
    )
    .await;
    assert!(created.ok, "{}", created.stderr);
    let account = created.json();
    let id = account["id"].as_str().unwrap().to_owned();
    assert_eq!(account["email"], "ops@example.com");

    // The same conflict the admin API reports.
    let again = cli(&["accounts", "create", "--email", "ops@example.com"]).await;
    again.refused_naming("conflict");

    let credited = router(&env, &["accounts", "credit", &id, "--usd", "12.5"]).await;
    assert!(credited.ok, "{}", credited.stderr);
    assert!(
        credited.stdout.contains("balance 12.500000000 USD"),
        "{}",
        credited.stdout
    );
    let shown = router(&env, &["accounts", "show", &id, "--json"]).await;
    assert_eq!(shown.json()["balance_nano_usd"], 12_500_000_000_i64);
    let human = router(&env, &["accounts", "show", &id]).await;
    assert!(
        human.stdout.contains("available  12.500000000 USD"),
        "{}",
        human.stdout
    );
    router(&env, &["accounts", "credit", &id, "--usd", "1.0000000001"])
        .await
        .refused_naming("--usd");

    let key = router(
        &env,
        &[
            "keys",
            "create",
            "--account",
            &id,
            "--scope",
            "inference",
            "--allowed-model",
            "m-text",
            "--ip",
            "10.0.0.0/8",
            "--spend-limit",
            "5000/3600",
            "--requests-per-minute",
            "60",
            "--json",
        ],
    )
    .await;
    assert!(key.ok, "{}", key.stderr);
    let key = key.json();
    assert!(key["key"].as_str().unwrap().starts_with("sk-rt-"));
    assert_eq!(key["policy"]["allowed_models"], json!(["m-text"]));
    assert_eq!(
        key["policy"]["spend_limits"],
        json!([{"amount_nano_usd": 5000, "window_seconds": 3600}])
    );
    assert_eq!(key["policy"]["requests_per_minute"], 60);
    let key_id = key["id"].as_str().unwrap().to_owned();

    // The admin API's validation: an unknown model, a bad scope.
    router(
        &env,
        &[
            "keys",
            "create",
            "--account",
            &id,
            "--scope",
            "inference",
            "--allowed-model",
            "nope",
        ],
    )
    .await
    .refused_naming("allowed_models[0]");
    router(
        &env,
        &["keys", "create", "--account", &id, "--scope", "root"],
    )
    .await
    .refused_naming("scopes[0]");

    let listed = router(&env, &["keys", "list", "--account", &id]).await;
    assert!(listed.stdout.contains(&key_id), "{}", listed.stdout);
    assert!(listed.stdout.contains("active"), "{}", listed.stdout);
    // The secret is never shown again.
    assert!(!listed.stdout.contains(key["key"].as_str().unwrap()));
    let revoked = router(&env, &["keys", "revoke", &key_id]).await;
    assert!(revoked.ok, "{}", revoked.stderr);
    let listed = router(&env, &["keys", "list", "--account", &id, "--json"]).await;
    assert!(!listed.json()["data"][0]["deleted_at"].is_null());
    router(&env, &["keys", "revoke", &key_id])
        .await
        .refused_naming("not_found");

    // A browser session, opened and ended from the command line.
    let session = router(
        &env,
        &["sessions", "create", &id, "--ttl-seconds", "120", "--json"],
    )
    .await;
    assert!(session.ok, "{}", session.stderr);
    let session = session.json();
    assert_eq!(session["cookie_name"], "router_session");
    assert_eq!(session["cookie_value"].as_str().unwrap().len(), 64);
    let session_id = session["id"].as_str().unwrap().to_owned();
    router(&env, &["sessions", "create", &id, "--ttl-seconds", "0"])
        .await
        .refused_naming("ttl_seconds");
    let revoked = router(&env, &["sessions", "revoke", &session_id]).await;
    assert!(revoked.ok, "{}", revoked.stderr);
    router(&env, &["sessions", "revoke", &session_id])
        .await
        .refused_naming("not_found");

    let unknown = uuid::Uuid::new_v4().to_string();
    router(&env, &["requests", "show", &unknown])
        .await
        .refused_naming("not_found");
    router(&env, &["requests", "show", "abc"])
        .await
        .refused_naming("`abc` is not a request ID");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_made_through_the_router_is_shown_by_the_cli() {
    let (r, c) = TestRouter::start_rich().await;
    let resp = r.chat(&c.key, &hello("m-text")).await;
    assert_eq!(resp.status(), 200);
    let request_id = request_id(&resp);
    let catalog = catalog_file();
    let env = [
        ("DATABASE_URL", r.db.url()),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
    ];
    let shown = router(&env, &["requests", "show", &request_id, "--json"]).await;
    assert!(shown.ok, "{}", shown.stderr);
    let view = shown.json();
    assert_eq!(view["status"], "succeeded");
    assert_eq!(view, r.request_record(&request_id).await);
    let human = router(&env, &["requests", "show", &request_id]).await;
    assert!(
        human.stdout.contains("status     succeeded"),
        "{}",
        human.stdout
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn catalog_check_prints_what_a_file_serves_or_why_not() {
    let good = catalog_file();
    let run = router(&[], &["catalog", "check", good.to_str().unwrap(), "--json"]).await;
    assert!(run.ok, "{}", run.stderr);
    let summary = run.json();
    assert_eq!(summary["valid"], true);
    assert!(summary["routes"].as_u64().unwrap() > 0);
    assert!(
        summary["models"]
            .as_array()
            .unwrap()
            .iter()
            .any(|m| m["id"] == "m-text")
    );
    let human = router(&[], &["catalog", "check", good.to_str().unwrap()]).await;
    assert!(human.stdout.contains(": valid, "), "{}", human.stdout);

    let bad = good.with_file_name("bad.toml");
    std::fs::write(&bad, "[[models]]\nid = \"x\"\npricing = \n").unwrap();
    let run = router(&[], &["catalog", "check", bad.to_str().unwrap()]).await;
    run.refused_naming("line 3");
    let missing = good.with_file_name("missing.toml");
    router(&[], &["catalog", "check", missing.to_str().unwrap()])
        .await
        .refused_naming("missing.toml");
}

#[tokio::test(flavor = "multi_thread")]
async fn config_check_reaches_everything_and_prints_no_secret() {
    let db = TestDatabase::new().await;
    let catalog = catalog_file();
    let env = [
        ("DATABASE_URL", db.url()),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
        ("ROUTER_ADMIN_TOKEN", "operator-secret-token"),
        (
            "ROUTER_SMTP_URL",
            "smtp://mailuser:mail-secret-pw@127.0.0.1:2525",
        ),
    ];
    let run = router(&env, &["config", "check", "--json"]).await;
    assert!(run.ok, "{}", run.stderr);
    let summary = run.json();
    assert_eq!(summary["ok"], true);
    assert_eq!(summary["database"], "reachable");
    assert_eq!(summary["admin_api"], true);
    assert_eq!(summary["email"], true);
    for secret in ["operator-secret-token", "mail-secret-pw", "mailuser"] {
        assert!(!run.stdout.contains(secret) && !run.stderr.contains(secret));
    }
    let unreachable = [
        ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
    ];
    router(&unreachable, &["config", "check"])
        .await
        .refused_naming("DATABASE_URL");
}

/// Each bad setting stops `router serve` before it listens, with one line
/// naming the variable (issue 19, item 6).
#[tokio::test(flavor = "multi_thread")]
async fn start_up_refuses_each_bad_setting_naming_it() {
    let catalog = catalog_file();
    let catalog = catalog.to_str().unwrap().to_owned();
    let base = |extra: (&'static str, &'static str)| {
        let mut env = vec![
            (
                "DATABASE_URL",
                "postgres://nobody@127.0.0.1:1/none".to_owned(),
            ),
            ("ROUTER_CATALOG", catalog.clone()),
            ("ROUTER_LISTEN", "127.0.0.1:0".to_owned()),
        ];
        env.retain(|(name, _)| *name != extra.0);
        env.push((extra.0, extra.1.to_owned()));
        env
    };
    let cases: [(&str, &str); 27] = [
        ("DATABASE_URL", "not a url"),
        ("DATABASE_URL", "mysql://x@127.0.0.1/db"),
        ("ROUTER_LISTEN", "localhost"),
        ("ROUTER_CATALOG", "/nonexistent/catalog.toml"),
        ("ROUTER_DEADLINE_SECS", "soon"),
        ("ROUTER_HOLD_LEASE_SECS", "0"),
        ("ROUTER_REAPER_INTERVAL_SECS", "-1"),
        ("ROUTER_DB_POOL_SIZE", "0"),
        ("ROUTER_TRUSTED_PROXIES", "10.0.0.300"),
        ("ROUTER_PUBLIC_BASE_URL", "router.example.com"),
        ("ROUTER_SMTP_URL", "http://mail.example.com"),
        ("ROUTER_EMAIL_FROM", "not an address"),
        ("ROUTER_SESSION_TTL_SECS", "1.5"),
        ("ROUTER_LOG_FORMAT", "xml"),
        ("ROUTER_ADMIN_TEST_HOOKS", "yes"),
        ("ROUTER_METRICS", "maybe"),
        ("ROUTER_IMAGE_DEADLINE_SECS", "0"),
        ("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "yes"),
        ("ROUTER_TELEGRAM_API_BASE", "api.telegram.org"),
        ("ROUTER_CHANNEL_TIMEOUT_SECS", "0"),
        ("ROUTER_VIDEO_POLL_INTERVAL_MS", "50"),
        ("ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS", "0"),
        ("ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS", "86401"),
        ("ROUTER_OBJECT_STORE", "ftp://files.example.com/uploads"),
        ("ROUTER_OBJECT_STORE", "file://relative"),
        ("ROUTER_UPLOAD_TTL_SECS", "an hour"),
        ("ROUTER_UPLOAD_TOMBSTONE_SECS", "0"),
    ];
    for (name, value) in cases {
        let env = base((name, value));
        let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
        router(&env, &["serve"]).await.refused_naming(name);
    }
    // The database is checked last: a valid setup whose server refuses the
    // connection (no such role) says so. One that cannot reach the server
    // at all waits for it, not ready (issue 33, database_outage.rs).
    let mut refusing = url::Url::parse(&std::env::var("DATABASE_URL").unwrap()).unwrap();
    refusing.set_username("no_such_role_33").unwrap();
    refusing.set_password(None).unwrap();
    let refusing = refusing.to_string();
    let mut env = base(("ROUTER_LOG_FORMAT", "json"));
    env.retain(|(name, _)| *name != "DATABASE_URL");
    env.push(("DATABASE_URL", refusing));
    let env: Vec<(&str, &str)> = env.iter().map(|(n, v)| (*n, v.as_str())).collect();
    router(&env, &["serve"])
        .await
        .refused_naming("DATABASE_URL");
}

/// GP-25: `router videos show` and `router videos reconcile` are the admin
/// API's video operations: an unknown job is shown, reconciled as failed
/// (its hold released) once, and a second reconciliation is the conflict.
#[tokio::test(flavor = "multi_thread")]
async fn videos_are_shown_and_reconciled_through_the_cli() {
    let (r, c) = TestRouter::start_rich().await;
    r.mock
        .set_video_plan(None, router_mock_supplier::VideoPlan::DropOnSubmit);
    let resp = r
        .post(
            "/v1/videos",
            &c.key,
            &json!({"model": "m-video", "prompt": "p", "mode": "references",
                    "resolution": "720p", "duration": 5, "client_task_id": "cli"}),
        )
        .await;
    assert_eq!(resp.status(), 503);
    let id = resp.headers()["x-video-id"].to_str().unwrap().to_owned();
    let catalog = catalog_file();
    let env = [
        ("DATABASE_URL", r.db.url()),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
    ];
    let shown = router(&env, &["videos", "show", &id, "--json"]).await;
    assert!(shown.ok, "{}", shown.stderr);
    assert_eq!(shown.json()["status"], "unknown");
    let human = router(&env, &["videos", "show", &id]).await;
    assert!(
        human.stdout.contains("status     unknown"),
        "{}",
        human.stdout
    );
    router(&env, &["videos", "show", "video_nope"])
        .await
        .refused_naming("task_not_found");
    let failed = router(
        &env,
        &[
            "videos",
            "reconcile",
            &id,
            "--failed",
            "no such task",
            "--json",
        ],
    )
    .await;
    assert!(failed.ok, "{}", failed.stderr);
    assert_eq!(failed.json()["status"], "failed");
    assert_eq!(r.account(&c.account_id).await["held_nano_usd"], 0);
    router(&env, &["videos", "reconcile", &id, "--task-id", "video_x"])
        .await
        .refused_naming("conflict");
}

/// Issue 30: each misconfiguration that still starts is a warning naming
/// its setting; `--strict` makes them fail; the whole effective
/// configuration is shown with its secrets masked; `migrate --status`
/// lists pending and applied migrations; `serve` logs the same warnings.
#[tokio::test(flavor = "multi_thread")]
async fn config_check_warns_on_each_misconfiguration_and_strict_fails() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = TestDatabase::unmigrated().await;
    let catalog = catalog_file();
    let url = db.url().to_owned();
    let env = [
        ("DATABASE_URL", url.as_str()),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
        ("ROUTER_ADMIN_TOKEN", "short-operator-tk"),
        ("ROUTER_ADMIN_TEST_HOOKS", "1"),
        ("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "true"),
        ("ROUTER_LOG", "info,[[["),
        ("ROUTER_TELEGRAM_BOT_TOKEN", "123456:telegram-secret"),
    ];
    let run = router(&env, &["config", "check", "--json"]).await;
    assert!(run.ok, "{}", run.stderr);
    let summary = run.json();
    let warned: Vec<String> = summary["warnings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| format!("{} {}", w["setting"], w["message"]))
        .collect();
    for expected in [
        "ROUTER_ADMIN_TEST_HOOKS",
        "ROUTER_IMAGE_URL_ALLOW_LOOPBACK",
        "ROUTER_ADMIN_TOKEN",
        "ROUTER_LOG",
        "TEST_SUPPLIER_KEY",
        "model m-off",
        "migrations not applied",
    ] {
        assert!(
            warned.iter().any(|w| w.contains(expected)),
            "no warning about {expected}: {warned:#?}"
        );
    }
    // The whole configuration, secrets masked.
    let settings = summary["settings"].as_object().unwrap();
    assert!(settings.len() >= 36, "{settings:?}");
    assert_eq!(settings["ROUTER_DEADLINE_SECS"], "180");
    assert_eq!(settings["ROUTER_TELEGRAM_BOT_TOKEN"], "***");
    assert_eq!(settings["ROUTER_ADMIN_TOKEN"], "set (17 characters)");
    assert!(!run.stdout.contains("telegram-secret"));
    assert_eq!(summary["migrations"]["applied"], 0);

    let strict = router(&env, &["config", "check", "--strict"]).await;
    assert!(!strict.ok);
    assert!(
        strict.stdout.contains("warning: ROUTER_ADMIN_TOKEN"),
        "{}",
        strict.stdout
    );
    assert_eq!(
        strict.stderr.trim(),
        format!("router: config check --strict: {} warnings", warned.len())
    );

    // Migrations: pending, then applied; a newer schema is named.
    let status = router(&env, &["migrate", "--status", "--json"]).await;
    assert!(status.ok, "{}", status.stderr);
    let pending = status.json()["pending"].as_array().unwrap().len();
    assert!(pending > 0);
    assert!(router(&env, &["migrate"]).await.ok);
    let status = router(&env, &["migrate", "--status", "--json"])
        .await
        .json();
    assert_eq!(status["pending"], json!([]));
    assert_eq!(status["applied"].as_array().unwrap().len(), pending);
    let mut conn = db.database().connection().await.unwrap();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "INSERT INTO __diesel_schema_migrations (version) VALUES ('29990101000000')",
        ),
        &mut conn,
    )
    .await
    .unwrap();
    let newer = router(&env, &["config", "check", "--json"]).await.json();
    assert!(
        newer["warnings"]
            .to_string()
            .contains("newer than this binary"),
        "{newer}"
    );

    // A clean configuration passes --strict.
    let clean = [
        ("DATABASE_URL", url.as_str()),
        ("ROUTER_CATALOG", catalog.to_str().unwrap()),
        ("TEST_SUPPLIER_KEY", "k"),
        ("ROUTER_ADMIN_TOKEN", "0123456789abcdef0123456789abcdef"),
    ];
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "DELETE FROM __diesel_schema_migrations WHERE version = '29990101000000'",
        ),
        &mut conn,
    )
    .await
    .unwrap();
    let run = router(&clean, &["config", "check", "--strict", "--json"]).await;
    let warnings = run.json()["warnings"].clone();
    // The test catalog's `m-off` has only a disabled route, on purpose.
    assert_eq!(warnings.as_array().unwrap().len(), 1, "{warnings}");
    assert!(warnings.to_string().contains("m-off"));

    // `router serve` logs the same warnings when it starts.
    let mut process = spawn_router_process(
        db.url(),
        "http://127.0.0.1:9/v1",
        &[("ROUTER_ADMIN_TEST_HOOKS", "1")],
    )
    .await;
    let pid = process.child.id().unwrap().to_string();
    std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    process.child.wait().await.unwrap();
    let log = (&mut process.stderr).await.unwrap();
    for expected in ["ROUTER_ADMIN_TEST_HOOKS", "TEST_SUPPLIER_KEY", "m-off"] {
        assert!(
            log.lines()
                .any(|l| l.contains("configuration: ") && l.contains(expected)),
            "serve did not warn about {expected}: {log}"
        );
    }
}

/// Issue 30, item 11: `accounts list`, `keys update`, the response-cache
/// TTL on `keys create`, and status 1 with one line on every failure: a
/// refused operation, a command line clap refuses, a closed stdout.
#[tokio::test(flavor = "multi_thread")]
async fn accounts_list_keys_update_and_every_failure_exits_1() {
    let db = TestDatabase::new().await;
    let catalog = catalog_file();
    let catalog = catalog.to_str().unwrap();
    let env = [("DATABASE_URL", db.url()), ("ROUTER_CATALOG", catalog)];
    let mut ids = Vec::new();
    for email in [
        "first@example.com",
        "second@example.com",
        "third@example.com",
    ] {
        let created = router(&env, &["accounts", "create", "--email", email, "--json"]).await;
        assert!(created.ok, "{}", created.stderr);
        ids.push(created.json()["id"].as_str().unwrap().to_owned());
    }
    let listed = router(&env, &["accounts", "list", "--json"]).await;
    assert!(listed.ok, "{}", listed.stderr);
    let emails: Vec<String> = listed.json()["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["email"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        emails,
        [
            "third@example.com",
            "second@example.com",
            "first@example.com"
        ]
    );
    // Pages: two, then the rest after the last of them.
    let page = router(&env, &["accounts", "list", "--limit", "2", "--json"])
        .await
        .json();
    assert_eq!(page["data"].as_array().unwrap().len(), 2);
    let last = page["data"][1]["id"].as_str().unwrap().to_owned();
    let rest = router(&env, &["accounts", "list", "--before", &last, "--json"])
        .await
        .json();
    assert_eq!(rest["data"][0]["email"], "first@example.com");
    let human = router(&env, &["accounts", "list"]).await;
    assert!(
        human
            .stdout
            .contains("second@example.com  balance 0.000000000 USD"),
        "{}",
        human.stdout
    );

    let key = router(
        &env,
        &[
            "keys",
            "create",
            "--account",
            &ids[0],
            "--scope",
            "inference",
            "--response-cache-ttl-seconds",
            "600",
            "--json",
        ],
    )
    .await;
    assert!(key.ok, "{}", key.stderr);
    let key = key.json();
    assert_eq!(key["policy"]["response_cache_ttl_seconds"], 600);
    let key_id = key["id"].as_str().unwrap().to_owned();

    let updated = router(
        &env,
        &[
            "keys",
            "update",
            &key_id,
            "--scope",
            "inference",
            "--scope",
            "usage:read",
            "--allowed-model",
            "m-text",
            "--requests-per-minute",
            "30",
            "--clear",
            "response_cache_ttl_seconds",
            "--json",
        ],
    )
    .await;
    assert!(updated.ok, "{}", updated.stderr);
    let updated = updated.json();
    assert_eq!(updated["scopes"], json!(["inference", "usage:read"]));
    assert_eq!(updated["policy"]["allowed_models"], json!(["m-text"]));
    assert_eq!(updated["policy"]["requests_per_minute"], 30);
    assert_eq!(updated["policy"]["response_cache_ttl_seconds"], Value::Null);
    let shown = router(&env, &["keys", "show", &key_id, "--json"])
        .await
        .json();
    assert_eq!(shown["policy"]["requests_per_minute"], 30);

    // Refusals: the operation's own, and the command line's.
    router(
        &env,
        &[
            "keys",
            "update",
            &key_id,
            "--allowed-model",
            "no-such-model",
        ],
    )
    .await
    .refused_naming("allowed_models");
    router(&env, &["keys", "update", &key_id])
        .await
        .refused_naming("nothing to update");
    router(&env, &["keys", "update", &key_id, "--clear", "scopes"])
        .await
        .refused_naming("--clear");
    router(
        &env,
        &[
            "keys",
            "create",
            "--account",
            &ids[0],
            "--response-cache-ttl-seconds",
            "0",
        ],
    )
    .await
    .refused_naming("response_cache_ttl_seconds");
    router(&env, &["accounts", "list", "--limit", "many"])
        .await
        .refused_naming("--limit");
    router(&env, &["no-such-command"])
        .await
        .refused_naming("no-such-command");

    // A closed stdout (`router accounts list | head -0`): status 1, one
    // line, no panic.
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .args(["accounts", "list"])
        .envs(env)
        .env_remove("RUST_BACKTRACE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let out = child.wait_with_output().await.unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}
