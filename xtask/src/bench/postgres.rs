//! PostgreSQL as the bench sees it: pinned to the load core for the run, its processes
//! found for CPU accounting, and the transactions a request costs, counted in
//! `pg_stat_database`.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread::{self, sleep};
use std::time::Duration;

use anyhow::{Context, Result};

use crate::db::{self, psql};
use crate::services::http;

use super::report::{Outcome, RoundTrips};
use super::{LOAD_CORE, Protocol, Router};

/// Requests counted for the PostgreSQL transactions per request.
const ROUND_TRIP_REQUESTS: u64 = 300;
/// PostgreSQL 15 backends flush their statistics at most once a second, and an idle one
/// within 10 s: wait that long before reading `pg_stat_database`.
const PG_STATS_FLUSH: Duration = Duration::from_secs(11);

/// PostgreSQL transactions per request: `pg_stat_database` before and after a run of
/// sequential non-streaming Chat requests.
pub(super) fn round_trips(router: &Router, database_url: &str) -> Result<RoundTrips> {
    let transactions = || -> Result<i64> {
        psql(
            database_url,
            "select xact_commit + xact_rollback from pg_stat_database where datname = current_database()",
        )?
        .parse()
        .context("pg_stat_database answered something else than a number")
    };
    let call = router.call(Protocol::Chat, "bench-chat", false);
    // Settles the stats of whatever ran before.
    sleep(PG_STATS_FLUSH);
    let before = transactions()?;
    for _ in 0..ROUND_TRIP_REQUESTS {
        let response = http(
            &call.addr,
            "POST",
            &call.path,
            Some(&router.api_key),
            Some(&call.body),
        )?;
        if response.status != 200 {
            return Err(response.error());
        }
    }
    sleep(PG_STATS_FLUSH);
    let after = transactions()?;
    // One of the counted transactions is the first psql's own query.
    let per_request = (after - before - 1) as f64 / ROUND_TRIP_REQUESTS as f64;
    eprintln!("xtask bench: {per_request:.2} PostgreSQL transactions per request");
    Ok(RoundTrips {
        requests: ROUND_TRIP_REQUESTS,
        transactions_per_request: per_request,
    })
}

/// Drops the leftover per-test databases before the run and describes the cluster for the
/// report's notes. Each database costs the autovacuum launcher a worker start a minute on
/// the load core; with the few hundred a day of test runs leaves behind, that is several backend
/// forks a second, which showed as stalls in the one-at-a-time tail.
pub(super) fn quiet_cluster(server_url: &str) -> String {
    let dropped = db::drop_test_databases(server_url).unwrap_or_else(|error| {
        eprintln!("xtask bench: could not drop leftover test databases: {error:#}");
        0
    });
    let databases = psql(server_url, "SELECT count(*) FROM pg_database")
        .unwrap_or_else(|_| "an unknown number of".to_owned());
    eprintln!(
        "xtask bench: dropped {dropped} leftover test databases; {databases} databases in the cluster"
    );
    format!(
        "PostgreSQL cluster: {databases} databases during the run, after dropping {dropped} leftover test databases (each one costs an autovacuum worker start a minute)."
    )
}

/// Drops and recreates the database `name` on the server of `server_url`; returns its URL.
/// Each run starts from empty tables, so runs compare: nothing of an earlier run's rows,
/// dead versions or statistics carries over.
pub(super) fn fresh_database(server_url: &str, name: &str) -> Result<String> {
    psql(
        server_url,
        &format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
    )?;
    psql(server_url, &format!("CREATE DATABASE {name}"))?;
    with_database(server_url, name)
}

/// `url` with its database replaced by `name` (query parameters kept).
fn with_database(url: &str, name: &str) -> Result<String> {
    let (base, query) = match url.split_once('?') {
        Some((base, query)) => (base, Some(query)),
        None => (url, None),
    };
    let authority_start = base
        .find("://")
        .map(|i| i + 3)
        .with_context(|| format!("not a postgres:// URL: {url}"))?;
    let server = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    Ok(match query {
        Some(query) => format!("{server}/{name}?{query}"),
        None => format!("{server}/{name}"),
    })
}

/// PostgreSQL's postmaster and its processes pinned to the load core for the run (new
/// backends inherit it); all cores again on drop. Needs the server's data directory to be
/// readable (ours is, as root); otherwise the server runs unpinned and the report says so.
pub(super) struct PgPin {
    pub(super) pinned: bool,
    pub(super) pids: Vec<u32>,
}

impl PgPin {
    pub(super) fn apply(database_url: &str) -> PgPin {
        let pids = postgres_pids(database_url).unwrap_or_default();
        let pinned = !pids.is_empty()
            && pids
                .iter()
                .all(|pid| set_affinity(*pid, &LOAD_CORE.to_string()));
        if !pinned {
            eprintln!(
                "xtask bench: could not pin PostgreSQL to core {LOAD_CORE}; it runs unpinned"
            );
        }
        PgPin { pinned, pids }
    }
}

impl Drop for PgPin {
    fn drop(&mut self) {
        if !self.pinned {
            return;
        }
        let all = format!(
            "0-{}",
            thread::available_parallelism().map_or(1, usize::from) - 1
        );
        // The postmaster first: backends forked from now on get every core.
        for pid in &self.pids {
            set_affinity(*pid, &all);
        }
        for pid in children_of(self.pids.first().copied().unwrap_or_default()) {
            set_affinity(pid, &all);
        }
    }
}

