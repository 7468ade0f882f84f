//! `cargo xtask package`: the wire crates as their users get them.
//!
//! 1. `cargo package` of every published crate, with verification (each
//!    builds on its own against its packaged siblings, as `cargo publish`
//!    checks);
//! 2. the `.crate` files unpacked under the target dir into a workspace of
//!    their own, with `[patch.crates-io]` pointing each name at its unpacked
//!    package, and `wire-consumer/` (a crate outside the workspace, written
//!    as a user would) copied beside them;
//! 3. `cargo test` of that workspace: every package's own unit and doc tests
//!    from the unpacked sources, and the consumer's translations against the
//!    packages, never against the workspace's paths;
//! 4. `cargo semver-checks` (pinned, installed under the target dir on
//!    first use) of every published crate against the newest release tag
//!    `wire-v<version>` older than the manifests' version; before a second
//!    release exists there is nothing to compare, and the step says so;
//! 5. with the MSRV toolchain installed (`rustup toolchain install 1.88`),
//!    `cargo +1.88 check` of the same workspace; without it, clippy's
//!    `incompatible_msrv` lint (run by `cargo xtask test`) is the check.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, display, workspace_root};

/// The minimum supported Rust version of the published crates (their
/// manifests' `rust-version`).
const MSRV: &str = "1.88";

/// The `cargo-semver-checks` release the semver check installs and runs.
const SEMVER_CHECKS_VERSION: &str = "0.51.0";

/// A release of the family is tagged `wire-v<version>`.
const TAG_PREFIX: &str = "wire-v";

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

/// Package, unpack and test; whether every part passed.
pub fn run(args: &[String]) -> Result<bool> {
    if !args.is_empty() {
        bail!("`package` takes no arguments, got {args:?}");
    }
    let target = crate::target_dir().join(PACKAGE_TARGET);
    forget_packaged_sources();
    let mut package = cargo(["package", "--allow-dirty", "--quiet"]);
    package.env("CARGO_TARGET_DIR", &target);
    for krate in PUBLISHED_CRATES {
        package.args(["--package", krate]);
    }
    if !status_of(&mut package)? {
        return Ok(false);
    }
    let unpacked = target.join("unpacked");
    let members = unpack(&target.join("package"), &unpacked)?;
    copy_dir(
        &workspace_root().join("wire-consumer"),
        &unpacked.join("wire-consumer"),
    )?;
    write_workspace(&unpacked, &members)?;
    // The workspace's lock file pins the same third-party versions its
    // builds use (already fetched, so this works offline too).
    std::fs::copy(
        workspace_root().join("Cargo.lock"),
        unpacked.join("Cargo.lock"),
    )
    .context("copying Cargo.lock")?;
    let mut test = cargo(["test", "--workspace", "--no-fail-fast"]);
    test.current_dir(&unpacked).env("CARGO_TARGET_DIR", &target);
    let mut passed = status_of(&mut test)?;
    passed &= semver_check(&version_key(&workspace_version()?))?;
    if msrv_installed() {
        let mut check = Command::new("cargo");
        check
            .args([&format!("+{MSRV}"), "check", "--workspace", "--all-targets"])
            .current_dir(&unpacked)
            .env("CARGO_TARGET_DIR", target.join(format!("msrv-{MSRV}")));
        passed &= status_of(&mut check)?;
    } else {
        eprintln!(
            "xtask package: Rust {MSRV} is not installed; the MSRV is checked by clippy's \
             incompatible_msrv lint only (`rustup toolchain install {MSRV}` adds a build)"
        );
    }
    Ok(passed)
}

fn status_of(command: &mut Command) -> Result<bool> {
    eprintln!("xtask package: {}", display(command));
    let status = command
        .stdin(Stdio::null())
        .status()
        .with_context(|| format!("running {}", display(command)))?;
    Ok(status.success())
}

/// Unpack the newest `.crate` of every published crate into `into`
/// (emptied first); the names of the unpacked folders.
fn unpack(packages: &Path, into: &Path) -> Result<Vec<String>> {
    let _ = std::fs::remove_dir_all(into);
    std::fs::create_dir_all(into).with_context(|| format!("creating {}", into.display()))?;
    let version = workspace_version()?;
    let mut members = Vec::new();
    for krate in PUBLISHED_CRATES {
        let folder = format!("{krate}-{version}");
        let file = packages.join(format!("{folder}.crate"));
        let status = Command::new("tar")
            .arg("-xzf")
            .arg(&file)
            .arg("-C")
            .arg(into)
            .stdin(Stdio::null())
            .status()
            .with_context(|| format!("unpacking {}", file.display()))?;
        if !status.success() {
            bail!("could not unpack {}", file.display());
        }
        members.push(folder);
    }
    Ok(members)
}

