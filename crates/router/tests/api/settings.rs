//! One way to pass settings (issue 30): every setting of the table in
//! `docs/operations.md` is a flag that works after `serve` (and its
//! `ROUTER_*` variable), `router serve --help` lists each with its variable
//! and default, and the start command the README and `docs/operations.md`
//! show runs as written.

use crate::harness::*;
use router_store::test_support::TestDatabase;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The rows of the settings table: variable, flag (may be empty), default cell.
fn documented_settings() -> Vec<(String, String, String)> {
    let text = std::fs::read_to_string(workspace().join("docs/operations.md")).unwrap();
    text.lines()
        .filter(|l| l.starts_with("| `"))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let variable = cells[1].trim_matches('`');
            if !(variable.starts_with("ROUTER_") || variable == "DATABASE_URL") {
                return None;
            }
            Some((
                variable.to_owned(),
                cells[2].trim_matches('`').to_owned(),
                cells[3].to_owned(),
            ))
        })
        .collect()
}

/// `router serve --help`: each flag's text, by flag.
fn help_entries(help: &str) -> BTreeMap<String, String> {
    let mut entries = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in help.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("--") {
            let flag = format!("--{}", rest.split([' ', '<']).next().unwrap());
            current = Some(flag.clone());
            entries.insert(flag, String::new());
        } else if let Some(flag) = &current {
            let entry = entries.get_mut(flag).unwrap();
            entry.push(' ');
            entry.push_str(trimmed);
        }
    }
    entries
}

