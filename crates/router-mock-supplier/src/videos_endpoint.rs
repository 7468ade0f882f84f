//! The OpenAI videos endpoint: `POST …/videos` creates a job, `GET
//! …/videos/{id}` polls it, `GET …/videos/{id}/content` downloads it. Each
//! job follows a [`VideoPlan`] chosen at creation by its `model` (or the
//! default plan): complete after N polls, fail after N polls with a leaky
//! error text, drop the connection after reading the creation body (the
//! job still exists, as at a supplier that accepted it), refuse the
//! creation, redirect it elsewhere, or never finish. Submissions, polls and downloads are counted
//! so tests can prove "one submission" and "one poll per interval".
//!
//! The video object is written from the public OpenAI reference (`id`,
//! `object: "video"`, `model`, `status`, `progress`, `created_at`,
//! `completed_at`, `seconds`, `size`, `error {code, message}`), not with the
//! router's codec.

use std::collections::HashMap;
use std::sync::Mutex;

use http::{Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::connection::ConnectionControl;
use crate::response_body::{self, ResponseBody};
use crate::response_body::{error_response, respond};

/// What a video job created under a model does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum VideoPlan {
    /// `in_progress` for `polls - 1` polls, then `completed` (a `polls` of
    /// 0 or 1 completes on the first poll).
    CompleteAfter { polls: u32 },
    /// `in_progress`, then `failed` on poll `polls` with `message` as the
    /// supplier's error text (which a router must never show its clients).
    FailAfter { polls: u32, message: String },
    /// The creation body is read, the job is made, then the connection is
    /// reset without an answer.
    DropOnSubmit,
    /// The creation body is read, the job is made, and no answer ever
    /// comes (the connection stays open).
    StallOnSubmit,
    /// The creation is refused with `status` and an OpenAI error `message`.
    Refuse { status: u16, message: String },
    /// The creation is answered with a redirect: `status` (a 3xx; anything
    /// else is sent as 307) and `Location: location`. No job is made.
    Redirect { status: u16, location: String },
    /// `in_progress` forever (progress creeps to 90 and stays).
    Never,
}

impl Default for VideoPlan {
    fn default() -> Self {
        VideoPlan::CompleteAfter { polls: 2 }
    }
}

/// The leaky failure text of [`VideoPlan::FailAfter`] plans built with
/// [`VideoPlan::leaky_failure`].
pub const LEAKY_VIDEO_ERROR: &str =
    "mock-supplier worker gpu-node-7 (10.0.3.7) crashed: CUDA out of memory; acct=sk-mock-canary";

impl VideoPlan {
    /// Fails on the first poll with [`LEAKY_VIDEO_ERROR`].
    pub fn leaky_failure() -> VideoPlan {
        VideoPlan::FailAfter {
            polls: 1,
            message: LEAKY_VIDEO_ERROR.into(),
        }
    }
}

/// Bytes of every mock video unless a test sets another size: more than
/// one 256 KiB part, so a copy in parts is exercised.
pub const DEFAULT_VIDEO_BYTES: usize = 300_000;

#[derive(Debug)]
struct Job {
    model: String,
    plan: VideoPlan,
    seconds: String,
    size: String,
    created_at: i64,
    polls: u32,
    completed_at: Option<i64>,
}

#[derive(Debug, Default)]
struct State {
    plans: HashMap<String, VideoPlan>,
    default_plan: Option<VideoPlan>,
    jobs: HashMap<String, Job>,
    /// In creation order.
    order: Vec<String>,
    submissions: usize,
    created: Vec<(Value, Option<String>)>,
    polls: HashMap<String, usize>,
    downloads: HashMap<String, usize>,
    content_bytes: Option<usize>,
    next: u64,
    identities: Vec<VideoCallIdentity>,
}

/// The videos side of the mock (shared by every connection).
#[derive(Debug, Default)]
pub(crate) struct Videos {
    state: Mutex<State>,
}

/// What the mock has seen of videos.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct VideoCounts {
    /// `POST …/videos` requests whose body was read (dropped ones included).
    pub submissions: usize,
    /// Polls per task id.
    pub polls: HashMap<String, usize>,
    /// Content downloads per task id.
    pub downloads: HashMap<String, usize>,
    /// Task ids in creation order.
    pub tasks: Vec<String>,
    /// Every creation body as received (JSON), with its `Authorization`
    /// header, in order.
    pub created: Vec<(serde_json::Value, Option<String>)>,
    /// How every call identified itself, in order.
    pub identities: Vec<VideoCallIdentity>,
}

/// What one videos call said of itself: which call, where it went, the
/// caller's request id (`x-request-id`), W3C `traceparent` and credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct VideoCallIdentity {
    /// `create`, `poll` or `content`.
    pub call: &'static str,
    /// The path, and the query string as sent (Azure's `api-version`).
    pub path: String,
    pub query: Option<String>,
    pub request_id: Option<String>,
    pub traceparent: Option<String>,
    /// The `authorization` header (a bearer key or a SigV4 signature).
    pub authorization: Option<String>,
    /// The `api-key` header (an Azure resource's key).
    pub api_key: Option<String>,
}

