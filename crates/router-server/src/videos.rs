//! Video jobs (section O): `POST /v1/videos`, `GET /v1/videos/{id}`,
//! `GET /v1/videos/{id}/content`, the poller job and the operator's view
//! and reconciliation.
//!
//! **Money.** The create call writes the job row and its hold in one
//! transaction (`router_store::videos::create`), then submits the job to
//! the supplier once. From then on the hold ends exactly one way, each in
//! the same transaction as the job's state change:
//!
//! * the supplier refused it, or nothing was sent → `failed`, released;
//! * sent but the answer lost (or the process died mid-submission) →
//!   `unknown`: held, never resubmitted, until an operator reconciles
//!   (GP-25): with the supplier's task id (polling resumes) or as failed
//!   (released);
//! * polled to `completed` → the content is copied into the object store
//!   first, then the job is `completed` and the hold settled, so a
//!   completed video is always downloadable;
//! * polled to `failed` → released; the supplier's text is kept for
//!   operators, the client sees [`PUBLIC_FAIL_REASON`] (P-08).
//!
//! The hold reaper skips a video's hold while the job is active or unknown
//! (`billing::reap_expired_holds`).
//!
//! **Idempotency** (GP-26): the row is unique per (account,
//! `client_task_id`) for the video's lifetime. A create that finds a row
//! with the same fingerprint replays it (the same id; a job still being
//! submitted is waited for), with another fingerprint it is 409. Nothing
//! is stored for a request that fails validation.

use crate::app::App;
use crate::auth;
use crate::body::Incoming;
use crate::jobs::JobError;
use crate::ownership::{Owned, Resource, owned_or_not_found};
use crate::reply::{self, Body, Envelope, Reply};
use crate::request_log::RequestLog;
use bytes::Bytes;
use futures::StreamExt;
use http::header::{ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{
    ApiError, ErrorCode, NanoUsd, Protocol, UpstreamState, Usage, VideoRequest, VideoStatus,
};
use router_core::catalog::Modality;
use router_core::store::{
    ApiKeyRecord, AttemptOutcome, AttemptRecord, NewRequest, Settlement, Voiding,
};
use router_core::{Catalog, Route};
use router_store::videos::{self as store, Created, FinishError, NewVideo, VideoRow};
use router_supply::Submission;
use router_videos::client::{VideoView, parse_create, render_video};
use router_videos::range::{RangeOutcome, parse_range};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// `POST /v1/videos` body limit (O-02, Q-03).
pub const VIDEO_BODY_LIMIT: usize = 256 * 1024;

/// What a client sees of a failed video (never the supplier's text).
pub const PUBLIC_FAIL_REASON: &str = "The video could not be generated; nothing was charged.";

/// The public id's prefix: `video_` and the row's UUID in 32 hex digits.
const ID_PREFIX: &str = "video_";

/// The header naming the video of a `submission_unknown` (O-19).
pub const VIDEO_ID_HEADER: &str = "x-video-id";

/// A submission still `submitting` this long after creation lost its
/// process (the supplier call itself gives up after 60 s): it becomes
/// `unknown`.
const ORPHANED_SUBMISSION: Duration = Duration::from_secs(180);

/// How long a replay waits for the original create's submission.
const REPLAY_WAIT: Duration = Duration::from_secs(75);

/// How long a job whose content is being copied is kept from other passes.
const COPY_LEASE: Duration = Duration::from_secs(600);

/// Jobs one poller pass claims per batch.
const POLL_BATCH: i64 = 32;
/// Batches per pass at most (a pass is bounded; the rest wait a pass).
const MAX_BATCHES: usize = 16;
/// Jobs of a batch polled at once.
const POLL_CONCURRENCY: usize = 8;

/// Video settings of one router process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VideoSettings {
    /// Each active job is polled once per this interval, across every
    /// instance (`ROUTER_VIDEO_POLL_INTERVAL_MS`, default 5000).
    pub poll_interval: Duration,
}

impl Default for VideoSettings {
    fn default() -> Self {
        VideoSettings {
            poll_interval: Duration::from_millis(5000),
        }
    }
}

