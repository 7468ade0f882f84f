//! `cargo xtask`: the project's automation in plain Rust: a database, the test suite, a demo,
//! the conformance matrix, schemathesis and the benchmark.
//!
//! Run through the alias in `.cargo/config.toml`, so the only tool a contributor needs is
//! cargo. Each command lives in its own module; this file parses the command line and holds
//! what they share (where the workspace and its target dir are, how to call cargo).

mod bench;
mod browser;
mod clients;
mod conformance;
mod db;
mod demo;
mod package;
mod reliability;
mod schemathesis;
mod services;
mod test;
mod tidy;

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};

const USAGE: &str = "\
usage: cargo xtask <command> [options]

commands:
  db [start]    find or start PostgreSQL; the last line of stdout is DATABASE_URL=...
  db stop       stop the private cluster that `db` started
  test          fmt, clippy, tests, doc tests, the conformance matrix, the browser tests and
                schemathesis, against the database from `db`
  demo          build and run the gateway with a mock supplier, an account and an API key
      --listen ADDR   address for the gateway (default 127.0.0.1:8080)
      --supplier-listen ADDR, --smtp-listen ADDR   the mock supplier's HTTP and SMTP
                      addresses (default 127.0.0.1:9100 and 127.0.0.1:9125)
      --no-build      use the release binaries already in the target dir
      --debug         the debug binaries instead
      --check         run every step, check the files landed under the target dir, stop
  conformance   the official OpenAI and Anthropic SDKs (Python and Node) against a local
                router and mock supplier, over conformance/matrix.json; fails on any
                cell that differs from the matrix
      --against URL   run against a deployed router instead (no mock; shape checks only)
      --key KEY       its inference API key (or CONFORMANCE_API_KEY)
      --catalog-models chat=M,responses=M,messages=M
                      with --against: the model whose only route speaks each protocol
      --client python|node   only this client (repeatable; default both)
      --only TEXT     only cells whose id inbound/case/route/json|stream contains TEXT
  clients       agent frameworks and client libraries (OpenAI Agents SDK, LangChain,
                pydantic-ai, litellm, the llm CLI) at pinned versions against a local
                router and mock supplier, over conformance/clients/expected.json
      --only TEXT     only cells whose id client/case/route contains TEXT
  browser       the account dashboard in headless Chromium (Debian's chromium and
                chromium-driver, installed when missing) against a local router and mock
                supplier: sign-in by mailed link, usage, keys, digests, data protection, a
                cross-origin post; screenshots in target/dashboard-screenshots/
  schemathesis  Schemathesis with every check against /openapi.json of a local router and
                mock supplier; fails on any failure
      --max-examples N   test cases per operation and phase (default 12)
  bench         added latency, throughput, CPU and memory of the gateway (billing on, one
                core) against a fixed-reply upstream called directly; writes
                target/bench/report.md and report.json (docs/performance.md)
      --quick         short load steps (about 3 minutes in all)
      --duration SECS seconds per load step (default 20; 3 with --quick)
      --protocols chat,messages,responses,completions   inbound surfaces to measure
      --peers litellm,portkey   install and measure these gateways in the same run
      --profile       sample the router with perf under saturation; name the top costs
      --scale-out     add a second router process behind the same PostgreSQL
      --no-build      use the release binaries already in the target dir
  package       cargo package (verified) of the published wire crates, then their own tests
                from the unpacked packages and wire-consumer/ built against them
  reliability   the reliability suite against the real router binary, PostgreSQL and the
                mock supplier: N=1000/K=137 concurrency (wallet, spend limit, monthly
                budget, two routers), I1-I7 sampled at REPEATABLE READ, PostgreSQL
                cut, black-holed, a wallet row locked and down at boot, slow clients
                against every timeout, a connection flood, an SSRF corpus, SIGKILL at
                the crash points K1-K7 and in a reaper pass (the debug build), a soak,
                secrets in logs at TRACE; one figure line a part
      --quick         smaller limit cases, flood and kill counts, no soak (a step of `test`)
      --only PART     only parts whose name contains PART
      --soak-secs N   the soak's length (default 600 s; with --quick, runs it)
  help          print this text";

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, rest) = match args.split_first() {
        Some((command, rest)) => (command.as_str(), rest),
        None => ("help", &[][..]),
    };
    let outcome = match command {
        "db" => db::run(rest).map(|()| true),
        "test" => test::run(rest),
        "demo" => demo::run(rest).map(|()| true),
        "conformance" => conformance::run(rest),
        "clients" => clients::run(rest),
        "schemathesis" => schemathesis::run(rest),
        "browser" => browser::run(rest),
        "package" => package::run(rest),
        "bench" => bench::run(rest),
        "reliability" => reliability::run(rest),
        "help" | "-h" | "--help" => {
            println!("{USAGE}");
            Ok(true)
        }
        other => {
            eprintln!("xtask: unknown command `{other}`\n\n{USAGE}");
            Ok(false)
        }
    };
    match outcome {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("xtask {command}: error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// The workspace root: the parent of this crate's manifest dir, wherever the clone lives.
pub fn workspace_root() -> PathBuf {
    let xtask_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    xtask_dir.parent().unwrap_or(xtask_dir).to_path_buf()
}

/// The target dir cargo actually uses, asked of `cargo metadata` once, so
/// that `CARGO_TARGET_DIR`, `CARGO_BUILD_TARGET_DIR` and `build.target-dir`
/// in a cargo config all count (issue 30: the demo wrote under `target/` of
/// the workspace while cargo built elsewhere, and stopped on a missing
/// folder). Created if missing, so a command can write into it at once.
pub fn target_dir() -> PathBuf {
    static TARGET: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    TARGET
        .get_or_init(|| {
            let dir = cargo_target_dir(metadata()).unwrap_or_else(|| {
                match std::env::var_os("CARGO_TARGET_DIR") {
                    Some(dir) if !dir.is_empty() => workspace_root().join(dir),
                    _ => workspace_root().join("target"),
                }
            });
            let _ = std::fs::create_dir_all(&dir);
            dir
        })
        .clone()
}

/// `cargo metadata`, as [`target_dir`] asks it.
fn metadata() -> Command {
    cargo([
        "metadata",
        "--format-version",
        "1",
        "--no-deps",
        "--offline",
    ])
}

/// `target_directory` of `metadata` (a `cargo metadata` command), or
/// `None` if cargo cannot say.
fn cargo_target_dir(mut metadata: Command) -> Option<PathBuf> {
    let output = metadata.stderr(std::process::Stdio::null()).output().ok()?;
    if !output.status.success() {
        return None;
    }
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).ok()?;
    metadata["target_directory"].as_str().map(PathBuf::from)
}

/// A cargo command run from the workspace root, with the cargo that launched us when known
/// (cargo sets `CARGO` for `cargo run`), so the pinned toolchain is used throughout.
pub fn cargo<I, S>(args: I) -> Command
where
    I: IntoIterator<Item = S>,
    S: AsRef<std::ffi::OsStr>,
{
    let program = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut command = Command::new(program);
    command.args(args).current_dir(workspace_root());
    command
}

/// Builds the named debug binaries of the workspace into `target_dir()/debug`.
///
/// Always with `--workspace`: cargo resolves features over the packages it
/// is given, so `-p router -p X` gives every different X its own build of
/// tokio and everything above it. Resolved over the whole workspace, the
/// conformance, demo and reliability steps share one build of the router,
/// which is minutes and gigabytes less in a CI run.
pub(crate) fn build_debug_binaries(bins: &[&str]) -> Result<()> {
    let mut build = cargo(["build", "--workspace"]);
    for bin in bins {
        build.args(["--bin", bin]);
    }
    run_checked(&mut build)
}

/// A command as a person would type it, for progress lines and error messages.
pub fn display(command: &Command) -> String {
    let program = Path::new(command.get_program());
    // Show `cargo`, not the toolchain path that `CARGO` holds.
    let program = match program.file_name() {
        Some(name) if name == "cargo" => name.to_string_lossy(),
        _ => program.to_string_lossy(),
    };
    let mut line = program.into_owned();
    for arg in command.get_args() {
        let arg = arg.to_string_lossy();
        line.push(' ');
        if arg.is_empty() || arg.contains([' ', '"', '\'']) {
            line.push_str(&format!("{arg:?}"));
        } else {
            line.push_str(&arg);
        }
    }
    line
}

/// Runs a command to completion with its output streamed through; fails on a non-zero exit.
pub fn run_checked(command: &mut Command) -> Result<()> {
    let status = command
        .status()
        .with_context(|| format!("could not run `{}`", display(command)))?;
    anyhow::ensure!(status.success(), "`{}` failed ({status})", display(command));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 30: xtask writes where cargo builds, whatever says where that
    /// is: `CARGO_TARGET_DIR` absolute or relative, or a cargo config.
    #[test]
    fn the_target_dir_is_the_one_cargo_uses() {
        let elsewhere = std::env::temp_dir().join(format!("xtask-target-{}", std::process::id()));
        let mut command = metadata();
        command.env("CARGO_TARGET_DIR", &elsewhere);
        assert_eq!(cargo_target_dir(command), Some(elsewhere.clone()));

        let mut command = metadata();
        command.env("CARGO_TARGET_DIR", "shared-target");
        assert_eq!(
            cargo_target_dir(command),
            Some(workspace_root().join("shared-target"))
        );

        let mut command = metadata();
        command
            .env_remove("CARGO_TARGET_DIR")
            .env("CARGO_BUILD_TARGET_DIR", &elsewhere);
        assert_eq!(cargo_target_dir(command), Some(elsewhere));
    }

    /// The demo's files (the generated image, the object store) and the
    /// package check go under that directory, which exists once asked for.
    #[test]
    fn every_xtask_output_is_under_the_target_dir() {
        let target = target_dir();
        assert!(target.is_dir(), "{}", target.display());
        let sources = [
            "src/demo.rs",
            "src/test.rs",
            "src/bench.rs",
            "src/conformance.rs",
        ];
        for source in sources {
            let text =
                std::fs::read_to_string(workspace_root().join("xtask").join(source)).unwrap();
            for (n, line) in text.lines().enumerate() {
                let code = line.split("//").next().unwrap_or_default();
                assert!(
                    !code.contains("join(\"target") && !code.contains("\"target/"),
                    "{source}:{}: writes under the workspace's target/, not target_dir(): {line}",
                    n + 1
                );
            }
        }
    }
}
