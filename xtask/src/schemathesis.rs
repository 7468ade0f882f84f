//! `cargo xtask schemathesis`: Schemathesis, with every check, against the document the
//! router serves at `/openapi.json`, on a local router with the mock supplier (started as
//! `conformance` starts them). It finds an undocumented status, header or content type, an
//! answer that does not fit its schema, a schema-valid request refused, a schema-invalid
//! one accepted, and any 5xx. A bounded number of examples per operation keeps the run to
//! a few minutes on two cores.
//!
//! Schemathesis is pinned in `conformance/schemathesis/requirements.txt` and installed once
//! into `target/schemathesis/venv`; its settings, and which credential each operation gets,
//! are `conformance/schemathesis/schemathesis.toml`.

use std::fs;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::conformance::{Extras, python_venv, start_local};
use crate::services::{Children, for_each_flag, http, provision_account, random_hex};
use crate::{target_dir, workspace_root};

const REQUIREMENTS: &str = "conformance/schemathesis/requirements.txt";
const CONFIG: &str = "conformance/schemathesis/schemathesis.toml";
/// Where `hooks.py` lives (whole floats spelled as integers).
const HOOKS_DIR: &str = "conformance/schemathesis";
/// Test cases per operation and phase: enough to reach each operation's answers, few enough
/// that the ~60 operations run in a few minutes.
const MAX_EXAMPLES: u32 = 12;
/// Fixed, so a failure reproduces with the same cases.
const SEED: &str = "28";
/// The key's credit: inference calls reserve their worst case.
const CREDITS_NANO_USD: i64 = 1_000_000_000_000;

/// Returns whether Schemathesis found nothing.
pub fn run(args: &[String]) -> Result<bool> {
    let mut max_examples = MAX_EXAMPLES;
    for_each_flag(args, |flag, value| {
        match flag {
            "--max-examples" => {
                max_examples = value()?.parse().context("--max-examples takes a number")?;
            }
            other => bail!("unknown option `{other}`; expected --max-examples N"),
        }
        Ok(())
    })?;
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let work = target_dir().join("schemathesis");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let python = python_venv(&work.join("venv"), REQUIREMENTS, "Schemathesis")?;

    // Dropping `children` stops the router and the mock.
    let mut children = Children::default();
    let target = start_local(
        &work,
        &mut children,
        &stop,
        None,
        Extras {
            mail: true,
            folder_store: true,
            test_hooks: false,
        },
    )?;
    let admin_token = target
        .admin_token
        .clone()
        .context("the local router has an operator token")?;
    let router_addr = target.base_url.trim_start_matches("http://").to_owned();

    // One account with every scope and a browser session, so each operation can pass its
    // guard; the key of `start_local` has `inference` only.
    let account = provision_account(
        &router_addr,
        &admin_token,
        &format!("schemathesis+{}", random_hex(4)?),
        CREDITS_NANO_USD,
        json!({"scopes": ["inference", "account:read", "account:write", "usage:read"]}),
    )?;
    let session = |purpose: &str| -> Result<String> {
        let answer = http(
            &router_addr,
            "POST",
            &format!("/admin/accounts/{}/sessions", account.account_id),
            Some(&admin_token),
            Some("{}"),
        )?;
        let session: Value = serde_json::from_str(&answer.body)
            .with_context(|| format!("a session for {purpose}: {}", answer.body))?;
        match session["cookie_value"].as_str() {
            Some(value) => Ok(value.to_owned()),
            None => bail!("the session answer has no cookie value: {session}"),
        }
    };
    let cookie = session("the session routes")?;

    // The last run's reports only: a HAR of every request is some megabytes.
    let report = work.join("report");
    let _ = fs::remove_dir_all(&report);
    let st = python.with_file_name("st");
    let mut command = Command::new(&st);
    command
        .arg("--config-file")
        .arg(workspace_root().join(CONFIG))
        .arg("run")
        .arg(format!("{}/openapi.json", target.base_url))
        .args(["--max-examples", &max_examples.to_string()])
        .args(["--seed", SEED])
        // One worker: two race in Python's parser when Hypothesis describes a strategy.
        .args(["--workers", "1"])
        .args(["--generation-database", "none"])
        // The credentials are the config's, per operation; generated ones would only clash.
        .args(["--generation-with-security-parameters", "false"])
        .arg("--no-color")
        .arg("--report-dir")
        .arg(&report)
        // JUnit for CI, HAR for every request and answer when a failure needs a look.
        .args(["--report", "junit,har"])
        .env("SCHEMATHESIS_API_KEY", &account.api_key)
        .env("SCHEMATHESIS_ADMIN_TOKEN", &admin_token)
        .env("SCHEMATHESIS_SESSION", &cookie)
        .env("SCHEMATHESIS_ORIGIN", &target.base_url)
        .env("SCHEMATHESIS_HOOKS", "hooks")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONPATH", workspace_root().join(HOOKS_DIR))
        // Its own cache folder lands in the working dir: keep it under target/.
        .current_dir(&work)
        .stdin(Stdio::null());
    eprintln!("xtask schemathesis: {}", crate::display(&command));
    let status = command
        .status()
        .with_context(|| format!("running {}", st.display()))?;
    drop(children);
    println!(
        "schemathesis: {} in {}s (report: {})",
        if status.success() { "passed" } else { "FAILED" },
        started.elapsed().as_secs(),
        report.display()
    );
    Ok(status.success())
}
