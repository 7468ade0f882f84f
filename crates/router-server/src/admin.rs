//! The operator admin API under `/admin/`, guarded by the operator token
//! (`ROUTER_ADMIN_TOKEN`), compared in constant time.

use crate::app::App;
use crate::body::{ADMIN_BODY_LIMIT, read_limited};
use crate::reply::{self, Body};
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, ErrorCode, NanoUsd};
use router_core::store::Scope;
use serde::Deserialize;
use serde_json::json;
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
    let presented = headers
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(unauthorized)?;
    if bool::from(presented.as_bytes().ct_eq(expected.as_bytes())) {
        Ok(())
    } else {
        Err(unauthorized())
    }
}

async fn body_json<T: for<'de> Deserialize<'de>>(
    request: http::Request<Incoming>,
) -> Result<T, ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = read_limited(&parts.headers, body, ADMIN_BODY_LIMIT).await?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        ApiError::invalid(
            if path == "." { "body".to_owned() } else { path },
            e.inner().to_string(),
        )
    })
}

fn parse_id(id: Option<&str>) -> Result<Uuid, ApiError> {
    id.and_then(|s| Uuid::parse_str(s).ok())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such resource."))
}

fn store_error(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "admin storage failure");
    ApiError::new(ErrorCode::InternalError, "Storage failure.")
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewAccount {
    email: String,
    #[serde(default)]
    email_verified: bool,
}

pub async fn create_account(
    app: &App,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let new: NewAccount = body_json(request).await?;
    let account = app
        .database()
        .create_account(&new.email, new.email_verified)
        .await
        .map_err(|e| match e {
            router_store::AdminError::EmailTaken => ApiError::new(
                ErrorCode::Conflict,
                "An account with this email already exists.",
            )
            .with_param("email"),
            other => store_error(other),
        })?;
    let view = json!({
        "id": account.id,
        "email": account.email,
        "email_verified": account.email_verified,
        "balance_nano_usd": 0,
        "held_nano_usd": 0,
    });
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

pub async fn get_account(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let account = app
        .database()
        .get_account(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such account."))?;
    Ok(reply::json_value(
        StatusCode::OK,
        &account_json(&account),
        request_id,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Credits {
    amount_nano_usd: i64,
}

pub async fn grant_credits(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let credits: Credits = body_json(request).await?;
    if credits.amount_nano_usd <= 0 {
        return Err(ApiError::invalid(
            "amount_nano_usd",
            "The amount must be a positive integer of nano-USD.",
        ));
    }
    let balance = app
        .database()
        .grant_credits(id, NanoUsd(credits.amount_nano_usd))
        .await
        .map_err(|e| match e {
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such account.")
            }
            other => store_error(other),
        })?;
    Ok(reply::json_value(
        StatusCode::OK,
        &json!({"account_id": id, "balance_nano_usd": balance.0}),
        request_id,
    ))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NewApiKey {
    account_id: Uuid,
    scopes: Vec<String>,
    /// Unix seconds.
    #[serde(default)]
    expires_at: Option<u64>,
}

pub async fn create_api_key(
    app: &App,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let new: NewApiKey = body_json(request).await?;
    let mut scopes = Vec::new();
    for (i, name) in new.scopes.iter().enumerate() {
        let scope = Scope::parse(name).ok_or_else(|| {
            ApiError::invalid(format!("scopes[{i}]"), format!("Unknown scope `{name}`."))
        })?;
        scopes.push(scope);
    }
    let expires_at = new
        .expires_at
        .map(|s| std::time::UNIX_EPOCH + std::time::Duration::from_secs(s));
    let key = app
        .database()
        .create_api_key(new.account_id, &scopes, expires_at)
        .await
        .map_err(|e| match e {
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::invalid("account_id", "No such account.")
            }
            other => store_error(other),
        })?;
    let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let view = json!({"id": key.id, "key": key.key, "prefix": key.prefix, "account_id": new.account_id, "scopes": names});
    Ok(reply::json_value(StatusCode::CREATED, &view, request_id))
}

pub async fn delete_api_key(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    app.database()
        .delete_api_key(id)
        .await
        .map_err(|e| match e {
            router_store::AdminError::ApiKeyNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such API key.")
            }
            other => store_error(other),
        })?;
    let mut response = reply::json(StatusCode::NO_CONTENT, Vec::new(), request_id);
    response.headers_mut().remove(http::header::CONTENT_TYPE);
    Ok(response)
}

pub async fn get_request(
    app: &App,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = parse_id(id)?;
    let view = app
        .database()
        .get_request(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such request."))?;
    Ok(reply::json_value(
        StatusCode::OK,
        &request_json(&view),
        request_id,
    ))
}

/// The admin view of an account; money in integer nano-USD.
fn account_json(account: &router_store::AccountView) -> serde_json::Value {
    json!({
        "id": account.id,
        "email": account.email,
        "email_verified": account.email_verified,
        "balance_nano_usd": account.balance_nano,
        "held_nano_usd": account.held_nano,
        "available_nano_usd": account.balance_nano - account.held_nano,
        "shortfall_count": account.shortfall_count,
        "shortfall_nano_usd": account.shortfall_nano,
        "created_at": account.created_at,
    })
}

/// The admin view of one request's history: status, charge, attempts, ledger.
fn request_json(view: &router_store::RequestView) -> serde_json::Value {
    json!({
        "id": view.id,
        "account_id": view.account_id,
        "api_key_id": view.api_key_id,
        "model": view.model,
        "inbound_protocol": view.inbound_protocol,
        "protocol": view.recorded_protocol,
        "stream": view.stream,
        "status": view.status,
        "reserved_nano_usd": view.reserved_nano,
        "charged_nano_usd": view.charged_nano,
        "reported_nano_usd": view.reported_nano,
        "shortfall_nano_usd": view.shortfall_nano,
        "usage": view.usage,
        "route_id": view.route_id,
        "error_reason": view.error_reason,
        "created_at": view.created_at,
        "finished_at": view.finished_at,
        "hold": view.hold,
        "attempts": view.attempts,
        "ledger": view.ledger_entries,
    })
}
