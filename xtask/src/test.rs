//! `cargo xtask test`: the whole suite, as CI runs it, against the database from `db`.
//!
//! Steps: fmt check, clippy, tests (nextest when installed), doc tests, `cargo package` of the
//! published wire crates, then the conformance
//! matrix (`cargo xtask conformance`: the official SDKs against a local router and mock
//! supplier), the demo's steps with `CARGO_TARGET_DIR` elsewhere (`cargo xtask demo --check`),
//! the real clients' tool round trips (`cargo xtask clients --only /tool/`), the
//! account dashboard in headless Chromium (`cargo xtask browser`) and
//! schemathesis (`cargo xtask schemathesis`: the served OpenAPI document
//! against the router that serves it) and the quick reliability suite (`cargo xtask
//! reliability --quick`, without and with credit leases). Every step runs even after one fails, so a single run
//! shows everything that is wrong (tests run with `--no-fail-fast` for the same reason); the
//! last line sums up. Every step gets stdin from /dev/null, so nothing ever waits for a
//! person: CI runs this with `CI=true` and no terminal, and needs no other switch.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::{cargo, db, display, workspace_root};

struct Step {
    name: &'static str,
    command: Command,
}

/// Returns whether every step passed.
/// `xtask demo --check --debug --no-build` in a target folder of its own.
fn demo_check() -> Result<Command> {
    let elsewhere = std::env::temp_dir().join(format!("router-demo-check-{}", std::process::id()));
    let debug = elsewhere.join("debug");
    std::fs::create_dir_all(&debug)?;
    for binary in ["router", "mock-supplier"] {
        let link = debug.join(binary);
        let _ = std::fs::remove_file(&link);
        std::os::unix::fs::symlink(crate::target_dir().join("debug").join(binary), &link)?;
    }
    let port = || -> Result<String> {
        let listener = std::net::TcpListener::bind("127.0.0.1:0")?;
        Ok(listener.local_addr()?.to_string())
    };
    let mut demo = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    demo.args([
        "demo",
        "--check",
        "--debug",
        "--no-build",
        "--listen",
        &port()?,
    ])
    .args(["--supplier-listen", &port()?, "--smtp-listen", &port()?])
    .env("CARGO_TARGET_DIR", &elsewhere)
    .current_dir(workspace_root());
    Ok(demo)
}

