//! `cargo xtask bench`: the gateway's added latency, throughput and footprint, measured
//! against the same upstream called directly, with billing on, in one run.
//!
//! The router runs pinned to core 0 (`taskset`); everything else (nginx, the mock
//! suppliers, oha, PostgreSQL) runs on core 1, so the router's figures are one core's worth.
//! Peers (LiteLLM, Portkey) run on core 0 in turn, pointed at the same upstreams. The report
//! goes to `target/bench/report.md` and `target/bench/report.json`.

mod load;
mod peers;
mod postgres;
mod proc_stats;
mod profile;
mod provenance;
mod report;
mod scale_out;
mod stream_client;
mod uploads;
mod upstream;

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::services::{
    Children, for_each_flag, free_loopback_port, http, provision, provision_account,
    provision_with_policy, random_hex, release_binaries,
};
use crate::{db, run_checked, target_dir, workspace_root};

use load::{Figures, Shape};
use peers::Peer;
use proc_stats::Usage;
use proc_stats::{Cores, GroupCpu, Sampler};
use report::{
    CpuPerRequest, CrossCore, DocsSearch, KeyCase, KeyPolicies, OpenStreams, Outcome,
    ProtocolResult, Report, RoutingPolicies, Statements, Subject,
};

/// The core the router (and each peer, in turn) runs on.
pub(crate) const ROUTER_CORE: u32 = 0;
/// The core of everything else: upstreams, load generator, PostgreSQL.
pub(crate) const LOAD_CORE: u32 = 1;

const CATALOG: &str = "fixtures/bench-catalog.toml";
const SUPPLIER_KEY_ENV: &str = "BENCH_SUPPLIER_API_KEY";
/// The database each run creates afresh on the server of `cargo xtask db`.
const BENCH_DATABASE: &str = "router_bench";
/// $1,000,000 in nano-USD: billions of bench requests at a few micro-dollars each.
const CREDITS_NANO_USD: i64 = 1_000_000_000_000_000;
const FIXED_RATES: [u32; 3] = [200, 1000, 5000];
const OPEN_STREAMS: usize = 1000;
/// How long after the load the settled idle figure is taken: past jemalloc's 10 s decay.
const SETTLE: Duration = Duration::from_secs(20);
const ROUTER_READY: Duration = Duration::from_secs(60);
const PROMPT: &str = "Say hello to the benchmark.";

const USAGE: &str = "usage: cargo xtask bench [--quick] [--duration SECS] [--protocols chat,messages,responses,completions] [--peers litellm,portkey] [--profile] [--scale-out] [--docs-only] [--uploads-only] [--streams-only] [--leases] [--no-build]";
/// The documentation search measured (`GET /v1/docs?q=...`): a few terms, as an agent asks.
const DOCS_QUERY: &str = "q=streaming+usage+cost&limit=4";
/// The rate of the docs search case (the figure: p50 and p99 at 1,000 rps).
const DOCS_RATE: u32 = 1000;

/// One HTTP request to send, again and again.
#[derive(Clone, Debug)]
pub(crate) struct Call {
    pub(crate) addr: String,
    /// With its query string, if any.
    pub(crate) path: String,
    pub(crate) headers: Vec<(String, String)>,
    /// JSON to POST; empty for a GET.
    pub(crate) body: String,
}

/// An inbound API surface of the router.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Protocol {
    Chat,
    Messages,
    Responses,
    Completions,
}

impl Protocol {
    const ALL: [Protocol; 4] = [
        Protocol::Chat,
        Protocol::Messages,
        Protocol::Responses,
        Protocol::Completions,
    ];

    fn parse(name: &str) -> Result<Protocol> {
        Protocol::ALL
            .into_iter()
            .find(|protocol| protocol.name() == name)
            .with_context(|| {
                format!(
                    "unknown protocol `{name}`; expected chat, messages, responses or completions"
                )
            })
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Protocol::Chat => "chat",
            Protocol::Messages => "messages",
            Protocol::Responses => "responses",
            Protocol::Completions => "completions",
        }
    }

    pub(crate) fn title(self) -> &'static str {
        match self {
            Protocol::Chat => "Chat Completions",
            Protocol::Messages => "Messages",
            Protocol::Responses => "Responses",
            Protocol::Completions => "Completions",
        }
    }

    fn inbound_path(self) -> &'static str {
        match self {
            Protocol::Chat => "/v1/chat/completions",
            Protocol::Messages => "/v1/messages",
            Protocol::Responses => "/v1/responses",
            Protocol::Completions => "/v1/completions",
        }
    }

    /// The supplier path of the route behind it (Completions goes to a Chat route).
    fn upstream_path(self) -> &'static str {
        match self {
            Protocol::Chat | Protocol::Completions => "/v1/chat/completions",
            Protocol::Messages => "/v1/messages",
            Protocol::Responses => "/v1/responses",
        }
    }

    fn model(self, stream: bool) -> &'static str {
        match (self, stream) {
            (Protocol::Chat | Protocol::Completions, false) => "bench-chat",
            (Protocol::Chat | Protocol::Completions, true) => "bench-chat-paced",
            (Protocol::Messages, false) => "bench-messages",
            (Protocol::Messages, true) => "bench-messages-paced",
            (Protocol::Responses, false) => "bench-responses",
            (Protocol::Responses, true) => "bench-responses-paced",
        }
    }

    /// The body a client sends to the router.
    fn router_body(self, model: &str, stream: bool) -> String {
        let mut body = match self {
            Protocol::Chat => json!({
                "model": model,
                "messages": [{ "role": "user", "content": PROMPT }],
                "max_tokens": 64,
            }),
            Protocol::Messages => json!({
                "model": model,
                "max_tokens": 64,
                "messages": [{ "role": "user", "content": PROMPT }],
            }),
            Protocol::Responses => json!({
                "model": model,
                "input": PROMPT,
                "max_output_tokens": 64,
            }),
            Protocol::Completions => json!({
                "model": model,
                "prompt": PROMPT,
                "max_tokens": 64,
            }),
        };
        if stream {
            body["stream"] = json!(true);
        }
        body.to_string()
    }

    /// The body the router sends upstream, roughly: what a client calling the upstream
    /// directly sends.
    fn upstream_body(self, stream: bool) -> String {
        let mut body = match self {
            Protocol::Chat | Protocol::Completions => {
                let mut body = json!({
                    "model": "bench-up-chat",
                    "messages": [{ "role": "user", "content": PROMPT }],
                    "max_tokens": 64,
                });
                if stream {
                    body["stream_options"] = json!({ "include_usage": true });
                }
                body
            }
            Protocol::Messages => json!({
                "model": "bench-up-messages",
                "max_tokens": 64,
                "messages": [{ "role": "user", "content": PROMPT }],
            }),
            Protocol::Responses => json!({
                "model": "bench-up-responses",
                "input": PROMPT,
                "max_output_tokens": 64,
            }),
        };
        if stream {
            body["stream"] = json!(true);
        }
        body.to_string()
    }

    /// Headers the protocol requires besides the key.
    fn extra_headers(self) -> Vec<(String, String)> {
        match self {
            Protocol::Messages => vec![("anthropic-version".to_owned(), "2023-06-01".to_owned())],
            _ => Vec::new(),
        }
    }

    /// What the last event of a complete stream carries.
    fn end_marker(self) -> &'static str {
        match self {
            Protocol::Chat | Protocol::Completions => "[DONE]",
            Protocol::Messages => "message_stop",
            Protocol::Responses => "response.completed",
        }
    }

    /// The end marker of the upstream's dialect.
    fn upstream_end_marker(self) -> &'static str {
        match self {
            Protocol::Completions => Protocol::Chat.end_marker(),
            other => other.end_marker(),
        }
    }
}

