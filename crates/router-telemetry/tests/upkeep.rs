//! The recorder's upkeep (issue 34): histogram samples recorded while
//! nobody scrapes `/metrics` are folded into their buckets and freed, so a
//! long-running router does not grow with the requests it served.

// The helper outside the `#[test]` function panics on failure like the
// test does (clippy's allow-expect-in-tests covers only test functions).
#![expect(clippy::expect_used)]

use std::time::Duration;

/// This process's resident memory, in bytes (`/proc/self/statm`).
fn resident_bytes() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("resident pages");
    pages * 4096
}

/// Four million samples are at least 32 MB while they are kept; with the
/// upkeep running they are freed as the load goes, and the process grows by
/// a fraction of that. Without `spawn_upkeep` this fails (about 60 MB).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn histogram_samples_are_freed_without_a_scrape() {
    assert!(router_telemetry::recorder::install());
    let upkeep = router_telemetry::recorder::spawn_upkeep(Duration::from_millis(5))
        .expect("a recorder is installed");
    let before = resident_bytes();
    for _ in 0..40 {
        for _ in 0..100_000 {
            metrics::histogram!("router_request_duration_seconds").record(0.0012);
        }
        // Time for a few upkeep passes between bursts of requests.
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let grown = resident_bytes().saturating_sub(before);
    upkeep.abort();
    assert!(
        grown < 12 * 1024 * 1024,
        "4,000,000 samples grew the process by {} MiB",
        grown / (1024 * 1024)
    );
}
