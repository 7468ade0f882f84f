//! PostgreSQL faults under load (RELIABILITY.md D1–D5). The router reaches
//! the database through a TCP proxy of the suite's own, which can cut every
//! connection and refuse new ones (D1, D2: the database stops for 5 s), or
//! black-hole them: connections are accepted and nothing is forwarded
//! either way (D3; what was sent is delivered once the path heals, as TCP's
//! retransmission would). Another session can hold a wallet's row `FOR
//! UPDATE` for 10 s (D4). And a router can start while the database is
//! unreachable (D5).
//!
//! Checked for each: never a 500 and no dropped connection; every 503
//! carries `Retry-After`; no supplier call without a committed hold; a
//! client saw success exactly for the requests whose settlement committed;
//! no hold left after recovery; the first success after the fault ended,
//! and how long it took (≤ 5 s).

use crate::fault_proxy::{FaultProxy, Path};
use crate::harness::{RouterProcess, Suite, hello};
use anyhow::{Context, Result};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

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
    /// Settlements that committed although their answers were lost, so
    /// their clients were answered with an error: reversed once the
    /// database answered again.
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    reversed: i64,
}

/// One request a load client sent: when, how long, status (0: the
/// connection failed), whether a 503 said `Retry-After`.
#[derive(Clone, Copy)]
struct Seen {
    at: Instant,
    took: Duration,
    status: u16,
    retry_after: bool,
}

/// `clients` loops of requests with `key` until `stop`.
fn load(
    base: &str,
    key: &str,
    clients: usize,
    stop: &Arc<AtomicBool>,
) -> Result<Vec<tokio::task::JoinHandle<Vec<Seen>>>> {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()?;
    Ok((0..clients)
        .map(|_| {
            let client = client.clone();
            let url = format!("{base}/v1/chat/completions");
            let key = key.to_owned();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut seen = Vec::new();
                while !AtomicBool::load(&stop, Ordering::Relaxed) {
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
                    seen.push(Seen {
                        at,
                        took: at.elapsed(),
                        status,
                        retry_after,
                    });
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                seen
            })
        })
        .collect())
}

async fn collect(workers: Vec<tokio::task::JoinHandle<Vec<Seen>>>) -> Result<Vec<Seen>> {
    let mut seen = Vec::new();
    for worker in workers {
        seen.extend(worker.await?);
    }
    Ok(seen)
}

/// What a fault's load saw, against the books of `account`.
struct Verdict {
    total: usize,
    successes: usize,
    unavailable: usize,
    without_retry_after: usize,
    errors_500: usize,
    dropped: usize,
    calls_without_hold: i64,
    success_without_settlement: i64,
    reversed: i64,
    stuck: i64,
    recovery: Option<Duration>,
    slowest: Duration,
}

impl Verdict {
    fn ok(&self) -> bool {
        self.errors_500 == 0
            && self.dropped == 0
            && self.without_retry_after == 0
            && self.calls_without_hold == 0
            && self.success_without_settlement == 0
            && self.stuck == 0
            && self.recovery.is_some_and(|r| r <= Duration::from_secs(5))
    }

    fn figures(&self) -> String {
        format!(
            "{}x200 {}x503 (without Retry-After {}), 500s {}, dropped {}; supplier calls without a committed hold {}; \
             success without settlement {}; settled with the answer lost and reversed {}; stuck holds {}; \
             slowest answer {} ms; recovery {}",
            self.successes,
            self.unavailable,
            self.without_retry_after,
            self.errors_500,
            self.dropped,
            self.calls_without_hold,
            self.success_without_settlement,
            self.reversed,
            self.stuck,
            self.slowest.as_millis(),
            self.recovery
                .map_or("never".to_owned(), |r| format!("{} ms", r.as_millis())),
        )
    }
}