struct Options {
    quick: bool,
    /// `--leases`: the router runs with credit leases (`ROUTER_CREDIT_LEASES=1`).
    leases: bool,
    duration: Duration,
    protocols: Vec<Protocol>,
    peers: Vec<Peer>,
    profile: bool,
    scale_out: bool,
    /// Only the documentation search case (with start-up and the smoke test).
    docs_only: bool,
    /// Only the upload case (with start-up and the smoke test).
    uploads_only: bool,
    /// Only the open streams case, on a fresh router, with the idle figures around it.
    streams_only: bool,
    build: bool,
}

impl Options {
    /// Streams per streaming sample, and how many run at once.
    fn streams(&self) -> (usize, usize) {
        if self.quick { (50, 5) } else { (200, 10) }
    }
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        quick: false,
        leases: false,
        duration: Duration::from_secs(20),
        protocols: Protocol::ALL.to_vec(),
        peers: Vec::new(),
        profile: false,
        scale_out: false,
        docs_only: false,
        uploads_only: false,
        streams_only: false,
        build: true,
    };
    let mut duration = None;
    for_each_flag(args, |flag, value| {
        match flag {
            "--quick" => options.quick = true,
            "--leases" => options.leases = true,
            "--no-build" => options.build = false,
            "--profile" => options.profile = true,
            "--scale-out" => options.scale_out = true,
            "--docs-only" => options.docs_only = true,
            "--uploads-only" => options.uploads_only = true,
            "--streams-only" => options.streams_only = true,
            "--duration" => {
                let secs: u64 = value()?.parse().context("--duration takes seconds")?;
                anyhow::ensure!((1..=600).contains(&secs), "--duration is 1..=600 seconds");
                duration = Some(Duration::from_secs(secs));
            }
            "--protocols" => {
                options.protocols = value()?
                    .split(',')
                    .filter(|name| !name.is_empty())
                    .map(Protocol::parse)
                    .collect::<Result<_>>()?;
            }
            "--peers" => {
                options.peers = value()?
                    .split(',')
                    .filter(|name| !name.is_empty())
                    .map(Peer::parse)
                    .collect::<Result<_>>()?;
            }
            other => bail!("unknown option `{other}`\n{USAGE}"),
        }
        Ok(())
    })?;
    anyhow::ensure!(!options.protocols.is_empty(), "--protocols names none");
    options.duration = duration.unwrap_or(if options.quick {
        Duration::from_secs(3)
    } else {
        Duration::from_secs(20)
    });
    Ok(options)
}

/// What the measuring steps share.
struct Bench {
    options: Options,
    work: PathBuf,
    oha: PathBuf,
    stop: Arc<AtomicBool>,
    /// PostgreSQL's postmaster, when its pid could be read.
    postmaster: Option<u32>,
    /// Per-statement times, when the server preloads pg_stat_statements.
    statements: Option<postgres::StatementStats>,
}

impl Bench {
    /// PostgreSQL's postmaster and its processes, when we know them.
    fn postgres_pids(&self) -> Vec<u32> {
        let Some(postmaster) = self.postmaster else {
            return Vec::new();
        };
        let mut pids = postgres::children_of(postmaster);
        pids.push(postmaster);
        pids
    }

    /// Starts counting the CPU of PostgreSQL's processes, when we know them.
    fn postgres_cpu(&self) -> Option<GroupCpu> {
        self.postmaster
            .map(|_| GroupCpu::start(&self.postgres_pids()))
    }

    fn check_stop(&self) -> Result<()> {
        if self.stop.load(Ordering::SeqCst) {
            bail!("interrupted");
        }
        Ok(())
    }