impl Videos {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub(crate) fn set_plan(&self, model: Option<&str>, plan: VideoPlan) {
        let mut state = self.lock();
        match model {
            Some(model) => {
                state.plans.insert(model.to_owned(), plan);
            }
            None => state.default_plan = Some(plan),
        }
    }

    /// Changes what an existing task does from its next poll on (its poll
    /// count stays); `false` if there is no such task.
    pub(crate) fn set_task_plan(&self, task_id: &str, plan: VideoPlan) -> bool {
        match self.lock().jobs.get_mut(task_id) {
            Some(job) => {
                job.plan = plan;
                job.polls = 0;
                true
            }
            None => false,
        }
    }

    pub(crate) fn set_content_bytes(&self, bytes: usize) {
        self.lock().content_bytes = Some(bytes);
    }

    pub(crate) fn counts(&self) -> VideoCounts {
        let state = self.lock();
        VideoCounts {
            submissions: state.submissions,
            polls: state.polls.clone(),
            downloads: state.downloads.clone(),
            tasks: state.order.clone(),
            created: state.created.clone(),
            identities: state.identities.clone(),
        }
    }

    pub(crate) fn content_len(&self) -> usize {
        self.lock().content_bytes.unwrap_or(DEFAULT_VIDEO_BYTES)
    }

    pub(crate) fn reset(&self) {
        let mut state = self.lock();
        let plans = std::mem::take(&mut state.plans);
        let default_plan = state.default_plan.take();
        let content = state.content_bytes;
        *state = State {
            plans,
            default_plan,
            content_bytes: content,
            ..State::default()
        };
    }
}

/// Whether `path` belongs to the videos endpoint.
pub(crate) fn is_videos_path(path: &str) -> bool {
    path.ends_with("/videos") || path.contains("/videos/")
}

pub(crate) async fn serve(
    request: Request<Incoming>,
    videos: &Videos,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let call = if method == Method::POST {
        "create"
    } else if path.ends_with("/content") {
        "content"
    } else {
        "poll"
    };
    let header = |name: &str| {
        request
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let identity = VideoCallIdentity {
        call,
        path: path.clone(),
        query: request.uri().query().map(str::to_owned),
        request_id: header("x-request-id"),
        traceparent: header("traceparent"),
        authorization: header("authorization"),
        api_key: header("api-key"),
    };
    videos.lock().identities.push(identity);
    if let Some((status, body)) =
        crate::azure::refusal(request.headers(), &path, request.uri().query())
    {
        let status = StatusCode::from_u16(status).unwrap_or(StatusCode::UNAUTHORIZED);
        return json_reply(status, &body);
    }
    if method == Method::POST && path.ends_with("/videos") {
        return create(request, videos, connection).await;
    }
    let Some((_, rest)) = path.split_once("/videos/") else {
        return error_response(StatusCode::NOT_FOUND, "no such videos path");
    };
    if method != Method::GET {
        return error_response(StatusCode::METHOD_NOT_ALLOWED, "videos: GET only here");
    }
    match rest.split_once('/') {
        None => poll(rest, videos),
        Some((id, "content")) => content(id, videos),
        Some(_) => error_response(StatusCode::NOT_FOUND, "no such videos path"),
    }
}

async fn create(
    request: Request<Incoming>,
    videos: &Videos,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    let authorization = request
        .headers()
        .get(http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return error_response(StatusCode::BAD_REQUEST, "unreadable body"),
    };
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let model = body["model"].as_str().unwrap_or_default().to_owned();
    let (plan, object) = {
        let mut state = videos.lock();
        state.submissions += 1;
        state.created.push((body.clone(), authorization));
        let plan = state
            .plans
            .get(&model)
            .or(state.default_plan.as_ref())
            .cloned()
            .unwrap_or_default();
        if let VideoPlan::Refuse { status, message } = &plan {
            let status = StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_REQUEST);
            return refusal(status, message);
        }
        if let VideoPlan::Redirect { status, location } = &plan {
            return redirect(*status, location);
        }
        state.next += 1;
        let id = format!("video_mock{:06}", state.next);
        let job = Job {
            model,
            plan: plan.clone(),
            seconds: string_field(&body, "seconds"),
            size: string_field(&body, "size"),
            created_at: unix_now(),
            polls: 0,
            completed_at: None,
        };
        let object = video_object(&id, &job, "queued", 0, None);
        state.jobs.insert(id.clone(), job);
        state.order.push(id.clone());
        (plan, object)
    };
    if plan == VideoPlan::DropOnSubmit {
        connection.request_reset();
        // The connection task drops this future together with the socket.
        return std::future::pending().await;
    }
    if plan == VideoPlan::StallOnSubmit {
        return std::future::pending().await;
    }
    json_reply(StatusCode::OK, &object)
}

