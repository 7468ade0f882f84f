//! Digest channels (section M): the account's email channel and the
//! operator-provisioned Slack, Discord and Telegram ones, their events,
//! reports from the ledger and their delivery.
//!
//! - HTTP: `GET /v1/channels`, `GET|PATCH /v1/channels/{id}`,
//!   `POST /v1/channels/{id}/send-report`, `/api/channels/email*`,
//!   `GET /api/channels/{platform}` (here), and the operator's
//!   `POST /admin/accounts/{id}/channels`, `DELETE /admin/channels/{id}`
//!   (`admin.rs` over [`provision`] and [`deprovision`]).
//! - Rows and counters: `router_store::channels`.
//! - Reports: `report.rs`; transports: `deliver.rs`; where a channel may
//!   deliver (https, public hosts): `destination.rs`; the scheduler and the
//!   outbox relay: `jobs.rs` in this directory.
//!
//! A channel's destination is never shown whole: an email address is
//! masked, a webhook URL shows only its host, a chat id its last digits.

pub mod deliver;
pub mod destination;
pub mod events;
pub mod jobs;
pub mod report;

use crate::app::App;
use crate::body::Incoming;
use crate::body::{ADMIN_BODY_LIMIT, read_limited};
use crate::dispatch::Caller;
use crate::operator::store_error;
use crate::ownership::{self, Resource};
use crate::reply::{self, Body};
use deliver::Sent;
use http::header::{CACHE_CONTROL, HeaderValue};
use http::{Response, StatusCode};
use report::{Frequency, Report};
use router_canonical::{ApiError, ErrorCode};
use router_store::channels::{self as store, Admission, ChannelRow, Connect, NewChannel};
use serde_json::{Map, Value, json};
use uuid::Uuid;

/// The hour (UTC) after a period's end when its digest is due; read-only
/// for clients (GP-15).
pub const REPORT_HOUR_UTC: i16 = 6;

/// The external platforms (GP-17): provisioned by the operator.
pub const EXTERNAL_PLATFORMS: [&str; 3] = ["slack", "discord", "telegram"];

fn database_error(e: impl std::fmt::Display) -> ApiError {
    store_error(e)
}

async fn connection(app: &App) -> Result<router_store::PooledConnection, ApiError> {
    app.database().connection().await.map_err(database_error)
}

/// The caller's account (a key's or a session's).
fn account_of(caller: &Caller) -> Result<Uuid, ApiError> {
    match caller {
        Caller::Key(key) => Ok(key.account_id),
        Caller::Session(session) => Ok(session.account_id),
        Caller::Anonymous | Caller::Operator => Err(ApiError::new(
            ErrorCode::InternalError,
            "This endpoint is misconfigured.",
        )),
    }
}

/// A destination as a client may see it.
pub fn mask(platform: &str, destination: &str) -> String {
    match platform {
        "email" => match destination.split_once('@') {
            Some((local, domain)) => {
                let first: String = local.chars().take(1).collect();
                format!("{first}***@{domain}")
            }
            None => "***".to_owned(),
        },
        "telegram" => {
            let tail: String = destination
                .chars()
                .rev()
                .take(4)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect();
            format!("chat …{tail}")
        }
        // Slack and Discord webhook URLs carry their token in the path.
        _ => url::Url::parse(destination)
            .ok()
            .and_then(|u| u.host_str().map(|h| format!("{}://{h}/…", u.scheme())))
            .unwrap_or_else(|| "***".to_owned()),
    }
}