impl Owned for VideoRow {
    fn owner(&self) -> Uuid {
        self.account_id
    }
}

/// The public id of row `id`.
pub fn public_id(id: Uuid) -> String {
    format!("{ID_PREFIX}{}", id.simple())
}

/// The row id of a public id; anything malformed is simply not found
/// (GP-72).
fn parse_public_id(text: &str) -> Result<Uuid, ApiError> {
    text.strip_prefix(ID_PREFIX)
        .filter(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|hex| Uuid::try_parse(hex).ok())
        .ok_or_else(|| Resource::Video.not_found())
}

fn storage_failure(error: &dyn std::fmt::Display) -> ApiError {
    tracing::error!(error = %error, "video storage failure");
    ApiError::new(ErrorCode::InternalError, "Storage failure.")
}

fn unix(t: chrono::DateTime<chrono::Utc>) -> i64 {
    t.timestamp()
}

/// The video object's view of a row (O-21, O-22).
pub fn view(row: &VideoRow) -> VideoView {
    let status = match row.status.as_str() {
        // A submission in flight is shown as queued: the job exists and
        // its money is held (GP-23).
        "submitting" | "queued" => VideoStatus::Queued,
        other => VideoStatus::parse(other).unwrap_or(VideoStatus::Unknown),
    };
    let id = public_id(row.id);
    VideoView {
        // `render_video` gives a completed video its content path.
        content_url: None,
        fail_reason: (status == VideoStatus::Failed).then(|| {
            row.fail_reason
                .clone()
                .unwrap_or_else(|| PUBLIC_FAIL_REASON.to_owned())
        }),
        id,
        model: row.model.clone(),
        status,
        progress: u8::try_from(row.progress.clamp(0, 100)).unwrap_or(0),
        created_at: unix(row.created_at),
        completed_at: row.completed_at.map(unix),
    }
}

fn video_reply(row: &VideoRow, request_id: &str) -> Reply {
    reply::json(StatusCode::OK, render_video(&view(row)), request_id)
}

/// An error reply of the video envelope naming the video in `x-video-id`.
fn error_for_video(error: &ApiError, video: Uuid, request_id: &str) -> Reply {
    let mut response = reply::error(Envelope::Video, error, request_id);
    if let Ok(value) = HeaderValue::from_str(&public_id(video)) {
        response.headers_mut().insert(VIDEO_ID_HEADER, value);
    }
    response
}

fn submission_unknown() -> ApiError {
    ApiError::new(
        ErrorCode::SubmissionUnknown,
        "The video was submitted but the supplier's answer was lost; it is held until an operator reconciles it. Retry with the same client_task_id to read its status.",
    )
}

fn refused_by_supplier() -> ApiError {
    ApiError::new(
        ErrorCode::UpstreamError,
        "The upstream refused the video; nothing was charged.",
    )
}

fn upstream_unreachable() -> ApiError {
    ApiError::new(
        ErrorCode::UpstreamUnavailable,
        "The upstream could not be reached; nothing was charged.",
    )
}

/// The one attempt of a video job, started at `started` (wall clock and
/// monotonic), for its history.
fn video_attempt(
    row: &VideoRow,
    route: &Route,
    started: (SystemTime, std::time::Instant),
    outcome: AttemptOutcome,
) -> AttemptRecord {
    AttemptRecord {
        request_id: row.request_id,
        attempt_no: 1,
        route_id: route.id.clone(),
        supplier_id: route.supplier.id.clone(),
        upstream_protocol: Protocol::Videos,
        started_at: started.0,
        duration_ms: started.1.elapsed().as_millis() as u64,
        outcome,
    }
}

/// The replay of an existing job's create (Stripe-like: the original
/// outcome, GP-25).
fn replay_reply(row: &VideoRow, request_id: &str) -> Reply {
    match (row.status.as_str(), row.create_error.as_deref()) {
        ("unknown", _) | ("submitting", _) => {
            error_for_video(&submission_unknown(), row.id, request_id)
        }
        ("failed", Some(code)) => {
            let error = match code {
                "upstream_error" => refused_by_supplier(),
                _ => upstream_unreachable(),
            };
            error_for_video(&error, row.id, request_id)
        }
        _ => video_reply(row, request_id),
    }
}

