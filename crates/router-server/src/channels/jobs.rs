//! The two background passes of channels, run by the `digest-scheduler`
//! and `outbox` jobs (and callable directly):
//!
//! - [`digest_pass`] queues each connected channel's digest for the last
//!   complete period once it is due (period end + `report_hour_utc`), and
//!   only for periods that end after the channel was connected; one row per
//!   channel and period (a unique key), whichever instance gets there first.
//!   It also queues `api_key_expiring` seven days ahead.
//! - [`outbox_pass`] claims due rows with `FOR UPDATE SKIP LOCKED` (marking
//!   them `sending` before anything is sent), delivers them and records the
//!   outcome: delivered, retried with backoff when it certainly did not
//!   arrive, failed, or ambiguous (never resent, M-22).

use super::deliver::{self, Sent};
use super::events;
use super::report::{self, Frequency, Period};
use crate::app::App;
use chrono::{DateTime, Duration, Utc};
use router_core::store::StoreError;
use router_store::channels::{self as store, Delivery, Outcome};

/// Deliveries claimed per statement, and statements per pass.
const CLAIM_BATCH: i64 = 32;
const MAX_BATCHES: usize = 64;
/// A delivery is tried this many times before it fails for good.
pub const MAX_ATTEMPTS: i32 = 5;
/// The first retry waits this long; each next one twice as long.
const FIRST_BACKOFF_SECS: i64 = 30;

/// Queues the digests due at `as_of`; returns how many were queued.
pub async fn digest_pass(app: &App, as_of: DateTime<Utc>) -> Result<u64, StoreError> {
    let mut conn = app.database().connection().await?;
    let mut queued = 0u64;
    for channel in store::scheduled(&mut conn).await? {
        let Some(frequency) = Frequency::parse(&channel.frequency) else {
            continue;
        };
        let period = frequency.previous_period(as_of);
        let due = period.end + Duration::hours(i64::from(channel.report_hour_utc));
        if as_of < due || period.end <= channel.connected_at {
            continue;
        }
        if store::enqueue_digest(&mut conn, channel.id, period.start, period.end).await? {
            queued += 1;
        }
    }
    let expiring = store::enqueue_keys_expiring(&mut conn, as_of).await?;
    Ok(queued + expiring as u64)
}

/// Available credit under this (nano-USD, $1.00) is a `low_balance` event.
pub const LOW_BALANCE_NANO: i64 = 1_000_000_000;

/// Delivers what is due; returns how many rows it finished or rescheduled.
/// Each pass first queues `low_balance` for accounts whose available credit
/// fell under [`LOW_BALANCE_NANO`] (checked here, every outbox pass, rather
/// than in the settlement statement, which stays two statements a request).
pub async fn outbox_pass(app: &App) -> Result<u64, StoreError> {
    {
        let mut conn = app.database().connection().await?;
        store::enqueue_low_balance(&mut conn, LOW_BALANCE_NANO).await?;
    }
    let mut processed = 0u64;
    for _ in 0..MAX_BATCHES {
        let claimed = {
            let mut conn = app.database().connection().await?;
            store::claim_due(&mut conn, CLAIM_BATCH).await?
        };
        if claimed.is_empty() {
            break;
        }
        for delivery in claimed {
            let outcome = deliver_one(app, &delivery).await?;
            if let Outcome::Ambiguous(why) | Outcome::Failed(why) = &outcome {
                tracing::warn!(delivery = %delivery.id, channel = %delivery.channel_id, reason = %why, "channel delivery not completed");
            }
            let mut conn = app.database().connection().await?;
            store::finish(&mut conn, delivery.id, &outcome).await?;
            processed += 1;
        }
    }
    Ok(processed)
}

/// The frequency whose period has this length (for the comparison).
fn frequency_of(period: &Period) -> Frequency {
    match (period.end - period.start).num_days() {
        1 => Frequency::Daily,
        7 => Frequency::Weekly,
        _ => Frequency::Monthly,
    }
}