/// The family's version, from `router-canonical`'s manifest (every published
/// crate has the same).
fn workspace_version() -> Result<String> {
    let manifest = std::fs::read_to_string(
        workspace_root()
            .join("crates")
            .join(PUBLISHED_CRATES[0])
            .join("Cargo.toml"),
    )
    .context("reading the family's manifest")?;
    manifest
        .lines()
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("version")?
                .trim()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .context("no version in router-canonical's manifest")
}

/// A workspace of the unpacked packages and the consumer, every published
/// name patched to its unpacked package.
fn write_workspace(root: &Path, members: &[String]) -> Result<()> {
    let mut manifest = String::from(
        "# Written by `cargo xtask package`: the packaged wire crates, unpacked.\n\
         [workspace]\nresolver = \"3\"\nmembers = [\"wire-consumer\"",
    );
    for member in members {
        manifest.push_str(&format!(", \"{member}\""));
    }
    manifest.push_str("]\n\n[patch.crates-io]\n");
    for (krate, member) in PUBLISHED_CRATES.iter().zip(members) {
        manifest.push_str(&format!("{krate} = {{ path = \"{member}\" }}\n"));
    }
    std::fs::write(root.join("Cargo.toml"), manifest).context("writing the workspace manifest")
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("creating {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let path: PathBuf = entry.path();
        if entry.file_type()?.is_dir() {
            if entry.file_name() != "target" {
                copy_dir(&path, &to.join(entry.file_name()))?;
            }
        } else {
            std::fs::copy(&path, to.join(entry.file_name()))
                .with_context(|| format!("copying {}", path.display()))?;
        }
    }
    Ok(())
}

fn msrv_installed() -> bool {
    Command::new("rustup")
        .args(["run", MSRV, "cargo", "--version"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// `0.2.0` as `[0, 2, 0]`, for ordering release tags.
fn version_key(version: &str) -> Vec<u64> {
    version
        .split('.')
        .map(|part| part.parse().unwrap_or(0))
        .collect()
}

/// The newest `wire-v*` tag older than `current`, if any.
fn previous_release(current: &[u64]) -> Result<Option<String>> {
    let output = Command::new("git")
        .args(["tag", "--list", &format!("{TAG_PREFIX}*")])
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .context("listing the release tags")?;
    let mut older: Vec<(Vec<u64>, String)> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .filter_map(|tag| {
            let key = version_key(tag.strip_prefix(TAG_PREFIX)?);
            (key.as_slice() < current).then(|| (key, tag.to_owned()))
        })
        .collect();
    older.sort();
    Ok(older.pop().map(|(_, tag)| tag))
}

/// `cargo semver-checks` of every published crate against the previous
/// release; whether it passed (true when there is none to compare).
fn semver_check(current: &[u64]) -> Result<bool> {
    let Some(baseline) = previous_release(current)? else {
        eprintln!(
            "xtask package: no release tag `{TAG_PREFIX}*` older than this version: \
             no semver baseline yet"
        );
        return Ok(true);
    };
    let tools = crate::target_dir().join("tools");
    let installed = tools.join("bin").join("cargo-semver-checks");
    let runs = |program: &Path| {
        Command::new(program)
            .args(["semver-checks", "--version"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|status| status.success())
    };
    if !runs(&installed) {
        let mut install = cargo(["install", "cargo-semver-checks", "--locked"]);
        install
            .args(["--version", SEMVER_CHECKS_VERSION, "--root"])
            .arg(&tools);
        if !status_of(&mut install)? {
            return Ok(false);
        }
    }
    let mut check = Command::new(&installed);
    check
        .args([
            "semver-checks",
            "check-release",
            "--baseline-rev",
            &baseline,
        ])
        .current_dir(workspace_root());
    for krate in PUBLISHED_CRATES {
        check.args(["--package", krate]);
    }
    status_of(&mut check)
}
