//! Other gateways in the same run, on the same upstreams and the same core as the router:
//! the LiteLLM proxy (PyPI, in a virtualenv under `target/bench/peers/litellm`) and the
//! Portkey gateway (npm, under `target/bench/peers/portkey`), both at pinned versions. They
//! are measured on Chat Completions only, the one surface both proxy to an OpenAI-compatible
//! upstream without translation.

use std::fs;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result, bail};

use crate::run_checked;
use crate::services::{Children, answers, free_loopback_port, http, random_hex};

use super::upstream::{Upstreams, pinned};
use super::{Call, ROUTER_CORE};

pub(crate) const LITELLM_VERSION: &str = "1.106.0";
pub(crate) const PORTKEY_VERSION: &str = "1.15.2";
/// LiteLLM imports a great deal before it listens; on a busy core that takes a while.
const READY_TIMEOUT: Duration = Duration::from_secs(240);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Peer {
    LiteLlm,
    Portkey,
}

impl Peer {
    pub(crate) fn parse(name: &str) -> Result<Peer> {
        match name {
            "litellm" => Ok(Peer::LiteLlm),
            "portkey" => Ok(Peer::Portkey),
            other => bail!("unknown peer `{other}`; expected litellm or portkey"),
        }
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Peer::LiteLlm => "litellm",
            Peer::Portkey => "portkey",
        }
    }

    pub(crate) fn version(self) -> &'static str {
        match self {
            Peer::LiteLlm => LITELLM_VERSION,
            Peer::Portkey => PORTKEY_VERSION,
        }
    }
}

/// A peer that answers, and how to call it.
pub(crate) struct RunningPeer {
    pub(crate) peer: Peer,
    /// What callers present: LiteLLM's master key (it refuses to start without one).
    key: String,
    pub(crate) addr: String,
    pub(crate) pid: Option<u32>,
    fixed_base: String,
    paced_base: String,
}

impl RunningPeer {
    /// A Chat Completions request through the peer, to the fixed or the paced upstream.
    pub(crate) fn call(&self, stream: bool, body: &str) -> Call {
        match self.peer {
            // The proxy maps its model names to the upstreams (see `litellm_config`).
            Peer::LiteLlm => Call {
                addr: self.addr.clone(),
                path: "/v1/chat/completions".to_owned(),
                headers: vec![("authorization".to_owned(), format!("Bearer {}", self.key))],
                body: body.to_owned(),
            },
            // Portkey takes the upstream from headers on each request.
            Peer::Portkey => {
                let base = if stream {
                    &self.paced_base
                } else {
                    &self.fixed_base
                };
                Call {
                    addr: self.addr.clone(),
                    path: "/v1/chat/completions".to_owned(),
                    headers: vec![
                        ("authorization".to_owned(), format!("Bearer {}", self.key)),
                        ("x-portkey-provider".to_owned(), "openai".to_owned()),
                        ("x-portkey-custom-host".to_owned(), base.clone()),
                    ],
                    body: body.to_owned(),
                }
            }
        }
    }
}

/// Installs the peer's pinned version under `dir` unless it is there already.
pub(crate) fn install(peer: Peer, dir: &Path) -> Result<()> {
    let pin = match peer {
        Peer::LiteLlm => format!("litellm[proxy]=={LITELLM_VERSION}"),
        Peer::Portkey => format!("@portkey-ai/gateway@{PORTKEY_VERSION}"),
    };
    let stamp = dir.join("bench-pin.txt");
    if fs::read_to_string(&stamp).is_ok_and(|installed| installed.trim() == pin) {
        return Ok(());
    }
    eprintln!("xtask bench: installing {pin} into {}", dir.display());
    match peer {
        Peer::LiteLlm => {
            let python = dir.join("bin/python");
            if !python.is_file() {
                run_checked(Command::new("python3").args(["-m", "venv"]).arg(dir))?;
            }
            run_checked(
                Command::new(&python)
                    .args(["-m", "pip", "install", "--disable-pip-version-check"])
                    .args(["--no-input", "--quiet", &pin])
                    .stdin(Stdio::null())
                    .stdout(std::io::stderr()),
            )?;
        }
        Peer::Portkey => {
            fs::create_dir_all(dir)?;
            run_checked(
                Command::new("npm")
                    .args(["install", "--no-audit", "--no-fund", "--loglevel=error"])
                    .arg("--prefix")
                    .arg(dir)
                    .arg(&pin)
                    .stdin(Stdio::null())
                    .stdout(std::io::stderr()),
            )?;
        }
    }
    fs::write(&stamp, format!("{pin}\n"))?;
    Ok(())
}