    /// oha against `call`; a failure becomes the reason shown in the report.
    fn load(&self, label: &str, call: &Call, shape: Shape, duration: Duration) -> Outcome<Figures> {
        let outcome =
            load::run(&self.oha, &self.work, call, shape, duration).map_err(|e| format!("{e:#}"));
        match &outcome {
            Ok(f) => eprintln!(
                "xtask bench: {label}, {}: p50 {:.3} ms, p99 {:.3} ms, p99.9 {:.3} ms, {:.0} 2xx/s, {} failed",
                shape.label(),
                f.p50,
                f.p99,
                f.p999,
                f.ok_rps,
                f.failed
            ),
            Err(e) => eprintln!("xtask bench: {label}, {}: n/a ({e})", shape.label()),
        }
        outcome
    }

    /// Every measurement on one target: one at a time, the fixed rates, saturation (with
    /// the process's CPU and RSS when `pid` is known) and streaming.
    fn measure(
        &self,
        label: &str,
        call: &Call,
        stream: Outcome<(Call, &'static str)>,
        pid: Option<u32>,
    ) -> Result<Subject> {
        // Warm-up: connections, prepared statements, allocator pools.
        let warm = Duration::from_secs(if self.options.quick { 1 } else { 3 });
        let _ = load::run(&self.oha, &self.work, call, Shape::Rate(500), warm);
        self.check_stop()?;
        let sampler = pid.map(Sampler::start);
        let postgres = self.postgres_cpu();
        // The statement times belong to the router's steps (the direct ones run none).
        let statements = self.statements.as_ref().filter(|_| pid.is_some());
        let step_statements = |figures: &Outcome<Figures>| -> Option<Outcome<Statements>> {
            let stats = statements?;
            Some(match figures {
                Ok(f) => stats.read(f.ok),
                Err(reason) => Err(reason.clone()),
            })
        };
        statements.inspect(|s| s.reset());
        let sequential = self.load(label, call, Shape::Sequential, self.options.duration);
        let sequential_statements = step_statements(&sequential);
        let sequential_cpu = CpuPerRequest::of(
            &sequential,
            sampler.map(|s| s.and_then(Sampler::finish)),
            postgres.map(|cpu| cpu.finish(&self.postgres_pids())),
        );
        let mut rates = Vec::new();
        let mut rate_statements = Vec::new();
        for rate in FIXED_RATES {
            self.check_stop()?;
            statements.inspect(|s| s.reset());
            let figures = self.load(label, call, Shape::Rate(rate), self.options.duration);
            if let Some(found) = step_statements(&figures) {
                rate_statements.push((rate, found));
            }
            rates.push((rate, figures));
        }
        self.check_stop()?;
        let sampler = pid.map(Sampler::start);
        let cores = Cores::start();
        let postgres = self.postgres_cpu();
        let saturation = self.load(label, call, Shape::Saturation, self.options.duration);
        let cores_busy = cores.finish();
        let postgres_cpu_percent = postgres.map(|cpu| cpu.finish(&self.postgres_pids()));
        let saturation_usage: Option<Outcome<Usage>> = sampler.map(|sampler| {
            sampler
                .and_then(Sampler::finish)
                .map_err(|e| format!("{e:#}"))
        });
        let saturation_cpu = CpuPerRequest::of(
            &saturation,
            saturation_usage
                .clone()
                .map(|u| u.map_err(|e| anyhow::anyhow!(e))),
            postgres_cpu_percent,
        );
        self.check_stop()?;
        let (count, concurrency) = self.options.streams();
        let streaming = stream.and_then(|(call, marker)| {
            stream_client::sample(&call, marker, count, concurrency).map_err(|e| format!("{e:#}"))
        });
        match &streaming {
            Ok(s) => eprintln!(
                "xtask bench: {label}, streaming: TTFB p50 {:.3} ms, total p50 {:.3} ms, {} ok, {} failed",
                s.ttfb_p50, s.total_p50, s.ok, s.failed
            ),
            Err(e) => eprintln!("xtask bench: {label}, streaming: n/a ({e})"),
        }
        Ok(Subject {
            name: label.split(',').next().unwrap_or(label).to_owned(),
            sequential,
            sequential_statements,
            rates,
            rate_statements,
            saturation,
            saturation_usage,
            cores_busy,
            postgres_cpu_percent,
            sequential_cpu,
            saturation_cpu,
            streaming,
        })
    }
}

/// One request at a time to nginx from its own core, then from the router's, back to back.
fn cross_core(bench: &Bench, direct: &Call) -> Outcome<CrossCore> {
    let p50_from = |core: u32| {
        load::run_on(
            core,
            &bench.oha,
            &bench.work,
            direct,
            Shape::Sequential,
            bench.options.duration,
        )
        .map(|figures| figures.p50)
        .map_err(|e| format!("{e:#}"))
    };
    let cross_core = CrossCore {
        same_core_p50: p50_from(LOAD_CORE)?,
        cross_core_p50: p50_from(ROUTER_CORE)?,
    };
    eprintln!(
        "xtask bench: one at a time to nginx, p50 {:.3} ms from its core, {:.3} ms from the router's",
        cross_core.same_core_p50, cross_core.cross_core_p50
    );
    Ok(cross_core)
}

/// Chat through the router with the plain key and with a key that sets every
/// policy the router enforces (allowed models, an IP allowlist, a prompt-cache
/// mode), back to back: one at a time and at saturation.
fn key_policies(bench: &Bench, router: &Router, admin_token: &str) -> Result<KeyPolicies> {
    let policy = json!({
        "allowed_models": [Protocol::Chat.model(false), Protocol::Chat.model(true)],
        "ip_allowlist": ["127.0.0.0/8", "::1/128"],
        "prompt_cache_mode": "passthrough",
    });
    let policed = Router {
        addr: router.addr.clone(),
        pid: router.pid,
        api_key: provision_with_policy(
            &router.addr,
            admin_token,
            &format!("bench-policies+{}", random_hex(4)?),
            CREDITS_NANO_USD,
            policy,
        )?,
    };
    let measure = |label: &str, router: &Router| -> Result<KeyCase> {
        let call = router.call(Protocol::Chat, Protocol::Chat.model(false), false);
        let warm = Duration::from_secs(1);
        let _ = load::run(&bench.oha, &bench.work, &call, Shape::Rate(500), warm);
        bench.check_stop()?;
        let sequential = bench.load(label, &call, Shape::Sequential, bench.options.duration);
        bench.check_stop()?;
        let saturation = bench.load(label, &call, Shape::Saturation, bench.options.duration);
        Ok(KeyCase {
            sequential,
            saturation,
        })
    };
    let plain = measure("router, chat, plain key", router)?;
    let with_policies = measure("router, chat, key with policies", &policed)?;
    Ok(KeyPolicies {
        plain,
        with_policies,
    })
}

/// With credit leases on, how the router's admissions went so far
/// (`router_credit_lease_admissions_total` by outcome), on the bench's log:
/// a step whose requests went to the database directly says why.
fn log_lease_admissions(router: &Router, admin_token: &str, after: Protocol) {
    let Ok(response) = http(&router.addr, "GET", "/metrics", Some(admin_token), None) else {
        return;
    };
    let counts: Vec<String> = response
        .body
        .lines()
        .filter_map(|line| line.strip_prefix("router_credit_lease_admissions_total{outcome=\""))
        .filter_map(|rest| rest.split_once("\"} "))
        .map(|(outcome, count)| format!("{outcome} {count}"))
        .collect();
    eprintln!(
        "xtask bench: credit lease admissions after {}: {}",
        after.name(),
        counts.join(", ")
    );
}

/// Chat with the plain key, with `X-CI-Experiment` of a running experiment,
/// and with a prompt whose prefix takes part in prompt-cache affinity, all
/// on one fresh account, back to back (issue 16).
fn routing_policies(bench: &Bench, router: &Router, admin_token: &str) -> Result<RoutingPolicies> {
    let account = provision_account(
        &router.addr,
        admin_token,
        &format!("bench-routing+{}", random_hex(4)?),
        CREDITS_NANO_USD,
        json!({}),
    )?;
    let own = Router {
        addr: router.addr.clone(),
        pid: router.pid,
        api_key: account.api_key.clone(),
    };
    let admin = |method: &str, path: &str, body: Value| -> Result<()> {
        let body = body.to_string();
        let response = http(&router.addr, method, path, Some(admin_token), Some(&body))?;
        anyhow::ensure!(
            (200..300).contains(&response.status),
            "{method} {path}: {} {}",
            response.status,
            response.body
        );
        Ok(())
    };
    let experiments = format!("/admin/accounts/{}/experiments", account.account_id);
    admin(
        "POST",
        &experiments,
        json!({"slug": "bench", "variants": [
            {"name": "brief", "weight": 1, "system": "Answer briefly.", "system_mode": "prepend"}
        ]}),
    )?;
    admin(
        "PATCH",
        &format!("{experiments}/bench"),
        json!({"status": "running"}),
    )?;
    let model = Protocol::Chat.model(false);
    let plain = own.call(Protocol::Chat, model, false);
    let mut experiment = plain.clone();
    experiment
        .headers
        .push(("x-ci-experiment".to_owned(), "bench".to_owned()));
    // A system prompt well over the 1,024-token participation threshold.
    let mut affinity = plain.clone();
    affinity.body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": "You are a careful assistant. ".repeat(700)},
            {"role": "user", "content": PROMPT},
        ],
        "max_tokens": 64,
    })
    .to_string();
    // The same 20 KB prompt without affinity: what affinity itself costs.
    let mut affinity_off = affinity.clone();
    affinity_off
        .headers
        .push(("x-ci-prompt-cache".to_owned(), "off".to_owned()));
    let cases = [
        ("router, chat, plain", &plain),
        ("router, chat, experiment header", &experiment),
        ("router, chat, affinity on", &affinity),
        ("router, chat, 20 KB prompt, affinity off", &affinity_off),
    ];
    for (_, call) in cases {
        let warm = Duration::from_secs(1);
        let _ = load::run(&bench.oha, &bench.work, call, Shape::Rate(500), warm);
    }
    // Back-to-back steps drift (the one-at-a-time p50 moved by 0.3 ms between
    // steps whatever the case), so the cases take turns over a few rounds
    // of shorter steps and each keeps its median step.
    let step = (bench.options.duration / ROUTING_ROUNDS).max(Duration::from_secs(1));
    // Per case, its steps one at a time and at saturation.
    let mut sequential: Vec<Vec<Outcome<Figures>>> = vec![Vec::new(); cases.len()];
    let mut saturation: Vec<Vec<Outcome<Figures>>> = vec![Vec::new(); cases.len()];
    for _ in 0..ROUTING_ROUNDS {
        for (shape, steps) in [
            (Shape::Sequential, &mut sequential),
            (Shape::Saturation, &mut saturation),
        ] {
            for ((label, call), case_steps) in cases.iter().zip(steps.iter_mut()) {
                bench.check_stop()?;
                case_steps.push(bench.load(label, call, shape, step));
            }
        }
    }
    let mut cases = sequential
        .into_iter()
        .zip(saturation)
        .map(|(sequential, saturation)| KeyCase {
            sequential: median_step(sequential, |f| f.p50),
            saturation: median_step(saturation, |f| f.ok_rps),
        });
    let mut next = || cases.next().context("a routing case went missing");
    Ok(RoutingPolicies {
        plain: next()?,
        experiment: next()?,
        affinity: next()?,
        affinity_off: next()?,
        rounds: ROUTING_ROUNDS,
    })
}

