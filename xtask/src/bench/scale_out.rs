//! `--scale-out`: a second router process behind the same PostgreSQL, driven together with
//! the first, on one account and on an account each.

use std::thread::{self, sleep};

use anyhow::{Context, Result};

use crate::services::{Children, provision, random_hex};

use super::load::{self, Figures, Shape};
use super::proc_stats::{Cores, Sampler};
use super::report::ScaleOutCase;
use super::{Bench, CREDITS_NANO_USD, Protocol, ROUTER_CORE, Router, RouterLaunch};
use crate::db::psql;

/// Several routers behind one PostgreSQL: the first router alone, then with a second
/// router process beside it on the router's core (the other core holds PostgreSQL and the
/// load), both on one account and on an account each.
pub(super) fn run(
    bench: &Bench,
    launch: &RouterLaunch,
    children: &mut Children,
    router: &Router,
    admin_token: &str,
    database_url: &str,
) -> Result<Vec<ScaleOutCase>> {
    let second_addr = launch.start(children, &bench.stop, "router-b", ROUTER_CORE)?;
    let second_pid = children.pid("router-b");
    let other_key = provision(
        &second_addr,
        admin_token,
        &format!("bench+{}", random_hex(4)?),
        CREDITS_NANO_USD,
    )?;
    let second_same = Router {
        addr: second_addr.clone(),
        pid: second_pid,
        api_key: router.api_key.clone(),
    };
    let second_other = Router {
        addr: second_addr,
        pid: second_pid,
        api_key: other_key,
    };
    let cases: [(&str, Vec<&Router>); 3] = [
        ("one router", vec![router]),
        ("two routers, one account", vec![router, &second_same]),
        ("two routers, an account each", vec![router, &second_other]),
    ];
    let mut results = Vec::new();
    for (label, routers) in cases {
        bench.check_stop()?;
        results.push(scale_out_case(bench, label, &routers, database_url)?);
    }
    Ok(results)
}

fn scale_out_case(
    bench: &Bench,
    label: &str,
    routers: &[&Router],
    database_url: &str,
) -> Result<ScaleOutCase> {
    let duration = bench.options.duration;
    let samplers: Vec<Option<Sampler>> = routers
        .iter()
        .map(|r| r.pid.and_then(|pid| Sampler::start(pid).ok()))
        .collect();
    let cores = Cores::start();
    let postgres = bench.postgres_cpu();
    let (figures, connections) = thread::scope(|scope| {
        let runs: Vec<_> = routers
            .iter()
            .map(|router| {
                let call = router.call(Protocol::Chat, "bench-chat", false);
                scope.spawn(move || {
                    load::run(&bench.oha, &bench.work, &call, Shape::Saturation, duration)
                })
            })
            .collect();
        // PostgreSQL's client connections, halfway through the load.
        sleep(duration / 2);
        let connections = psql(
            database_url,
            "select count(*) from pg_stat_activity where backend_type = 'client backend' and datname = current_database()",
        );
        let figures: Vec<Result<Figures>> = runs
            .into_iter()
            .map(|run| {
                run.join()
                    .map_err(|_| anyhow::anyhow!("a load thread panicked"))?
            })
            .collect();
        (figures, connections)
    });
    let cores_busy = cores.finish();
    let postgres_cpu_percent = postgres.map_or(f64::NAN, |cpu| cpu.finish(&bench.postgres_pids()));
    let mut ok_rps = 0.0;
    let mut failed = 0;
    for figures in &figures {
        let figures = figures.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))?;
        ok_rps += figures.ok_rps;
        failed += figures.failed;
    }
    let router_cpu_percent = samplers
        .into_iter()
        .map(|s| {
            s.and_then(|s| s.finish().ok())
                .map_or(f64::NAN, |u| u.cpu_percent)
        })
        .collect();
    let case = ScaleOutCase {
        label: label.to_owned(),
        ok_rps,
        failed,
        router_cpu_percent,
        // Less our own psql session.
        pg_connections: connections?
            .parse::<u64>()
            .context("pg_stat_activity count")?
            .saturating_sub(1),
        postgres_cpu_percent,
        cores_busy,
    };
    eprintln!(
        "xtask bench: scale-out, {label}: {:.0} 2xx/s, {} PostgreSQL connections",
        case.ok_rps, case.pg_connections
    );
    Ok(case)
}
