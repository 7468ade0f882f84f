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
//! 4. with the MSRV toolchain installed (`rustup toolchain install 1.88`),
//!    `cargo +1.88 check` of the same workspace; without it, clippy's
//!    `incompatible_msrv` lint (run by `cargo xtask test`) is the check.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};

use crate::{cargo, display, workspace_root};

/// The minimum supported Rust version of the published crates (their
/// manifests' `rust-version`).
const MSRV: &str = "1.88";

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

/// The family's version, from the workspace manifest.
fn workspace_version() -> Result<String> {
    let manifest = std::fs::read_to_string(workspace_root().join("Cargo.toml"))
        .context("reading Cargo.toml")?;
    manifest
        .lines()
        .skip_while(|line| line.trim() != "[workspace.package]")
        .find_map(|line| {
            let value = line
                .trim()
                .strip_prefix("version")?
                .trim()
                .strip_prefix('=')?;
            Some(value.trim().trim_matches('"').to_owned())
        })
        .context("no version in [workspace.package]")
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
