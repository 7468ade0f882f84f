//! The process's metrics recorder: installed once at start-up (by the
//! binary, and by the API tests), with every series described, and the
//! Prometheus text exposition `GET /metrics` serves (`router-server`'s
//! `metrics.rs` wraps it in HTTP). Counters and histograms are recorded
//! where things happen (`router_core::trace` for attempts, retries,
//! reservations, charges and video calls; the server's access line for
//! requests; the relay for open streams; the jobs; the store's pool);
//! gauges of the pool, the catalog and the process are read when scraped,
//! and so are the gauges of state every instance shares (holds outstanding,
//! jobs' last passes), from the database: each instance then reports the
//! same value, so a dashboard takes one (`max`), never the sum.
//!
//! Until [`install`] runs, the `metrics` macros record nothing.

use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use router_core::Gateway;
use router_core::supplier::Suppliers;
use router_store::Database;
use std::sync::OnceLock;
use std::time::Duration;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

/// When the recorder was installed: the process's start, near enough.
static STARTED: OnceLock<std::time::SystemTime> = OnceLock::new();

/// Upper bounds of the latency histograms, in seconds: milliseconds up to
/// the 180-second routing deadline.
const LATENCY_BUCKETS: [f64; 16] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 180.0,
];

/// Installs the process's recorder (once; later calls do nothing). `false`
/// when another recorder is already installed.
pub fn install() -> bool {
    if HANDLE.get().is_some() {
        return true;
    }
    let built = PrometheusBuilder::new()
        .set_buckets_for_metric(Matcher::Suffix("_seconds".to_owned()), &LATENCY_BUCKETS)
        .and_then(|builder| builder.install_recorder());
    match built {
        Ok(handle) => {
            let _ = HANDLE.set(handle);
            let _ = STARTED.set(std::time::SystemTime::now());
            describe();
            metrics::gauge!(
                "router_build_info",
                "version" => env!("CARGO_PKG_VERSION"),
                "profile" => if cfg!(debug_assertions) { "debug" } else { "release" }
            )
            .set(1.0);
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics are off: no recorder installed");
            false
        }
    }
}

/// How often the recorder's upkeep runs ([`spawn_upkeep`]).
pub const UPKEEP_PERIOD: Duration = Duration::from_secs(5);

/// Starts the recorder's upkeep on the current runtime: every `period`, the
/// histogram samples recorded since the last pass are folded into their
/// buckets and freed. The recorder keeps every sample until then (or until a
/// scrape renders them), so without it a router nobody scrapes grows with
/// every request it serves, about 70 bytes each (issue 34). `None` without a
/// recorder.
pub fn spawn_upkeep(period: Duration) -> Option<tokio::task::JoinHandle<()>> {
    let handle = HANDLE.get()?;
    Some(tokio::spawn(async move {
        let mut every = tokio::time::interval(period);
        every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            every.tick().await;
            handle.run_upkeep();
        }
    }))
}