/// The channel record (GP-15).
pub fn record(row: &ChannelRow) -> Value {
    json!({
        "id": row.id,
        "object": "channel",
        "platform": row.platform,
        "frequency": row.frequency,
        "events": row.events,
        "destination": mask(&row.platform, &row.destination),
        "report_hour_utc": row.report_hour_utc,
        "status": row.status,
        "created_at": rfc3339(row.created_at),
        "updated_at": rfc3339(row.updated_at),
    })
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn no_store(mut response: Response<Body>) -> Response<Body> {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

fn reply(status: StatusCode, value: &Value, request_id: &str) -> Response<Body> {
    no_store(reply::json_value(status, value, request_id))
}

/// The caller's connected channel `id`, or the one 404 (M-05, A-22).
async fn owned(app: &App, id: Option<&str>, account: Uuid) -> Result<ChannelRow, ApiError> {
    let id = ownership::parse_id(Resource::Channel, id.unwrap_or_default())?;
    let mut conn = connection(app).await?;
    let row = store::get(&mut conn, id)
        .await
        .map_err(database_error)?
        .filter(ChannelRow::is_connected);
    ownership::owned_or_not_found(Resource::Channel, row.map(Owned), account).map(|o| o.0)
}

struct Owned(ChannelRow);

impl ownership::Owned for Owned {
    fn owner(&self) -> Uuid {
        self.0.account_id
    }
}

/// `GET /v1/channels` (M-01..M-03).
pub async fn list(
    app: &App,
    caller: &Caller,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = account_of(caller)?;
    let mut conn = connection(app).await?;
    let rows = store::list_connected(&mut conn, account)
        .await
        .map_err(database_error)?;
    let data: Vec<Value> = rows.iter().map(record).collect();
    Ok(reply(
        StatusCode::OK,
        &json!({"object": "list", "data": data, "available_events": events::IDS}),
        request_id,
    ))
}

/// `GET /v1/channels/{id}` (M-05).
pub async fn show(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let row = owned(app, id, account_of(caller)?).await?;
    Ok(reply(StatusCode::OK, &record(&row), request_id))
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

fn frequency_field(value: Option<&Value>) -> Result<&'static str, ApiError> {
    let invalid = || {
        ApiError::invalid(
            "frequency",
            format!("`frequency` must be one of {}.", Frequency::ALL.join(", ")),
        )
    };
    let text = value.and_then(Value::as_str).ok_or_else(invalid)?;
    Frequency::ALL
        .iter()
        .copied()
        .find(|f| *f == text)
        .ok_or_else(invalid)
}

/// `PATCH /v1/channels/{id}` (M-06..M-12, GP-66): `frequency` and/or
/// `events`; anything else (a destination, the report hour) is refused, and
/// one bad event refuses the whole update.
pub async fn update(
    app: &App,
    caller: &Caller,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = account_of(caller)?;
    let row = owned(app, id, account).await?;
    let body = object_body(request).await?;
    if body.is_empty() {
        return Err(ApiError::invalid(
            "body",
            "Give at least one of `frequency` and `events`.",
        ));
    }
    if let Some(field) = body.keys().find(|k| *k != "frequency" && *k != "events") {
        return Err(ApiError::invalid(
            field.clone(),
            format!("`{field}` cannot be changed: only `frequency` and `events` can."),
        ));
    }
    let frequency = match body.get("frequency") {
        Some(value) => Some(frequency_field(Some(value))?),
        None => None,
    };
    let events = match body.get("events") {
        Some(value) => Some(events::parse_selection(value)?),
        None => None,
    };
    let mut conn = connection(app).await?;
    let updated = store::update(&mut conn, row.id, account, frequency, events.as_deref())
        .await
        .map_err(database_error)?
        .ok_or_else(|| Resource::Channel.not_found())?;
    Ok(reply(StatusCode::OK, &record(&updated), request_id))
}

/// The "transport unconfigured" error of a platform (M-21).
fn unconfigured(platform: &str) -> ApiError {
    if platform == "email" {
        ApiError::new(
            ErrorCode::EmailUnavailable,
            "Email is not configured on this router.",
        )
    } else {
        ApiError::new(
            ErrorCode::ChannelUnavailable,
            format!("The {platform} transport is not configured on this router."),
        )
    }
}

/// Builds the report of `period` for the channel's account.
pub async fn build_report(
    app: &App,
    account_id: Uuid,
    frequency: Frequency,
    period: report::Period,
) -> Result<Report, router_core::store::StoreError> {
    let mut conn = app.database().connection().await?;
    let lines = store::usage(&mut conn, account_id, period.start, period.end).await?;
    let before = frequency.period_before(&period);
    let previous = store::usage(&mut conn, account_id, before.start, before.end).await?;
    Ok(Report::new(period, &lines, &previous))
}

/// How long a manual report waits before the outbox retries it.
const MANUAL_RETRY_SECS: i64 = 60;

/// `POST /v1/channels/{id}/send-report` (M-13..M-23, GP-16, GP-65): the
/// previous complete period, now, at most once a minute and 20 times a
/// UTC day per channel. The body is ignored.
pub async fn send_report(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account = account_of(caller)?;
    let row = owned(app, id, account).await?;
    if !app
        .channels
        .configured(&row.platform, app.mailer.as_deref())
    {
        return Err(unconfigured(&row.platform));
    }
    let mut conn = connection(app).await?;
    match store::admit_report(&mut conn, row.id)
        .await
        .map_err(database_error)?
    {
        Admission::Admitted => {}
        Admission::RetryAfter(secs) => {
            return Err(ApiError::new(
                ErrorCode::RateLimited,
                "Reports on this channel are limited to one a minute and 20 a day.",
            )
            .with_retry_after(Some(secs)));
        }
    }
    drop(conn);
    let frequency = Frequency::parse(&row.frequency).unwrap_or(Frequency::Off);
    let period = frequency.previous_period(chrono::Utc::now());
    let report = build_report(app, account, frequency, period)
        .await
        .map_err(database_error)?;
    let answer = |sent: bool, message: Option<&str>| {
        reply(
            StatusCode::OK,
            &json!({
                "sent": sent,
                "message": message,
                "period_start": period.start_text(),
                "period_end": period.end_text(),
            }),
            request_id,
        )
    };
    if report.is_empty() {
        return Ok(answer(
            false,
            Some("No activity in this period: nothing was sent."),
        ));
    }
    let message = report::render(&report, &row.platform).map_err(|_| {
        ApiError::new(
            ErrorCode::ReportUnavailable,
            "The complete report does not fit this platform's message limit.",
        )
    })?;
    let failed_code = if row.platform == "email" {
        ErrorCode::EmailDeliveryFailed
    } else {
        ErrorCode::ReportDeliveryFailed
    };
    match deliver::send(&app.channels, app.mailer.as_deref(), &row, &message).await {
        Sent::Delivered => Ok(answer(true, None)),
        Sent::Unconfigured => Err(unconfigured(&row.platform)),
        Sent::Retryable(why) => {
            tracing::warn!(channel = %row.id, platform = %row.platform, reason = %why, "manual report delivery failed; queued for a retry");
            let mut conn = connection(app).await?;
            store::enqueue_manual_retry(
                &mut conn,
                row.id,
                period.start,
                period.end,
                &why,
                MANUAL_RETRY_SECS,
            )
            .await
            .map_err(database_error)?;
            Err(ApiError::new(
                ErrorCode::ReportPending,
                "The platform did not take the report; it will be retried.",
            ))
        }
        Sent::Refused(why) => {
            tracing::warn!(channel = %row.id, platform = %row.platform, reason = %why, "manual report refused");
            Err(ApiError::new(
                failed_code,
                "The report could not be delivered.",
            ))
        }
        Sent::Unknown(why) => {
            tracing::warn!(channel = %row.id, platform = %row.platform, reason = %why, "manual report outcome unknown; not resent");
            let mut conn = connection(app).await?;
            store::record_ambiguous_manual(&mut conn, row.id, period.start, period.end, &why)
                .await
                .map_err(database_error)?;
            Err(ApiError::new(
                failed_code,
                "The platform did not acknowledge the report; it may have arrived and is not resent.",
            ))
        }
    }
}

/// `GET /api/channels/email` (M-24, GP-15).
pub async fn email_status(
    app: &App,
    caller: &Caller,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = account_of(caller)?;
    let account = app
        .database()
        .get_account(account_id)
        .await
        .map_err(database_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::AuthenticationRequired, "Sign in again."))?;
    let mut conn = connection(app).await?;
    let channel = store::for_platform(&mut conn, account_id, "email")
        .await
        .map_err(database_error)?
        .filter(ChannelRow::is_connected);
    Ok(reply(
        StatusCode::OK,
        &json!({
            "configured": app.mailer.is_some(),
            "email": account.email,
            "email_verified": account.email_verified,
            "channel": channel.as_ref().map(record),
        }),
        request_id,
    ))
}

/// `POST /api/channels/email` (M-25..M-30, M-34, GP-63, GP-64): connect
/// with consent; the destination is the account's verified email. No
/// report is sent now.
pub async fn email_connect(
    app: &App,
    caller: &Caller,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = account_of(caller)?;
    let body = object_body(request).await?;
    if let Some(field) = body.keys().find(|k| *k != "consent" && *k != "frequency") {
        return Err(ApiError::invalid(
            field.clone(),
            format!("`{field}` is not accepted: the destination is always your verified email."),
        ));
    }
    if body.get("consent") != Some(&Value::Bool(true)) {
        return Err(ApiError::invalid(
            "consent",
            "`consent` must be true to receive usage email.",
        ));
    }
    let frequency = frequency_field(body.get("frequency"))?;
    let account = app
        .database()
        .get_account(account_id)
        .await
        .map_err(database_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::AuthenticationRequired, "Sign in again."))?;
    if !account.email_verified {
        return Err(ApiError::new(
            ErrorCode::EmailVerificationRequired,
            "Verify your email address before connecting email reports.",
        ));
    }
    if app.mailer.is_none() {
        return Err(unconfigured("email"));
    }
    connect(
        app,
        NewChannel {
            account_id,
            platform: "email",
            frequency,
            destination: &account.email,
            api_base: None,
            report_hour_utc: REPORT_HOUR_UTC,
        },
        request_id,
    )
    .await
}