/// Rounds of the routing-policy case.
const ROUTING_ROUNDS: u32 = 3;

/// The step whose `figure` is the median of the steps that gave figures; the
/// first failure when none did.
fn median_step(steps: Vec<Outcome<Figures>>, figure: fn(&Figures) -> f64) -> Outcome<Figures> {
    let mut ok: Vec<Figures> = steps
        .iter()
        .filter_map(|s| s.as_ref().ok().cloned())
        .collect();
    if ok.is_empty() {
        return steps
            .into_iter()
            .next()
            .unwrap_or_else(|| Err("no step ran".to_owned()));
    }
    ok.sort_by(|a, b| figure(a).total_cmp(&figure(b)));
    Ok(ok.swap_remove(ok.len() / 2))
}

/// `GET /v1/docs?q=...` at 1,000 rps, beside the same router's `/healthz` (the HTTP floor:
/// no key, no work) and `/v1/docs` without `q` (the key check and a pre-rendered answer), so
/// the search's own cost is the difference.
/// The catalog views at saturation (issue 17: they are precomputed per
/// release, so they should serve at least at the inference path's rate).
fn catalog_views(bench: &Bench, router: &Router) -> Result<report::CatalogViews> {
    let get = |path: &str, key: bool| Call {
        addr: router.addr.clone(),
        path: path.to_owned(),
        headers: if key {
            vec![(
                "authorization".to_owned(),
                format!("Bearer {}", router.api_key),
            )]
        } else {
            Vec::new()
        },
        body: String::new(),
    };
    let mut out = Vec::new();
    for (label, call) in [
        ("GET /v1/models", get("/v1/models", true)),
        ("GET /public/models", get("/public/models", false)),
        ("GET /catalog/models", get("/catalog/models", false)),
    ] {
        bench.check_stop()?;
        let warm = Duration::from_secs(1);
        let _ = load::run(&bench.oha, &bench.work, &call, Shape::Rate(500), warm);
        let figures = bench.load(label, &call, Shape::Saturation, bench.options.duration);
        out.push((label.to_owned(), figures));
    }
    Ok(out)
}