async fn deliver_one(app: &App, delivery: &Delivery) -> Result<Outcome, StoreError> {
    let channel = {
        let mut conn = app.database().connection().await?;
        store::get(&mut conn, delivery.channel_id).await?
    };
    let Some(channel) = channel.filter(|c| c.is_connected()) else {
        return Ok(Outcome::Failed("channel disconnected".to_owned()));
    };
    let message = match (
        delivery.kind.as_str(),
        delivery.period_start,
        delivery.period_end,
    ) {
        ("digest" | "manual", Some(start), Some(end)) => {
            let period = Period { start, end };
            let report =
                super::build_report(app, channel.account_id, frequency_of(&period), period).await?;
            if report.is_empty() {
                return Ok(Outcome::Skipped);
            }
            match report::render(&report, &channel.platform) {
                Ok(message) => message,
                Err(report::TooLarge) => {
                    return Ok(Outcome::Failed(
                        "the report does not fit the platform's limit".to_owned(),
                    ));
                }
            }
        }
        ("event", _, _) => {
            let event = delivery.event.as_deref().unwrap_or_default();
            let payload = serde_json::from_str(&delivery.payload).unwrap_or_default();
            let (title, detail) = events::describe(event, &payload);
            report::render_event(&channel.platform, &title, &detail)
        }
        _ => return Ok(Outcome::Failed("malformed delivery".to_owned())),
    };
    let retry = |why: String| {
        if delivery.attempts >= MAX_ATTEMPTS {
            Outcome::Failed(why)
        } else {
            let exponent = u32::try_from(delivery.attempts.max(1) - 1).unwrap_or(0);
            Outcome::RetryIn(FIRST_BACKOFF_SECS << exponent.min(10), why)
        }
    };
    Ok(
        match deliver::send(&app.channels, app.mailer.as_deref(), &channel, &message).await {
            Sent::Delivered => Outcome::Delivered,
            Sent::Retryable(why) => retry(why),
            Sent::Unconfigured => retry("the transport is not configured".to_owned()),
            Sent::Refused(why) => Outcome::Failed(why),
            Sent::Unknown(why) => Outcome::Ambiguous(why),
        },
    )
}

/// `POST /admin/jobs/{name}/run`: one pass now. With test hooks on, the
/// `digest-scheduler` takes `{"as_of": RFC 3339}` to run as if it were then;
/// without them a body with `as_of` is 404 like the hook itself.
pub async fn run_job(
    app: &App,
    request: http::Request<crate::body::Incoming>,
    name: Option<&str>,
    request_id: &str,
) -> Result<http::Response<crate::reply::Body>, router_canonical::ApiError> {
    let (parts, body) = request.into_parts();
    let bytes =
        crate::body::read_limited(&parts.headers, body, crate::body::ADMIN_BODY_LIMIT).await?;
    let view = if bytes.iter().all(u8::is_ascii_whitespace) {
        crate::jobs::run_now(app, name).await?
    } else {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct AsOf {
            as_of: DateTime<Utc>,
        }
        crate::jobs::require_test_hooks(app)?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let as_of: AsOf = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| router_canonical::ApiError::invalid("as_of", e.inner().to_string()))?;
        if name != Some("digest-scheduler") {
            return Err(router_canonical::ApiError::invalid(
                "as_of",
                "Only the digest-scheduler takes `as_of`.",
            ));
        }
        let processed = digest_pass(app, as_of.as_of).await.map_err(|e| {
            tracing::error!(error = %e, "digest-scheduler pass failed");
            router_canonical::ApiError::new(
                router_canonical::ErrorCode::InternalError,
                "The `digest-scheduler` pass failed.",
            )
        })?;
        serde_json::json!({"name": "digest-scheduler", "processed": processed})
    };
    Ok(crate::reply::json_value(
        http::StatusCode::OK,
        &view,
        request_id,
    ))
}

/// `POST /admin/requests/backdate` `{request_ids, finished_at}` (test hooks
/// only): moves finished requests into another period.
pub async fn backdate_requests(
    app: &App,
    request: http::Request<crate::body::Incoming>,
    request_id: &str,
) -> Result<http::Response<crate::reply::Body>, router_canonical::ApiError> {
    crate::jobs::require_test_hooks(app)?;
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Backdate {
        request_ids: Vec<uuid::Uuid>,
        finished_at: DateTime<Utc>,
    }
    let body: Backdate = crate::body::json_body(request, crate::body::ADMIN_BODY_LIMIT).await?;
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(crate::operator::store_error)?;
    let moved = store::backdate_requests(&mut conn, &body.request_ids, body.finished_at)
        .await
        .map_err(crate::operator::store_error)?;
    Ok(crate::reply::json_value(
        http::StatusCode::OK,
        &serde_json::json!({"moved": moved}),
        request_id,
    ))
}
