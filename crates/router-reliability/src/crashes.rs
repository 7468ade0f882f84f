//! SIGKILL at the crash points (RELIABILITY.md §3 c): a router with one
//! point armed (`FAILPOINTS`, compiled into debug builds and the
//! `failpoints` feature) takes a request, parks it at the point, and is
//! killed there; a fresh router on the same database must come up, and once
//! the hold's lease (3 s) has run out the reaper must leave: K1, K2, K4 the
//! hold released and the balance exactly restored; K6 (the settlement
//! committed) the hold settled and charged exactly once. No hold stays held,
//! none is resolved twice (the sampler's I4, I5).

use crate::harness::{Suite, hello};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::time::{Duration, Instant};

#[derive(diesel::QueryableByName)]
struct Holds {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    held: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    settled: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    released: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    charges: i64,
}

async fn holds_of(suite: &Suite, account: uuid::Uuid) -> Result<Holds> {
    use diesel_async::RunQueryDsl;
    let mut conn = suite.connection().await?;
    Ok(diesel::sql_query(format!(
        "SELECT count(*) FILTER (WHERE status = 'held') AS held,
                count(*) FILTER (WHERE status = 'settled') AS settled,
                count(*) FILTER (WHERE status = 'released') AS released,
                (SELECT count(DISTINCT txn_id) FROM ledger_entries
                 WHERE account_id = '{account}' AND kind = 'charge') AS charges
         FROM holds WHERE account_id = '{account}'"
    ))
    .get_result(&mut conn)
    .await?)
}

/// Waits until `log` says a failpoint was reached.
async fn parked(log: &std::path::Path) -> bool {
    let until = Instant::now() + Duration::from_secs(15);
    while Instant::now() < until {
        if std::fs::read_to_string(log)
            .unwrap_or_default()
            .contains("failpoint reached")
        {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    false
}

pub async fn run(suite: &Suite) -> Result<(String, bool)> {
    let kills_per_point = if suite.quick { 2 } else { 10 };
    let points = ["K1", "K2", "K4", "K6"];
    let env = [
        ("ROUTER_HOLD_LEASE_SECS", "3"),
        ("ROUTER_REAPER_INTERVAL_SECS", "1"),
    ];
    let credits = 1_000_000_000_000i64;
    let (mut kills, mut stuck, mut double, mut wrong) = (0usize, 0i64, 0i64, Vec::new());
    let mut slowest_ready = Duration::ZERO;
    let mut restarted = None;
    for point in points {
        let mut armed_env = env.to_vec();
        armed_env.push(("FAILPOINTS", point));
        // The customer is made on a router with nothing armed.
        let plain = match restarted.take() {
            Some(router) => router,
            None => suite.router("crash-plain", &suite.db_url, &env).await?,
        };
        let (account, key) = suite.customer(&plain.base, credits, json!({})).await?;
        plain.stop().await?;
        let account = uuid::Uuid::parse_str(&account)?;
        for kill in 0..kills_per_point {
            let name = format!("crash-{point}-{kill}");
            let armed = suite.router(&name, &suite.db_url, &armed_env).await?;
            let url = format!("{}/v1/chat/completions", armed.base);
            let key = key.clone();
            let request = tokio::spawn(async move {
                let client = reqwest::Client::new();
                let _ = client
                    .post(url)
                    .bearer_auth(key)
                    .json(&hello())
                    .send()
                    .await;
            });
            if !parked(&armed.log).await {
                bail!(
                    "{point}: the request never reached the failpoint ({})",
                    armed.log.display()
                );
            }
            // SIGKILL, with the request parked at the point.
            armed
                .stop()
                .await
                .context("the armed router died before its kill")?;
            request.abort();
            kills += 1;
            let started = Instant::now();
            let router = suite
                .router(&format!("{name}-restart"), &suite.db_url, &env)
                .await?;
            slowest_ready = slowest_ready.max(started.elapsed());
            // The hold's lease (3 s) runs out, the reaper (every 1 s) acts;
            // unless the killed router held the reaper's own job lease (a
            // pass in progress takes it for 60 s), then it acts after that.
            let until = Instant::now() + Duration::from_secs(75);
            let mut holds = holds_of(suite, account).await?;
            while holds.held > 0 && Instant::now() < until {
                tokio::time::sleep(Duration::from_millis(250)).await;
                holds = holds_of(suite, account).await?;
            }
            stuck += holds.held;
            double += (holds.charges - holds.settled).max(0);
            let expect_settled = if point == "K6" { kill as i64 + 1 } else { 0 };
            if holds.settled != expect_settled || holds.charges != expect_settled {
                wrong.push(format!(
                    "{point} kill {kill}: settled {} charges {} released {}",
                    holds.settled, holds.charges, holds.released
                ));
            }
            let view = suite
                .admin_get(&router.base, &format!("/admin/accounts/{account}"))
                .await?;
            let charged: i64 = suite_charged(suite, account).await?;
            if view["balance_nano_usd"].as_i64() != Some(credits - charged)
                || view["held_nano_usd"].as_i64()
                    != Some(crate::harness::leased_of(suite, &account.to_string()).await?)
            {
                wrong.push(format!("{point} kill {kill}: the wallet is off: {view}"));
            }
            restarted = Some(router);
        }
    }
    if let Some(router) = restarted {
        router.stop().await?;
    }
    for w in &wrong {
        eprintln!("crashes: {w}");
    }
    let ok =
        stuck == 0 && double == 0 && wrong.is_empty() && slowest_ready < Duration::from_secs(3);
    let line = format!(
        "crashes: {kills} SIGKILLs at K1, K2, K4, K6 ({kills_per_point} each): stuck holds {stuck}, double-resolved {double}, \
         K1/K2/K4 released with the balance restored and K6 charged once: {}, restart to ready at most {} ms",
        if wrong.is_empty() { "yes" } else { "NO" },
        slowest_ready.as_millis()
    );
    Ok((line, ok))
}

async fn suite_charged(suite: &Suite, account: uuid::Uuid) -> Result<i64> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct Sum {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    let sum: Sum = diesel::sql_query(format!(
        "SELECT coalesce(sum(charged_nano), 0)::bigint AS n FROM requests WHERE account_id = '{account}'"
    ))
    .get_result(&mut conn)
    .await?;
    Ok(sum.n)
}
