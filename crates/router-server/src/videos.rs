//! Video jobs (section O), the HTTP side: `POST /v1/videos`, `GET
//! /v1/videos/{id}`, `GET /v1/videos/{id}/content` (streamed, with
//! `Range`), and the operator's view and reconciliation (the operator
//! wing's `router_operator::videos`, shared with the CLI). Every money
//! decision (the hold, the one submission, `unknown`, settle or release,
//! reconcile) is `router_core::video_jobs`;
//! here a request is parsed (`router_videos::client`), core is called, and
//! the video object, its errors or its content are rendered.
//!
//! Video content is kept in the uploads' object store (the adapter to
//! core's `VideoObjects` port is `router_uploads::video_content`).

use crate::app::App;
use crate::body::Incoming;
use crate::reply::{self, Body, Envelope, Reply};
use bytes::Bytes;
use futures::StreamExt;
use http::header::{ACCEPT_RANGES, CONTENT_LENGTH, CONTENT_RANGE, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::ApiError;
use router_core::ownership::{Resource, owned_or_not_found};
use router_core::product_codes;
use router_core::store::{ApiKeyRecord, VideoJob, VideoJobStatus};
use router_core::video_jobs::{CreateFailure, parse_public_id, storage_failure, unix_seconds};
use router_telemetry::request_log::RequestLog;
use router_videos::client::{VideoView, parse_create, render_video};
use router_videos::range::{RangeOutcome, parse_range};
use std::sync::Arc;
use uuid::Uuid;

pub use router_core::video_jobs::{PUBLIC_FAIL_REASON, Reconcile, VideoSettings, public_id};

/// `POST /v1/videos` body limit (O-02, Q-03).
pub const VIDEO_BODY_LIMIT: usize = 256 * 1024;

/// The header naming the video of a `submission_unknown` (O-19).
pub const VIDEO_ID_HEADER: &str = "x-video-id";

/// The video object's view of a job (O-21, O-22).
pub fn view(job: &VideoJob) -> VideoView {
    let status = job.status.public();
    VideoView {
        // `render_video` gives a completed video its content path.
        content_url: None,
        fail_reason: (job.status == VideoJobStatus::Failed).then(|| {
            job.fail_reason
                .clone()
                .unwrap_or_else(|| PUBLIC_FAIL_REASON.to_owned())
        }),
        id: public_id(job.id),
        model: job.model.clone(),
        status,
        progress: job.progress.min(100),
        created_at: unix_seconds(job.created_at),
        completed_at: job.completed_at.map(unix_seconds),
    }
}

fn video_reply(job: &VideoJob, request_id: &str) -> Reply {
    reply::json(StatusCode::OK, render_video(&view(job)), request_id)
}

/// An error reply of the video envelope naming the video in `x-video-id`.
fn error_for_video(error: &ApiError, video: Uuid, request_id: &str) -> Reply {
    let mut response = reply::error(Envelope::Video, error, request_id);
    if let Ok(value) = HeaderValue::from_str(&public_id(video)) {
        response.headers_mut().insert(VIDEO_ID_HEADER, value);
    }
    response
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

/// `POST /v1/videos`.
pub async fn create(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    log: &RequestLog,
) -> Reply {
    let id_text = log.reply_id();
    let created = async {
        let (parts, body) = request.into_parts();
        // O-02 first (a huge body is refused whatever it says), then O-34.
        let body = crate::body::read_limited(&parts.headers, body, VIDEO_BODY_LIMIT).await?;
        check_content_type(&parts.headers)?;
        let video_request = parse_create(&body)?;
        app.gateway
            .create_video(
                request_id,
                &log.trace(),
                &key,
                video_request,
                app.videos,
                &app.uploads,
            )
            .await
    };
    match created.await {
        Ok(job) => video_reply(&job, &id_text),
        Err(CreateFailure::Job { video, error }) => error_for_video(&error, video, &id_text),
        Err(CreateFailure::Refused(error)) => reply::error(Envelope::Video, &error, &id_text),
        Err(CreateFailure::Vanished) => {
            reply::error(Envelope::Video, &Resource::Video.not_found(), &id_text)
        }
    }
}

async fn find(app: &App, id: Option<&str>) -> Result<Option<VideoJob>, ApiError> {
    let id = parse_public_id(id.unwrap_or_default())?;
    app.gateway.video_job(id).await
}

async fn find_owned(app: &App, key: &ApiKeyRecord, id: Option<&str>) -> Result<VideoJob, ApiError> {
    owned_or_not_found(Resource::Video, find(app, id).await?, key.account_id)
}

/// `GET /v1/videos/{id}` (O-20..O-24).
pub async fn show(
    app: &App,
    key: &ApiKeyRecord,
    id: Option<&str>,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let job = find_owned(app, key, id).await?;
    Ok(video_reply(&job, request_id))
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
    let job = find_owned(app, key, id).await?;
    let (Some(object), Some(size), VideoJobStatus::Completed) =
        (job.content_key.as_deref(), job.content_bytes, job.status)
    else {
        return Err(ApiError::new(
            product_codes::VIDEO_NOT_READY,
            "The video is not ready; poll it until its status is completed.",
        ));
    };
    let content_type = job.content_type.as_deref().unwrap_or("video/mp4");
    let outcome = parse_range(range, size);
    let (status, start, end) = match outcome {
        RangeOutcome::Full => (StatusCode::OK, 0, size.saturating_sub(1)),
        RangeOutcome::Partial { start, end } => (StatusCode::PARTIAL_CONTENT, start, end),
        RangeOutcome::Unsatisfiable => return Ok(unsatisfiable(size)),
        RangeOutcome::Invalid => {
            return Err(ApiError::new(
                product_codes::INVALID_RANGE,
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
        .insert(crate::reply::ReplyCode(product_codes::INVALID_RANGE));
    response
}

// ---------------------------------------------------------------------------
// The operator's view and reconciliation (`router_operator::videos`).

/// `GET /admin/videos/{id}`.
pub async fn admin_show(app: &App, id: Option<&str>, request_id: &str) -> Result<Reply, ApiError> {
    let view = router_operator::videos::show_video(&app.gateway, id.unwrap_or_default()).await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}

/// `POST /admin/videos/{id}/reconcile`.
pub async fn admin_reconcile(
    app: &App,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let body: Reconcile = crate::body::json_body(request, crate::body::ADMIN_BODY_LIMIT).await?;
    let view = router_operator::videos::reconcile_video(&app.gateway, id.unwrap_or_default(), body)
        .await?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}