/// Starts the peer pinned to the router's core, pointed at the bench's upstreams.
pub(crate) fn start(
    peer: Peer,
    dir: &Path,
    logs: &Path,
    upstreams: &Upstreams,
    children: &mut Children,
    stop: &AtomicBool,
) -> Result<RunningPeer> {
    let addr = format!("127.0.0.1:{}", free_loopback_port()?);
    let port = addr.rsplit(':').next().unwrap_or_default().to_owned();
    let fixed_base = format!("http://{}/v1", upstreams.fixed);
    let paced_base = format!("http://{}/v1", upstreams.paced);
    let name = peer.name();
    let key = format!("sk-bench-{}", random_hex(24)?);
    let mut command = match peer {
        Peer::LiteLlm => {
            let config = dir.join("bench-config.yaml");
            fs::write(&config, litellm_config(&fixed_base, &paced_base))?;
            let mut command = pinned(ROUTER_CORE, dir.join("bin/litellm"));
            command
                .arg("--config")
                .arg(&config)
                .args(["--host", "127.0.0.1", "--port", &port, "--num_workers", "1"])
                // No fetch of the model price list from the network; no telemetry.
                .env("LITELLM_MASTER_KEY", &key)
                .env("LITELLM_LOCAL_MODEL_COST_MAP", "True")
                .env("LITELLM_LOG", "ERROR")
                // A DATABASE_URL would make the proxy want its own Prisma schema there.
                .env_remove("DATABASE_URL");
            command
        }
        Peer::Portkey => {
            let server = dir.join("node_modules/@portkey-ai/gateway/build/start-server.js");
            let mut command = pinned(ROUTER_CORE, "node");
            command
                .arg(server)
                .arg(format!("--port={port}"))
                .arg("--headless")
                .env("NODE_ENV", "production");
            command
        }
    };
    command.stdin(Stdio::null());
    children.spawn_logged(name, command, &logs.join(format!("{name}.log")))?;
    let ready = |addr: &str| match peer {
        Peer::LiteLlm => matches!(
            http(addr, "GET", "/health/liveliness", None, None),
            Ok(response) if response.status == 200
        ),
        Peer::Portkey => answers(addr),
    };
    children
        .wait_until(name, stop, READY_TIMEOUT, || ready(&addr))
        .with_context(|| format!("see {}", logs.join(format!("{name}.log")).display()))?;
    Ok(RunningPeer {
        peer,
        key,
        pid: children.pid(name),
        addr,
        fixed_base,
        paced_base,
    })
}

/// The last line of the peer's log that names an error, to say why a request failed. The
/// peer may log after it answered, so this waits a moment first.
pub(crate) fn last_error_line(peer: Peer, logs: &Path) -> Option<String> {
    std::thread::sleep(Duration::from_secs(1));
    let log = fs::read_to_string(logs.join(format!("{}.log", peer.name()))).ok()?;
    error_line(&log)
}

fn error_line(log: &str) -> Option<String> {
    log.lines()
        .rev()
        .filter(|line| !line.contains("Starting AI Gateway"))
        .find(|line| line.contains("Error:") || line.contains("Error "))
        .map(|line| line.trim().chars().take(160).collect())
}

fn litellm_config(fixed_base: &str, paced_base: &str) -> String {
    let model = |name: &str, base: &str| {
        format!(
            "  - model_name: {name}\n    litellm_params:\n      model: openai/bench-up-chat\n      \
             api_base: {base}\n      api_key: bench\n"
        )
    };
    format!(
        "model_list:\n{}{}litellm_settings:\n  telemetry: false\n  drop_params: true\n",
        model("bench-chat", fixed_base),
        model("bench-chat-paced", paced_base),
    )
}

#[cfg(test)]
mod tests {
    use super::{Peer, litellm_config};

    #[test]
    fn peers_parse_by_name() {
        assert_eq!(Peer::parse("litellm").unwrap(), Peer::LiteLlm);
        assert_eq!(Peer::parse("portkey").unwrap(), Peer::Portkey);
        assert!(Peer::parse("kong").is_err());
    }

    #[test]
    fn the_error_line_skips_the_banner_and_the_stack() {
        let log = "⠋ Starting AI Gateway... Error handling on\ntryTargetsRecursively error:  immutable undefined TypeError: immutable\n    at appendHeader (node:internal/deps/undici/undici:8874:15)\n";
        assert_eq!(
            super::error_line(log).as_deref(),
            Some("tryTargetsRecursively error:  immutable undefined TypeError: immutable")
        );
    }

    #[test]
    fn the_litellm_config_names_both_upstreams() {
        let config = litellm_config("http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1");
        assert!(config.contains("model_name: bench-chat\n"));
        assert!(config.contains("model_name: bench-chat-paced\n"));
        assert!(config.contains("api_base: http://127.0.0.1:2/v1"));
    }
}