/// Judges `seen` (every request of `account`) once the books settled:
/// every hold resolved (the reaper releases what could not settle).
async fn judge(
    suite: &Suite,
    router: &RouterProcess,
    account: uuid::Uuid,
    seen: &[Seen],
    supplier_calls: usize,
    fault_ended: Instant,
) -> Result<Verdict> {
    let mut counts = None;
    let settle_by = Instant::now() + Duration::from_secs(30);
    while Instant::now() < settle_by {
        let mut conn = suite.connection().await?;
        let c: Counts = diesel::sql_query(format!(
            "SELECT (SELECT count(*) FROM holds WHERE account_id = '{account}') AS holds,
                    (SELECT count(*) FROM requests WHERE account_id = '{account}'
                       AND status = 'succeeded') AS succeeded,
                    (SELECT count(*) FROM requests WHERE account_id = '{account}'
                       AND status = 'reserved') AS reserved,
                    (SELECT count(*) FROM requests WHERE account_id = '{account}'
                       AND error_reason = 'settlement_unanswered') AS reversed"
        ))
        .get_result(&mut conn)
        .await?;
        let done = c.reserved == 0;
        counts = Some(c);
        if done {
            break;
        }
        // A hold whose settlement could not commit waits for its lease and
        // the reaper; a pass is also run by hand, as an operator would once
        // the database is back.
        let _ = suite.run_job(&router.base, "hold-reaper").await;
        tokio::time::sleep(Duration::from_millis(1000)).await;
    }
    let counts = counts.context("no count of the books")?;
    let successes = seen.iter().filter(|s| s.status == 200).count();
    Ok(Verdict {
        total: seen.len(),
        successes,
        unavailable: seen.iter().filter(|s| s.status == 503).count(),
        without_retry_after: seen
            .iter()
            .filter(|s| s.status == 503 && !s.retry_after)
            .count(),
        errors_500: seen
            .iter()
            .filter(|s| s.status >= 500 && s.status != 503)
            .count(),
        dropped: seen.iter().filter(|s| s.status == 0).count(),
        calls_without_hold: i64::try_from(supplier_calls)?
            .saturating_sub(counts.holds)
            .max(0),
        success_without_settlement: i64::try_from(successes)? - counts.succeeded,
        reversed: counts.reversed,
        stuck: counts.reserved,
        recovery: seen
            .iter()
            .filter(|s| s.at >= fault_ended && s.status == 200)
            .map(|s| s.at.duration_since(fault_ended) + s.took)
            .min(),
        slowest: seen.iter().map(|s| s.took).max().unwrap_or_default(),
    })
}

/// The outage routers' settings: a hold whose settlement could not commit
/// is released by the reaper once its lease runs out. The database waits
/// are bounded short (one operation: 500 ms checkout + 1,000 ms
/// statements), so that a request's waits on a black-holed database
/// (reservation, settlement, the settlement's fence) end well within its
/// deadline.
const OUTAGE_ENV: [(&str, &str); 8] = [
    ("ROUTER_DEADLINE_SECS", "5"),
    ("ROUTER_HOLD_LEASE_SECS", "8"),
    ("ROUTER_REAPER_INTERVAL_SECS", "1"),
    ("ROUTER_DB_POOL_SIZE", "8"),
    ("ROUTER_DB_CONNECT_TIMEOUT_MS", "500"),
    ("ROUTER_DB_CHECKOUT_TIMEOUT_MS", "500"),
    ("ROUTER_DB_STATEMENT_TIMEOUT_MS", "1000"),
    ("ROUTER_DB_LOCK_TIMEOUT_MS", "500"),
];

/// The outage routers' deadline (`ROUTER_DEADLINE_SECS`).
const DEADLINE: Duration = Duration::from_secs(5);
/// What an answer may take beyond [`DEADLINE`]: the request's last
/// database waits after its supplier call (a settlement and its fence,
/// 1.5 s each at most) may start just before the deadline; one more second
/// covers a loaded machine's scheduling.
const ANSWER_MARGIN: Duration = Duration::from_secs(1);

/// A router reaching the database through a [`FaultProxy`] that starts
/// `initial`; the proxy and the router's database URL.
async fn proxied(suite: &Suite, initial: Path) -> Result<(FaultProxy, String)> {
    let upstream = host_port(&suite.db_url).context("the database's address")?;
    let proxy = FaultProxy::start(upstream.clone(), initial).await?;
    let url = suite
        .db_url
        .replacen(&upstream, &format!("127.0.0.1:{}", proxy.port), 1);
    Ok((proxy, url))
}

