//! Digest channels over HTTP (section M): `GET /v1/channels`,
//! `GET|PATCH /v1/channels/{id}`, `POST /v1/channels/{id}/send-report`,
//! `/api/channels/email*`, `GET /api/channels/{platform}`, and the
//! operator's `POST /admin/accounts/{id}/channels` and
//! `DELETE /admin/channels/{id}`.
//!
//! Each route's row calls one operation of the notifications wing
//! (`router_notify::Notifier`: the rules, the rows, reports and delivery)
//! with the path read here (`id`, `external_platform`) and answers with
//! `ok` or `connected` (`Cache-Control: no-store`); the two whose body
//! needs reading first are [`update`] and [`email_connect`]. The admin
//! jobs' test hooks are `jobs.rs` in this directory.

pub mod jobs;

use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, read_limited};
use crate::call::{Call, Params};
use crate::caller::Caller;
use crate::reply::{self, Reply};
use http::StatusCode;
use router_canonical::{ApiError, ErrorCode};
use router_core::ownership::{self, Resource};
use router_notify::{ChannelChange, Connected, EmailConsent, Platform};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

/// The `{platform}` of `/api/channels/{platform}`: one the operator
/// provisions, else 404 (the route's path check).
pub(crate) fn external_platform(param: Option<&str>) -> Result<Platform, ApiError> {
    param
        .and_then(Platform::parse)
        .filter(|p| p.is_external())
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such channel platform."))
}

/// The path's channel `{id}`: a malformed one is the channel's 404.
pub fn id(params: &Params) -> Result<Uuid, ApiError> {
    ownership::parse_id(
        Resource::Channel,
        params.first.as_deref().unwrap_or_default(),
    )
}

/// 200 with a view, never stored by a cache (`no-store`).
pub fn ok(view: &impl Serialize, request_id: &str) -> Result<Reply, ApiError> {
    Ok(answer(StatusCode::OK, view, request_id))
}

fn answer(status: StatusCode, view: &impl Serialize, request_id: &str) -> Reply {
    reply::no_store(reply::json_value(status, view, request_id))
}

/// 201 with the channel a connection made, or 200 with the one it found
/// already connected or reconnected.
pub fn connected(connection: Connected, request_id: &str) -> Result<Reply, ApiError> {
    let status = if connection.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(answer(status, &connection.channel, request_id))
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

/// `PATCH /v1/channels/{id}` (M-06..M-12, GP-66): another account's or an
/// unknown channel is 404 before the body is read.
pub async fn update(call: Call<'_>, caller: &Caller) -> Result<Reply, ApiError> {
    let account = caller.account_id()?;
    let id = id(&call.params)?;
    call.app.notify.show(account, id).await?;
    let change = ChannelChange::from_json(&object_body(call.request).await?)?;
    ok(&call.app.notify.update(account, id, change).await?, call.id)
}

/// `POST /api/channels/email` (M-25..M-30, M-34, GP-63, GP-64).
pub async fn email_connect(call: Call<'_>, caller: &Caller) -> Result<Reply, ApiError> {
    let account = caller.account_id()?;
    let consent = EmailConsent::from_json(&object_body(call.request).await?)?;
    connected(
        call.app.notify.connect_email(account, consent).await?,
        call.id,
    )
}
