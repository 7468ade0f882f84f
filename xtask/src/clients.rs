//! `cargo xtask clients`: the real clients matrix (issue 29). Agent frameworks and client
//! libraries at pinned versions (`conformance/clients/requirements.txt`, installed once into
//! `target/clients/venv`) against a local router and mock supplier with the conformance
//! catalog, over `conformance/clients/expected.json`: client x case x route, each cell
//! declared `pass`, a documented setting it uses, or `n/a`. The Python runner
//! (`conformance/clients/clients.py`) checks what each client got and what the mock supplier
//! received, one JSON line per cell; this module compares them with the declarations, prints
//! the table and fails on any difference.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use serde_json::Value;
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::conformance::{Extras, python_venv, start_local};
use crate::services::Children;
use crate::{display, target_dir, workspace_root};

const REQUIREMENTS: &str = "conformance/clients/requirements.txt";
const RUNNER: &str = "conformance/clients/clients.py";
/// The AI SDK, and the coding agents (Claude Code, Codex CLI): two installs, so the large
/// one is redone only when its own pins change.
const AI_SDK: (&str, &str) = (
    "conformance/clients/node/package.json",
    "conformance/clients/node/package-lock.json",
);
const AGENTS: (&str, &str) = (
    "conformance/clients/agents/package.json",
    "conformance/clients/agents/package-lock.json",
);
const EXPECTED: &str = "conformance/clients/expected.json";
/// The runner reads the router API key from this variable (kept off its command line).
const API_KEY_ENV: &str = "CLIENTS_API_KEY";

/// (client, case, route)
type CellId = (String, String, String);

/// Returns whether every cell came out as declared.
pub fn run(args: &[String]) -> Result<bool> {
    let only = match args {
        [] => None,
        [flag, value] if flag == "--only" => Some(value.clone()),
        _ => bail!("usage: cargo xtask clients [--only TEXT]"),
    };
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let root = workspace_root();
    let expected = declared(&root.join(EXPECTED))?;
    let work = target_dir().join("clients");
    fs::create_dir_all(&work).with_context(|| format!("creating {}", work.display()))?;
    let python = python_venv(&work.join("venv"), REQUIREMENTS, "the agent clients")?;
    let ai_sdk = node_modules(&work.join("node"), AI_SDK, "the AI SDK")?;
    let agents = node_modules(&work.join("agents"), AGENTS, "Claude Code and Codex CLI")?;

    // Dropping `children` stops the router and the mock on every way out.
    let mut children = Children::default();
    let target = start_local(&work, &mut children, &stop, None, Extras::default())?;
    let mock_url = target
        .mock_url
        .clone()
        .context("the local run has a mock supplier")?;
    let results = work.join("results.jsonl");
    let _ = fs::remove_file(&results);
    let mut command = Command::new(&python);
    command
        .arg(root.join(RUNNER))
        .args(["--base-url", &target.base_url, "--mock-url", &mock_url])
        .arg("--expected")
        .arg(root.join(EXPECTED))
        .arg("--results")
        .arg(&results)
        .env(API_KEY_ENV, &target.api_key)
        .env("CLIENTS_WORK", &work)
        .env("CLIENTS_NODE_MODULES", &ai_sdk)
        .env("CLIENTS_CLAUDE", agents.join(".bin").join("claude"))
        .env("CLIENTS_CODEX", agents.join(".bin").join("codex"))
        // No client may reach anything but the loopback router.
        .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        .env("NO_PROXY", "127.0.0.1,localhost")
        .current_dir(&root)
        .stdin(Stdio::null());
    if let Some(only) = &only {
        command.args(["--only", only]);
    }
    eprintln!("xtask clients: {}", display(&command));
    let status = command
        .status()
        .context("could not start the clients runner")?;
    if !status.success() {
        eprintln!("xtask clients: the runner failed ({status})");
    }
    drop(children);

    let seen = read_results(&results)?;
    let mut unexpected = Vec::new();
    let mut passed = 0;
    let mut skipped = 0;
    println!(
        "{:<26} {:<11} {:<10} {:<9} declared",
        "client", "case", "route", "outcome"
    );
    for (id, declared) in &expected {
        let (client, case, route) = id;
        if only
            .as_deref()
            .is_some_and(|o| !format!("{client}/{case}/{route}").contains(o))
        {
            continue;
        }
        let (outcome, detail) = seen
            .get(id)
            .cloned()
            .unwrap_or_else(|| ("missing".to_owned(), String::new()));
        let want = if declared == "n/a" {
            "n/a"
        } else if declared.starts_with("refused: ") {
            "refused"
        } else {
            "pass"
        };
        println!("{client:<26} {case:<11} {route:<10} {outcome:<9} {declared}");
        if outcome == want {
            if want == "n/a" {
                skipped += 1;
            } else {
                passed += 1;
            }
        } else {
            unexpected.push(format!("{client}/{case}/{route}: {outcome} {detail}"));
        }
    }
    for line in &unexpected {
        println!("UNEXPECTED {line}");
    }
    println!("took {}s", started.elapsed().as_secs());
    println!(
        "clients: {passed} passed, {} failed, {skipped} skipped",
        unexpected.len()
    );
    Ok(unexpected.is_empty())
}