fn describe() {
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(
        "router_requests_total",
        "Requests by route pattern, model, status and code."
    );
    describe_histogram!(
        "router_request_duration_seconds",
        "Time from arrival to the end of the reply (a stream's last event)."
    );
    describe_counter!(
        "router_attempts_total",
        "Supplier attempts by route and outcome (succeeded or the failure kind)."
    );
    describe_counter!(
        "router_retries_total",
        "Attempts after a failed one, on the same route or a fallback route."
    );
    describe_histogram!(
        "router_upstream_latency_seconds",
        "Time to a supplier's complete reply or failure, by route."
    );
    describe_histogram!(
        "router_upstream_first_byte_seconds",
        "Time to a supplier stream's first event, by route."
    );
    describe_counter!(
        "router_reservations_total",
        "Holds by event: reserved, refused, settled, voided."
    );
    describe_counter!(
        "router_reaper_released_total",
        "Expired holds the reaper released."
    );
    describe_counter!(
        "router_videos_total",
        "Video jobs ended by this instance's poller, by outcome: completed (settled) or failed (released)."
    );
    describe_gauge!("router_open_streams", "Streams being relayed to clients.");
    describe_gauge!(
        "router_db_connections_open",
        "Database connections in this process's pool."
    );
    describe_gauge!(
        "router_db_connections_in_use",
        "Pooled database connections checked out."
    );
    describe_gauge!(
        "router_catalog_models",
        "Models in the catalog being served."
    );
    describe_gauge!(
        "router_catalog_routes",
        "Routes in the catalog being served."
    );
    describe_counter!(
        "router_charged_nano_usd_total",
        "Nano-USD charged at settlement, by catalog model."
    );
    describe_counter!(
        "router_tokens_total",
        "Tokens of settled requests, by model and kind (input, output, cache_read, cache_write, reasoning)."
    );
    describe_counter!(
        "router_settlement_shortfalls_total",
        "Settlements capped at the hold (the supplier reported more than was reserved), by model."
    );
    describe_counter!(
        "router_settlement_shortfall_nano_usd_total",
        "Nano-USD reported above the hold and not charged (absorbed by the operator), by model."
    );
    describe_counter!(
        "router_credits_granted_nano_usd_total",
        "Nano-USD of credits granted through the admin API on this instance."
    );
    describe_counter!(
        "router_video_supplier_calls_total",
        "Calls to video suppliers by route, call (submit, poll, content) and outcome."
    );
    describe_counter!(
        "router_job_passes_total",
        "Background job passes run by this instance, by job and outcome (succeeded, failed)."
    );
    describe_histogram!(
        "router_job_duration_seconds",
        "Time one background job pass took on this instance, by job."
    );
    describe_gauge!(
        "router_job_last_finished_timestamp_seconds",
        "When the job's last pass (on any instance) finished, Unix seconds; from the database."
    );
    describe_gauge!(
        "router_job_last_failed",
        "1 when the job's last finished pass (on any instance) failed; from the database."
    );
    describe_gauge!(
        "router_holds_outstanding",
        "Holds not yet settled or released, across all instances; from the database."
    );
    describe_gauge!(
        "router_holds_outstanding_nano_usd",
        "Nano-USD held by outstanding holds, across all instances; from the database."
    );
    describe_gauge!(
        "router_credits_granted_nano_usd",
        "Nano-USD of credit granted so far, through the admin API and the CLI alike; from the ledger."
    );
    describe_gauge!(
        "router_holds_expired",
        "Outstanding holds past their expiry that the reaper has not released yet; from the database."
    );
    describe_gauge!(
        "router_holds_oldest_age_seconds",
        "Age of the oldest outstanding hold; from the database."
    );
    describe_gauge!(
        "router_db_connections_max",
        "The most database connections this process's pool opens (ROUTER_DB_POOL_SIZE)."
    );
    describe_gauge!(
        "router_db_pool_waiting",
        "Requests waiting for a pooled database connection now."
    );
    describe_histogram!(
        "router_db_pool_wait_seconds",
        "Time a checkout took when no idle connection was there (a new one opened, or a busy one freed)."
    );
    describe_counter!(
        "router_db_pool_checkout_failures_total",
        "Pool checkouts that failed, by kind: timeout (none free in time), connect, other."
    );
    describe_counter!(
        "router_otlp_spans_exported_total",
        "Spans sent to the OTLP collector (ROUTER_OTLP_ENDPOINT)."
    );
    describe_counter!(
        "router_otlp_spans_failed_total",
        "Spans whose export to the OTLP collector failed."
    );
    describe_counter!(
        "router_otlp_spans_dropped_total",
        "Spans dropped because the export queue was full."
    );
    describe_gauge!(
        "router_metrics_scrape_errors",
        "1 when this scrape could not read the database gauges (they keep their last values)."
    );
    describe_gauge!(
        "router_build_info",
        "1, labelled with the router's version and build profile."
    );
    describe_gauge!(
        "process_cpu_seconds_total",
        "CPU time of the process (user and system), seconds."
    );
    describe_gauge!(
        "process_resident_memory_bytes",
        "Resident memory of the process."
    );
    describe_gauge!(
        "process_virtual_memory_bytes",
        "Virtual memory of the process."
    );
    describe_gauge!("process_open_fds", "Open file descriptors.");
    describe_gauge!("process_max_fds", "The descriptor limit (soft).");
    describe_gauge!("process_threads", "Threads of the process.");
    describe_gauge!(
        "process_start_time_seconds",
        "When the process started, Unix seconds."
    );
}

/// The text exposition, with the gauges read now; `None` when no recorder
/// is installed.
pub async fn render<P: Suppliers>(gateway: &Gateway<Database, P>) -> Option<String> {
    let handle = HANDLE.get()?;
    let catalog = gateway.catalog();
    let models: Vec<_> = catalog.models().collect();
    let routes: usize = models.iter().map(|m| catalog.routes(&m.id).len()).sum();
    metrics::gauge!("router_catalog_models").set(models.len() as f64);
    metrics::gauge!("router_catalog_routes").set(routes as f64);
    let shared = crate::database::record(gateway.store()).await;
    metrics::gauge!("router_metrics_scrape_errors").set(if shared { 0.0 } else { 1.0 });
    crate::process::record(STARTED.get().copied());
    Some(handle.render())
}