fn poll(id: &str, videos: &Videos) -> Response<ResponseBody> {
    let mut state = videos.lock();
    *state.polls.entry(id.to_owned()).or_default() += 1;
    let Some(job) = state.jobs.get_mut(id) else {
        return error_response(StatusCode::NOT_FOUND, "no such video");
    };
    job.polls += 1;
    let n = job.polls;
    let (status, progress, error) = match job.plan.clone() {
        VideoPlan::CompleteAfter { polls } if n >= polls => ("completed", 100, None),
        VideoPlan::CompleteAfter { polls } => ("in_progress", n * 100 / polls.max(1), None),
        VideoPlan::FailAfter { polls, message } if n >= polls => (
            "failed",
            (n - 1) * 100 / polls.max(1),
            Some(json!({"code": "video_generation_failed", "message": message})),
        ),
        VideoPlan::FailAfter { polls, .. } => ("in_progress", n * 100 / polls.max(1), None),
        VideoPlan::Never | VideoPlan::DropOnSubmit | VideoPlan::StallOnSubmit => {
            ("in_progress", (n * 10).min(90), None)
        }
        VideoPlan::Refuse { .. } | VideoPlan::Redirect { .. } => ("failed", 0, None),
    };
    if status == "completed" && job.completed_at.is_none() {
        job.completed_at = Some(unix_now());
    }
    let object = video_object(id, job, status, progress, error);
    json_reply(StatusCode::OK, &object)
}

fn content(id: &str, videos: &Videos) -> Response<ResponseBody> {
    let size = videos.content_len();
    let mut state = videos.lock();
    *state.downloads.entry(id.to_owned()).or_default() += 1;
    match state.jobs.get(id) {
        Some(job) if job.completed_at.is_some() => respond(
            StatusCode::OK,
            "video/mp4",
            response_body::full(video_bytes(id, size)),
        ),
        Some(_) => error_response(StatusCode::NOT_FOUND, "the video is not ready"),
        None => error_response(StatusCode::NOT_FOUND, "no such video"),
    }
}

/// The bytes the mock serves for task `id`: an MP4 `ftyp` box, then a
/// pattern that depends on the id and the offset, `size` bytes in all.
pub fn video_bytes(id: &str, size: usize) -> Vec<u8> {
    let mut out = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom".to_vec();
    let seed = id.bytes().fold(0x811c_9dc5u32, |h, b| {
        (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
    });
    let mut x = seed | 1;
    while out.len() < size {
        // xorshift32: cheap, deterministic, not compressible to nothing.
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.push((x & 0xFF) as u8);
    }
    out.truncate(size);
    out
}

fn video_object(id: &str, job: &Job, status: &str, progress: u32, error: Option<Value>) -> Value {
    json!({
        "id": id,
        "object": "video",
        "model": job.model,
        "status": status,
        "progress": progress,
        "created_at": job.created_at,
        "completed_at": if status == "completed" || status == "failed" { json!(job.completed_at.unwrap_or_else(unix_now)) } else { Value::Null },
        "expires_at": Value::Null,
        "prompt": Value::Null,
        "seconds": job.seconds,
        "size": job.size,
        "remixed_from_video_id": Value::Null,
        "error": error.unwrap_or(Value::Null),
    })
}

fn refusal(status: StatusCode, message: &str) -> Response<ResponseBody> {
    let body = json!({"error": {"message": message, "type": "invalid_request_error", "param": null, "code": "moderation_blocked"}});
    json_reply(status, &body)
}

fn redirect(status: u16, location: &str) -> Response<ResponseBody> {
    let status = StatusCode::from_u16(status)
        .ok()
        .filter(StatusCode::is_redirection)
        .unwrap_or(StatusCode::TEMPORARY_REDIRECT);
    let Ok(location) = http::HeaderValue::try_from(location) else {
        return error_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            "the redirect plan's location is not a valid header value",
        );
    };
    let mut response = json_reply(
        status,
        &json!({"error": {"message": "moved", "type": "invalid_request_error", "param": null, "code": null}}),
    );
    response
        .headers_mut()
        .insert(http::header::LOCATION, location);
    response
}

fn json_reply(status: StatusCode, body: &Value) -> Response<ResponseBody> {
    respond(
        status,
        "application/json",
        response_body::full(body.to_string()),
    )
}

fn string_field(body: &Value, name: &str) -> String {
    match &body[name] {
        Value::String(s) => s.clone(),
        Value::Number(n) => n.to_string(),
        _ => String::new(),
    }
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn video_bytes_are_deterministic_per_task_and_sized() {
        let a = video_bytes("video_mock000001", 1000);
        assert_eq!(a.len(), 1000);
        assert_eq!(a, video_bytes("video_mock000001", 1000));
        assert_ne!(a, video_bytes("video_mock000002", 1000));
        assert_eq!(&a[4..8], b"ftyp");
    }
}
