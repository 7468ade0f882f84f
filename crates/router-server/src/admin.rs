//! The operator admin API under `/admin/`, guarded by the operator token
//! (`ROUTER_ADMIN_TOKEN`), compared in constant time. The operations are
//! the operator wing's (`router_operator::Operator`, shared with the
//! `router` CLI). Each route row's handler reads the path with the helpers
//! here and the body with `body::input`, calls one operation and answers
//! its view (`reply::ok`, `created`, `removed`).

use crate::app::App;
use crate::call::{Call, Params};
use crate::reply::{self, Reply};
use router_canonical::{ApiError, ErrorCode};
use subtle::ConstantTimeEq;
use uuid::Uuid;

/// Every `/admin/` call passes here first (see `dispatch`).
pub fn authorize(app: &App, headers: &http::HeaderMap) -> Result<(), ApiError> {
    let unauthorized = || {
        ApiError::new(
            ErrorCode::InvalidApiKey,
            "Invalid or missing operator token.",
        )
    };
    let expected = app.admin_token.as_deref().ok_or_else(unauthorized)?;
    let presented = crate::auth::single_header(headers, "authorization")
        .map_err(|_| unauthorized())?
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(unauthorized)?;
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(unauthorized())
    }
}

/// `GET /metrics`: the operator token, or the scraper token
/// (`ROUTER_METRICS_TOKEN`) when one is set; on the admin listener any
/// caller when none is set (see `admin_listener`).
pub fn authorize_scrape(
    app: &App,
    headers: &http::HeaderMap,
    listener: crate::admin_listener::Listener,
) -> Result<(), ApiError> {
    let Some(scrape_token) = app.metrics_token.as_deref() else {
        if listener == crate::admin_listener::Listener::Admin {
            return Ok(());
        }
        return authorize(app, headers);
    };
    let presented = crate::auth::single_header(headers, "authorization")
        .ok()
        .flatten()
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    match presented {
        Some(token) if bool::from(token.as_bytes().ct_eq(scrape_token.as_bytes())) => Ok(()),
        _ => authorize(app, headers),
    }
}

/// The path's `{id}`: a malformed one is a missing resource (404), as an
/// unknown one.
pub fn id(params: &Params) -> Result<Uuid, ApiError> {
    params
        .first
        .as_deref()
        .and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such resource."))
}

/// The path's `{slug}` (an experiment's, after the account's `{id}`).
pub fn slug(params: &Params) -> Result<&str, ApiError> {
    params
        .second
        .as_deref()
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such experiment."))
}

/// `POST /admin/accounts/{id}/credits`: the grant also counts in
/// `router_credits_granted_nano_usd_total`.
pub async fn grant_credits(call: Call<'_>) -> Result<Reply, ApiError> {
    let id = id(&call.params)?;
    let credits: router_operator::Credits = crate::body::input(call.request).await?;
    let amount = credits.amount_nano_usd;
    let view = call.app.operator.credit_account(id, credits).await?;
    metrics::counter!("router_credits_granted_nano_usd_total").increment(amount.max(0) as u64);
    reply::ok(&view, call.id)
}