/// `POST /v1/videos`.
pub async fn create(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    log: &RequestLog,
) -> Reply {
    let id_text = request_id.to_string();
    match run_create(app, request, key, request_id, &id_text, log).await {
        Ok(response) => response,
        Err(error) => reply::error(Envelope::Video, &error, &id_text),
    }
}

/// The model's one video route (highest priority, then cheapest), its
/// charge, after every catalog rule (O-03..O-15, GP-21, J-14).
fn plan(
    catalog: &Catalog,
    key: &ApiKeyRecord,
    request: &VideoRequest,
) -> Result<(Arc<router_core::Model>, Arc<Route>, NanoUsd), ApiError> {
    let model = router_core::routing::find_model(catalog, &request.model)?;
    auth::check_model(catalog, key, &request.model)?;
    let spec = match (model.modality, model.video.as_ref()) {
        (Modality::Video, Some(spec)) => spec,
        _ => {
            return Err(ApiError::invalid(
                "model",
                format!("The model `{}` cannot generate videos.", request.model),
            ));
        }
    };
    let rate = router_core::videos::check_against(spec, request)?;
    let charge = NanoUsd(router_core::videos::charge_nanos(
        rate,
        request.duration_seconds,
    ));
    let zdr = key.account_zdr;
    let route = router_core::routing::single_route(catalog, &model.id, Protocol::Videos, zdr)?;
    Ok((model, route, charge))
}

fn check_content_type(headers: &http::HeaderMap) -> Result<(), ApiError> {
    let json = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if json {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "content-type",
            "`Content-Type` must be `application/json`.",
        ))
    }
}

async fn run_create(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    id_text: &str,
    log: &RequestLog,
) -> Result<Reply, ApiError> {
    let (parts, body) = request.into_parts();
    // O-02 first (a huge body is refused whatever it says), then O-34.
    let body = crate::body::read_limited(&parts.headers, body, VIDEO_BODY_LIMIT).await?;
    check_content_type(&parts.headers)?;
    let video_request = parse_create(&body)?;
    let catalog = app.gateway.catalog();
    if let Some(model) = catalog.model(&video_request.model) {
        log.model(&model.id);
    }
    let fingerprint = video_request.fingerprint();
    // A replay answers before any catalog rule: the job exists whatever the
    // catalog says now (GP-26).
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| storage_failure(&e))?;
    if let Some(row) = store::find_by_key(&mut conn, key.account_id, &video_request.client_task_id)
        .await
        .map_err(|e| storage_failure(&e))?
    {
        drop(conn);
        return replay(&app, row, &fingerprint, id_text).await;
    }
    let (model, route, charge) = plan(&catalog, &key, &video_request)?;
    if app.uploads.storage().is_none() {
        return Err(ApiError::new(
            ErrorCode::RouteUnavailable,
            "Video storage is not configured on this router.",
        ));
    }
    let video = NewVideo {
        id: Uuid::now_v7(),
        account_id: key.account_id,
        api_key_id: key.key_id,
        client_task_id: video_request.client_task_id.clone(),
        fingerprint: fingerprint.clone(),
        model: video_request.model.clone(),
        route_id: route.id.clone(),
        supplier_id: route.supplier.id.clone(),
        charge,
    };
    let new = NewRequest {
        request_id,
        account_id: key.account_id,
        api_key_id: key.key_id,
        policy_version: key.policy.version,
        key_limited: key.policy.limits.any(),
        model: model.id.clone(),
        inbound_protocol: Protocol::Videos,
        recorded_protocol: Protocol::Videos,
        stream: false,
        reserve: charge,
        // The job, not an expiry, ends this hold; the reaper skips it while
        // the job is active or unknown. The far expiry is a second guard.
        hold_expires_at: SystemTime::now() + Duration::from_secs(10 * 365 * 24 * 3600),
        experiment: None,
    };
    let created = store::create(&mut conn, &video, &new).await;
    drop(conn);
    let row = match created {
        Ok(Created::New(row)) => row,
        Ok(Created::Existing(row)) => return replay(&app, row, &fingerprint, id_text).await,
        Err(refusal) => return Err(router_core::gateway::reserve_error(refusal)),
    };
    // The submission and its recording run in a task of their own: a
    // client that leaves mid-call must not leave the job `submitting`.
    let task = tokio::spawn(submit(app.clone(), row, route, video_request));
    let outcome = task
        .await
        .map_err(|_| storage_failure(&"the submission task stopped"))?;
    match outcome {
        Ok(row) => Ok(video_reply(&row, id_text)),
        Err((video, error)) => Ok(error_for_video(&error, video, id_text)),
    }
}