/// D1, D2 (`Path::Cut`) and D3 (`Path::BlackHole`): the path to the
/// database fails for `down` under load from 8 clients.
pub async fn path_fault(suite: &Suite, fault: &str) -> Result<(String, bool)> {
    // The black hole outlasts the deadline (5 s) in the full run.
    let hole = if suite.quick { 5 } else { 8 };
    let (kind, down, what) = match fault {
        "cut" => (
            Path::Cut,
            Duration::from_secs(5),
            "database cut 5 s".to_owned(),
        ),
        _ => (
            Path::BlackHole,
            Duration::from_secs(hole),
            format!("database black-holed {hole} s (connections accepted, nothing forwarded)"),
        ),
    };
    let (proxy, url) = proxied(suite, Path::Up).await?;
    let router = suite
        .router(&format!("outage-{fault}"), &url, &OUTAGE_ENV)
        .await?;
    let (account, key) = suite
        .customer(&router.base, 1_000_000_000_000, json!({}))
        .await?;
    let calls_before = suite.mock.call_count();
    let stop = Arc::new(AtomicBool::new(false));
    let workers = load(&router.base, &key, 8, &stop)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    proxy.set(kind);
    let went_down = Instant::now();
    tokio::time::sleep(down).await;
    proxy.set(Path::Up);
    let came_back = Instant::now();
    tokio::time::sleep(Duration::from_secs(if suite.quick { 4 } else { 8 })).await;
    stop.store(true, Ordering::Relaxed);
    let seen = collect(workers).await?;
    let supplier_calls = suite.mock.call_count() - calls_before;
    let during = seen
        .iter()
        .filter(|s| s.at > went_down && s.at < came_back)
        .count();
    let account = uuid::Uuid::parse_str(&account)?;
    let verdict = judge(suite, &router, account, &seen, supplier_calls, came_back).await?;
    router.stop().await?;
    // A cut must be seen (503s). A black hole must be too, and no request
    // may outlive its deadline: every database wait is bounded by the
    // router's own timeouts (ROUTER_DB_*_TIMEOUT_MS), a connection whose
    // bytes go nowhere included.
    let over_deadline = seen
        .iter()
        .filter(|s| s.took > DEADLINE + ANSWER_MARGIN)
        .count();
    let ok =
        verdict.ok() && verdict.unavailable > 0 && (kind != Path::BlackHole || over_deadline == 0);
    let line = format!(
        "outage{}: {what} under load, {} requests ({during} while down): {}{}",
        if kind == Path::Cut { "" } else { " black hole" },
        verdict.total,
        verdict.figures(),
        if kind == Path::BlackHole {
            format!(
                "; answered after their {} s deadline + {} s {over_deadline}",
                DEADLINE.as_secs(),
                ANSWER_MARGIN.as_secs()
            )
        } else {
            String::new()
        }
    );
    Ok((line, ok))
}