/// The state machine's answer (M-34).
async fn connect(
    app: &App,
    new: NewChannel<'_>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let mut conn = connection(app).await?;
    match store::connect(&mut conn, new)
        .await
        .map_err(database_error)?
    {
        Connect::Created(row) => Ok(reply(StatusCode::CREATED, &record(&row), request_id)),
        Connect::Unchanged(row) | Connect::Reconnected(row) => {
            Ok(reply(StatusCode::OK, &record(&row), request_id))
        }
        Connect::Conflict(_) => Err(ApiError::new(
            ErrorCode::ChannelAlreadyConnected,
            "A channel on this platform is already connected with another frequency; change it with PATCH /v1/channels/{id}.",
        )),
    }
}

/// `DELETE /api/channels/email/{id}` (M-31).
pub async fn email_disconnect(
    app: &App,
    caller: &Caller,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = account_of(caller)?;
    let id = ownership::parse_id(Resource::Channel, id.unwrap_or_default())?;
    let mut conn = connection(app).await?;
    let row = store::disconnect(&mut conn, id, Some(account_id), Some("email"))
        .await
        .map_err(database_error)?
        .ok_or_else(|| Resource::Channel.not_found())?;
    Ok(reply(
        StatusCode::OK,
        &json!({"id": row.id, "status": "disconnected"}),
        request_id,
    ))
}