/// A create that found the account's job under the same `client_task_id`.
async fn replay(
    app: &App,
    row: VideoRow,
    fingerprint: &str,
    id_text: &str,
) -> Result<Reply, ApiError> {
    if row.fingerprint != fingerprint {
        return Err(ApiError::new(
            ErrorCode::IdempotencyConflict,
            "This client_task_id was used for a different video request; use a new client_task_id for a new video.",
        )
        .with_param("client_task_id"));
    }
    let mut row = row;
    // The original create is still submitting: wait for its outcome, so
    // concurrent duplicates all answer what it answers.
    let started = tokio::time::Instant::now();
    while row.status == "submitting" && started.elapsed() < REPLAY_WAIT {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut conn = app
            .database()
            .connection()
            .await
            .map_err(|e| storage_failure(&e))?;
        row = store::find(&mut conn, row.id)
            .await
            .map_err(|e| storage_failure(&e))?
            .ok_or_else(|| Resource::Video.not_found())?;
    }
    Ok(replay_reply(&row, id_text))
}

/// Submits a new job once and records the outcome (see the module docs).
/// `Err` carries the video and the public error of a create that failed.
async fn submit(
    app: Arc<App>,
    row: VideoRow,
    route: Arc<Route>,
    request: VideoRequest,
) -> Result<VideoRow, (Uuid, ApiError)> {
    let fail = |error: ApiError| Err((row.id, error));
    let started_at = SystemTime::now();
    let started = std::time::Instant::now();
    let submission = app.gateway.suppliers().submit_video(&route, &request).await;
    let mut conn = match app.database().connection().await {
        Ok(conn) => conn,
        Err(e) => {
            // Nothing recorded: the orphan sweep makes the job `unknown`.
            return fail(storage_failure(&e));
        }
    };
    let (public, detail, status) = match submission {
        Submission::Accepted(task) => {
            let in_progress = matches!(
                task.state,
                UpstreamState::InProgress | UpstreamState::Completed
            );
            if let UpstreamState::Failed { reason } = &task.state {
                (refused_by_supplier(), reason.clone(), None)
            } else {
                // A job already done is completed by its first poll.
                let first_poll = match task.state {
                    UpstreamState::Completed => Duration::ZERO,
                    _ => app.videos.poll_interval,
                };
                return match store::submitted(
                    &mut conn,
                    row.id,
                    &task.task_id,
                    in_progress,
                    i32::from(task.progress),
                    first_poll,
                )
                .await
                {
                    Ok(Some(row)) => {
                        tracing::info!(video = %public_id(row.id), route = %route.id, "video submitted");
                        Ok(row)
                    }
                    Ok(None) => fail(storage_failure(&"the submitting job moved")),
                    Err(e) => fail(storage_failure(&e)),
                };
            }
        }
        Submission::Refused { status, error } => {
            (refused_by_supplier(), error.to_string(), Some(status))
        }
        Submission::NotSent { detail, public } => {
            (public.unwrap_or_else(upstream_unreachable), detail, None)
        }
        Submission::Unknown { detail } => {
            tracing::warn!(video = %public_id(row.id), route = %route.id, detail = %detail, "video submission unknown");
            return match store::submission_unknown(&mut conn, row.id, &detail).await {
                Ok(_) => fail(submission_unknown()),
                Err(e) => fail(storage_failure(&e)),
            };
        }
    };
    tracing::info!(video = %public_id(row.id), route = %route.id, detail = %detail, "video submission refused");
    let voiding = Voiding {
        request_id: row.request_id,
        reason: public.code.as_str().to_owned(),
        attempt: Some(video_attempt(
            &row,
            &route,
            (started_at, started),
            AttemptOutcome::Failed {
                upstream_status: status,
                kind: "video_refused".to_owned(),
                retryable: false,
            },
        )),
    };
    match store::fail(
        &mut conn,
        row.id,
        &["submitting"],
        PUBLIC_FAIL_REASON,
        Some(&detail),
        // The code a replay of this create answers with (GP-25).
        Some(public.code.as_str()),
        &voiding,
    )
    .await
    {
        Ok(()) => fail(public),
        Err(e) => fail(storage_failure(&e)),
    }
}