fn docs_search(bench: &Bench, router: &Router) -> Result<DocsSearch> {
    let get = |path: &str, key: bool| Call {
        addr: router.addr.clone(),
        path: path.to_owned(),
        headers: if key {
            vec![(
                "authorization".to_owned(),
                format!("Bearer {}", router.api_key),
            )]
        } else {
            Vec::new()
        },
        body: String::new(),
    };
    let search = get(&format!("/v1/docs?{DOCS_QUERY}"), true);
    let warm = Duration::from_secs(1);
    let _ = load::run(&bench.oha, &bench.work, &search, Shape::Rate(500), warm);
    let measure = |label: &str, call: &Call| -> Result<Outcome<Figures>> {
        bench.check_stop()?;
        Ok(bench.load(label, call, Shape::Rate(DOCS_RATE), bench.options.duration))
    };
    Ok(DocsSearch {
        query: DOCS_QUERY.to_owned(),
        rate: DOCS_RATE,
        floor: measure("router, /healthz", &get("/healthz", false))?,
        listing: measure("router, /v1/docs", &get("/v1/docs", true))?,
        search: measure("router, /v1/docs?q", &search)?,
    })
}

/// The router under test: where it listens and how to call it.
struct Router {
    addr: String,
    pid: Option<u32>,
    api_key: String,
}

impl Router {
    fn call(&self, protocol: Protocol, model: &str, stream: bool) -> Call {
        let mut headers = vec![(
            "authorization".to_owned(),
            format!("Bearer {}", self.api_key),
        )];
        headers.extend(protocol.extra_headers());
        Call {
            addr: self.addr.clone(),
            path: protocol.inbound_path().to_owned(),
            headers,
            body: protocol.router_body(model, stream),
        }
    }
}

