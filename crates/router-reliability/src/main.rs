//! `router-reliability`: the reliability suite of issue 33 against the real
//! `router` binary, real PostgreSQL (`DATABASE_URL`, a fresh database per
//! run) and the mock supplier. Each part prints one figure line; the exit
//! status is non-zero if any part saw a violation. Run through
//! `cargo xtask reliability` (`--quick` inside `cargo xtask test`).
//!
//! Parts: concurrency (N=1000/K=137 through a wallet; through a key's
//! spend limit and monthly budget; across two router processes); mixed load
//! (streams, 20% supplier failures, clients leaving before and after
//! output); the fault matrix (mock supplier and the suite's TCP fault
//! proxy); PostgreSQL cut, black-holed, a wallet row locked and down at
//! boot; slow senders and idle connections against every timeout; a
//! connection flood against the caps; an SSRF corpus against request image
//! parts, channel destinations and supplier image downloads; SIGKILL at the
//! crash points K1–K7 and in a reaper pass holding its lease (the router
//! binary must have them: a debug build, or a release build with the
//! `failpoints` feature); a soak (full run, or `--soak-secs`); the books
//! sampled at REPEATABLE READ throughout (I1–I7); and a grep of every log
//! (at TRACE) for every secret.

mod concurrency;
mod connections;
mod crashes;
mod fault_proxy;
mod faults;
mod harness;
mod invariants;
mod mixed;
mod outage;
mod secrets;
mod soak;
mod ssrf;

use anyhow::{Context, Result};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

const USAGE: &str =
    "usage: router-reliability --router PATH [--quick] [--work DIR] [--only PART] [--soak-secs N]";

fn main() -> ExitCode {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("router-reliability: {e}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run()) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("router-reliability: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run() -> Result<bool> {
    let mut quick = false;
    let mut router = None;
    let mut work = None;
    let mut only: Option<String> = None;
    let mut soak_secs: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--router" => router = args.next().map(PathBuf::from),
            "--work" => work = args.next().map(PathBuf::from),
            "--only" => only = args.next(),
            "--soak-secs" => {
                soak_secs = Some(
                    args.next()
                        .and_then(|s| s.parse().ok())
                        .context("--soak-secs takes a number of seconds")?,
                )
            }
            other => anyhow::bail!("unknown argument {other}; {USAGE}"),
        }
    }
    let router = router.context(USAGE)?;
    let work = work.unwrap_or_else(|| {
        std::env::temp_dir().join(format!("router-reliability-{}", std::process::id()))
    });
    let started = Instant::now();
    let suite = harness::Suite::start(quick, router, work).await?;
    println!(
        "reliability ({}): database {}, logs in {}",
        if quick { "quick" } else { "full" },
        suite.db_name,
        suite.work.display()
    );
    let (stop, sampler) = invariants::spawn_sampler(
        suite.db_url.clone(),
        Duration::from_millis(if quick { 20 } else { 10 }),
    );
    let mut all_ok = true;
    let mut report = |name: &str, outcome: Result<(String, bool)>| match outcome {
        Ok((line, ok)) => {
            println!("{} {line}", if ok { "ok  " } else { "FAIL" });
            all_ok &= ok;
        }
        Err(e) => {
            println!("FAIL {name}: {e:#}");
            all_ok = false;
        }
    };
    let wanted = |part: &str| only.as_deref().is_none_or(|o| part.contains(o));
    if wanted("concurrency") {
        report("concurrency", concurrency::run(&suite).await);
    }
    if wanted("mixed") {
        report("mixed", mixed::run(&suite).await);
    }
    if wanted("faults") {
        report("faults", faults::run(&suite).await);
    }
    if wanted("outage") {
        report("outage", outage::run(&suite).await);
    }
    if wanted("outage black hole") {
        report(
            "outage black hole",
            outage::path_fault(&suite, "black hole").await,
        );
    }
    if wanted("outage locked wallet") {
        report("outage locked wallet", outage::locked_wallet(&suite).await);
    }
    if wanted("outage at boot") {
        report("outage at boot", outage::down_at_boot(&suite).await);
    }
    if wanted("slow clients") {
        report("slow clients", connections::slow_clients(&suite).await);
    }
    if wanted("flood") {
        report("flood", connections::flood(&suite).await);
    }
    if wanted("ssrf") {
        report("ssrf", ssrf::run(&suite).await);
    }
    if wanted("ssrf channels") {
        report("ssrf channels", ssrf::channels(&suite).await);
    }
    if wanted("ssrf image downloads") {
        report("ssrf image downloads", ssrf::image_downloads(&suite).await);
    }
    if wanted("crashes") {
        report("crashes", crashes::run(&suite).await);
    }
    // The soak: 10 minutes in the full run; in the quick run only when
    // `--soak-secs` asks for it.
    let soak = soak_secs.or((!quick).then_some(600));
    if let Some(secs) = soak.filter(|_| wanted("soak")) {
        report("soak", soak::run(&suite, secs).await);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sampled = sampler.await?;
    let invariants_ok = sampled.violations == 0 && sampled.reads > 0;
    report(
        "invariants",
        Ok((
            format!(
                "invariants: I1-I7 sampled at REPEATABLE READ while every part ran: {} snapshot reads ({} failed{}), violations {}{}",
                sampled.reads,
                sampled.failed_reads,
                sampled
                    .first_error
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default(),
                sampled.violations,
                sampled
                    .first
                    .map(|f| format!(" (first: {f})"))
                    .unwrap_or_default()
            ),
            invariants_ok,
        )),
    );
    report("secrets", secrets::run(&suite));
    if std::env::var("ROUTER_CREDIT_LEASES").is_ok_and(|v| v == "1") {
        report("leases", harness::lease_figures(&suite).await);
    }
    suite.finish().await?;
    println!(
        "reliability: {} in {} s",
        if all_ok {
            "all parts held"
        } else {
            "VIOLATIONS"
        },
        started.elapsed().as_secs()
    );
    Ok(all_ok)
}