async fn find_owned(app: &App, key: &ApiKeyRecord, id: Option<&str>) -> Result<VideoRow, ApiError> {
    let id = parse_public_id(id.unwrap_or_default())?;
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| storage_failure(&e))?;
    let found = store::find(&mut conn, id)
        .await
        .map_err(|e| storage_failure(&e))?;
    owned_or_not_found(Resource::Video, found, key.account_id)
}

/// `GET /v1/videos/{id}` (O-20..O-24).
pub async fn show(
    app: &App,
    key: &ApiKeyRecord,
    id: Option<&str>,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let row = find_owned(app, key, id).await?;
    Ok(video_reply(&row, request_id))
}

/// `GET /v1/videos/{id}/content` (O-25..O-30, GP-24, CF-13, CF-14): from
/// the object store, streamed, whole or one range.
pub async fn content(
    app: &App,
    key: &ApiKeyRecord,
    id: Option<&str>,
    range: Option<&str>,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let row = find_owned(app, key, id).await?;
    let (Some(object), Some(size), "completed") = (
        row.content_key.as_deref(),
        row.content_bytes,
        row.status.as_str(),
    ) else {
        return Err(ApiError::new(
            ErrorCode::VideoNotReady,
            "The video is not ready; poll it until its status is completed.",
        ));
    };
    let size = u64::try_from(size).unwrap_or(0);
    let content_type = row.content_type.as_deref().unwrap_or("video/mp4");
    let outcome = parse_range(range, size);
    let (status, start, end) = match outcome {
        RangeOutcome::Full => (StatusCode::OK, 0, size.saturating_sub(1)),
        RangeOutcome::Partial { start, end } => (StatusCode::PARTIAL_CONTENT, start, end),
        RangeOutcome::Unsatisfiable => return Ok(unsatisfiable(size)),
        RangeOutcome::Invalid => {
            return Err(ApiError::new(
                ErrorCode::InvalidRange,
                "The Range header must be one range of bytes, as `bytes=start-end`, `bytes=start-` or `bytes=-suffix`.",
            ));
        }
    };
    let storage = app
        .uploads
        .storage()
        .ok_or_else(|| storage_failure(&"no object store"))?;
    let body: Body = if size == 0 {
        reply::full(Bytes::new())
    } else {
        let stream = storage
            .get_range(object, start, end)
            .await
            .map_err(|e| storage_failure(&e))?;
        // A task reads the store into a small channel (bounded memory: a
        // few chunks in flight) and stops when the client goes. A storage
        // error mid-way ends the body short of its Content-Length: the
        // client sees a broken transfer, never a clean short file.
        let (sender, receiver) = tokio::sync::mpsc::channel::<Bytes>(4);
        tokio::spawn(async move {
            let mut stream = stream;
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(bytes) => {
                        if sender.send(bytes).await.is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "video content read failed mid-stream");
                        return;
                    }
                }
            }
        });
        crate::reply::channel_body(receiver)
    };
    let length = if size == 0 { 0 } else { end - start + 1 };
    let mut response = Response::new(body);
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_str(content_type).unwrap_or(HeaderValue::from_static("video/mp4")),
    );
    headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    headers.insert(CONTENT_LENGTH, HeaderValue::from(length));
    if let Some(value) = content_range(outcome, size) {
        headers.insert(CONTENT_RANGE, value);
    }
    reply::set_request_id(headers, request_id);
    Ok(response)
}