/// `GET /api/channels/{platform}` (M-33, GP-17).
pub async fn platform_status(
    app: &App,
    caller: &Caller,
    platform: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let account_id = account_of(caller)?;
    let platform = platform.unwrap_or_default();
    let mut conn = connection(app).await?;
    let channel = store::for_platform(&mut conn, account_id, platform)
        .await
        .map_err(database_error)?
        .filter(ChannelRow::is_connected);
    Ok(reply(
        StatusCode::OK,
        &json!({
            "platform": platform,
            "configured": app.channels.configured(platform, app.mailer.as_deref()),
            "connected": channel.is_some(),
            "channel": channel.as_ref().map(record),
        }),
        request_id,
    ))
}

/// The operator's channel: `{platform, frequency, webhook_url}` for Slack
/// and Discord, `{platform: "telegram", frequency, chat_id, api_base?}`.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Provision {
    platform: String,
    frequency: String,
    webhook_url: Option<String>,
    chat_id: Option<String>,
    api_base: Option<String>,
}

impl std::fmt::Debug for Provision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provision")
            .field("platform", &self.platform)
            .field("frequency", &self.frequency)
            .finish_non_exhaustive()
    }
}

/// A webhook URL or API base under the destination rules (https, a
/// public host, no credentials), judged by its form: no DNS here, the
/// delivery resolves and checks again.
fn destination_url(app: &App, field: &str, text: &str) -> Result<(), ApiError> {
    destination::check(text, app.channels.url_policy())
        .map(drop)
        .map_err(|e| ApiError::invalid(field, format!("`{field}` {e}.")))
}

