//! `/healthz` (the process answers) and `/readyz` (it can reach PostgreSQL).

use crate::app::App;
use crate::reply::{self, Body};
use http::{Response, StatusCode};
use serde_json::json;

pub fn healthz(request_id: &str) -> Response<Body> {
    reply::json_value(StatusCode::OK, &json!({"status": "ok"}), request_id)
}

pub async fn readyz(app: &App, request_id: &str) -> Response<Body> {
    match app.database().ping().await {
        Ok(()) => reply::json_value(StatusCode::OK, &json!({"status": "ready"}), request_id),
        Err(e) => {
            tracing::warn!(error = %e, "not ready");
            reply::json_value(
                StatusCode::SERVICE_UNAVAILABLE,
                &json!({"status": "database unavailable"}),
                request_id,
            )
        }
    }
}