/// The pinned packages of `(package.json, package-lock.json)` under `prefix` (installed
/// again when the lock changes); returns their `node_modules`.
fn node_modules(
    prefix: &Path,
    (package, lock_file): (&str, &str),
    what: &str,
) -> Result<std::path::PathBuf> {
    let root = workspace_root();
    let lock =
        fs::read_to_string(root.join(lock_file)).with_context(|| format!("reading {lock_file}"))?;
    let modules = prefix.join("node_modules");
    let stamp = modules.join(".clients-package-lock.json");
    if fs::read_to_string(&stamp).unwrap_or_default() != lock {
        eprintln!("xtask clients: installing {what} into {}", prefix.display());
        fs::create_dir_all(prefix)?;
        fs::copy(root.join(package), prefix.join("package.json"))?;
        fs::copy(root.join(lock_file), prefix.join("package-lock.json"))?;
        let npm_ci = || {
            crate::run_checked(
                Command::new("npm")
                    .args(["ci", "--no-audit", "--no-fund", "--loglevel=error"])
                    .arg("--prefix")
                    .arg(prefix)
                    .stdin(Stdio::null())
                    .stdout(std::io::stderr()),
            )
        };
        npm_ci()?;
        // npm skips an optional package it fails to fetch or unpack (a full
        // disk, a dropped download) and still succeeds; the agents' native
        // binaries are such packages, so check for them and try once more.
        let mut missing = missing_platform_packages(prefix, &lock)?;
        if !missing.is_empty() {
            eprintln!(
                "xtask clients: npm left out {}; installing again",
                missing.join(", ")
            );
            npm_ci()?;
            missing = missing_platform_packages(prefix, &lock)?;
        }
        if !missing.is_empty() {
            bail!(
                "npm did not install {} for this platform (is the disk full, or the registry unreachable?)",
                missing.join(", ")
            );
        }
        fs::write(&stamp, &lock)?;
    }
    Ok(modules)
}

