//! The operator admin API under `/admin/`, guarded by the operator token
//! (`ROUTER_ADMIN_TOKEN`), compared in constant time. The operations are
//! the operator wing's (`router_operator::Operator`, shared with the
//! `router` CLI); each handler reads the path and body, calls one
//! operation and writes its answer.

use crate::app::App;
use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, json_body};
use crate::reply::{self, Body};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use serde::de::DeserializeOwned;
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

fn parse_id(id: Option<&str>) -> Result<Uuid, ApiError> {
    id.and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such resource."))
}

/// The body as an operation's input: JSON, then the input's fields (an
/// unknown one is refused).
async fn input<T: DeserializeOwned>(request: http::Request<Incoming>) -> Result<T, ApiError> {
    let body = json_body(request, ADMIN_BODY_LIMIT).await?;
    Ok(router_operator::from_json(body)?)
}

pub async fn create_account(
    app: &App,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.create_account(input(request).await?).await?;
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

pub async fn get_account(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.account(parse_id(id)?).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

pub async fn grant_credits(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let credits: router_operator::Credits = input(request).await?;
    let amount = credits.amount_nano_usd;
    let view = app.operator.credit_account(id, credits).await?;
    metrics::counter!("router_credits_granted_nano_usd_total").increment(amount.max(0) as u64);
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

pub async fn create_api_key(
    app: &App,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let new = input(request).await?;
    let view = app
        .operator
        .create_api_key(&app.gateway.catalog(), new)
        .await?;
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

pub async fn get_api_key(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.api_key(parse_id(id)?).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `GET /admin/accounts/{id}/api-keys`.
pub async fn list_api_keys(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.api_keys(parse_id(id)?).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

pub async fn update_api_key(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let patch = input(request).await?;
    let view = app
        .operator
        .update_api_key(&app.gateway.catalog(), id, patch)
        .await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

pub async fn delete_api_key(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    app.operator.delete_api_key(parse_id(id)?).await?;
    Ok(reply::no_content(request_id))
}

pub async fn get_request(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.request(parse_id(id)?).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `POST /admin/accounts/{id}/sessions`.
pub async fn create_session(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = parse_id(id)?;
    let view = app
        .operator
        .create_session(account_id, input(request).await?)
        .await?;
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

/// `DELETE /admin/sessions/{id}`.
pub async fn delete_session(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    app.operator.revoke_session(parse_id(id)?).await?;
    Ok(reply::no_content(request_id))
}

/// `POST /admin/accounts/{id}/channels`: a Slack, Discord or Telegram
/// channel for an account (GP-17; `channels::provision`).
pub async fn provision_channel(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = parse_id(id)?;
    let body: serde_json::Value = json_body(request, ADMIN_BODY_LIMIT).await?;
    crate::channels::provision(app, account_id, body, request_id).await
}

/// `DELETE /admin/channels/{id}`: disconnects a channel of any platform.
pub async fn deprovision_channel(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    crate::channels::deprovision(app, parse_id(id)?, request_id).await
}

/// `POST /admin/accounts/{id}/experiments`: a draft experiment.
pub async fn create_experiment(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = parse_id(id)?;
    let new = input(request).await?;
    let view = app
        .operator
        .create_experiment(&app.gateway.catalog(), account_id, new)
        .await?;
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

/// `GET /admin/accounts/{id}/experiments`.
pub async fn list_experiments(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.operator.experiments(parse_id(id)?).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `GET /admin/accounts/{id}/experiments/{slug}`.
pub async fn get_experiment(
    app: &App,
    id: Option<&str>,
    slug: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = parse_id(id)?;
    let slug = slug.ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such experiment."))?;
    let view = app.operator.experiment(account_id, slug).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `PATCH /admin/accounts/{id}/experiments/{slug}`: a status change.
pub async fn update_experiment(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    slug: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = parse_id(id)?;
    let slug = slug
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such experiment."))?
        .to_owned();
    let patch = input(request).await?;
    let view = app
        .operator
        .update_experiment(account_id, &slug, patch)
        .await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}