pub fn run(args: &[String]) -> Result<bool> {
    let options = parse(args)?;
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    let cores = thread::available_parallelism().map_or(1, usize::from);
    anyhow::ensure!(
        cores >= 2,
        "the bench pins the router and the load to different cores; this machine has {cores}"
    );
    anyhow::ensure!(
        Command::new("taskset").arg("-V").output().is_ok(),
        "taskset (util-linux) is missing"
    );

    let work = target_dir().join("bench");
    fs::create_dir_all(work.join("logs"))
        .with_context(|| format!("creating {}", work.display()))?;
    upstream::ensure_nginx()?;
    let (oha, oha_version) = load::ensure_oha(&work.join("tools"))?;
    let (router_bin, mock_bin) = release_binaries(options.build)?;
    for binary in [&router_bin, &mock_bin] {
        anyhow::ensure!(
            binary.is_file(),
            "{} is missing; run without --no-build",
            binary.display()
        );
    }

    let server_url = db::ensure_postgres()?;
    let cluster_note = postgres::quiet_cluster(&server_url);
    let database_url = postgres::fresh_database(&server_url, BENCH_DATABASE)?;
    let pg_pin = postgres::PgPin::apply(&database_url);
    let contention = proc_stats::Contention::watch();

    // Dropping `children` stops them all, on every way out of this function.
    let mut children = Children::default();
    let upstreams = upstream::start(&work, &mock_bin, &mut children, &stop)?;
    let catalog = render_catalog(&work, &upstreams)?;
    let admin_token = random_hex(16)?;
    let launch = RouterLaunch {
        binary: &router_bin,
        database_url: &database_url,
        catalog: &catalog,
        admin_token: &admin_token,
        logs: &work.join("logs"),
        object_store: &work.join("uploads-store"),
        leases: options.leases,
    };
    launch.migrate()?;
    let router_addr = launch.start(&mut children, &stop, "router", ROUTER_CORE)?;
    let router = Router {
        pid: children.pid("router"),
        api_key: provision(
            &router_addr,
            &admin_token,
            &format!("bench+{}", random_hex(4)?),
            CREDITS_NANO_USD,
        )?,
        addr: router_addr,
    };
    let direct_call = |protocol: Protocol, stream: bool| Call {
        addr: if stream {
            upstreams.paced.clone()
        } else {
            upstreams.fixed.clone()
        },
        path: protocol.upstream_path().to_owned(),
        headers: protocol.extra_headers(),
        body: protocol.upstream_body(stream),
    };
    smoke_test(&options.protocols, &router, &direct_call)?;

    let bench = Bench {
        options,
        work: work.clone(),
        oha,
        stop: Arc::clone(&stop),
        postmaster: pg_pin.pids.first().copied(),
        statements: postgres::StatementStats::enable(&database_url),
    };
    let mut report = Report {
        started: provenance::utc_now(),
        mode: provenance::describe_mode(&bench.options),
        machine: provenance::machine(),
        versions: provenance::versions(
            &oha_version,
            &upstreams.nginx_version,
            &database_url,
            &bench.options,
        ),
        pinning: format!(
            "Pinning (`taskset`): the router, and each peer in its turn, on core {ROUTER_CORE}; nginx, the mock suppliers, oha and {} on core {LOAD_CORE}.",
            if pg_pin.pinned {
                "PostgreSQL"
            } else {
                "the load (PostgreSQL could not be pinned)"
            }
        ),
        method: provenance::method(&bench.options),
        notes: vec![cluster_note],
        ..Report::default()
    };

    let upload_case = || {
        let pid = router.pid.context("the router's pid is unknown")?;
        uploads::run(
            &router.addr,
            pid,
            ROUTER_CORE,
            LOAD_CORE,
            &admin_token,
            launch.object_store,
            CREDITS_NANO_USD,
        )
    };
    let only_one_case =
        bench.options.uploads_only || bench.options.docs_only || bench.options.streams_only;
    if bench.options.uploads_only {
        report.uploads = Some(upload_case().map_err(|e| format!("{e:#}")));
    } else if bench.options.docs_only {
        report.docs_search = Some(docs_search(&bench, &router).map_err(|e| format!("{e:#}")));
    } else {
        if let Some(pid) = router.pid {
            report.idle_start =
                Some(proc_stats::idle(pid, Duration::from_secs(3)).map_err(|e| format!("{e:#}")));
        }
        if bench.options.streams_only {
            report.open_streams = Some(open_streams(&router).map_err(|e| format!("{e:#}")));
            if let Some(pid) = router.pid {
                idle_after_load(pid, &mut report);
            }
        }
    }
    if only_one_case {
        return finish(
            report,
            &work,
            started,
            children,
            pg_pin,
            contention,
            &bench.options,
        );
    }
    report.round_trips =
        Some(postgres::round_trips(&router, &database_url).map_err(|e| format!("{e:#}")));

    report.cross_core = Some(cross_core(&bench, &direct_call(Protocol::Chat, false)));

    // The upstream measured direct once per supplier path (Completions shares Chat's).
    let mut direct_cache: HashMap<&'static str, Subject> = HashMap::new();
    for protocol in bench.options.protocols.clone() {
        let direct = match direct_cache.get(protocol.upstream_path()) {
            Some(direct) => direct.clone(),
            None => {
                let direct = bench.measure(
                    &format!("direct, {}", protocol.upstream_path()),
                    &direct_call(protocol, false),
                    Ok((direct_call(protocol, true), protocol.upstream_end_marker())),
                    None,
                )?;
                direct_cache.insert(protocol.upstream_path(), direct.clone());
                direct
            }
        };
        let mut direct = direct;
        direct.name = "direct".to_owned();
        let routed = bench.measure(
            &format!("router, {}", protocol.name()),
            &router.call(protocol, protocol.model(false), false),
            Ok((
                router.call(protocol, protocol.model(true), true),
                protocol.end_marker(),
            )),
            router.pid,
        )?;
        report.protocols.push(ProtocolResult {
            protocol,
            direct,
            router: routed,
        });
        if bench.options.leases {
            log_lease_admissions(&router, &admin_token, protocol);
        }
    }

    bench.check_stop()?;
    report.key_policies =
        Some(key_policies(&bench, &router, &admin_token).map_err(|e| format!("{e:#}")));

    bench.check_stop()?;
    report.routing_policies =
        Some(routing_policies(&bench, &router, &admin_token).map_err(|e| format!("{e:#}")));

    bench.check_stop()?;
    report.docs_search = Some(docs_search(&bench, &router).map_err(|e| format!("{e:#}")));
    report.catalog_views = Some(catalog_views(&bench, &router).map_err(|e| format!("{e:#}")));

    bench.check_stop()?;
    report.uploads = Some(upload_case().map_err(|e| format!("{e:#}")));

    for peer in bench.options.peers.clone() {
        bench.check_stop()?;
        report.peers.push(measure_peer(&bench, peer, &upstreams));
    }

    bench.check_stop()?;
    // The earlier cases' freed memory goes back to the system after the allocator's
    // decay; the streams are measured on what is then still held, not on its timing.
    thread::sleep(SETTLE);
    report.open_streams = Some(open_streams(&router).map_err(|e| format!("{e:#}")));

    if bench.options.profile {
        bench.check_stop()?;
        report.profile = Some(
            profile::record(
                &bench,
                &router.call(Protocol::Chat, "bench-chat", false),
                router.pid,
            )
            .map_err(|e| format!("{e:#}")),
        );
    }
    if bench.options.scale_out {
        bench.check_stop()?;
        report.scale_out = Some(
            scale_out::run(
                &bench,
                &launch,
                &mut children,
                &router,
                &admin_token,
                &database_url,
            )
            .map_err(|e| format!("{e:#}")),
        );
    }
    if let Some(pid) = router.pid {
        idle_after_load(pid, &mut report);
    }

    finish(
        report,
        &work,
        started,
        children,
        pg_pin,
        contention,
        &bench.options,
    )
}