/// The optional packages of `lock` meant for this machine (its `os`, `cpu`
/// and, where named, glibc) that are not under `prefix/node_modules`.
fn missing_platform_packages(prefix: &Path, lock: &str) -> Result<Vec<String>> {
    let lock: Value = serde_json::from_str(lock).context("reading the package lock")?;
    let os = match std::env::consts::OS {
        "macos" => "darwin",
        "windows" => "win32",
        other => other,
    };
    let cpu = match std::env::consts::ARCH {
        "x86_64" => "x64",
        "aarch64" => "arm64",
        other => other,
    };
    let names = |field: &Value| -> Option<Vec<String>> {
        field.as_array().map(|items| {
            items
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
    };
    let fits =
        |field: &Value, wanted: &str| names(field).is_none_or(|v| v.iter().any(|n| n == wanted));
    let mut missing = Vec::new();
    let packages = lock["packages"]
        .as_object()
        .context("the lock's `packages`")?;
    for (path, package) in packages {
        let meant_here = package["optional"] == Value::Bool(true)
            && fits(&package["os"], os)
            && fits(&package["cpu"], cpu)
            && fits(&package["libc"], "glibc");
        if meant_here && !prefix.join(path).join("package.json").is_file() {
            missing.push(path.trim_start_matches("node_modules/").to_owned());
        }
    }
    Ok(missing)
}

/// Every cell of `expected.json`: `pass`, `n/a`, or the setting it uses (as text).
fn declared(path: &Path) -> Result<BTreeMap<CellId, String>> {
    let text = fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let value: Value = serde_json::from_str(&text)?;
    let mut cells = BTreeMap::new();
    let clients = value["cells"].as_object().context("`cells` is an object")?;
    for (client, cases) in clients {
        for (case, routes) in cases.as_object().context("a client's cases")? {
            for (route, outcome) in routes.as_object().context("a case's routes")? {
                let outcome = match outcome {
                    Value::String(s) if s == "pass" || s == "n/a" => s.clone(),
                    Value::Object(o) => match (
                        o.get("setting").and_then(Value::as_str),
                        o.get("refused").and_then(Value::as_str),
                    ) {
                        (Some(setting), None) => format!("setting: {setting}"),
                        (None, Some(words)) => format!("refused: {words}"),
                        _ => bail!(
                            "{client}/{case}/{route}: an object names its `setting` or `refused`"
                        ),
                    },
                    other => bail!("{client}/{case}/{route}: unknown outcome {other}"),
                };
                cells.insert((client.clone(), case.clone(), route.clone()), outcome);
            }
        }
    }
    Ok(cells)
}

/// The runner's JSON lines: cell -> (outcome, detail).
fn read_results(path: &Path) -> Result<BTreeMap<CellId, (String, String)>> {
    let text = fs::read_to_string(path).unwrap_or_default();
    let mut seen = BTreeMap::new();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let record: Value = serde_json::from_str(line).context("a result line")?;
        let field = |name: &str| record[name].as_str().unwrap_or_default().to_owned();
        seen.insert(
            (field("client"), field("case"), field("route")),
            (field("outcome"), field("detail")),
        );
    }
    Ok(seen)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_committed_expectations_parse() {
        let cells = declared(&workspace_root().join(EXPECTED)).unwrap();
        assert!(cells.len() >= 40, "{}", cells.len());
        assert!(cells.values().any(|v| v.starts_with("setting: ")));
    }

    /// The CI run that lost Codex's native binary to a full disk: npm
    /// succeeded without it. An optional package for this machine that is
    /// absent is named; one for another machine is not.
    #[test]
    fn an_absent_optional_package_for_this_machine_is_named() {
        let prefix = target_dir().join("xtask-tests").join("platform-packages");
        let _ = fs::remove_dir_all(&prefix);
        let lock = serde_json::json!({ "packages": {
            "": { "name": "agents" },
            "node_modules/agent": { "version": "1.0.0" },
            "node_modules/agent-native": {
                "optional": true,
                "os": ["linux", "darwin", "win32"],
                "cpu": ["x64", "arm64"]
            },
            "node_modules/agent-elsewhere": { "optional": true, "os": ["aix"] },
            "node_modules/agent-musl": { "optional": true, "libc": ["musl"] }
        }})
        .to_string();
        assert_eq!(
            missing_platform_packages(&prefix, &lock).unwrap(),
            ["agent-native"]
        );
        let installed = prefix.join("node_modules/agent-native");
        fs::create_dir_all(&installed).unwrap();
        fs::write(installed.join("package.json"), "{}").unwrap();
        assert!(
            missing_platform_packages(&prefix, &lock)
                .unwrap()
                .is_empty()
        );
    }
}
