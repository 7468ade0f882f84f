//! `/healthz` (the process answers) and `/readyz` (it can reach PostgreSQL).

use crate::app::App;
use crate::reply::{self, Body};
use http::{Response, StatusCode};
use serde::Serialize;

/// The answer of both checks.
#[derive(Serialize, utoipa::ToSchema)]
pub struct Health {
    /// `ok` (`/healthz`), `ready`, or `database unavailable` or `draining`
    /// (`/readyz`, 503).
    pub status: &'static str,
}

fn health(status: StatusCode, text: &'static str, request_id: &str) -> Response<Body> {
    let body = serde_json::to_vec(&Health { status: text }).unwrap_or_default();
    reply::json(status, body, request_id)
}

pub fn healthz(request_id: &str) -> Response<Body> {
    health(StatusCode::OK, "ok", request_id)
}

/// `/readyz` without a database: 503 `database unavailable`.
pub fn not_ready(request_id: &str) -> Response<Body> {
    health(
        StatusCode::SERVICE_UNAVAILABLE,
        "database unavailable",
        request_id,
    )
}

pub async fn readyz(app: &App, request_id: &str) -> Response<Body> {
    // A load balancer still probing a stopping router moves its traffic.
    if app.gateway.shutdown().is_draining() {
        return health(StatusCode::SERVICE_UNAVAILABLE, "draining", request_id);
    }
    match app.gateway.store_ready().await {
        Ok(()) => health(StatusCode::OK, "ready", request_id),
        Err(e) => {
            // Probed every few seconds: logged once a minute.
            static NOT_READY: router_core::throttle::Throttle =
                router_core::throttle::Throttle::new();
            if let Some(held_back) = NOT_READY.allow(std::time::Duration::from_secs(60)) {
                tracing::warn!(error = %e, held_back, "not ready");
            }
            not_ready(request_id)
        }
    }
}
