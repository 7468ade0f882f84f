//! Load with `oha` (installed under `target/bench/tools` when it is not on `PATH`): the
//! command for each shape of load, and the figures read from its JSON summary.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, run_checked};

use super::upstream::pinned;
use super::{Call, LOAD_CORE};

/// The oha release the bench installs (it builds with the pinned toolchain).
pub(crate) const OHA_VERSION: &str = "1.16.0";
/// Connections for unthrottled saturation, and for the fixed rates.
pub(crate) const SATURATION_CONNECTIONS: u32 = 64;
pub(crate) const RATE_CONNECTIONS: u32 = 32;

/// Finds oha on `PATH` or in `tools`, else installs the pinned release there.
pub(crate) fn ensure_oha(tools: &Path) -> Result<(PathBuf, String)> {
    let installed = tools.join("bin").join("oha");
    for candidate in [PathBuf::from("oha"), installed.clone()] {
        if let Some(version) = version_of(&candidate) {
            return Ok((candidate, version));
        }
    }
    eprintln!(
        "xtask bench: installing oha {OHA_VERSION} into {}",
        tools.display()
    );
    // Default features: oha 1.16 does not build without its TLS feature.
    run_checked(
        cargo(["install", "oha", "--locked"])
            .args(["--version", OHA_VERSION, "--root"])
            .arg(tools),
    )?;
    let version = version_of(&installed).context("oha was installed but does not run")?;
    Ok((installed, version))
}

fn version_of(oha: &Path) -> Option<String> {
    let output = Command::new(oha).arg("--version").output().ok()?;
    output
        .status
        .success()
        .then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// The shape of one load run.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Shape {
    /// One connection, one request at a time.
    Sequential,
    /// A fixed arrival rate (requests/s), latency-corrected: a request that had to wait for
    /// a free connection counts from when it should have been sent.
    Rate(u32),
    /// As fast as the target answers, on many connections.
    Saturation,
}

impl Shape {
    pub(crate) fn label(self) -> String {
        match self {
            Shape::Sequential => "one at a time".to_owned(),
            Shape::Rate(rate) => format!("{rate} rps"),
            Shape::Saturation => format!("saturation ({SATURATION_CONNECTIONS} conns)"),
        }
    }
}

/// What one run measured. Latencies are in milliseconds over 2xx responses only.
#[derive(Clone, Debug)]
pub(crate) struct Figures {
    pub(crate) p50: f64,
    pub(crate) p99: f64,
    pub(crate) p999: f64,
    /// 2xx responses per second of the run.
    pub(crate) ok_rps: f64,
    pub(crate) ok: u64,
    /// Non-2xx responses and errors (requests cut off by the end of the run not counted).
    pub(crate) failed: u64,
    pub(crate) seconds: f64,
}

impl Figures {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "p50_ms": round3(self.p50),
            "p99_ms": round3(self.p99),
            "p99_9_ms": round3(self.p999),
            "ok_rps": round3(self.ok_rps),
            "ok": self.ok,
            "failed": self.failed,
            "seconds": round3(self.seconds),
        })
    }
}

pub(crate) fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// Runs oha pinned to the load core against `call` for `duration`; `Err` is a reason to show
/// in the report in place of figures.
pub(crate) fn run(
    oha: &Path,
    work: &Path,
    call: &Call,
    shape: Shape,
    duration: Duration,
) -> Result<Figures> {
    run_on(LOAD_CORE, oha, work, call, shape, duration)
}

