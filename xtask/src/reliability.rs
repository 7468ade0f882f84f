//! `cargo xtask reliability`: the reliability suite (`crates/router-reliability`) against the
//! real `router` binary, PostgreSQL from `db` and the mock supplier: concurrency with exact
//! admissions through a wallet, a key's spend limit, its monthly budget and two router
//! processes; the books sampled at REPEATABLE READ throughout (I1-I7); the fault matrix;
//! PostgreSQL cut, black-holed, a wallet row locked and down at boot; slow senders and idle
//! connections against every timeout; a connection flood; an SSRF corpus (request image
//! parts, channel destinations, supplier image downloads); SIGKILL at the crash points K1-K7
//! and in a reaper pass; a soak; a secrets grep of every log at TRACE. Each part prints one
//! figure line; the command fails on any violation. Both runs use the debug build, which has
//! the crash points (`router_core::failpoints`; a release build has them only with the
//! `failpoints` feature, and the project never builds a release with it); `--quick` (a step
//! of `cargo xtask test`) runs smaller limit cases, a smaller flood, one kill per crash point
//! instead of ten and no soak; `--soak-secs N` sets the soak's length (and runs it with
//! `--quick`).

use anyhow::{Result, bail};

use crate::{db, target_dir, workspace_root};

pub fn run(args: &[String]) -> Result<bool> {
    let mut quick = false;
    let mut only = None;
    let mut soak_secs = None;
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        match arg.as_str() {
            "--quick" => quick = true,
            "--only" => only = rest.next().cloned(),
            "--soak-secs" => soak_secs = rest.next().cloned(),
            other => {
                bail!("`reliability` takes --quick, --only PART and --soak-secs N, got {other}")
            }
        }
    }
    let database_url = db::ensure_postgres()?;
    crate::build_debug_binaries(&["router", "router-reliability"])?;
    let bin = target_dir().join("debug");
    let mut suite = std::process::Command::new(bin.join("router-reliability"));
    suite
        .arg("--router")
        .arg(bin.join("router"))
        .arg("--work")
        .arg(target_dir().join("reliability"))
        .env("DATABASE_URL", &database_url)
        .current_dir(workspace_root());
    if quick {
        suite.arg("--quick");
    }
    if let Some(only) = only {
        suite.args(["--only", &only]);
    }
    if let Some(secs) = soak_secs {
        suite.args(["--soak-secs", &secs]);
    }
    Ok(suite.status()?.success())
}