/// D4: another session holds one wallet's row `FOR UPDATE` for 10 s (4 s
/// with `--quick`) while 4 clients load that account and 4 another.
pub async fn locked_wallet(suite: &Suite) -> Result<(String, bool)> {
    let locked_for = Duration::from_secs(if suite.quick { 4 } else { 10 });
    let router = suite
        .router("outage-locked", &suite.db_url, &OUTAGE_ENV)
        .await?;
    let (locked_account, locked_key) = suite
        .customer(&router.base, 1_000_000_000_000, json!({}))
        .await?;
    let (other_account, other_key) = suite
        .customer(&router.base, 1_000_000_000_000, json!({}))
        .await?;
    let calls_before = suite.mock.call_count();
    let holds_before = holds_of_both(suite, &locked_account, &other_account).await?;
    let stop = Arc::new(AtomicBool::new(false));
    let locked_workers = load(&router.base, &locked_key, 4, &stop)?;
    let other_workers = load(&router.base, &other_key, 4, &stop)?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    // The lock: a transaction of another session that holds the row.
    let mut locker = AsyncPgConnection::establish(&suite.db_url).await?;
    locker
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM wallets WHERE account_id = '{locked_account}' FOR UPDATE"
        ))
        .await?;
    let locked_at = Instant::now();
    tokio::time::sleep(locked_for).await;
    locker.batch_execute("ROLLBACK").await?;
    let unlocked = Instant::now();
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::Relaxed);
    let locked_seen = collect(locked_workers).await?;
    let other_seen = collect(other_workers).await?;
    let supplier_calls = suite.mock.call_count() - calls_before;
    let holds_after = holds_of_both(suite, &locked_account, &other_account).await?;
    let locked_id = uuid::Uuid::parse_str(&locked_account)?;
    let other_id = uuid::Uuid::parse_str(&other_account)?;
    // Supplier calls are shared by the two accounts: judged together.
    let new_holds = holds_after - holds_before;
    let mut locked = judge(suite, &router, locked_id, &locked_seen, 0, unlocked).await?;
    let other = judge(suite, &router, other_id, &other_seen, 0, unlocked).await?;
    router.stop().await?;
    locked.calls_without_hold = i64::try_from(supplier_calls)?
        .saturating_sub(new_holds)
        .max(0);
    let during = |seen: &[Seen]| {
        let within: Vec<&Seen> = seen
            .iter()
            .filter(|s| s.at >= locked_at && s.at < unlocked)
            .collect();
        let ok = within.iter().filter(|s| s.status == 200).count();
        (within.len(), ok)
    };
    let (other_during, other_ok_during) = during(&other_seen);
    let other_p99 = p99(&other_seen, locked_at, unlocked);
    // The other account keeps being served while the row is held: every
    // one of its requests answered 200, at least 10 a second over its 4
    // clients (about 40 a second unhindered), with a p99 under a second.
    // The locked account's requests answer 503 once the lock wait
    // (ROUTER_DB_LOCK_TIMEOUT_MS) runs out.
    let served = other_ok_during == other_during
        && other_ok_during as u64 >= 10 * locked_for.as_secs()
        && other_p99 < Duration::from_secs(1);
    let ok = locked.ok() && other.ok() && other.stuck == 0 && locked.unavailable > 0 && served;
    let line = format!(
        "outage locked wallet: a wallet's row held FOR UPDATE {} s by another session, 4+4 clients: the locked account {}; \
         the other account {} of {} answered 200 while it was held (p99 {} ms; at least {} with p99 < 1000 ms: {}), 500s {}, without Retry-After {}",
        locked_for.as_secs(),
        locked.figures(),
        other_ok_during,
        other_during,
        other_p99.as_millis(),
        10 * locked_for.as_secs(),
        if served { "yes" } else { "NO" },
        other.errors_500,
        other.without_retry_after,
    );
    Ok((line, ok))
}

fn p99(seen: &[Seen], from: Instant, to: Instant) -> Duration {
    let mut took: Vec<Duration> = seen
        .iter()
        .filter(|s| s.at >= from && s.at < to)
        .map(|s| s.took)
        .collect();
    took.sort();
    took.get((took.len() * 99) / 100)
        .or(took.last())
        .copied()
        .unwrap_or_default()
}

async fn holds_of_both(suite: &Suite, a: &str, b: &str) -> Result<i64> {
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    let n: N = diesel::sql_query(format!(
        "SELECT count(*) AS n FROM holds WHERE account_id IN ('{a}', '{b}')"
    ))
    .get_result(&mut conn)
    .await?;
    Ok(n.n)
}

