//! Where the figures come from: the machine, the versions, the mode and method of the run,
//! and what may have disturbed it, as the report states them.

use std::fs;
use std::process::{Command, Stdio};
use std::thread;

use super::proc_stats::ContentionSeen;
use super::{FIXED_RATES, OPEN_STREAMS, Options, SETTLE, load, peers};
use crate::db::psql;
use crate::workspace_root;

pub(super) fn describe_mode(options: &Options) -> String {
    format!(
        "{}, {} s per load step{}",
        if options.quick { "--quick" } else { "full" },
        options.duration.as_secs(),
        if options.peers.is_empty() {
            String::new()
        } else {
            format!(
                ", peers {}",
                options
                    .peers
                    .iter()
                    .map(|p| p.name())
                    .collect::<Vec<_>>()
                    .join(",")
            )
        }
    )
}

pub(super) fn method(options: &Options) -> Vec<String> {
    let (count, concurrency) = options.streams();
    vec![
        "Billing on: every request authenticates its key, reserves and settles in PostgreSQL (fixed pricing, one account).".to_owned(),
        "Upstream for non-streaming load: nginx returning a fixed JSON reply per supplier path (with usage). Direct = the same request sent to nginx; added = router minus direct.".to_owned(),
        format!(
            "Load: oha, keep-alive; one at a time = 1 connection; fixed rates {} rps on {} connections with latency correction; saturation = {} connections unthrottled, 2xx only; {} s each after a warm-up.",
            FIXED_RATES.map(|r| r.to_string()).join(" / "),
            load::RATE_CONNECTIONS,
            load::SATURATION_CONNECTIONS,
            options.duration.as_secs()
        ),
        format!(
            "Streaming: the mock supplier, first event after 50 ms then one every 20 ms; {count} streams, {concurrency} at a time, one connection each; TTFB = first body byte, total = end of stream, both from before connect."
        ),
        format!(
            "Open streams: {OPEN_STREAMS} concurrent Chat streams through the router to a mock pacing one event a second, started {} s after the case before it (past the allocator's 10 s decay, so what earlier cases freed has gone back); RSS sampled while all are open. Idle after the load: 3 s after it, and again {} s after it.", SETTLE.as_secs(), SETTLE.as_secs()
        ),
        "CPU: utime + stime of the process from /proc/PID/stat over the run (% of one core); RSS: the largest VmRSS sampled every 100 ms.".to_owned(),
    ]
}

pub(super) fn notes(contention: &ContentionSeen, options: &Options) -> Vec<String> {
    let mut notes = Vec::new();
    if contention.busy_samples > 0 {
        notes.push(format!(
            "Other work shared the cores: compilers (rustc, cc, ld) ran outside the bench in {} of {} one-second samples (up to {} at once); figures are noisier than on an idle machine.",
            contention.busy_samples, contention.samples, contention.max_processes
        ));
    }
    if options.quick {
        notes.push(
            "--quick: short load steps; p99.9 in particular rests on few samples.".to_owned(),
        );
    }
    notes.push("Only loopback traffic; every load step is bounded in time.".to_owned());
    notes
}

pub(super) fn utc_now() -> String {
    Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|output| String::from_utf8_lossy(&output.stdout).trim().to_owned())
        .unwrap_or_default()
}

pub(super) fn machine() -> Vec<(String, String)> {
    let cpuinfo = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find(|line| line.starts_with("model name"))
        .and_then(|line| line.split_once(':'))
        .map_or("unknown", |(_, model)| model.trim())
        .to_owned();
    let memory = fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|meminfo| {
            let line = meminfo
                .lines()
                .find(|l| l.starts_with("MemTotal:"))?
                .to_owned();
            let kib: f64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(format!("{:.1} GiB", kib / 1024.0 / 1024.0))
        })
        .unwrap_or_default();
    let kernel = fs::read_to_string("/proc/sys/kernel/osrelease")
        .unwrap_or_default()
        .trim()
        .to_owned();
    let cores = thread::available_parallelism().map_or(1, usize::from);
    vec![
        ("CPU".to_owned(), format!("{model}, {cores} cores")),
        ("memory".to_owned(), memory),
        ("kernel".to_owned(), format!("Linux {kernel}")),
    ]
}

pub(super) fn command_output(program: &str, args: &[&str]) -> String {
    Command::new(program)
        .args(args)
        .current_dir(workspace_root())
        .stdin(Stdio::null())
        .output()
        .ok()
        .filter(|output| output.status.success())
        .map(|output| {
            let text = if output.stdout.is_empty() {
                output.stderr
            } else {
                output.stdout
            };
            String::from_utf8_lossy(&text).trim().to_owned()
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

/// The versions of everything measured; the peers' only when they are in the run.
pub(super) fn versions(
    oha: &str,
    nginx: &str,
    database_url: &str,
    options: &Options,
) -> Vec<(String, String)> {
    let sha = command_output("git", &["rev-parse", "--short", "HEAD"]);
    let changes = command_output("git", &["status", "--porcelain", "--", "crates"]);
    let dirty = !changes.is_empty() && changes != "unknown";
    let mut versions = vec![
        (
            "router".to_owned(),
            format!(
                "git {sha}{} (release build)",
                if dirty {
                    " + uncommitted changes in crates/"
                } else {
                    ""
                }
            ),
        ),
        ("rustc".to_owned(), command_output("rustc", &["--version"])),
        ("oha".to_owned(), oha.to_owned()),
        ("nginx".to_owned(), nginx.to_owned()),
        (
            "PostgreSQL".to_owned(),
            psql(database_url, "show server_version").unwrap_or_else(|_| "unknown".to_owned()),
        ),
    ];
    for peer in &options.peers {
        let runtime = match peer {
            peers::Peer::LiteLlm => format!(
                "Python {}",
                command_output("python3", &["--version"]).trim_start_matches("Python ")
            ),
            peers::Peer::Portkey => format!("Node {}", command_output("node", &["--version"])),
        };
        versions.push((
            peer.name().to_owned(),
            format!("{} ({runtime})", peer.version()),
        ));
    }
    versions
}