/// Notes, elapsed time and the two report files; stops the children and unpins PostgreSQL.
fn finish(
    mut report: Report,
    work: &Path,
    started: Instant,
    children: Children,
    pg_pin: postgres::PgPin,
    contention: proc_stats::Contention,
    options: &Options,
) -> Result<bool> {
    report
        .notes
        .extend(provenance::notes(&contention.finish(), options));
    report.elapsed_secs = started.elapsed().as_secs();
    let markdown = report.to_markdown();
    fs::write(work.join("report.md"), &markdown)?;
    fs::write(
        work.join("report.json"),
        serde_json::to_string_pretty(&report.to_json())?,
    )?;
    drop(children);
    drop(pg_pin);
    println!("{markdown}");
    println!(
        "reports: {} and {}",
        work.join("report.md").display(),
        work.join("report.json").display()
    );
    Ok(true)
}

/// One request per protocol, direct and through the router, plain and streaming, each
/// answered 200 with usage or a complete stream: a bench of error replies measures nothing.
fn smoke_test(
    protocols: &[Protocol],
    router: &Router,
    direct_call: &dyn Fn(Protocol, bool) -> Call,
) -> Result<()> {
    for protocol in protocols {
        let calls = [
            (direct_call(*protocol, false), "usage"),
            (
                router.call(*protocol, protocol.model(false), false),
                "usage",
            ),
            (direct_call(*protocol, true), protocol.upstream_end_marker()),
            (
                router.call(*protocol, protocol.model(true), true),
                protocol.end_marker(),
            ),
        ];
        for (call, marker) in calls {
            stream_client::sample(&call, marker, 1, 1).with_context(|| {
                format!("POST {}{} ({})", call.addr, call.path, protocol.name())
            })?;
        }
    }
    Ok(())
}

/// How to start a router process on the bench's catalog and database.
struct RouterLaunch<'a> {
    binary: &'a Path,
    database_url: &'a str,
    catalog: &'a Path,
    admin_token: &'a str,
    logs: &'a Path,
    /// The folder uploads are stored in.
    object_store: &'a Path,
    /// `--leases`.
    leases: bool,
}

impl RouterLaunch<'_> {
    fn command(&self, core: u32, subcommand: &str, listen: &str) -> Command {
        let mut command = upstream::pinned(core, self.binary);
        command
            .arg(subcommand)
            .env("DATABASE_URL", self.database_url)
            .env("ROUTER_LISTEN", listen)
            .env("ROUTER_CATALOG", self.catalog)
            .env("ROUTER_ADMIN_TOKEN", self.admin_token)
            .env(
                "ROUTER_OBJECT_STORE",
                format!("file://{}", self.object_store.display()),
            )
            .env(SUPPLIER_KEY_ENV, "bench")
            // The load comes from one address, as through a load balancer:
            // 1,000 open streams must not meet the per-address cap.
            .env("ROUTER_MAX_CONNECTIONS_PER_ADDRESS", "0")
            // The upload case sends 50 uploads of one account at once.
            .env("ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT", "64")
            .env("ROUTER_CREDIT_LEASES", if self.leases { "1" } else { "0" });
        command
    }

    fn migrate(&self) -> Result<()> {
        let log = self.logs.join("router-migrate.log");
        let out = fs::File::create(&log)?;
        run_checked(
            self.command(ROUTER_CORE, "migrate", "127.0.0.1:0")
                .stdin(Stdio::null())
                .stdout(out.try_clone()?)
                .stderr(out),
        )
        .with_context(|| format!("see {}", log.display()))
    }

    /// Starts `router serve` as `name`, pinned to `core`; returns its address once ready.
    fn start(
        &self,
        children: &mut Children,
        stop: &AtomicBool,
        name: &'static str,
        core: u32,
    ) -> Result<String> {
        let addr = format!("127.0.0.1:{}", free_loopback_port()?);
        let log = self.logs.join(format!("{name}.log"));
        children.spawn_logged(name, self.command(core, "serve", &addr), &log)?;
        children
            .wait_until(
                name,
                stop,
                ROUTER_READY,
                || matches!(http(&addr, "GET", "/readyz", None, None), Ok(r) if r.status == 200),
            )
            .with_context(|| format!("see {}", log.display()))?;
        Ok(addr)
    }
}

/// Writes the bench catalog with the upstreams' URLs in place; returns its path.
fn render_catalog(work: &Path, upstreams: &upstream::Upstreams) -> Result<PathBuf> {
    let template = fs::read_to_string(workspace_root().join(CATALOG))
        .with_context(|| format!("reading {CATALOG}"))?;
    let mut catalog = template;
    for (placeholder, addr) in [
        ("{FIXED_URL}", &upstreams.fixed),
        ("{PACED_URL}", &upstreams.paced),
        ("{SLOW_URL}", &upstreams.slow),
    ] {
        anyhow::ensure!(
            catalog.contains(placeholder),
            "{CATALOG} has no {placeholder}"
        );
        catalog = catalog.replace(placeholder, &format!("http://{addr}/v1"));
    }
    let path = work.join("catalog.toml");
    fs::write(&path, catalog)?;
    Ok(path)
}