fn content_range(outcome: RangeOutcome, size: u64) -> Option<HeaderValue> {
    outcome
        .content_range(size)
        .and_then(|value| HeaderValue::from_str(&value).ok())
}

/// The empty 416 (O-28, CF-14): only `Content-Range` and `Accept-Ranges`,
/// no body, no `Content-Type`, no request id.
fn unsatisfiable(size: u64) -> Reply {
    let mut response = Response::new(reply::full(Bytes::new()));
    *response.status_mut() = StatusCode::RANGE_NOT_SATISFIABLE;
    let headers = response.headers_mut();
    if let Some(value) = content_range(RangeOutcome::Unsatisfiable, size) {
        headers.insert(CONTENT_RANGE, value);
    }
    headers.insert(ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    response
        .extensions_mut()
        .insert(crate::request_log::ReplyCode(ErrorCode::InvalidRange));
    response
}

// ---------------------------------------------------------------------------
// The poller.

fn find_route(catalog: &Catalog, route_id: &str) -> Option<Arc<Route>> {
    catalog
        .models()
        .flat_map(|m| catalog.routes(&m.id).iter())
        .find(|r| r.id == route_id)
        .cloned()
}

/// One pass of the `video-poller` job: jobs whose process died
/// mid-submission become `unknown`; then every job due is polled once
/// (claimed `FOR UPDATE SKIP LOCKED` with its next poll moved an interval
/// on, so any number of instances poll each job once per interval).
/// Returns how many jobs were polled.
pub async fn poll_pass(app: &App) -> Result<u64, JobError> {
    let mut conn = app.database().connection().await?;
    let orphaned = store::orphaned_submissions(&mut conn, ORPHANED_SUBMISSION).await?;
    if orphaned > 0 {
        tracing::warn!(
            orphaned,
            "video submissions of a stopped process are now unknown"
        );
    }
    let mut polled = 0u64;
    for _ in 0..MAX_BATCHES {
        let due = store::claim_due(&mut conn, POLL_BATCH, app.videos.poll_interval).await?;
        let claimed = due.len();
        polled += claimed as u64;
        futures::stream::iter(due)
            .for_each_concurrent(POLL_CONCURRENCY, |row| async move {
                let id = public_id(row.id);
                if let Err(error) = poll_one(app, row).await {
                    tracing::warn!(video = %id, error = %error, "video poll failed; retried next interval");
                }
            })
            .await;
        if claimed < POLL_BATCH as usize {
            break;
        }
    }
    Ok(polled)
}

/// Polls one claimed job and applies what the supplier says.
async fn poll_one(app: &App, row: VideoRow) -> Result<(), String> {
    let catalog = app.gateway.catalog();
    let route = find_route(&catalog, &row.route_id)
        .ok_or_else(|| format!("route `{}` is no longer in the catalog", row.route_id))?;
    let task_id = row
        .upstream_task_id
        .clone()
        .ok_or("an active job without a task id")?;
    let suppliers = app.gateway.suppliers();
    let task = suppliers.poll_video(&route, &task_id).await?;
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| e.to_string())?;
    match task.state {
        UpstreamState::Queued | UpstreamState::InProgress => {
            let in_progress = task.state == UpstreamState::InProgress;
            store::record_progress(&mut conn, row.id, in_progress, i32::from(task.progress))
                .await
                .map_err(|e| e.to_string())
        }
        UpstreamState::Failed { reason } => {
            let voiding = Voiding {
                request_id: row.request_id,
                reason: "video_failed".to_owned(),
                attempt: None,
            };
            match store::fail(
                &mut conn,
                row.id,
                &["queued", "in_progress"],
                PUBLIC_FAIL_REASON,
                Some(&reason),
                None,
                &voiding,
            )
            .await
            {
                Ok(()) => {
                    metrics::counter!("router_videos_total", "outcome" => "failed").increment(1);
                    tracing::info!(video = %public_id(row.id), "video failed; hold released");
                    Ok(())
                }
                Err(FinishError::NotActive) => Ok(()),
                Err(FinishError::Store(e)) => Err(e.to_string()),
            }
        }
        UpstreamState::Completed => {
            // No other pass starts a second copy while this one runs; if
            // this process dies, the job is due again after the lease.
            store::defer_poll(&mut conn, row.id, COPY_LEASE)
                .await
                .map_err(|e| e.to_string())?;
            drop(conn);
            complete(app, &row, &route, &task_id).await
        }
    }
}