pub(super) fn set_affinity(pid: u32, cores: &str) -> bool {
    Command::new("taskset")
        .args(["-a", "-p", "-c", cores, &pid.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// The postmaster (first) and its child processes.
pub(super) fn postgres_pids(database_url: &str) -> Result<Vec<u32>> {
    let data_dir = psql(database_url, "show data_directory")?;
    let pid_file = fs::read_to_string(Path::new(&data_dir).join("postmaster.pid"))?;
    let postmaster: u32 = pid_file
        .lines()
        .next()
        .context("empty postmaster.pid")?
        .trim()
        .parse()?;
    let mut pids = vec![postmaster];
    pids.extend(children_of(postmaster));
    Ok(pids)
}

pub(super) fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read_to_string(format!("/proc/{pid}/stat"))
                .ok()
                .and_then(|stat| {
                    let after_name = &stat[stat.rfind(')')? + 1..];
                    after_name.split_whitespace().nth(1)?.parse::<u32>().ok()
                })
                == Some(parent)
        })
        .collect()
}

/// PostgreSQL's own view of a load step (`pg_stat_statements`): what the router's
/// statements cost, to set beside what the step added. Created in the bench's database
/// when the server preloads the library (`cargo xtask db` does where it is installed).
pub(super) struct StatementStats {
    database_url: String,
}

/// The router's statements over one load step.
#[derive(Clone, Debug)]
pub(crate) struct Statements {
    /// Statements executed per 2xx response.
    pub(crate) calls_per_request: f64,
    /// Their execution time inside PostgreSQL per 2xx response (ms): planning, locks and
    /// execution, not the round trip.
    pub(crate) exec_ms_per_request: f64,
    /// The longest single execution in the step (ms) and the start of its statement.
    pub(crate) slowest_ms: f64,
    pub(crate) slowest: String,
}

impl Statements {
    pub(crate) fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "calls_per_request": super::load::round3(self.calls_per_request),
            "exec_ms_per_request": super::load::round3(self.exec_ms_per_request),
            "slowest_ms": super::load::round3(self.slowest_ms),
            "slowest": self.slowest,
        })
    }
}

impl StatementStats {
    /// `None` (with a line saying why) when the server does not preload the library.
    pub(super) fn enable(database_url: &str) -> Option<StatementStats> {
        match psql(
            database_url,
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements; SELECT count(*) FROM pg_stat_statements",
        ) {
            Ok(_) => Some(StatementStats {
                database_url: database_url.to_owned(),
            }),
            Err(error) => {
                eprintln!(
                    "xtask bench: no statement times (pg_stat_statements is not loaded: {error:#}); the floors leave PostgreSQL out"
                );
                None
            }
        }
    }

    /// Forgets what was counted so far: the next [`StatementStats::read`] covers one step.
    pub(super) fn reset(&self) {
        let _ = psql(&self.database_url, "SELECT pg_stat_statements_reset()");
    }

    /// The router's statements since the last reset, per 2xx response of the step.
    pub(super) fn read(&self, ok_responses: u64) -> Outcome<Statements> {
        // The bench's own psql calls are left out; the query text goes last, as it may
        // hold the separator.
        let sql = "SELECT coalesce(sum(calls), 0), coalesce(sum(total_exec_time + total_plan_time), 0), \
            coalesce(max(max_exec_time), 0), \
            coalesce((SELECT regexp_replace(left(query, 90), '\\s+', ' ', 'g') FROM pg_stat_statements s \
              WHERE s.dbid = d.oid AND query NOT LIKE '%pg_stat_statements%' ORDER BY max_exec_time DESC LIMIT 1), '') \
            FROM pg_stat_statements, pg_database d \
            WHERE d.datname = current_database() AND dbid = d.oid AND query NOT LIKE '%pg_stat_statements%' \
            GROUP BY d.oid";
        let row = psql(&self.database_url, sql).map_err(|e| format!("{e:#}"))?;
        if row.is_empty() {
            return Err("no statement ran".to_owned());
        }
        let mut fields = row.splitn(4, '|');
        let mut number = || -> Outcome<f64> {
            fields
                .next()
                .unwrap_or("0")
                .trim()
                .parse::<f64>()
                .map_err(|e| format!("pg_stat_statements answered {row:?}: {e}"))
        };
        let (calls, total_ms, slowest_ms) = (number()?, number()?, number()?);
        let slowest = fields.next().unwrap_or_default().trim().to_owned();
        let per = ok_responses.max(1) as f64;
        Ok(Statements {
            calls_per_request: calls / per,
            exec_ms_per_request: total_ms / per,
            slowest_ms,
            slowest,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::with_database;

    #[test]
    fn the_database_of_a_url_is_replaced_and_its_parameters_kept() {
        let cases = [
            (
                "postgres://u@127.0.0.1:55432/postgres",
                "postgres://u@127.0.0.1:55432/b",
            ),
            (
                "postgres://u:p@h/db?sslmode=disable",
                "postgres://u:p@h/b?sslmode=disable",
            ),
            ("postgresql://h:5432", "postgresql://h:5432/b"),
        ];
        for (url, expected) in cases {
            assert_eq!(with_database(url, "b").unwrap(), expected);
        }
        assert!(with_database("h:5432/db", "b").is_err());
    }
}
