//! `cargo xtask test`: the whole suite, as CI runs it, against the database from `db`.
//!
//! Steps: fmt check, clippy, tests (nextest when installed), doc tests, `cargo package` of the
//! published wire crates, then the conformance
//! matrix (`cargo xtask conformance`: the official SDKs against a local router and mock
//! supplier), the real clients' tool round trips (`cargo xtask clients --only /tool/`) and
//! schemathesis (`cargo xtask schemathesis`: the served OpenAPI document
//! against the router that serves it) and the quick reliability suite (`cargo xtask
//! reliability --quick`). Every step runs even after one fails, so a single run
//! shows everything that is wrong (tests run with `--no-fail-fast` for the same reason); the
//! last line sums up. Every step gets stdin from /dev/null, so nothing ever waits for a
//! person: CI runs this with `CI=true` and no terminal, and needs no other switch.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Result, bail};

use crate::{cargo, db, display, workspace_root};

/// The crates published for other services: the canonical model and the
/// six wire crates.
const PUBLISHED_CRATES: [&str; 7] = [
    "router-canonical",
    "router-chat",
    "router-messages",
    "router-responses",
    "router-completions",
    "router-images",
    "router-videos",
];

/// Where `cargo package` verifies, apart from the workspace's own builds.
/// Under the target dir cargo uses (`crate::target_dir`).
const PACKAGE_TARGET: &str = "package-verify";

/// Cargo verifies a package against its siblings through a temporary local
/// registry. It extracts each sibling under `$CARGO_HOME/registry/src` once
/// and then reuses that folder, and it takes a registry crate's build as
/// fresh by name and version alone; so a second run would verify against
/// the first run's sources. None of these crates comes from a real
/// registry: their extracted folders, and their builds in the verify
/// target, can go (the dependencies' builds stay).
fn forget_packaged_sources() {
    let ours = |name: &str| {
        let name = name.replace('_', "-");
        PUBLISHED_CRATES.iter().any(|published| {
            name.trim_start_matches("lib")
                .strip_prefix(published)
                .is_some_and(|rest| rest.is_empty() || rest.starts_with(['-', '.']))
        })
    };
    let remove_ours_in = |dir: std::path::PathBuf| {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            if ours(&entry.file_name().to_string_lossy()) {
                let path = entry.path();
                let _ = std::fs::remove_dir_all(&path).or_else(|_| std::fs::remove_file(&path));
            }
        }
    };
    let verify = crate::target_dir().join(PACKAGE_TARGET).join("debug");
    for sub in [".fingerprint", "deps", "build"] {
        remove_ours_in(verify.join(sub));
    }
    let cargo_home = std::env::var_os("CARGO_HOME")
        .map(std::path::PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME").map(|home| std::path::Path::new(&home).join(".cargo"))
        });
    if let Some(home) = cargo_home {
        for registry in std::fs::read_dir(home.join("registry").join("src"))
            .into_iter()
            .flatten()
            .flatten()
        {
            remove_ours_in(registry.path());
        }
    }
}

struct Step {
    name: &'static str,
    command: Command,
}

/// Returns whether every step passed.
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
    // package and build on its own, as `cargo publish` would check.
    forget_packaged_sources();
    let mut package = cargo(["package", "--allow-dirty", "--quiet"]);
    package.env("CARGO_TARGET_DIR", crate::target_dir().join(PACKAGE_TARGET));
    for krate in PUBLISHED_CRATES {
        package.args(["--package", krate]);
    }
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
                    eprintln!("==> {} failed ({status})", step.name);
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