/// Copies the content into the object store, then completes the job and
/// settles its hold in one transaction (in that order: a completed video
/// is always downloadable). A crash between the two leaves the job active;
/// the next poll copies again (same key) and settles.
async fn complete(app: &App, row: &VideoRow, route: &Route, task_id: &str) -> Result<(), String> {
    let storage = app.uploads.storage().ok_or("no object store")?;
    let started_at = SystemTime::now();
    let started = std::time::Instant::now();
    let download = app
        .gateway
        .suppliers()
        .video_content(route, task_id)
        .await?;
    let content_type = download
        .content_type
        .clone()
        .filter(|t| t.starts_with("video/"))
        .unwrap_or_else(|| "video/mp4".to_owned());
    let key = format!("videos/{}", row.id.simple());
    let chunks = futures::stream::unfold(download, |mut download| async move {
        match download.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), download)),
            Ok(None) => None,
            Err(e) => Some((Err(e), download)),
        }
    });
    let bytes = storage
        .put_chunks(&key, chunks)
        .await
        .map_err(|e| format!("copying the content: {e}"))?;
    let settlement = Settlement {
        request_id: row.request_id,
        reported: NanoUsd(row.charge_nano),
        usage: Usage::default(),
        attempt: video_attempt(row, route, (started_at, started), AttemptOutcome::Succeeded),
    };
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| e.to_string())?;
    let size = i64::try_from(bytes).map_err(|_| "content too large")?;
    match store::complete(&mut conn, row.id, &key, size, &content_type, &settlement).await {
        Ok(charged) => {
            metrics::counter!("router_videos_total", "outcome" => "completed").increment(1);
            tracing::info!(video = %public_id(row.id), charged = charged.0, bytes, "video completed; hold settled");
            Ok(())
        }
        // Another pass (or an operator) ended the job first.
        Err(FinishError::NotActive) => Ok(()),
        Err(FinishError::Store(e)) => Err(e.to_string()),
    }
}

// ---------------------------------------------------------------------------
// The operator's view and reconciliation.

/// `GET /admin/videos/{id}` and `router videos show`: everything the
/// router knows of a job, including the supplier's own failure text and
/// task id.
pub async fn operator_show(app: &App, id: &str) -> Result<serde_json::Value, ApiError> {
    Ok(admin_json(&admin_find(app, id).await?))
}

/// `GET /admin/videos/{id}`.
pub async fn admin_show(app: &App, id: Option<&str>, request_id: &str) -> Result<Reply, ApiError> {
    let view = operator_show(app, id.unwrap_or_default()).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

async fn admin_find(app: &App, id: &str) -> Result<VideoRow, ApiError> {
    let id = parse_public_id(id)?;
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| storage_failure(&e))?;
    store::find(&mut conn, id)
        .await
        .map_err(|e| storage_failure(&e))?
        .ok_or_else(|| Resource::Video.not_found())
}

fn admin_json(row: &VideoRow) -> serde_json::Value {
    serde_json::json!({
        "id": public_id(row.id),
        "object": "admin.video",
        "account_id": row.account_id,
        "api_key_id": row.api_key_id,
        "request_id": row.request_id,
        "client_task_id": row.client_task_id,
        "model": row.model,
        "route_id": row.route_id,
        "supplier_id": row.supplier_id,
        "status": row.status,
        "progress": row.progress,
        "upstream_task_id": row.upstream_task_id,
        "charge_usd": NanoUsd(row.charge_nano).to_usd_json(),
        "fail_reason": row.fail_reason,
        "supplier_error": row.supplier_error,
        "content_bytes": row.content_bytes,
        "polls": row.polls,
        "created_at": unix(row.created_at),
        "updated_at": unix(row.updated_at),
        "completed_at": row.completed_at.map(unix),
        "next_poll_at": row.next_poll_at.map(unix),
        "reconciled_at": row.reconciled_at.map(unix),
    })
}

