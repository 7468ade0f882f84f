//! The soak (RELIABILITY.md §3 b, issue 33): 64 connections loop requests
//! (every fourth streamed) against one router for a bounded time (10 min in
//! the full run, `--soak-secs` to change it); its resident memory, open
//! file descriptors and database connections are sampled every few
//! seconds and must stay flat once warmed up, every answer must be a 200,
//! and after the drain no hold may be pending.

use crate::harness::{RouterProcess, Suite, hello};
use anyhow::{Context, Result};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const CONNECTIONS: usize = 64;
const POOL_SIZE: i64 = 16;

/// One sample of the router's resources.
#[derive(Clone, Copy, Debug)]
struct Sample {
    rss_kib: u64,
    fds: u64,
    db_connections: i64,
}

fn open_fds(router: &RouterProcess) -> Option<u64> {
    let pid = router.pid()?;
    Some(std::fs::read_dir(format!("/proc/{pid}/fd")).ok()?.count() as u64)
}

async fn db_connections(suite: &Suite) -> Result<i64> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    // The router's connections: every backend on the suite's database but
    // this one and the invariant sampler's.
    let n: N = diesel::sql_query(
        "SELECT count(*) AS n FROM pg_stat_activity
          WHERE datname = current_database() AND pid <> pg_backend_pid()
            AND backend_type = 'client backend'",
    )
    .get_result(&mut conn)
    .await?;
    Ok((n.n - 1).max(0))
}

pub async fn run(suite: &Suite, secs: u64) -> Result<(String, bool)> {
    let pool = POOL_SIZE.to_string();
    let router = suite
        .router(
            "soak",
            &suite.db_url,
            &[("ROUTER_DB_POOL_SIZE", pool.as_str())],
        )
        .await?;
    let (account, key) = suite
        .customer(&router.base, 1_000_000_000_000_000, json!({}))
        .await?;
    let stop = Arc::new(AtomicBool::new(false));
    let ok_count = Arc::new(AtomicU64::new(0));
    let other = Arc::new(AtomicU64::new(0));
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(CONNECTIONS)
        .timeout(Duration::from_secs(30))
        .build()?;
    let workers: Vec<_> = (0..CONNECTIONS)
        .map(|i| {
            let (client, key, stop) = (client.clone(), key.clone(), stop.clone());
            let (ok_count, other) = (ok_count.clone(), other.clone());
            let url = format!("{}/v1/chat/completions", router.base);
            let mut body = hello();
            if i % 4 == 0 {
                body["stream"] = json!(true);
            }
            tokio::spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    let resp = client.post(&url).bearer_auth(&key).json(&body).send().await;
                    let fine = match resp {
                        Ok(r) => r.status() == 200 && r.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if fine { &ok_count } else { &other }.fetch_add(1, Ordering::Relaxed);
                }
            })
        })
        .collect();
    let started = Instant::now();
    let run_for = Duration::from_secs(secs.max(10));
    let every = Duration::from_secs((secs / 60).clamp(1, 10));
    let mut samples = Vec::new();
    while started.elapsed() < run_for {
        tokio::time::sleep(every).await;
        samples.push(Sample {
            rss_kib: router.rss_kib().context("the router's RSS")?,
            fds: open_fds(&router).context("the router's descriptors")?,
            db_connections: db_connections(suite).await?,
        });
    }
    stop.store(true, Ordering::Relaxed);
    for worker in workers {
        worker.await?;
    }
    // Drained: nothing may be left held.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pending = pending_holds(suite, &account).await?;
    router.stop().await?;

    // Warm-up: the first fifth of the run (pools fill, allocator arenas
    // grow). Then compare the first and last thirds of what is left.
    let warm = &samples[samples.len() / 5..];
    let third = (warm.len() / 3).max(1);
    let (early, late) = (&warm[..third], &warm[warm.len() - third..]);
    let max = |s: &[Sample], f: fn(&Sample) -> u64| s.iter().map(f).max().unwrap_or(0);
    let rss_early = max(early, |s| s.rss_kib);
    let rss_late = max(late, |s| s.rss_kib);
    let fds_early = max(early, |s| s.fds);
    let fds_late = max(late, |s| s.fds);
    let db_max = samples.iter().map(|s| s.db_connections).max().unwrap_or(0);
    let db_early = early.iter().map(|s| s.db_connections).max().unwrap_or(0);
    let db_late = late.iter().map(|s| s.db_connections).max().unwrap_or(0);
    let rss_flat = rss_late <= rss_early + rss_early / 10 + 16 * 1024;
    let fds_flat = fds_late <= fds_early + 8;
    let db_flat = db_max <= POOL_SIZE + dedicated_connections() && db_late <= db_early + 2;
    let ok_n = ok_count.load(Ordering::Relaxed);
    let other_n = other.load(Ordering::Relaxed);
    let ok = rss_flat && fds_flat && db_flat && pending == 0 && other_n == 0 && ok_n > 0;
    let line = format!(
        "soak: {} s at {CONNECTIONS} connections (a quarter streamed), {ok_n}x200 ({:.0}/s), other answers {other_n}; \
         after warm-up RSS {} -> {} MiB, fds {fds_early} -> {fds_late}, database connections {db_early} -> {db_late} (pool {POOL_SIZE}): flat {}; \
         pending holds after drain {pending}",
        run_for.as_secs(),
        ok_n as f64 / run_for.as_secs_f64(),
        rss_early / 1024,
        rss_late / 1024,
        if rss_flat && fds_flat && db_flat {
            "yes"
        } else {
            "NO"
        },
    );
    Ok((line, ok))
}

/// The router's connections outside its pool: the change listener and the
/// catalog release follower, and with credit leases on the leases' own
/// listener (recalls and key changes).
fn dedicated_connections() -> i64 {
    let leases = std::env::var("ROUTER_CREDIT_LEASES").is_ok_and(|v| v == "1");
    2 + i64::from(leases)
}

async fn pending_holds(suite: &Suite, account: &str) -> Result<i64> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    let n: N = diesel::sql_query(format!(
        "SELECT count(*) AS n FROM holds WHERE account_id = '{account}' AND status = 'held'"
    ))
    .get_result(&mut conn)
    .await?;
    Ok(n.n)
}
