//! PostgreSQL goes away for 5 s under load (D1, D2). The router reaches the
//! database through a TCP proxy of the suite's own that, while down, cuts
//! every connection and refuses new ones. Checked: never a 500; every 503
//! carries `Retry-After`; no supplier call without a committed hold; a
//! client saw success exactly for the requests whose settlement committed;
//! no hold left after recovery; the first success after the database comes
//! back, and how long it took.

use crate::harness::{Suite, free_port, hello};
use anyhow::{Context, Result};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio::net::{TcpListener, TcpStream};

/// A proxy to `upstream` that can be cut.
struct CutProxy {
    port: u16,
    down: tokio::sync::watch::Sender<bool>,
}

impl CutProxy {
    async fn start(upstream: String) -> Result<CutProxy> {
        let port = free_port()?;
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let (down, watch) = tokio::sync::watch::channel(false);
        tokio::spawn(async move {
            while let Ok((mut inbound, _)) = listener.accept().await {
                if *watch.borrow() {
                    drop(inbound);
                    continue;
                }
                let upstream = upstream.clone();
                let mut cut = watch.clone();
                tokio::spawn(async move {
                    let Ok(mut outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound) => {}
                        _ = cut.wait_for(|down| *down) => {}
                    }
                });
            }
        });
        Ok(CutProxy { port, down })
    }

    fn set_down(&self, down: bool) {
        self.down.send_replace(down);
    }
}

/// `host:port` of a postgres URL.
fn host_port(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    Some(rest.split(['/', '?']).next()?.to_owned())
}

#[derive(diesel::QueryableByName)]
struct Counts {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    holds: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    succeeded: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    reserved: i64,
}

pub async fn run(suite: &Suite) -> Result<(String, bool)> {
    let upstream = host_port(&suite.db_url).context("the database's address")?;
    let proxy = CutProxy::start(upstream.clone()).await?;
    let through_proxy = suite
        .db_url
        .replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
    let router = suite
        .router(
            "outage",
            &through_proxy,
            &[
                // A hold whose settlement could not commit is released by
                // the reaper once its lease runs out.
                ("ROUTER_DEADLINE_SECS", "5"),
                ("ROUTER_HOLD_LEASE_SECS", "8"),
                ("ROUTER_REAPER_INTERVAL_SECS", "1"),
                ("ROUTER_DB_POOL_SIZE", "8"),
            ],
        )
        .await?;
    let (account, key) = suite
        .customer(&router.base, 1_000_000_000_000, json!({}))
        .await?;
    let calls_before = suite.mock.call_count();
    let stop = Arc::new(AtomicBool::new(false));
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(20))
        .build()?;
    // Load: 8 clients in a loop, each request's status and Retry-After.
    let workers: Vec<_> = (0..8)
        .map(|_| {
            let client = client.clone();
            let url = format!("{}/v1/chat/completions", router.base);
            let key = key.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let at = Instant::now();
                    let resp = client
                        .post(&url)
                        .bearer_auth(&key)
                        .json(&hello())
                        .send()
                        .await;
                    let (status, retry_after) = match resp {
                        Ok(r) => {
                            let retry = r.headers().contains_key("retry-after");
                            let status = r.status().as_u16();
                            let _ = r.bytes().await;
                            (status, retry)
                        }
                        Err(_) => (0, false),
                    };
                    seen.push((at, status, retry_after));
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                seen
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.set_down(true);
    let went_down = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    proxy.set_down(false);
    let came_back = Instant::now();
    tokio::time::sleep(Duration::from_secs(if suite.quick { 4 } else { 8 })).await;
    stop.store(true, Ordering::Relaxed);
    let mut seen = Vec::new();
    for worker in workers {
        seen.extend(worker.await?);
    }
    let supplier_calls = suite.mock.call_count() - calls_before;
    let total = seen.len();
    let successes = seen.iter().filter(|(_, s, _)| *s == 200).count();
    let errors_500 = seen
        .iter()
        .filter(|(_, s, _)| *s >= 500 && *s != 503)
        .count();
    let dropped = seen.iter().filter(|(_, s, _)| *s == 0).count();
    let unavailable = seen.iter().filter(|(_, s, _)| *s == 503).count();
    let without_retry_after = seen.iter().filter(|(_, s, r)| *s == 503 && !r).count();
    let during = seen
        .iter()
        .filter(|(at, _, _)| *at > went_down && *at < came_back)
        .count();
    let recovery = seen
        .iter()
        .filter(|(at, s, _)| *at >= came_back && *s == 200)
        .map(|(at, _, _)| at.duration_since(came_back))
        .min();

    // After recovery: every hold resolved (the reaper releases what could
    // not settle), and the books.
    let account = uuid::Uuid::parse_str(&account)?;
    let mut counts = None;
    let settle_by = Instant::now() + Duration::from_secs(30);
    while Instant::now() < settle_by {
        use diesel_async::RunQueryDsl;
        let mut conn = suite.connection().await?;
        let c: Counts = diesel::sql_query(format!(
            "SELECT (SELECT count(*) FROM holds WHERE account_id = '{account}') AS holds,
                    (SELECT count(*) FROM requests WHERE account_id = '{account}'
                       AND status = 'succeeded') AS succeeded,
                    (SELECT count(*) FROM requests WHERE account_id = '{account}'
                       AND status = 'reserved') AS reserved"
        ))
        .get_result(&mut conn)
        .await?;
        let done = c.reserved == 0;
        counts = Some(c);
        if done {
            break;
        }
        // A hold whose settlement could not commit waits for its lease (8 s)
        // and the reaper; a reaper pass is also run by hand, as an operator
        // would once the database is back (its scheduled pass may hold a
        // lease taken while the database was cut).
        let _ = suite
            .admin(&router.base, "/admin/jobs/hold-reaper/run", json!({}))
            .await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let counts = counts.context("no count of the books")?;
    let calls_without_hold = i64::try_from(supplier_calls)?
        .saturating_sub(counts.holds)
        .max(0);
    let success_without_settlement = i64::try_from(successes)? - counts.succeeded;
    router.stop().await?;

    let ok = errors_500 == 0
        && dropped == 0
        && without_retry_after == 0
        && calls_without_hold == 0
        && success_without_settlement == 0
        && counts.reserved == 0
        && unavailable > 0
        && recovery.is_some_and(|r| r <= Duration::from_secs(5));
    let line = format!(
        "outage: database cut 5 s under load, {total} requests ({during} while down): \
         {successes}x200 {unavailable}x503 (without Retry-After {without_retry_after}), 500s {errors_500}, \
         dropped {dropped}; supplier calls without a committed hold {calls_without_hold}; \
         success without settlement {success_without_settlement}; stuck holds {}; recovery {}",
        counts.reserved,
        recovery.map_or("never".to_owned(), |r| format!("{} ms", r.as_millis())),
    );
    Ok((line, ok))
}
