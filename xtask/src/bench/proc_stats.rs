//! A process's CPU and memory from `/proc`: CPU time from `/proc/PID/stat` (utime + stime,
//! in clock ticks), resident memory from `VmRSS` in `/proc/PID/status`.

use std::fs;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::{self, JoinHandle, sleep};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::{Value, json};

use super::load::round3;

const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// CPU use over a window and the largest resident set seen in it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Usage {
    /// Percent of one core.
    pub(crate) cpu_percent: f64,
    pub(crate) max_rss_mib: f64,
}

impl Usage {
    pub(crate) fn to_json(self) -> Value {
        json!({ "cpu_percent": round3(self.cpu_percent), "max_rss_mib": round3(self.max_rss_mib) })
    }
}

/// Clock ticks per second (`getconf CLK_TCK`; 100 on Linux unless told otherwise).
fn ticks_per_second() -> f64 {
    Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .ok()
        .and_then(|output| String::from_utf8_lossy(&output.stdout).trim().parse().ok())
        .unwrap_or(100.0)
}

/// utime + stime of `pid`, in ticks.
fn cpu_ticks(pid: u32) -> Result<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat"))
        .with_context(|| format!("reading /proc/{pid}/stat"))?;
    parse_cpu_ticks(&stat).with_context(|| format!("parsing /proc/{pid}/stat"))
}

/// Fields 14 and 15 of `/proc/PID/stat`, counted after the `)` that closes the command name
/// (which may itself hold spaces and parentheses).
fn parse_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Resident memory of `pid` in MiB.
pub(crate) fn rss_mib(pid: u32) -> Result<f64> {
    let status = fs::read_to_string(format!("/proc/{pid}/status"))
        .with_context(|| format!("reading /proc/{pid}/status"))?;
    parse_rss_kib(&status)
        .map(|kib| kib as f64 / 1024.0)
        .with_context(|| format!("no VmRSS in /proc/{pid}/status"))
}

fn parse_rss_kib(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Samples a process in the background until [`Sampler::finish`].
pub(crate) struct Sampler {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<f64>,
    start_ticks: u64,
    started: Instant,
    pid: u32,
}

impl Sampler {
    pub(crate) fn start(pid: u32) -> Result<Sampler> {
        let start_ticks = cpu_ticks(pid)?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut max = 0.0_f64;
            while !flag.load(Ordering::SeqCst) {
                if let Ok(rss) = rss_mib(pid) {
                    max = max.max(rss);
                }
                sleep(SAMPLE_EVERY);
            }
            max
        });
        Ok(Sampler {
            stop,
            thread,
            start_ticks,
            started: Instant::now(),
            pid,
        })
    }

    pub(crate) fn finish(self) -> Result<Usage> {
        let end_ticks = cpu_ticks(self.pid)?;
        let elapsed = self.started.elapsed().as_secs_f64();
        self.stop.store(true, Ordering::SeqCst);
        let sampled = self.thread.join().unwrap_or_default();
        let max_rss_mib = sampled.max(rss_mib(self.pid)?);
        let cpu_seconds = end_ticks.saturating_sub(self.start_ticks) as f64 / ticks_per_second();
        Ok(Usage {
            cpu_percent: 100.0 * cpu_seconds / elapsed.max(f64::EPSILON),
            max_rss_mib,
        })
    }
}

/// The CPU of a group of processes (PostgreSQL's backends, say), summed, between
/// [`GroupCpu::start`] and [`GroupCpu::finish`], in percent of one core. A process that
/// joins the group in between counts from its start; one that exits counts for nothing.
pub(crate) struct GroupCpu {
    start: Vec<(u32, u64)>,
    started: Instant,
}

impl GroupCpu {
    pub(crate) fn start(pids: &[u32]) -> GroupCpu {
        GroupCpu {
            start: pids
                .iter()
                .filter_map(|pid| Some((*pid, cpu_ticks(*pid).ok()?)))
                .collect(),
            started: Instant::now(),
        }
    }

    pub(crate) fn finish(self, pids: &[u32]) -> f64 {
        let elapsed = self.started.elapsed().as_secs_f64();
        let ticks: u64 = pids
            .iter()
            .filter_map(|pid| {
                let now = cpu_ticks(*pid).ok()?;
                let start = self
                    .start
                    .iter()
                    .find(|(started, _)| started == pid)
                    .map_or(0, |(_, ticks)| *ticks);
                Some(now.saturating_sub(start))
            })
            .sum();
        100.0 * ticks as f64 / ticks_per_second() / elapsed.max(f64::EPSILON)
    }
}

/// CPU and RSS of an idle process over `window`.
pub(crate) fn idle(pid: u32, window: Duration) -> Result<Usage> {
    let sampler = Sampler::start(pid)?;
    sleep(window);
    sampler.finish()
}