/// `POST /admin/accounts/{id}/channels` (GP-17): the same state machine as
/// email (201 new, 200 identical or reconnected, 409 another frequency).
pub async fn provision(
    app: &App,
    account_id: Uuid,
    body: Value,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let p: Provision = crate::operator::from_json(body)?;
    let frequency = frequency_field(Some(&Value::String(p.frequency.clone())))?;
    let (destination, api_base) = match p.platform.as_str() {
        "slack" | "discord" => {
            if p.chat_id.is_some() || p.api_base.is_some() {
                return Err(ApiError::invalid(
                    "chat_id",
                    "`chat_id` and `api_base` are Telegram's; Slack and Discord take `webhook_url`.",
                ));
            }
            let url = p
                .webhook_url
                .ok_or_else(|| ApiError::invalid("webhook_url", "`webhook_url` is required."))?;
            destination_url(app, "webhook_url", &url)?;
            (url, None)
        }
        "telegram" => {
            if p.webhook_url.is_some() {
                return Err(ApiError::invalid(
                    "webhook_url",
                    "Telegram takes `chat_id` (and optionally `api_base`), not `webhook_url`.",
                ));
            }
            let chat = p
                .chat_id
                .filter(|c| !c.is_empty() && c.len() <= 128)
                .ok_or_else(|| ApiError::invalid("chat_id", "`chat_id` is required."))?;
            if let Some(base) = &p.api_base {
                destination_url(app, "api_base", base)?;
            }
            (chat, p.api_base)
        }
        _ => {
            return Err(ApiError::invalid(
                "platform",
                "`platform` must be slack, discord or telegram (email is connected by the account holder).",
            ));
        }
    };
    if app
        .database()
        .get_account(account_id)
        .await
        .map_err(database_error)?
        .is_none()
    {
        return Err(ApiError::new(ErrorCode::NotFound, "No such account."));
    }
    connect(
        app,
        NewChannel {
            account_id,
            platform: &p.platform,
            frequency,
            destination: &destination,
            api_base: api_base.as_deref(),
            report_hour_utc: REPORT_HOUR_UTC,
        },
        request_id,
    )
    .await
}

/// `DELETE /admin/channels/{id}`: disconnects any channel.
pub async fn deprovision(
    app: &App,
    id: Uuid,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let mut conn = connection(app).await?;
    let row = store::disconnect(&mut conn, id, None, None)
        .await
        .map_err(database_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such connected channel."))?;
    Ok(reply::json_value(
        StatusCode::OK,
        &json!({"id": row.id, "status": "disconnected"}),
        request_id,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn destinations_are_masked() {
        assert_eq!(mask("email", "alice@example.com"), "a***@example.com");
        let hook = "https://hooks.slack.com/services/T000/B000/SECRETSECRET";
        assert_eq!(mask("slack", hook), "https://hooks.slack.com/…");
        assert_eq!(mask("telegram", "-1001234567890"), "chat …7890");
    }
}