/// `POST /admin/videos/{id}/reconcile` body: exactly one of the two forms.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconcile {
    #[serde(default)]
    pub upstream_task_id: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// `POST /admin/videos/{id}/reconcile`.
pub async fn admin_reconcile(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let body: Reconcile = crate::body::json_body(request, crate::body::ADMIN_BODY_LIMIT).await?;
    let view = operator_reconcile(app, id.unwrap_or_default(), body).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// Reconciles an `unknown` job (`POST /admin/videos/{id}/reconcile`,
/// `router videos reconcile`): `{upstream_task_id}` resumes polling under
/// the supplier's task; `{outcome: "failed", reason}` fails it and releases
/// its hold. Any other state is 409: reconciliation is only for what is
/// unknown, so a second one changes nothing.
pub async fn operator_reconcile(
    app: &App,
    id: &str,
    body: Reconcile,
) -> Result<serde_json::Value, ApiError> {
    let row = admin_find(app, id).await?;
    let not_unknown = || {
        ApiError::new(
            ErrorCode::Conflict,
            format!(
                "The video is `{}`; only an `unknown` video is reconciled.",
                row.status
            ),
        )
    };
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|e| storage_failure(&e))?;
    match (body.upstream_task_id, body.outcome.as_deref(), body.reason) {
        (Some(task), None, None) => {
            let task = task.trim().to_owned();
            if task.is_empty() || task.len() > 256 || task.chars().any(char::is_control) {
                return Err(ApiError::invalid(
                    "upstream_task_id",
                    "must be 1 to 256 printable characters",
                ));
            }
            match store::reconcile_task(&mut conn, row.id, &task)
                .await
                .map_err(|e| storage_failure(&e))?
            {
                Some(row) => {
                    tracing::info!(video = %public_id(row.id), "video reconciled: polling resumes");
                    Ok(admin_json(&row))
                }
                None => Err(not_unknown()),
            }
        }
        (None, Some("failed"), reason) => {
            let reason = reason.unwrap_or_default();
            let voiding = Voiding {
                request_id: row.request_id,
                reason: "reconciled_failed".to_owned(),
                attempt: None,
            };
            let operator_note = format!("reconciled as failed: {reason}");
            match store::fail(
                &mut conn,
                row.id,
                &["unknown"],
                PUBLIC_FAIL_REASON,
                Some(&operator_note),
                None,
                &voiding,
            )
            .await
            {
                Ok(()) => {
                    tracing::info!(video = %public_id(row.id), "video reconciled as failed; hold released");
                    Ok(admin_json(&admin_find(app, id).await?))
                }
                Err(FinishError::NotActive) => Err(not_unknown()),
                Err(FinishError::Store(e)) => Err(storage_failure(&e)),
            }
        }
        (None, Some(_), _) => Err(ApiError::invalid("outcome", "must be `failed`")),
        _ => Err(ApiError::invalid(
            "body",
            "give either `upstream_task_id`, or `outcome: \"failed\"` with a `reason`",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_ids_round_trip_and_malformed_ones_are_not_found() {
        let id = Uuid::now_v7();
        assert_eq!(parse_public_id(&public_id(id)).unwrap(), id);
        for bad in [
            "",
            "video_",
            "video_..%2f",
            "video_00000000-0000-0000-0000-000000000000",
            "vid_0123456789abcdef0123456789abcdef",
            "video_0123456789abcdef0123456789abcdeg",
        ] {
            assert_eq!(
                parse_public_id(bad).unwrap_err().code,
                ErrorCode::TaskNotFound,
                "{bad}"
            );
        }
    }
}
