//! `--profile`: the router sampled with `perf record` while oha saturates it, and the top
//! costs by shared object and by symbol (self time) from `perf report`.

use std::fs;
use std::process::{Command, Stdio};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use super::load::Shape;
use super::report::Profile;
use super::upstream::pinned;
use super::{Bench, Call, LOAD_CORE};

const FREQUENCY: &str = "999";
const TOP_SYMBOLS: usize = 25;

pub(crate) fn record(bench: &Bench, call: &Call, pid: Option<u32>) -> Result<Profile> {
    let pid = pid.context("the router's pid is unknown")?;
    anyhow::ensure!(
        Command::new("perf").arg("--version").output().is_ok(),
        "perf is missing (apt-get install linux-perf)"
    );
    let data = bench.work.join("perf.data");
    let log = fs::File::create(bench.work.join("logs/perf.log"))?;
    let mut perf = pinned(LOAD_CORE, "perf")
        .args(["record", "-F", FREQUENCY, "-p", &pid.to_string(), "-o"])
        .arg(&data)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()
        .context("could not start perf record")?;
    sleep(Duration::from_millis(500));
    let duration = if bench.options.quick {
        Duration::from_secs(5)
    } else {
        Duration::from_secs(15)
    };
    let figures = bench.load("router under perf, chat", call, Shape::Saturation, duration);
    // SIGINT makes perf write its data and exit.
    let _ = Command::new("kill")
        .args(["-INT", &perf.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(60);
    while perf.try_wait()?.is_none() {
        if Instant::now() >= deadline {
            let _ = perf.kill();
            let _ = perf.wait();
            bail!("perf record did not stop");
        }
        sleep(Duration::from_millis(100));
    }
    if let Err(reason) = figures {
        bail!("the load under perf failed: {reason}");
    }
    let report = |sort: &str| -> Result<String> {
        let output = Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--no-children",
                "--percent-limit",
                "0.3",
            ])
            .args(["--sort", sort, "-i"])
            .arg(&data)
            .stdin(Stdio::null())
            .stderr(Stdio::null())
            .output()
            .context("could not run perf report")?;
        anyhow::ensure!(output.status.success(), "perf report failed");
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        fs::write(bench.work.join(format!("profile-{sort}.txt")), &text)?;
        Ok(text)
    };
    let by_dso = parse_report(&report("dso")?);
    let mut by_symbol = parse_report(&report("symbol")?);
    by_symbol.truncate(TOP_SYMBOLS);
    Ok(Profile {
        tool: format!(
            "perf record -F {FREQUENCY} on the router for {} s of saturation (64 connections)",
            duration.as_secs()
        ),
        samples_file: data.display().to_string(),
        by_dso,
        by_symbol,
    })
}

/// `(percent, name)` from `perf report --stdio` lines such as `    12.34%  [.] symbol`.
fn parse_report(text: &str) -> Vec<(f64, String)> {
    text.lines()
        .filter(|line| !line.trim_start().starts_with('#'))
        .filter_map(|line| {
            let line = line.trim();
            let (percent, rest) = line.split_once('%')?;
            let percent: f64 = percent.trim().parse().ok()?;
            // perf pads the name and may add `-` columns after it.
            let name = rest
                .trim()
                .trim_start_matches("[.]")
                .trim_start_matches("[k]")
                .trim_end_matches(|c: char| c == '-' || c.is_whitespace())
                .trim();
            (!name.is_empty()).then(|| (percent, name.to_owned()))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::parse_report;

    #[test]
    fn perf_report_lines_become_percent_and_name() {
        let text = "# Overhead  Symbol\n#\n    12.50%  [k] tcp_sendmsg     -      -   \n     3.25%  [.] router_core::gateway::Gateway::handle\n\n";
        assert_eq!(
            parse_report(text),
            vec![
                (12.5, "tcp_sendmsg".to_owned()),
                (3.25, "router_core::gateway::Gateway::handle".to_owned())
            ]
        );
    }
}
