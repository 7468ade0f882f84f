//! The standard `process_*` series (the names every Prometheus client
//! library uses, so stock dashboards and alerts work), read from `/proc`
//! when `/metrics` is scraped. Linux only: elsewhere only the start time
//! and the descriptor limit are reported.

use std::time::SystemTime;

/// Clock ticks per second of `/proc/self/stat` times (`USER_HZ`: 100 on
/// every Linux architecture the router is built for).
const TICKS_PER_SECOND: f64 = 100.0;

/// Sets the process gauges now; `started` is when the process started.
pub fn record(started: Option<SystemTime>) {
    if let Some(started) = started
        && let Ok(since_epoch) = started.duration_since(SystemTime::UNIX_EPOCH)
    {
        metrics::gauge!("process_start_time_seconds").set(since_epoch.as_secs_f64());
    }
    if let Ok((soft, _)) =
        nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE)
    {
        metrics::gauge!("process_max_fds").set(soft as f64);
    }
    if let Ok(fds) = std::fs::read_dir("/proc/self/fd") {
        metrics::gauge!("process_open_fds").set(fds.count() as f64);
    }
    if let Ok(stat) = std::fs::read_to_string("/proc/self/stat")
        && let Some(cpu) = cpu_seconds(&stat)
    {
        // The kernel's running total, in fractional seconds: a gauge, since
        // the `metrics` crate's counters are whole numbers (`rate()` reads
        // it the same).
        metrics::gauge!("process_cpu_seconds_total").set(cpu);
    }
    if let Ok(status) = std::fs::read_to_string("/proc/self/status") {
        let (rss, virt, threads) = memory_and_threads(&status);
        if let Some(rss) = rss {
            metrics::gauge!("process_resident_memory_bytes").set(rss as f64);
        }
        if let Some(virt) = virt {
            metrics::gauge!("process_virtual_memory_bytes").set(virt as f64);
        }
        if let Some(threads) = threads {
            metrics::gauge!("process_threads").set(threads as f64);
        }
    }
}

/// User plus system CPU seconds from `/proc/self/stat` (fields 14 and 15,
/// counted after the command name, which may hold spaces and parentheses).
fn cpu_seconds(stat: &str) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace();
    // After the name: state is field 3; utime and stime are 14 and 15.
    let utime: f64 = fields.nth(11)?.parse().ok()?;
    let stime: f64 = fields.next()?.parse().ok()?;
    Some((utime + stime) / TICKS_PER_SECOND)
}

/// `VmRSS` and `VmSize` in bytes and `Threads` from `/proc/self/status`.
fn memory_and_threads(status: &str) -> (Option<u64>, Option<u64>, Option<u64>) {
    let value = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|n| n.parse::<u64>().ok())
    };
    (
        value("VmRSS:").map(|kb| kb * 1024),
        value("VmSize:").map(|kb| kb * 1024),
        value("Threads:"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_after_a_name_with_spaces() {
        let stat = "4242 (router (x) y) S 1 4242 4242 0 -1 4194560 500 0 0 0 250 50 0 0 20 0 9 0 1234 100000 2000";
        assert_eq!(cpu_seconds(stat), Some(3.0));
        assert_eq!(cpu_seconds("garbage"), None);
    }

    #[test]
    fn memory_and_threads_are_read_in_bytes() {
        let status = "Name:\trouter\nVmSize:\t  2048 kB\nVmRSS:\t  1024 kB\nThreads:\t9\n";
        assert_eq!(
            memory_and_threads(status),
            (Some(1024 * 1024), Some(2048 * 1024), Some(9))
        );
    }
}
