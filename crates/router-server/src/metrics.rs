//! `GET /metrics` (operator token, or `ROUTER_METRICS_TOKEN`): the
//! Prometheus text format of the process's recorder
//! (`router_telemetry::recorder`: what is recorded, described and read
//! when scraped), every series of the router prefixed `router_`, and the
//! standard `process_*` series; and the open streams the relay counts.

use crate::app::App;
use crate::reply::Reply;
use http::header::HeaderValue;
use router_canonical::ApiError;
use router_core::product_codes;

/// `GET /metrics`: the Prometheus text exposition.
pub async fn reply(app: &App, request_id: &str) -> Result<Reply, ApiError> {
    let text = router_telemetry::recorder::render(&app.gateway)
        .await
        .ok_or_else(|| {
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