/// [`run`] with oha pinned to `core`.
pub(crate) fn run_on(
    core: u32,
    oha: &Path,
    work: &Path,
    call: &Call,
    shape: Shape,
    duration: Duration,
) -> Result<Figures> {
    // Runs may overlap (the scale-out case drives two routers at once).
    static RUNS: AtomicUsize = AtomicUsize::new(0);
    let out = work.join(format!(
        "oha-{}.json",
        RUNS.fetch_add(1, Ordering::SeqCst) % 8
    ));
    let _ = fs::remove_file(&out);
    let mut command = pinned(core, oha);
    command
        .args([
            "--no-tui",
            "--output-format",
            "json",
            "--stats-success-breakdown",
        ])
        .arg("-o")
        .arg(&out)
        .args(["-z", &format!("{}s", duration.as_secs().max(1))])
        .args(["-t", "30s"]);
    // An empty body is a GET (the docs search); every other call POSTs JSON.
    if call.body.is_empty() {
        command.args(["-m", "GET"]);
    } else {
        command
            .args(["-m", "POST", "-d", &call.body])
            .args(["-H", "content-type: application/json"]);
    }
    for (name, value) in &call.headers {
        command.args(["-H", &format!("{name}: {value}")]);
    }
    match shape {
        Shape::Sequential => command.args(["-c", "1"]),
        Shape::Rate(rate) => command.args(["-c", &RATE_CONNECTIONS.to_string()]).args([
            "-q",
            &rate.to_string(),
            "--latency-correction",
        ]),
        Shape::Saturation => command.args(["-c", &SATURATION_CONNECTIONS.to_string()]),
    };
    command.arg(format!("http://{}{}", call.addr, call.path));
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .context("could not start oha")?;
    // Bounded: oha stops itself at the end of the run; this is the backstop.
    let deadline = Instant::now() + duration + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() >= deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("oha did not finish within {}s", (duration.as_secs() + 60));
        }
        sleep(Duration::from_millis(100));
    };
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            let _ = std::io::Read::read_to_string(&mut pipe, &mut stderr);
        }
        bail!("oha failed ({status}): {}", stderr.trim());
    }
    let text = fs::read_to_string(&out).with_context(|| format!("reading {}", out.display()))?;
    let summary: Value = serde_json::from_str(&text).context("oha's JSON summary")?;
    parse(&summary)
}

/// Figures from oha's JSON summary (times in seconds there).
pub(crate) fn parse(summary: &Value) -> Result<Figures> {
    let seconds = summary
        .pointer("/summary/total")
        .and_then(Value::as_f64)
        .context("oha's summary has no total")?;
    let mut ok = 0;
    let mut failed = 0;
    if let Some(codes) = summary
        .get("statusCodeDistribution")
        .and_then(Value::as_object)
    {
        for (code, count) in codes {
            let count = count.as_u64().unwrap_or_default();
            if code.starts_with('2') {
                ok += count;
            } else {
                failed += count;
            }
        }
    }
    if let Some(errors) = summary.get("errorDistribution").and_then(Value::as_object) {
        for (error, count) in errors {
            if !error.contains("aborted due to deadline") {
                failed += count.as_u64().unwrap_or_default();
            }
        }
    }
    if ok == 0 {
        let errors = summary
            .get("errorDistribution")
            .map(Value::to_string)
            .unwrap_or_default();
        bail!("no 2xx response ({failed} failed; {errors})");
    }
    let percentiles = summary
        .get("latencyPercentilesSuccessful")
        .or_else(|| summary.get("latencyPercentiles"))
        .context("oha's summary has no percentiles")?;
    let percentile = |key: &str| -> Result<f64> {
        let seconds = percentiles
            .get(key)
            .and_then(Value::as_f64)
            .with_context(|| format!("oha's summary has no {key}"))?;
        Ok(seconds * 1000.0)
    };
    Ok(Figures {
        p50: percentile("p50")?,
        p99: percentile("p99")?,
        p999: percentile("p99.9")?,
        ok_rps: ok as f64 / seconds.max(f64::EPSILON),
        ok,
        failed,
        seconds,
    })
}

#[cfg(test)]
mod tests {
    use super::parse;
    use serde_json::json;

    #[test]
    fn counts_only_2xx_and_ignores_requests_cut_by_the_deadline() {
        let summary = json!({
            "summary": { "total": 2.0 },
            "latencyPercentilesSuccessful": { "p50": 0.001, "p99": 0.002, "p99.9": 0.004 },
            "statusCodeDistribution": { "200": 1000, "503": 10 },
            "errorDistribution": { "aborted due to deadline": 64, "connection reset": 2 },
        });
        let figures = parse(&summary).unwrap();
        assert_eq!(figures.ok, 1000);
        assert_eq!(figures.failed, 12);
        assert!((figures.ok_rps - 500.0).abs() < 1e-9);
        assert!((figures.p50 - 1.0).abs() < 1e-9);
        assert!((figures.p999 - 4.0).abs() < 1e-9);
    }

    #[test]
    fn a_run_without_2xx_is_an_error() {
        let summary = json!({
            "summary": { "total": 1.0 },
            "latencyPercentiles": { "p50": 0.001, "p99": 0.002, "p99.9": 0.004 },
            "statusCodeDistribution": { "401": 5 },
            "errorDistribution": {},
        });
        assert!(parse(&summary).is_err());
    }
}