/// Compilers seen running (the bench starts none while it measures).
const COMPILERS: &[&str] = &[
    "rustc", "cc1", "cc1plus", "ld", "ld.lld", "collect2", "clang",
];

/// Watches, once a second, for compilers running beside the bench: on a shared machine
/// they take cycles from the measured cores.
pub(crate) struct Contention {
    stop: Arc<AtomicBool>,
    thread: JoinHandle<ContentionSeen>,
}

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct ContentionSeen {
    pub(crate) samples: u64,
    pub(crate) busy_samples: u64,
    pub(crate) max_processes: usize,
}

impl Contention {
    pub(crate) fn watch() -> Contention {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        let thread = thread::spawn(move || {
            let mut seen = ContentionSeen::default();
            while !flag.load(Ordering::SeqCst) {
                let running = compilers_running();
                seen.samples += 1;
                if running > 0 {
                    seen.busy_samples += 1;
                    seen.max_processes = seen.max_processes.max(running);
                }
                for _ in 0..10 {
                    if flag.load(Ordering::SeqCst) {
                        break;
                    }
                    sleep(SAMPLE_EVERY);
                }
            }
            seen
        });
        Contention { stop, thread }
    }

    pub(crate) fn finish(self) -> ContentionSeen {
        self.stop.store(true, Ordering::SeqCst);
        self.thread.join().unwrap_or_default()
    }
}

fn compilers_running() -> usize {
    let Ok(entries) = fs::read_dir("/proc") else {
        return 0;
    };
    entries
        .filter_map(|entry| {
            let name = entry.ok()?.file_name();
            name.to_str()?.parse::<u32>().ok()?;
            let comm = fs::read_to_string(entry_path(&name)).ok()?;
            COMPILERS.contains(&comm.trim()).then_some(())
        })
        .count()
}

fn entry_path(pid: &std::ffi::OsStr) -> std::path::PathBuf {
    std::path::Path::new("/proc").join(pid).join("comm")
}

/// Busy and total jiffies of each core, from `/proc/stat`.
fn core_jiffies() -> Vec<(u64, u64)> {
    let stat = fs::read_to_string("/proc/stat").unwrap_or_default();
    parse_core_jiffies(&stat)
}

fn parse_core_jiffies(stat: &str) -> Vec<(u64, u64)> {
    stat.lines()
        .filter(|line| {
            line.starts_with("cpu") && line.as_bytes().get(3).is_some_and(u8::is_ascii_digit)
        })
        .map(|line| {
            let fields: Vec<u64> = line
                .split_whitespace()
                .skip(1)
                .filter_map(|field| field.parse().ok())
                .collect();
            let total: u64 = fields.iter().take(8).sum();
            // idle and iowait are the 4th and 5th fields.
            let idle = fields.get(3).copied().unwrap_or_default()
                + fields.get(4).copied().unwrap_or_default();
            (total - idle.min(total), total)
        })
        .collect()
}

/// How busy each core was between [`Cores::start`] and [`Cores::finish`], in percent.
pub(crate) struct Cores(Vec<(u64, u64)>);

impl Cores {
    pub(crate) fn start() -> Cores {
        Cores(core_jiffies())
    }

    pub(crate) fn finish(self) -> Vec<f64> {
        core_jiffies()
            .iter()
            .zip(&self.0)
            .map(|((busy, total), (busy0, total0))| {
                let total = total.saturating_sub(*total0).max(1) as f64;
                100.0 * busy.saturating_sub(*busy0) as f64 / total
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_core_jiffies, parse_cpu_ticks, parse_rss_kib};

    #[test]
    fn per_core_jiffies_skip_the_total_line() {
        let stat = "cpu  10 0 10 80 0 0 0 0 0 0\ncpu0 5 0 5 40 0 0 0 0 0 0\ncpu1 5 0 5 30 10 0 0 0 0 0\nintr 1\n";
        assert_eq!(parse_core_jiffies(stat), vec![(10, 50), (10, 50)]);
    }

    #[test]
    fn cpu_ticks_are_counted_after_the_command_name() {
        let stat = "1234 (tokio (rt) x) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 4";
        assert_eq!(parse_cpu_ticks(stat), Some(325));
    }

    #[test]
    fn rss_is_read_from_vmrss() {
        let status = "Name:\trouter\nVmPeak:\t  900 kB\nVmRSS:\t   51200 kB\nThreads:\t3\n";
        assert_eq!(parse_rss_kib(status), Some(51200));
    }

    #[test]
    fn this_process_can_be_sampled() {
        let usage = super::idle(std::process::id(), std::time::Duration::from_millis(50)).unwrap();
        assert!(usage.max_rss_mib > 0.0);
    }
}