pub fn run(args: &[String]) -> Result<bool> {
    if !args.is_empty() {
        bail!("`test` takes no arguments, got {args:?}");
    }
    let started = Instant::now();
    let database_url = db::ensure_postgres()?;

    let mut steps = vec![
        Step {
            name: "fmt",
            command: cargo(["fmt", "--all", "--", "--check"]),
        },
        Step {
            name: "clippy",
            command: cargo([
                "clippy",
                "--workspace",
                "--all-targets",
                "--",
                "-D",
                "warnings",
            ]),
        },
    ];
    if nextest_available() {
        steps.push(Step {
            name: "tests",
            // A crate with no tests yet is not a failure of the suite.
            command: cargo([
                "nextest",
                "run",
                "--workspace",
                "--all-targets",
                "--no-fail-fast",
                "--no-tests=warn",
            ]),
        });
    } else {
        steps.push(Step {
            name: "tests",
            command: cargo(["test", "--workspace", "--all-targets", "--no-fail-fast"]),
        });
    }
    steps.push(Step {
        name: "doctests",
        command: cargo(["test", "--workspace", "--doc", "--no-fail-fast"]),
    });
    // The wire crates are a product for other Rust services: each must
    // package, build and pass its own tests on its own, and an outside
    // crate must build against the packages (`cargo xtask package`).
    let mut package = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    package.arg("package").current_dir(workspace_root());
    steps.push(Step {
        name: "package",
        command: package,
    });
    // This very binary, so the step needs no second build of the xtask.
    let mut conformance = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    conformance.arg("conformance").current_dir(workspace_root());
    steps.push(Step {
        name: "conformance",
        command: conformance,
    });
    // The demo's steps, as a newcomer runs them, with `CARGO_TARGET_DIR`
    // somewhere other than the workspace's `target/` (issue 30): a fresh
    // folder holding only links to the debug binaries the conformance step
    // built, on free loopback ports.
    steps.push(Step {
        name: "demo",
        command: demo_check()?,
    });
    // The real clients' quick subset: every client's tool round trip, on a native and a
    // converted route (the whole matrix is `cargo xtask clients`).
    let mut clients = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    clients
        .args(["clients", "--only", "/tool/"])
        .current_dir(workspace_root());
    steps.push(Step {
        name: "clients",
        command: clients,
    });
    // The account dashboard in headless Chromium (installs chromium and chromium-driver
    // from Debian when missing).
    let mut browser = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    browser.arg("browser").current_dir(workspace_root());
    steps.push(Step {
        name: "browser",
        command: browser,
    });
    let mut schemathesis = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    schemathesis
        .arg("schemathesis")
        .current_dir(workspace_root());
    steps.push(Step {
        name: "schemathesis",
        command: schemathesis,
    });
    let mut reliability = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    reliability
        .args(["reliability", "--quick"])
        .current_dir(workspace_root());
    steps.push(Step {
        name: "reliability",
        command: reliability,
    });
    // The same parts with credit leases on (issue 34): every money rule must
    // hold on the leased path too, with a short lease life for the crashes.
    let mut leased = match std::env::current_exe() {
        Ok(xtask) => Command::new(xtask),
        Err(_) => cargo(["run", "--quiet", "--package", "xtask", "--"]),
    };
    leased
        .args(["reliability", "--quick"])
        .env("ROUTER_CREDIT_LEASES", "1")
        .env("ROUTER_CREDIT_LEASE_TTL_SECS", "2")
        // Large enough a share that keys' spend limits are leased too.
        .env("ROUTER_CREDIT_LEASE_SHARE_PERCENT", "50")
        .current_dir(workspace_root());
    steps.push(Step {
        name: "reliability with leases",
        command: leased,
    });

    let total = steps.len();
    let mut results = Vec::with_capacity(total);
    for (index, mut step) in steps.into_iter().enumerate() {
        step.command
            .env("DATABASE_URL", &database_url)
            .stdin(Stdio::null());
        eprintln!(
            "\n==> xtask test [{}/{total}] {}: {}",
            index + 1,
            step.name,
            display(&step.command)
        );
        let step_started = Instant::now();
        let passed = match step.command.status() {
            Ok(status) => {
                if !status.success() {
                    // A full disk fails a step anywhere, in words of its own.
                    eprintln!(
                        "==> {} failed ({status}); {} free where it builds",
                        step.name,
                        free_space(&crate::target_dir())
                    );
                }
                status.success()
            }
            Err(error) => {
                eprintln!("==> {} could not start: {error}", step.name);
                false
            }
        };
        results.push((step.name, passed, step_started.elapsed()));
    }

    let all_passed = results.iter().all(|(_, passed, _)| *passed);
    let steps: Vec<String> = results
        .iter()
        .map(|(name, passed, took)| {
            let verdict = if *passed { "ok" } else { "FAILED" };
            format!("{name} {verdict} {}", duration(*took))
        })
        .collect();
    if all_passed {
        // A failed run keeps its databases for a look; a passed one has no use for them.
        match db::drop_test_databases(&database_url) {
            Ok(dropped) => eprintln!("xtask test: dropped {dropped} test databases"),
            Err(error) => eprintln!("xtask test: could not drop the test databases: {error:#}"),
        }
    }
    let verdict = if all_passed { "passed" } else { "FAILED" };
    eprintln!(
        "\nxtask test: {verdict} in {}: {}",
        duration(started.elapsed()),
        steps.join(", ")
    );
    Ok(all_passed)
}

/// The space left on the file system of `path`, as `df` reports it.
fn free_space(path: &std::path::Path) -> String {
    let output = Command::new("df").arg("-Pk").arg(path).output();
    let kib = output.ok().and_then(|o| {
        let text = String::from_utf8_lossy(&o.stdout).into_owned();
        text.lines()
            .nth(1)?
            .split_whitespace()
            .nth(3)?
            .parse::<u64>()
            .ok()
    });
    match kib {
        Some(kib) => format!("{:.1} GiB", kib as f64 / (1024.0 * 1024.0)),
        None => "an unknown amount".to_owned(),
    }
}

fn nextest_available() -> bool {
    cargo(["nextest", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

fn duration(took: Duration) -> String {
    let seconds = took.as_secs();
    if seconds < 60 {
        format!("{seconds}s")
    } else {
        format!("{}m{:02}s", seconds / 60, seconds % 60)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn free_space_is_read_from_df() {
        let free = free_space(&workspace_root());
        assert!(free.ends_with(" GiB"), "{free}");
        let gib: f64 = free.trim_end_matches(" GiB").parse().unwrap();
        assert!(gib >= 0.0);
        assert_eq!(
            free_space(std::path::Path::new("/no/such/place")),
            "an unknown amount"
        );
    }
}