async fn run(args: &[&str], env: &[(&str, &str)]) -> std::process::Output {
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"));
    command
        .args(args)
        .current_dir(workspace())
        .env_remove("ROUTER_LOG");
    for (name, value) in env {
        command.env(name, value);
    }
    command.output().await.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn serve_help_lists_every_documented_setting_with_its_variable_and_default() {
    let out = run(&["serve", "--help"], &[]).await;
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let entries = help_entries(&help);
    let settings = documented_settings();
    assert!(settings.len() >= 30, "{settings:?}");
    for (variable, flag, default) in &settings {
        if matches!(
            variable.as_str(),
            "ROUTER_ADMIN_TOKEN" | "ROUTER_METRICS_TOKEN"
        ) {
            // A secret has no flag (`ps` would show it).
            assert!(flag.is_empty(), "{variable} has a flag");
            continue;
        }
        let entry = entries
            .get(flag)
            .unwrap_or_else(|| panic!("{flag} ({variable}) is not in `router serve --help`"));
        assert!(
            entry.contains(&format!("[env: {variable}")),
            "{flag}: {entry}"
        );
        // The binary's default is the one the table shows first.
        if let Some(value) = entry
            .split("[default: ")
            .nth(1)
            .and_then(|d| d.split(']').next())
        {
            // clap quotes a default with spaces (or an empty one).
            let value = value.trim_matches('"');
            assert!(
                default.starts_with(&format!("`{value}`"))
                    || (value.is_empty() && default.starts_with("empty")),
                "{flag}: the binary's default is `{value}`, the table says {default}"
            );
        }
    }
}

/// Each bad value given as a flag after `serve` stops start-up naming its
/// variable: the flag is read, and checked as the variable is.
#[tokio::test(flavor = "multi_thread")]
async fn every_setting_works_as_a_flag_after_serve() {
    let flags: BTreeMap<String, String> = documented_settings()
        .into_iter()
        .map(|(variable, flag, _)| (variable, flag))
        .collect();
    let catalog = workspace().join("fixtures/demo-catalog.toml");
    let catalog = catalog.to_str().unwrap();
    let cases = [
        ("ROUTER_LISTEN", "localhost"),
        ("ROUTER_CATALOG", "/nonexistent/catalog.toml"),
        ("ROUTER_DEADLINE_SECS", "soon"),
        ("ROUTER_DRAIN_SECS", "0"),
        ("ROUTER_HOLD_LEASE_SECS", "0"),
        ("ROUTER_REAPER_INTERVAL_SECS", "-1"),
        ("ROUTER_DB_POOL_SIZE", "0"),
        ("ROUTER_DB_CONNECT_TIMEOUT_MS", "0"),
        ("ROUTER_DB_CHECKOUT_TIMEOUT_MS", "soon"),
        ("ROUTER_DB_STATEMENT_TIMEOUT_MS", "600001"),
        // Not below the statement timeout (5000 by default).
        ("ROUTER_DB_LOCK_TIMEOUT_MS", "5000"),
        ("ROUTER_HEADER_READ_TIMEOUT_SECS", "0"),
        ("ROUTER_KEEP_ALIVE_IDLE_SECS", "x"),
        ("ROUTER_H2_KEEP_ALIVE_SECS", "0"),
        ("ROUTER_BODY_IDLE_TIMEOUT_SECS", "0"),
        ("ROUTER_BODY_MIN_BYTES_PER_SEC", "-5"),
        ("ROUTER_MAX_CONNECTIONS", "0"),
        ("ROUTER_MAX_CONNECTIONS_PER_ADDRESS", "some"),
        ("ROUTER_TRUSTED_PROXIES", "10.0.0.300"),
        ("ROUTER_PUBLIC_BASE_URL", "router.example.com"),
        ("ROUTER_SMTP_URL", "http://mail.example.com"),
        ("ROUTER_EMAIL_FROM", "not an address"),
        ("ROUTER_TELEGRAM_API_BASE", "api.telegram.org"),
        ("ROUTER_CHANNEL_TIMEOUT_SECS", "0"),
        ("ROUTER_CHANNEL_URL_ALLOW_LOOPBACK", "yes"),
        ("ROUTER_SESSION_TTL_SECS", "1.5"),
        ("ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS", "0"),
        ("ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS", "86401"),
        ("ROUTER_OBJECT_STORE", "ftp://files.example.com/uploads"),
        ("ROUTER_UPLOAD_TTL_SECS", "an hour"),
        ("ROUTER_UPLOAD_TOMBSTONE_SECS", "0"),
        ("ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT", "0"),
        ("ROUTER_UPLOAD_CONCURRENCY_TOTAL", "0"),
        ("ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE", "many"),
        ("ROUTER_VIDEO_POLL_INTERVAL_MS", "50"),
        ("ROUTER_METRICS", "maybe"),
        ("ROUTER_ADMIN_TEST_HOOKS", "yes"),
        ("ROUTER_IMAGE_DEADLINE_SECS", "0"),
        ("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "yes"),
        ("ROUTER_LOG_FORMAT", "xml"),
        ("DATABASE_URL", "not a url"),
    ];
    for (variable, bad) in cases {
        let flag = flags
            .get(variable)
            .unwrap_or_else(|| panic!("{variable} is not in the settings table"));
        // The rest of a valid start comes from the variables (which the
        // flag wins over).
        let env = [
            ("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none"),
            ("ROUTER_CATALOG", catalog),
            ("ROUTER_LISTEN", "127.0.0.1:0"),
        ];
        let out = run(&["serve", &format!("{flag}={bad}")], &env).await;
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{flag} {bad}: {stderr}");
        assert!(
            stderr.trim().starts_with(&format!("router: {variable}")),
            "{flag} {bad}: {stderr}"
        );
    }
}

/// The `router serve` line of a document's first `sh` block, as words.
fn documented_start(document: &str) -> Vec<String> {
    let text = std::fs::read_to_string(workspace().join(document)).unwrap();
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("router serve"))
        .unwrap_or_else(|| panic!("no `router serve` line in {document}"));
    line.split_whitespace().skip(1).map(str::to_owned).collect()
}

/// Starts `router` with `args` (from the workspace, as an operator in a
/// clone would); whether it listened, and its stderr.
async fn start(args: &[String], db_url: &str) -> (bool, String) {
    let mut child = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
        .args(args)
        .current_dir(workspace())
        .env("DATABASE_URL", db_url)
        .env("ROUTER_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("ROUTER_LOG_FORMAT", "json")
        .env_remove("ROUTER_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut pipe = child.stderr.take().unwrap();
    let stderr = tokio::spawn(async move {
        use tokio::io::AsyncReadExt;
        let mut text = String::new();
        let _ = pipe.read_to_string(&mut text).await;
        text
    });
    // Listening (or refused) within the time a start takes.
    let start = Instant::now();
    let mut exited = None;
    while start.elapsed() < Duration::from_secs(20) {
        if let Some(status) = child.try_wait().unwrap() {
            exited = Some(status);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        // `router listening` is logged before the accept loop starts.
        if start.elapsed() > Duration::from_secs(3) {
            break;
        }
    }
    if exited.is_none() {
        let pid = child.id().unwrap().to_string();
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), child.wait())
            .await
            .unwrap()
            .unwrap();
    }
    let log = stderr.await.unwrap();
    (log.contains("router listening"), log)
}

#[tokio::test(flavor = "multi_thread")]
async fn the_documented_start_command_runs_as_written() {
    let db = TestDatabase::new().await;
    for document in ["README.md", "docs/operations.md"] {
        let args = documented_start(document);
        assert_eq!(
            args,
            [
                "serve",
                "--catalog",
                "fixtures/demo-catalog.toml",
                "--listen",
                "127.0.0.1:8080"
            ],
            "{document} changed: keep this test's expectation in step"
        );
        let (listened, log) = start(&args, db.url()).await;
        // Port 8080 may be another program's on a shared machine: then the
        // router got as far as binding it, every setting accepted.
        assert!(
            listened || log.contains("ROUTER_LISTEN: cannot bind 127.0.0.1:8080"),
            "{document}: {log}"
        );
        assert!(!log.contains("unexpected argument"), "{log}");
        // The same line on a free port serves.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let mut free = args.clone();
        *free.last_mut().unwrap() = format!("127.0.0.1:{port}");
        let (listened, log) = start(&free, db.url()).await;
        assert!(listened, "{document}: {log}");
    }
}