/// D5: the router starts while the database is unreachable: it must come up
/// (`/healthz` 200), say it is not ready (`/readyz` 503), answer inference
/// 503 with `Retry-After`, and be ready once the database is.
pub async fn down_at_boot(suite: &Suite) -> Result<(String, bool)> {
    let down_for = Duration::from_secs(if suite.quick { 3 } else { 6 });
    // The customer is made beforehand, on a router that reaches it.
    let plain = suite
        .router("boot-plain", &suite.db_url, &OUTAGE_ENV)
        .await?;
    let (account, key) = suite
        .customer(&plain.base, 1_000_000_000_000, json!({}))
        .await?;
    plain.stop().await?;
    let (proxy, url) = proxied(suite, Path::Cut).await?;
    let calls_before = suite.mock.call_count();
    let router = suite
        .router_alive("boot-down", &url, &OUTAGE_ENV)
        .await
        .context("a router started without its database must still answer /healthz")?;
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .build()?;
    let mut seen = Vec::new();
    let mut readyz = Vec::new();
    let mut wrong = Vec::new();
    let started = Instant::now();
    let mut came_back = None;
    let mut ready_after = None;
    let mut first_200 = None;
    let until = Instant::now() + down_for + Duration::from_secs(20);
    // Both must be seen: the probe and the request of one round can fall on
    // either side of the moment the pool reconnects.
    while Instant::now() < until && (first_200.is_none() || ready_after.is_none()) {
        if came_back.is_none() && started.elapsed() >= down_for {
            proxy.set(Path::Up);
            came_back = Some(Instant::now());
        }
        let ready = client.get(format!("{}/readyz", router.base)).send().await;
        let ready = ready.map(|r| r.status().as_u16()).unwrap_or(0);
        readyz.push(ready);
        if ready == 200 && ready_after.is_none() {
            ready_after = came_back.map(|c| c.elapsed());
        }
        let at = Instant::now();
        let resp = client
            .post(format!("{}/v1/chat/completions", router.base))
            .bearer_auth(&key)
            .json(&hello())
            .send()
            .await;
        let (status, retry_after, body) = match resp {
            Ok(r) => {
                let retry = r.headers().contains_key("retry-after");
                let status = r.status().as_u16();
                let body: serde_json::Value = r.json().await.unwrap_or_default();
                (status, retry, body)
            }
            Err(_) => (0, false, serde_json::Value::Null),
        };
        if status == 503 && body["error"]["code"] != "service_unavailable" {
            wrong.push(format!("a 503 in the wrong envelope: {body}"));
        }
        if status == 200 && first_200.is_none() {
            first_200 = came_back.map(|c| c.elapsed());
        }
        seen.push(Seen {
            at,
            took: at.elapsed(),
            status,
            retry_after,
        });
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let healthz_after = client
        .get(format!("{}/healthz", router.base))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0);
    let account = uuid::Uuid::parse_str(&account)?;
    let verdict = judge(
        suite,
        &router,
        account,
        &seen,
        suite.mock.call_count() - calls_before,
        came_back.unwrap_or(started),
    )
    .await?;
    router.stop().await?;
    let not_ready_while_down = readyz
        .iter()
        .take_while(|s| **s != 200)
        .filter(|s| **s == 503)
        .count();
    for w in &wrong {
        eprintln!("outage at boot: {w}");
    }
    let ok = verdict.errors_500 == 0
        && verdict.calls_without_hold == 0
        && verdict.dropped == 0
        && verdict.without_retry_after == 0
        && verdict.success_without_settlement == 0
        && verdict.stuck == 0
        && verdict.unavailable > 0
        && not_ready_while_down > 0
        && wrong.is_empty()
        && healthz_after == 200
        && ready_after.is_some_and(|r| r <= Duration::from_secs(5))
        && first_200.is_some_and(|r| r <= Duration::from_secs(5));
    let line = format!(
        "outage at boot: started with the database unreachable for {} s: /healthz 200, /readyz 503 x{not_ready_while_down}, \
         inference {}x503 (without Retry-After {}, in the protocol's envelope: {}), 500s {}, dropped {}; ready {} and first 200 {} after the database came back",
        down_for.as_secs(),
        verdict.unavailable,
        verdict.without_retry_after,
        if wrong.is_empty() { "yes" } else { "NO" },
        verdict.errors_500,
        verdict.dropped,
        ready_after.map_or("never".to_owned(), |r| format!("{} ms", r.as_millis())),
        first_200.map_or("never".to_owned(), |r| format!("{} ms", r.as_millis())),
    );
    Ok((line, ok))
}

/// The D1 part's name in `main`: the database cut for 5 s.
pub async fn run(suite: &Suite) -> Result<(String, bool)> {
    path_fault(suite, "cut").await
}