/// A peer installed, started on the router's core, measured on Chat Completions and
/// stopped; what fails becomes its row's reason.
fn measure_peer(bench: &Bench, peer: Peer, upstreams: &upstream::Upstreams) -> Subject {
    let label = format!("{} {}", peer.name(), peer.version());
    let failed = |reason: String| {
        eprintln!("xtask bench: {label}: n/a ({reason})");
        Subject {
            name: label.clone(),
            sequential: Err(reason.clone()),
            sequential_statements: None,
            rate_statements: Vec::new(),
            rates: FIXED_RATES
                .iter()
                .map(|r| (*r, Err(reason.clone())))
                .collect(),
            saturation: Err(reason.clone()),
            saturation_usage: None,
            cores_busy: Vec::new(),
            postgres_cpu_percent: None,
            sequential_cpu: CpuPerRequest::default(),
            saturation_cpu: CpuPerRequest::default(),
            streaming: Err(reason.clone()),
        }
    };
    let dir = bench.work.join("peers").join(peer.name());
    if let Err(error) = peers::install(peer, &dir) {
        return failed(format!("install failed: {error:#}"));
    }
    // The peer's own set: dropping it stops the peer before the next one starts.
    let mut children = Children::default();
    let running = match peers::start(
        peer,
        &dir,
        &bench.work.join("logs"),
        upstreams,
        &mut children,
        &bench.stop,
    ) {
        Ok(running) => running,
        Err(error) => return failed(format!("did not start: {error:#}")),
    };
    let body = |stream| Protocol::Chat.router_body(Protocol::Chat.model(stream), stream);
    let stream_body = body(true);
    let stream_call = running.call(true, &stream_body);
    // A streaming probe first, so a peer that cannot stream says why in its row.
    let stream = match stream_client::sample(&stream_call, Protocol::Chat.end_marker(), 1, 1) {
        Ok(_) => Ok((stream_call, Protocol::Chat.end_marker())),
        Err(error) => Err(format!(
            "streaming failed: {error:#}{}",
            peers::last_error_line(peer, &bench.work.join("logs"))
                .map(|line| format!("; its log: {line}"))
                .unwrap_or_default()
        )),
    };
    let call = running.call(false, &body(false));
    match bench.measure(&format!("{label}, chat"), &call, stream, running.pid) {
        Ok(mut subject) => {
            subject.name = label;
            subject
        }
        Err(error) => failed(format!("{error:#}")),
    }
}

/// The idle figure right after the load, and again once freed memory had time to go back.
fn idle_after_load(pid: u32, report: &mut Report) {
    report.idle_end =
        Some(proc_stats::idle(pid, Duration::from_secs(3)).map_err(|e| format!("{e:#}")));
    thread::sleep(SETTLE.saturating_sub(Duration::from_secs(3)));
    report.idle_settled =
        Some(proc_stats::idle(pid, Duration::from_secs(3)).map_err(|e| format!("{e:#}")));
}

/// RSS and CPU of the router while it holds many streams open on the slow upstream.
fn open_streams(router: &Router) -> Result<OpenStreams> {
    let pid = router.pid.context("the router's pid is unknown")?;
    let call = router.call(Protocol::Chat, "bench-chat-slow", true);
    eprintln!("xtask bench: opening {OPEN_STREAMS} streams through the router");
    let (usage, opened, completed) = stream_client::hold_open(
        &call,
        Protocol::Chat.end_marker(),
        OPEN_STREAMS,
        Duration::from_secs(30),
        || proc_stats::idle(pid, Duration::from_secs(1)),
    )?;
    let usage = usage?;
    eprintln!(
        "xtask bench: {opened} streams open: router RSS {:.1} MiB, CPU {:.1}%; {completed} completed",
        usage.max_rss_mib, usage.cpu_percent
    );
    Ok(OpenStreams {
        count: OPEN_STREAMS,
        opened,
        completed,
        usage,
    })
}

#[cfg(test)]
mod tests {
    use super::{Protocol, parse};

    fn args(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn options_parse_in_both_spellings() {
        let options = parse(&args(&[
            "--quick",
            "--protocols=chat,messages",
            "--peers",
            "litellm,portkey",
            "--duration",
            "5",
        ]))
        .unwrap();
        assert!(options.quick);
        assert_eq!(options.protocols, vec![Protocol::Chat, Protocol::Messages]);
        assert_eq!(options.peers.len(), 2);
        assert_eq!(options.duration.as_secs(), 5);
        let quick = parse(&args(&["--quick"])).unwrap();
        assert_eq!(quick.duration.as_secs(), 3);
        assert_eq!(quick.protocols.len(), 4);
    }

    #[test]
    fn bad_options_are_refused() {
        for bad in [
            &["--protocols", "grpc"][..],
            &["--peers", "kong"],
            &["--duration", "0"],
            &["--duration"],
            &["--fast"],
        ] {
            assert!(parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn every_protocol_sends_json_with_its_model() {
        for protocol in Protocol::ALL {
            for stream in [false, true] {
                let model = protocol.model(stream);
                let body: serde_json::Value =
                    serde_json::from_str(&protocol.router_body(model, stream)).unwrap();
                assert_eq!(body["model"], model);
                assert_eq!(body.get("stream").is_some(), stream);
                let upstream: serde_json::Value =
                    serde_json::from_str(&protocol.upstream_body(stream)).unwrap();
                assert!(upstream["model"].as_str().unwrap().starts_with("bench-up-"));
            }
        }
    }

    #[test]
    fn the_committed_catalog_has_every_placeholder_and_model() {
        let catalog =
            std::fs::read_to_string(crate::workspace_root().join(super::CATALOG)).unwrap();
        for placeholder in ["{FIXED_URL}", "{PACED_URL}", "{SLOW_URL}"] {
            assert!(catalog.contains(placeholder), "{placeholder}");
        }
        for protocol in Protocol::ALL {
            for stream in [false, true] {
                let model = format!("id = \"{}\"", protocol.model(stream));
                assert!(catalog.contains(&model), "{model}");
            }
        }
        assert!(catalog.contains("id = \"bench-chat-slow\""));
    }
}
