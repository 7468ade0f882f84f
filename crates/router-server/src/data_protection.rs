//! `GET` and `PATCH /api/data-protection`: the account's zero-data-retention
//! switch (section J).
//!
//! Reading takes an `account:read` key or a session; changing it takes a
//! same-origin session only (the guard answers a key with 403
//! `session_required`). What turning it on does, and the body it takes,
//! are the operator wing's (`router_operator::data_protection`); here are
//! the reading of the body and the answer.

use crate::app::App;
use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, read_limited};
use crate::reply::{self, Body};
use crate::session::Session;
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use serde::Serialize;
use uuid::Uuid;

/// The data-protection record (J-01, J-05).
#[derive(Debug, Serialize, utoipa::ToSchema)]
pub struct DataProtection {
    pub zero_data_retention: bool,
}

/// The caller's own account always exists, so its absence is the
/// storage's fault (500); an unreachable database is the 503 it always is.
fn storage_error(e: router_operator::OperatorError) -> ApiError {
    match e {
        router_operator::OperatorError::NotFound(_) => {
            tracing::error!(error = %e, "data protection: the caller's account is missing");
            ApiError::new(ErrorCode::InternalError, "Storage failure.")
        }
        other => other.into(),
    }
}

/// The switch is a person's privacy setting: never kept by a cache (J-01).
fn record(zero_data_retention: bool, request_id: &str) -> Response<Body> {
    let view = DataProtection {
        zero_data_retention,
    };
    reply::no_store(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `GET /api/data-protection` for the caller's account.
pub async fn show(
    app: &App,
    account_id: Uuid,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let on = app
        .operator
        .zero_data_retention(account_id)
        .await
        .map_err(storage_error)?;
    Ok(record(on, request_id))
}

/// `PATCH /api/data-protection` by a same-origin session.
pub async fn change(
    app: &App,
    session: &Session,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = read_limited(&parts.headers, body, ADMIN_BODY_LIMIT).await?;
    let enabled = router_operator::data_protection::parse_switch(&bytes)?;
    let now = app
        .operator
        .set_zero_data_retention(session.account_id, session.id, enabled)
        .await
        .map_err(storage_error)?;
    Ok(record(now, request_id))
}
