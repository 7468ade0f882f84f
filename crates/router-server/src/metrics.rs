//! `GET /metrics` (operator token): the Prometheus text format, every series
//! prefixed `router_`. Counters and histograms are recorded where things
//! happen (`router_core::trace` for attempts, retries and reservations;
//! `request_log` for requests; the relay for open streams; the reaper);
//! gauges of the pool and the catalog are read when scraped.
//!
//! One recorder per process, installed by the binary at start-up (and by
//! the API tests); until then the `metrics` macros record nothing.

use crate::app::App;
use crate::reply::Reply;
use http::header::HeaderValue;
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle};
use router_canonical::ApiError;
use router_core::product_codes;
use std::sync::OnceLock;

static HANDLE: OnceLock<PrometheusHandle> = OnceLock::new();

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
            describe();
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "metrics are off: no recorder installed");
            false
        }
    }
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
}

/// `GET /metrics`: the Prometheus text exposition.
pub fn reply(app: &App, request_id: &str) -> Result<Reply, ApiError> {
    let text = render(app).ok_or_else(|| {
        ApiError::new(
            product_codes::NOT_AVAILABLE,
            "Metrics are not recorded in this process.",
        )
    })?;
    let mut response = http::Response::new(crate::reply::full(text));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    crate::reply::set_request_id(response.headers_mut(), request_id);
    Ok(response)
}

/// The text exposition, with the gauges read now; `None` when no recorder
/// is installed.
pub fn render(app: &App) -> Option<String> {
    let handle = HANDLE.get()?;
    let (open, in_use) = app.database().pool_connections();
    metrics::gauge!("router_db_connections_open").set(open as f64);
    metrics::gauge!("router_db_connections_in_use").set(in_use as f64);
    let catalog = app.gateway.catalog();
    let models: Vec<_> = catalog.models().collect();
    let routes: usize = models.iter().map(|m| catalog.routes(&m.id).len()).sum();
    metrics::gauge!("router_catalog_models").set(models.len() as f64);
    metrics::gauge!("router_catalog_routes").set(routes as f64);
    Some(handle.render())
}

/// A stream relay in progress: counted while it lives.
pub struct OpenStream(());

impl OpenStream {
    pub fn start() -> OpenStream {
        metrics::gauge!("router_open_streams").increment(1.0);
        OpenStream(())
    }
}

impl Drop for OpenStream {
    fn drop(&mut self) {
        metrics::gauge!("router_open_streams").decrement(1.0);
    }
}
