//! Digest channels over HTTP (section M): `GET /v1/channels`,
//! `GET|PATCH /v1/channels/{id}`, `POST /v1/channels/{id}/send-report`,
//! `/api/channels/email*`, `GET /api/channels/{platform}`, and the
//! operator's `POST /admin/accounts/{id}/channels` and
//! `DELETE /admin/channels/{id}` (`admin.rs` over [`provision`] and
//! [`deprovision`]).
//!
//! Each handler parses the request, checks the caller, calls one operation
//! of the notifications wing (`router_notify::Notifier`: the rules, the
//! rows, reports and delivery) and renders its answer with
//! `Cache-Control: no-store`. The admin jobs' test hooks are `jobs.rs` in
//! this directory.

pub mod jobs;

use crate::app::App;
use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, read_limited};
use crate::caller::Caller;
use crate::reply::{self, Body};
use http::header::{CACHE_CONTROL, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use router_core::ownership::{self, Resource};
use router_notify::{ChannelChange, Connected, EmailConsent, Platform};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

pub use router_notify::Provision;

/// The `{platform}` of `/api/channels/{platform}`: one the operator
/// provisions, else 404 (the route's path check).
pub(crate) fn external_platform(param: Option<&str>) -> Result<Platform, ApiError> {
    param
        .and_then(Platform::parse)
        .filter(|p| p.is_external())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such channel platform."))
}

fn channel_id(id: Option<&str>) -> Result<Uuid, ApiError> {
    ownership::parse_id(Resource::Channel, id.unwrap_or_default())
}

fn no_store(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn reply(status: StatusCode, view: &impl Serialize, request_id: &str) -> Response<Body> {
    no_store(reply::json(
        status,
        serde_json::to_vec(view).unwrap_or_default(),
        request_id,
    ))
}

fn connected(answer: Connected, request_id: &str) -> Response<Body> {
    let status = if answer.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    reply(status, &answer.channel, request_id)
}

/// A JSON object body; anything else is 400.
async fn object_body(request: http::Request<Incoming>) -> Result<Map<String, Value>, ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = read_limited(&parts.headers, body, ADMIN_BODY_LIMIT).await?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(_) => Err(ApiError::invalid("body", "The body must be a JSON object.")),
        Err(_) => Err(ApiError::invalid("body", "The body is not valid JSON.")),
    }
}

/// `GET /v1/channels` (M-01..M-03).
pub async fn list(
    app: &App,
    caller: &Caller,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.notify.list(caller.account_id()?).await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `GET /v1/channels/{id}` (M-05).
pub async fn show(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let view = app.notify.show(account, channel_id(id)?).await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `PATCH /v1/channels/{id}` (M-06..M-12, GP-66): another account's or an
/// unknown channel is 404 before the body is read.
pub async fn update(
    app: &App,
    caller: &Caller,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let id = channel_id(id)?;
    app.notify.show(account, id).await?;
    let change = ChannelChange::from_json(&object_body(request).await?)?;
    let view = app.notify.update(account, id, change).await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `POST /v1/channels/{id}/send-report` (M-13..M-23, GP-16, GP-65). The
/// body is ignored.
pub async fn send_report(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let view = app.notify.send_report(account, channel_id(id)?).await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `GET /api/channels/email` (M-24, GP-15).
pub async fn email_status(
    app: &App,
    caller: &Caller,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.notify.email_status(caller.account_id()?).await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `POST /api/channels/email` (M-25..M-30, M-34, GP-63, GP-64).
pub async fn email_connect(
    app: &App,
    caller: &Caller,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let consent = EmailConsent::from_json(&object_body(request).await?)?;
    let answer = app.notify.connect_email(account, consent).await?;
    Ok(connected(answer, request_id))
}

/// `DELETE /api/channels/email/{id}` (M-31).
pub async fn email_disconnect(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let view = app
        .notify
        .disconnect_email(account, channel_id(id)?)
        .await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `GET /api/channels/{platform}` (M-33, GP-17).
pub async fn platform_status(
    app: &App,
    caller: &Caller,
    platform: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = caller.account_id()?;
    let view = app
        .notify
        .platform_status(account, external_platform(platform)?)
        .await?;
    Ok(reply(StatusCode::OK, &view, request_id))
}

/// `POST /admin/accounts/{id}/channels` (GP-17): the body read by
/// `admin::input`, as every operator body.
pub async fn provision(
    app: &App,
    account_id: Uuid,
    provision: Provision,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let answer = app.notify.provision(account_id, provision).await?;
    Ok(connected(answer, request_id))
}

/// `DELETE /admin/channels/{id}`: disconnects any channel.
pub async fn deprovision(
    app: &App,
    id: Uuid,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let view = app.notify.deprovision(id).await?;
    Ok(reply::json(
        StatusCode::OK,
        serde_json::to_vec(&view).unwrap_or_default(),
        request_id,
    ))
}
