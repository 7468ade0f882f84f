//! Video jobs (section O): the job's whole money lifecycle, beside
//! inference (`gateway`) and images (`images`), through the [`VideoStore`]
//! and [`Suppliers`] ports and a [`VideoObjects`] port for the content.
//!
//! A video is a job, not a request/reply, so its hold is not a
//! `gateway::Reservation` guard: the create writes the job row and
//! its hold in one atomic step, submits the job to the supplier once, and
//! from then on the hold ends exactly one way, each in the same atomic step
//! as the job's state change (RELIABILITY.md I7):
//!
//! * the supplier refused it, or nothing was sent → `failed`, released;
//! * sent but the answer lost (or the process died mid-submission) →
//!   `unknown`: held, never resubmitted, until an operator reconciles
//!   (GP-25, K7): with the supplier's task id (polling resumes) or as
//!   failed (released);
//! * polled to `completed` → the content is copied into the object store
//!   first, then the job is `completed` and the hold settled, so a
//!   completed video is always downloadable;
//! * polled to `failed` → released; the supplier's text is kept for
//!   operators, the client sees [`PUBLIC_FAIL_REASON`] (P-08).
//!
//! The hold reaper skips a video's hold while the job is active or unknown
//! (`router_store::billing::reap_expired_holds`).
//!
//! **Idempotency** (GP-26): the job is unique per (account,
//! `client_task_id`) for the video's lifetime. A create that finds a job
//! with the same fingerprint replays it (the same id; a job still being
//! submitted is waited for); with another fingerprint it is 409. Nothing
//! is stored for a request that fails validation.

use crate::catalog::{Catalog, Modality, Model, Route};
use crate::gateway::{Gateway, reserve_error};
use crate::key_policy::KeyPolicy;
use crate::product_codes;
use crate::store::{
    ApiKeyRecord, AttemptOutcome, AttemptRecord, FinishError, NewRequest, NewVideoJob, Requester,
    Settlement, Store, StoreError, StoredVideo, VideoCreated, VideoFailure, VideoJob,
    VideoJobStatus, VideoStore, Voiding,
};
use crate::supplier::{
    AttemptCall, AttemptCause, AttemptError, FailureKind, SubmitError, Suppliers, VideoChunks,
};
use crate::trace::RequestTrace;
use crate::trace_context::TraceContext;
use futures::StreamExt;
use router_canonical::{
    ApiError, ErrorCode, NanoUsd, Protocol, UpstreamState, UpstreamVideo, Usage, VideoRequest,
};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// What a client sees of a failed video (never the supplier's text).
pub const PUBLIC_FAIL_REASON: &str = "The video could not be generated; nothing was charged.";

/// The public id's prefix: `video_` and the job's UUID in 32 hex digits.
pub const ID_PREFIX: &str = "video_";

/// A submission still `submitting` this long after creation lost its
/// process (the supplier call itself gives up after 60 s): it becomes
/// `unknown`.
const ORPHANED_SUBMISSION: Duration = Duration::from_secs(180);

/// How long a replay waits for the original create's submission.
const REPLAY_WAIT: Duration = Duration::from_secs(75);

/// How long a job whose content is being copied is kept from other passes.
const COPY_LEASE: Duration = Duration::from_secs(600);

/// The job, not an expiry, ends a video's hold; the reaper skips it while
/// the job is active or unknown. This far expiry is a second guard.
const HOLD_GUARD: Duration = Duration::from_secs(10 * 365 * 24 * 3600);

/// Jobs one poller pass claims per batch.
const POLL_BATCH: u32 = 32;
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

/// Where a completed video's content is kept (the server's object store).
pub trait VideoObjects: Send + Sync {
    /// Whether content can be kept at all: a create is refused without.
    fn configured(&self) -> bool;

    /// Writes object `key` from `chunks` as they arrive (bounded memory);
    /// the bytes written. A failed write leaves no object.
    fn put_video(
        &self,
        key: &str,
        chunks: VideoChunks,
    ) -> impl Future<Output = Result<u64, ContentCopyError>> + Send;
}

/// Why a completed video's content was not copied (the next poll tries again).
#[derive(Debug, thiserror::Error)]
pub enum ContentCopyError {
    #[error("no object store is configured")]
    NotConfigured,
    #[error("reading the content: {0}")]
    Source(AttemptError),
    #[error("storing the content: {0}")]
    Store(Box<dyn std::error::Error + Send + Sync>),
}

/// Why one poll of a job changed nothing (logged; polled again next interval).
#[derive(Debug, thiserror::Error)]
enum PollError {
    #[error("route `{0}` is no longer in the catalog")]
    RouteGone(String),
    #[error("an active job without a task id")]
    NoTask,
    #[error("the supplier: {0}")]
    Supplier(AttemptError),
    #[error(transparent)]
    Copy(ContentCopyError),
    #[error(transparent)]
    Store(StoreError),
}

/// The public id of job `id`.
pub fn public_id(id: Uuid) -> String {
    format!("{ID_PREFIX}{}", id.simple())
}

/// A job's time as Unix seconds, as its views show it.
pub fn unix_seconds(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// The job id of a public id; anything malformed is simply not found
/// (GP-72), like an unknown or another account's video.
pub fn parse_public_id(text: &str) -> Result<Uuid, ApiError> {
    text.strip_prefix(ID_PREFIX)
        .filter(|hex| hex.len() == 32 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .and_then(|hex| Uuid::try_parse(hex).ok())
        .ok_or_else(|| crate::ownership::Resource::Video.not_found())
}

/// The 500 of a storage failure (logged; its text never reaches clients).
pub fn storage_failure(error: &dyn std::fmt::Display) -> ApiError {
    tracing::error!(error = %error, "video storage failure");
    ApiError::new(ErrorCode::InternalError, "Storage failure.")
}

fn submission_unknown() -> ApiError {
    ApiError::new(
        product_codes::SUBMISSION_UNKNOWN,
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

/// A create that did not give a running (or replayed) job.
#[derive(Debug, Clone, PartialEq)]
pub enum CreateFailure {
    /// Refused before any job exists for it (or a 409 for a changed body):
    /// nothing stored, nothing held.
    Refused(ApiError),
    /// Job `video` exists and this is its answer (a submission refused,
    /// unknown, or failed to record); the reply names the video.
    Job { video: Uuid, error: ApiError },
    /// The job vanished while a replay waited for it (only a deleted
    /// account loses its videos): not found.
    Vanished,
}

impl From<ApiError> for CreateFailure {
    fn from(error: ApiError) -> Self {
        CreateFailure::Refused(error)
    }
}

/// The model and the one route a video request goes to, and its charge.
#[derive(Debug, Clone)]
pub struct VideoPlan {
    pub model: Arc<Model>,
    pub route: Arc<Route>,
    pub charge: NanoUsd,
}

/// The model's one video route (highest priority, then cheapest) and the
/// charge, after every catalog rule (O-03..O-15, GP-21, J-14): unknown
/// model 404, outside the key's `policy` 403, not a video model 400, then
/// the model's capabilities and tariff (`crate::videos`); with `zdr` (the
/// account's switch) only `zdr` routes.
pub fn plan(
    catalog: &Catalog,
    policy: &KeyPolicy,
    request: &VideoRequest,
    zdr: bool,
) -> Result<VideoPlan, ApiError> {
    let model = crate::routing::find_model(catalog, &request.model)?;
    policy.check_allowed(&model, &request.model)?;
    let spec = match (model.modality, model.video.as_ref()) {
        (Modality::Video, Some(spec)) => spec,
        _ => {
            return Err(ApiError::invalid(
                "model",
                format!("The model `{}` cannot generate videos.", request.model),
            ));
        }
    };
    let rate = crate::videos::check_against(spec, request)?;
    let charge = NanoUsd(crate::videos::charge_nanos(rate, request.duration_seconds));
    let route = crate::routing::single_route(catalog, &model.id, Protocol::Videos, zdr)?;
    Ok(VideoPlan {
        model,
        route,
        charge,
    })
}

/// What a submission's outcome means for the job and its hold.
#[derive(Debug, Clone, PartialEq)]
enum Submitted {
    /// The supplier took the job.
    Accepted(UpstreamVideo),
    /// It did not: `failed`, released, `public` answered.
    Refused {
        public: ApiError,
        /// For operators.
        detail: String,
        upstream_status: Option<u16>,
    },
    /// It may have: `unknown`, held (K7).
    Unknown { detail: String },
}

/// Whether an error status says the supplier did not take the job: every
/// 4xx, 503 (not accepting work), and every 3xx (a redirect asks for the
/// request to be made elsewhere, so this one did nothing; it is never
/// followed). Other 5xx (500, 502, 504) may come after the job was made.
fn status_refuses_job(status: u16) -> bool {
    (300..500).contains(&status) || status == 503
}

/// The operator's account of a failed call.
fn detail(error: &AttemptError) -> String {
    match (error.upstream_status, error.kind) {
        (Some(status), _) => format!("status {status}: {}", error.cause),
        (None, FailureKind::Timeout) => "no answer before the supplier timeout".to_owned(),
        (None, kind) => format!("{}: {}", kind.as_str(), error.cause),
    }
}

/// The decision on a submission, from its typed outcome (never its text).
fn decide(result: Result<UpstreamVideo, SubmitError>) -> Submitted {
    match result {
        Ok(task) => match &task.state {
            UpstreamState::Failed { reason } => Submitted::Refused {
                public: refused_by_supplier(),
                detail: reason.clone(),
                upstream_status: None,
            },
            _ => Submitted::Accepted(task),
        },
        // Nothing reached the supplier: the request's own public error when
        // it cannot be written for the route, else unreachable.
        Err(SubmitError::NotSent(error)) => Submitted::Refused {
            public: match &error.cause {
                AttemptCause::Conversion(public) => public.clone(),
                _ => upstream_unreachable(),
            },
            detail: detail(&error),
            upstream_status: None,
        },
        Err(SubmitError::Sent(error)) => match (error.kind, error.upstream_status) {
            (FailureKind::Status, Some(status)) if status_refuses_job(status) => {
                Submitted::Refused {
                    public: refused_by_supplier(),
                    detail: error.cause.to_string(),
                    upstream_status: Some(status),
                }
            }
            _ => Submitted::Unknown {
                detail: detail(&error),
            },
        },
    }
}

/// The answer a replayed create gives for `job` (Stripe-like: the original
/// outcome, GP-25).
fn replay_outcome(job: VideoJob) -> Result<VideoJob, CreateFailure> {
    let error = match (job.status, job.create_error.as_deref()) {
        (VideoJobStatus::Unknown | VideoJobStatus::Submitting, _) => submission_unknown(),
        (VideoJobStatus::Failed, Some("upstream_error")) => refused_by_supplier(),
        (VideoJobStatus::Failed, Some(_)) => upstream_unreachable(),
        _ => return Ok(job),
    };
    Err(CreateFailure::Job {
        video: job.id,
        error,
    })
}

/// The one attempt of a video job, started at `started` (wall clock and
/// monotonic), for its history.
fn video_attempt(
    job: &VideoJob,
    route: &Route,
    started: (SystemTime, tokio::time::Instant),
    outcome: AttemptOutcome,
) -> AttemptRecord {
    AttemptRecord {
        request_id: job.request_id,
        attempt_no: 1,
        route_id: route.id.clone(),
        supplier_id: route.supplier.id.clone(),
        upstream_protocol: Protocol::Videos,
        started_at: started.0,
        duration_ms: started.1.elapsed().as_millis() as u64,
        outcome,
        supplier_request_id: None,
    }
}

fn find_route(catalog: &Catalog, route_id: &str) -> Option<Arc<Route>> {
    catalog
        .models()
        .flat_map(|m| catalog.routes(&m.id).iter())
        .find(|r| r.id == route_id)
        .cloned()
}

/// `POST /admin/videos/{id}/reconcile` and `router videos reconcile`:
/// exactly one of the two forms.
#[derive(Debug, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Reconcile {
    #[serde(default)]
    pub upstream_task_id: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

/// What an operator decided about an `unknown` job.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reconciliation {
    /// The supplier has it as this task: polling resumes.
    Task(String),
    /// The supplier does not have it: failed, released.
    Failed { reason: String },
}

impl Reconcile {
    fn decide(self) -> Result<Reconciliation, ApiError> {
        match (self.upstream_task_id, self.outcome.as_deref(), self.reason) {
            (Some(task), None, None) => {
                let task = task.trim().to_owned();
                if task.is_empty() || task.len() > 256 || task.chars().any(char::is_control) {
                    return Err(ApiError::invalid(
                        "upstream_task_id",
                        "must be 1 to 256 printable characters",
                    ));
                }
                Ok(Reconciliation::Task(task))
            }
            (None, Some("failed"), reason) => Ok(Reconciliation::Failed {
                reason: reason.unwrap_or_default(),
            }),
            (None, Some(_), _) => Err(ApiError::invalid("outcome", "must be `failed`")),
            _ => Err(ApiError::invalid(
                "body",
                "give either `upstream_task_id`, or `outcome: \"failed\"` with a `reason`",
            )),
        }
    }
}

impl<S: Store + VideoStore, P: Suppliers> Gateway<S, P> {
    /// The job `id`, whoever owns it (the caller checks ownership).
    pub async fn video_job(&self, id: Uuid) -> Result<Option<VideoJob>, ApiError> {
        VideoStore::video_job(self.store(), id)
            .await
            .map_err(|e| e.api_error())
    }

    /// `POST /v1/videos` of `key`: replay the account's job under the same
    /// `client_task_id`, or check the request against the catalog, create
    /// the job with its hold and submit it once (see the module docs).
    /// `request_id` is the request the hold belongs to; `trace` gets the
    /// catalog model for the log line and gives the supplier call its
    /// trace context.
    pub async fn create_video(
        &self,
        request_id: Uuid,
        trace: &RequestTrace,
        key: &ApiKeyRecord,
        request: VideoRequest,
        settings: VideoSettings,
        objects: &impl VideoObjects,
    ) -> Result<VideoJob, CreateFailure> {
        if let Some(model) = self.catalog().model(&request.model) {
            trace.model(model);
        }
        let trace = trace.attempt_context();
        let fingerprint = crate::fingerprint::video_request(&request);
        // A replay answers before any catalog rule: the job exists whatever
        // the catalog says now (GP-26).
        let existing = self
            .store()
            .video_job_by_key(key.account_id, &request.client_task_id)
            .await
            .map_err(|e| e.api_error())?;
        if let Some(job) = existing {
            return self.replay_video(job, &fingerprint).await;
        }
        let plan = plan(&self.catalog(), &key.policy, &request, key.account_zdr)?;
        if !objects.configured() {
            return Err(ApiError::new(
                ErrorCode::RouteUnavailable,
                "Video storage is not configured on this router.",
            )
            .into());
        }
        let video = NewVideoJob {
            id: Uuid::now_v7(),
            account_id: key.account_id,
            api_key_id: key.key_id,
            client_task_id: request.client_task_id.clone(),
            fingerprint: fingerprint.clone(),
            model: request.model.clone(),
            route_id: plan.route.id.clone(),
            supplier_id: plan.route.supplier.id.clone(),
            charge: plan.charge,
        };
        let hold = NewRequest::admit(
            request_id,
            Requester::of(key),
            plan.model.id.clone(),
            Protocol::Videos,
            plan.charge,
            SystemTime::now() + HOLD_GUARD,
        );
        let job = match self.store().create_video_job(video, hold).await {
            Ok(VideoCreated::New(job)) => job,
            Ok(VideoCreated::Existing(job)) => return self.replay_video(job, &fingerprint).await,
            Err(refusal) => return Err(reserve_error(refusal).into()),
        };
        // The submission and its recording run in a task of their own: a
        // client that leaves mid-call must not leave the job `submitting`.
        let gateway = self.clone();
        let task = tokio::spawn(async move {
            gateway
                .submit_video_job(job, plan.route, request, settings, trace)
                .await
        });
        task.await
            .map_err(|_| storage_failure(&"the submission task stopped"))?
    }

    /// A create that found the account's job under the same `client_task_id`.
    async fn replay_video(
        &self,
        mut job: VideoJob,
        fingerprint: &str,
    ) -> Result<VideoJob, CreateFailure> {
        if job.fingerprint != fingerprint {
            return Err(ApiError::new(
                product_codes::IDEMPOTENCY_CONFLICT,
                "This client_task_id was used for a different video request; use a new client_task_id for a new video.",
            )
            .with_param("client_task_id")
            .into());
        }
        // The original create is still submitting: wait for its outcome, so
        // concurrent duplicates all answer what it answers.
        let started = tokio::time::Instant::now();
        while job.status == VideoJobStatus::Submitting && started.elapsed() < REPLAY_WAIT {
            tokio::time::sleep(Duration::from_millis(50)).await;
            job = self
                .video_job(job.id)
                .await?
                .ok_or(CreateFailure::Vanished)?;
        }
        replay_outcome(job)
    }

    /// Submits a new job once and records the outcome (see the module docs).
    async fn submit_video_job(
        &self,
        job: VideoJob,
        route: Arc<Route>,
        request: VideoRequest,
        settings: VideoSettings,
        trace: TraceContext,
    ) -> Result<VideoJob, CreateFailure> {
        let video = job.id;
        let call = AttemptCall::new(job.request_id, trace);
        let fail = |error: ApiError| Err(CreateFailure::Job { video, error });
        let started = (SystemTime::now(), tokio::time::Instant::now());
        let result = {
            let mut stop = self.shutdown().watcher();
            tokio::select! {
                result = self.suppliers().submit_video(&route, &request, &call) => result,
                // The drain ended mid-call: whether the supplier took the
                // job is not known (GP-25), as for any call cut after it
                // went out.
                () = stop.stopped() => Err(SubmitError::Sent(AttemptError::shutdown())),
            }
        };
        crate::trace::video_call(
            &route,
            "submit",
            match &result {
                Ok(_) => "succeeded",
                Err(SubmitError::NotSent(e) | SubmitError::Sent(e)) => e.kind.as_str(),
            },
        );
        let store = self.store();
        match decide(result) {
            Submitted::Accepted(task) => {
                crate::failpoints::reached("K7").await;
                let in_progress = matches!(
                    task.state,
                    UpstreamState::InProgress | UpstreamState::Completed
                );
                // A job already done is completed by its first poll.
                let first_poll = match task.state {
                    UpstreamState::Completed => Duration::ZERO,
                    _ => settings.poll_interval,
                };
                match store
                    .video_submitted(video, &task.task_id, in_progress, task.progress, first_poll)
                    .await
                {
                    Ok(Some(job)) => {
                        tracing::info!(video = %public_id(video), route = %route.id, "video submitted");
                        Ok(job)
                    }
                    Ok(None) => fail(storage_failure(&"the submitting job moved")),
                    // Nothing recorded: the orphan sweep makes the job `unknown`.
                    Err(e) => fail(e.api_error()),
                }
            }
            Submitted::Unknown { detail } => {
                tracing::warn!(video = %public_id(video), route = %route.id, detail = %detail, "video submission unknown");
                match store.video_submission_unknown(video, &detail).await {
                    Ok(_) => fail(submission_unknown()),
                    Err(e) => fail(e.api_error()),
                }
            }
            Submitted::Refused {
                public,
                detail,
                upstream_status,
            } => {
                tracing::info!(video = %public_id(video), route = %route.id, detail = %detail, "video submission refused");
                let attempt = video_attempt(
                    &job,
                    &route,
                    started,
                    AttemptOutcome::Failed {
                        upstream_status,
                        kind: "video_refused".to_owned(),
                        retryable: false,
                    },
                );
                let voiding = Voiding {
                    request_id: job.request_id,
                    reason: public.code.as_str().to_owned(),
                    attempt: Some(attempt),
                };
                let failure = VideoFailure {
                    reason: PUBLIC_FAIL_REASON.to_owned(),
                    supplier_error: Some(detail),
                    // The code a replay of this create answers with (GP-25).
                    create_error: Some(public.code.as_str().to_owned()),
                };
                match store
                    .fail_video(video, &[VideoJobStatus::Submitting], failure, voiding)
                    .await
                {
                    Ok(()) => fail(public),
                    Err(FinishError::Store(e)) => fail(e.api_error()),
                    Err(e) => fail(storage_failure(&e)),
                }
            }
        }
    }

    /// One pass of the video poller: jobs whose process died mid-submission
    /// become `unknown`; then every job due is polled once (claimed with its
    /// next poll moved an interval on, so any number of instances poll each
    /// job once per interval). Returns how many jobs were polled.
    pub async fn poll_videos(
        &self,
        settings: VideoSettings,
        objects: &impl VideoObjects,
    ) -> Result<u64, StoreError> {
        let store = self.store();
        let orphaned = store
            .orphaned_video_submissions(ORPHANED_SUBMISSION)
            .await?;
        if orphaned > 0 {
            tracing::warn!(
                orphaned,
                "video submissions of a stopped process are now unknown"
            );
        }
        let mut polled = 0u64;
        for _ in 0..MAX_BATCHES {
            let due = store
                .claim_due_videos(POLL_BATCH, settings.poll_interval)
                .await?;
            let claimed = due.len();
            polled += claimed as u64;
            futures::stream::iter(due)
                .for_each_concurrent(POLL_CONCURRENCY, |job| async move {
                    let id = public_id(job.id);
                    if let Err(error) = self.poll_video_job(job, objects).await {
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
    async fn poll_video_job(
        &self,
        job: VideoJob,
        objects: &impl VideoObjects,
    ) -> Result<(), PollError> {
        let route = find_route(&self.catalog(), &job.route_id)
            .ok_or_else(|| PollError::RouteGone(job.route_id.clone()))?;
        let task_id = job.upstream_task_id.clone().ok_or(PollError::NoTask)?;
        // A background call: the job's request id identifies it to the
        // supplier, in a trace of its own.
        let call = AttemptCall::new(job.request_id, TraceContext::start(false));
        let task = self.suppliers().poll_video(&route, &task_id, &call).await;
        crate::trace::video_call(
            &route,
            "poll",
            task.as_ref()
                .map_or_else(|e| e.kind.as_str(), |_| "succeeded"),
        );
        let task = task.map_err(PollError::Supplier)?;
        let store = self.store();
        match task.state {
            UpstreamState::Queued | UpstreamState::InProgress => {
                let in_progress = task.state == UpstreamState::InProgress;
                store
                    .record_video_progress(job.id, in_progress, task.progress)
                    .await
                    .map_err(PollError::Store)
            }
            UpstreamState::Failed { reason } => {
                let voiding = Voiding {
                    request_id: job.request_id,
                    reason: "video_failed".to_owned(),
                    attempt: None,
                };
                let failure = VideoFailure {
                    reason: PUBLIC_FAIL_REASON.to_owned(),
                    supplier_error: Some(reason),
                    create_error: None,
                };
                let active = [VideoJobStatus::Queued, VideoJobStatus::InProgress];
                match store.fail_video(job.id, &active, failure, voiding).await {
                    Ok(()) => {
                        metrics::counter!("router_videos_total", "outcome" => "failed")
                            .increment(1);
                        tracing::info!(video = %public_id(job.id), "video failed; hold released");
                        Ok(())
                    }
                    // Another pass (or an operator) ended the job first.
                    Err(FinishError::NotActive) => Ok(()),
                    Err(FinishError::Store(e)) => Err(PollError::Store(e)),
                }
            }
            UpstreamState::Completed => {
                // No other pass starts a second copy while this one runs; if
                // this process dies, the job is due again after the lease.
                store
                    .defer_video_poll(job.id, COPY_LEASE)
                    .await
                    .map_err(PollError::Store)?;
                self.complete_video_job(&job, &route, &task_id, objects)
                    .await
            }
        }
    }

    /// Copies the content into the object store, then completes the job
    /// and settles its hold in one atomic step (in that order: a completed
    /// video is always downloadable). A crash between the two leaves the
    /// job active; the next poll copies again (same key) and settles.
    async fn complete_video_job(
        &self,
        job: &VideoJob,
        route: &Route,
        task_id: &str,
        objects: &impl VideoObjects,
    ) -> Result<(), PollError> {
        if !objects.configured() {
            return Err(PollError::Copy(ContentCopyError::NotConfigured));
        }
        let started = (SystemTime::now(), tokio::time::Instant::now());
        let call = AttemptCall::new(job.request_id, TraceContext::start(false));
        let download = self.suppliers().video_content(route, task_id, &call).await;
        crate::trace::video_call(
            route,
            "content",
            download
                .as_ref()
                .map_or_else(|e| e.kind.as_str(), |_| "succeeded"),
        );
        let download = download.map_err(PollError::Supplier)?;
        let content_type = download
            .content_type
            .filter(|t| t.starts_with("video/"))
            .unwrap_or_else(|| "video/mp4".to_owned());
        let key = format!("videos/{}", job.id.simple());
        let bytes = objects
            .put_video(&key, download.chunks)
            .await
            .map_err(PollError::Copy)?;
        let settlement = Settlement {
            request_id: job.request_id,
            reported: job.charge,
            usage: Usage::default(),
            attempt: video_attempt(job, route, started, AttemptOutcome::Succeeded),
        };
        let content = StoredVideo {
            key,
            bytes,
            content_type,
        };
        match self
            .store()
            .complete_video(job.id, content, settlement)
            .await
        {
            Ok(charged) => {
                metrics::counter!("router_videos_total", "outcome" => "completed").increment(1);
                tracing::info!(video = %public_id(job.id), charged = charged.0, bytes, "video completed; hold settled");
                Ok(())
            }
            // Another pass (or an operator) ended the job first.
            Err(FinishError::NotActive) => Ok(()),
            Err(FinishError::Store(e)) => Err(PollError::Store(e)),
        }
    }

    /// Reconciles an `unknown` job (`POST /admin/videos/{id}/reconcile`,
    /// `router videos reconcile`): `{upstream_task_id}` resumes polling
    /// under the supplier's task; `{outcome: "failed", reason}` fails it and
    /// releases its hold. Any other state is 409: reconciliation is only for
    /// what is unknown, so a second one changes nothing. Returns the job as
    /// it is now.
    pub async fn reconcile_video(
        &self,
        job: VideoJob,
        body: Reconcile,
    ) -> Result<VideoJob, ApiError> {
        let not_unknown = || {
            ApiError::new(
                ErrorCode::Conflict,
                format!(
                    "The video is `{}`; only an `unknown` video is reconciled.",
                    job.status.as_str()
                ),
            )
        };
        let store = self.store();
        match body.decide()? {
            Reconciliation::Task(task) => match store
                .reconcile_video_task(job.id, &task)
                .await
                .map_err(|e| e.api_error())?
            {
                Some(job) => {
                    tracing::info!(video = %public_id(job.id), "video reconciled: polling resumes");
                    Ok(job)
                }
                None => Err(not_unknown()),
            },
            Reconciliation::Failed { reason } => {
                let voiding = Voiding {
                    request_id: job.request_id,
                    reason: "reconciled_failed".to_owned(),
                    attempt: None,
                };
                let failure = VideoFailure {
                    reason: PUBLIC_FAIL_REASON.to_owned(),
                    supplier_error: Some(format!("reconciled as failed: {reason}")),
                    create_error: None,
                };
                match store
                    .fail_video(job.id, &[VideoJobStatus::Unknown], failure, voiding)
                    .await
                {
                    Ok(()) => {
                        tracing::info!(video = %public_id(job.id), "video reconciled as failed; hold released");
                        self.video_job(job.id)
                            .await?
                            .ok_or_else(|| storage_failure(&"the reconciled video vanished"))
                    }
                    Err(FinishError::NotActive) => Err(not_unknown()),
                    Err(FinishError::Store(e)) => Err(e.api_error()),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{SupplierError, SupplierFailure};

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
                product_codes::TASK_NOT_FOUND,
                "{bad}"
            );
        }
    }

    fn task(state: UpstreamState) -> UpstreamVideo {
        UpstreamVideo {
            task_id: "task-1".into(),
            state,
            progress: 0,
        }
    }

    fn sent_status(status: u16) -> Result<UpstreamVideo, SubmitError> {
        Err(SubmitError::Sent(AttemptError::status(status, None)))
    }

    #[derive(Debug, thiserror::Error)]
    #[error("no id")]
    struct NoId;

    #[test]
    fn an_accepted_submission_is_the_job_unless_the_supplier_says_failed() {
        let accepted = decide(Ok(task(UpstreamState::Queued)));
        assert_eq!(accepted, Submitted::Accepted(task(UpstreamState::Queued)));
        let failed = decide(Ok(task(UpstreamState::Failed {
            reason: "moderation".into(),
        })));
        let Submitted::Refused { public, detail, .. } = failed else {
            panic!("a failed task must be refused: {failed:?}");
        };
        assert_eq!(public.code, ErrorCode::UpstreamError);
        assert_eq!(detail, "moderation");
    }

    /// Issue 33 and GP-25: 3xx, 4xx and 503 say the job was not taken
    /// (released); other 5xx may come after it was made (held, unknown).
    #[test]
    fn error_statuses_refuse_or_leave_the_job_unknown() {
        for status in [301, 307, 400, 401, 404, 409, 422, 429, 503] {
            match decide(sent_status(status)) {
                Submitted::Refused {
                    public,
                    upstream_status,
                    ..
                } => {
                    assert_eq!(public.code, ErrorCode::UpstreamError, "{status}");
                    assert_eq!(public.status(), 502, "{status}");
                    assert_eq!(upstream_status, Some(status));
                }
                other => panic!("{status} must refuse: {other:?}"),
            }
        }
        for status in [500, 502, 504] {
            assert!(
                matches!(decide(sent_status(status)), Submitted::Unknown { .. }),
                "{status} must be unknown"
            );
        }
    }

    /// K7: whatever went wrong after the request went out, the job is
    /// unknown (held, never resubmitted); nothing sent is released.
    #[test]
    fn a_sent_request_without_a_usable_answer_is_unknown() {
        for error in [
            AttemptError::transport("connection reset"),
            AttemptError::timeout(),
            AttemptError::supplier(SupplierError::invalid(NoId)),
            // A failure reported in a 2xx body carries no status to refuse by.
            AttemptError::supplier(SupplierError::Reported(SupplierFailure::default())),
        ] {
            let outcome = decide(Err(SubmitError::Sent(error.clone())));
            assert!(
                matches!(outcome, Submitted::Unknown { .. }),
                "{error}: {outcome:?}"
            );
        }
        let not_sent = decide(Err(SubmitError::NotSent(AttemptError::transport(
            "connection refused",
        ))));
        let Submitted::Refused { public, .. } = not_sent else {
            panic!("nothing sent must be released: {not_sent:?}");
        };
        assert_eq!(public.code, ErrorCode::UpstreamUnavailable);
        assert_eq!(public.status(), 503);
    }

    #[test]
    fn a_request_the_route_cannot_express_answers_its_own_error() {
        let own = ApiError::invalid("resolution", "not in this dialect");
        let outcome = decide(Err(SubmitError::NotSent(AttemptError::conversion(
            own.clone(),
        ))));
        let Submitted::Refused { public, .. } = outcome else {
            panic!("{outcome:?}");
        };
        assert_eq!(public, own);
    }

    fn job(status: VideoJobStatus, create_error: Option<&str>) -> VideoJob {
        let now = SystemTime::now();
        VideoJob {
            id: Uuid::now_v7(),
            account_id: Uuid::now_v7(),
            api_key_id: Uuid::now_v7(),
            request_id: Uuid::now_v7(),
            client_task_id: "t".into(),
            fingerprint: "f".into(),
            model: "m".into(),
            route_id: "r".into(),
            supplier_id: "s".into(),
            charge: NanoUsd(1),
            status,
            progress: 0,
            upstream_task_id: None,
            create_error: create_error.map(str::to_owned),
            fail_reason: None,
            supplier_error: None,
            content_key: None,
            content_bytes: None,
            content_type: None,
            created_at: now,
            updated_at: now,
            completed_at: None,
            next_poll_at: None,
            polls: 0,
            reconciled_at: None,
        }
    }

    /// GP-25: a replay answers what the original create answered, naming
    /// the same video; a running or finished job is the video itself.
    #[test]
    fn a_replay_answers_the_original_outcome() {
        let code = |j: VideoJob| match replay_outcome(j) {
            Ok(_) => None,
            Err(CreateFailure::Job { error, .. }) => Some(error.code),
            Err(other) => panic!("{other:?}"),
        };
        for status in [VideoJobStatus::Unknown, VideoJobStatus::Submitting] {
            assert_eq!(
                code(job(status, None)),
                Some(product_codes::SUBMISSION_UNKNOWN)
            );
        }
        assert_eq!(
            code(job(VideoJobStatus::Failed, Some("upstream_error"))),
            Some(ErrorCode::UpstreamError)
        );
        assert_eq!(
            code(job(VideoJobStatus::Failed, Some("upstream_unavailable"))),
            Some(ErrorCode::UpstreamUnavailable)
        );
        // A job that failed after it was accepted had a successful create.
        for status in [
            VideoJobStatus::Failed,
            VideoJobStatus::Queued,
            VideoJobStatus::InProgress,
            VideoJobStatus::Completed,
        ] {
            assert_eq!(code(job(status, None)), None, "{status:?}");
        }
        let unknown = job(VideoJobStatus::Unknown, None);
        let id = unknown.id;
        assert!(matches!(
            replay_outcome(unknown),
            Err(CreateFailure::Job { video, .. }) if video == id
        ));
    }

    #[test]
    fn a_reconciliation_is_exactly_one_of_two_forms() {
        let form = |task: Option<&str>, outcome: Option<&str>, reason: Option<&str>| Reconcile {
            upstream_task_id: task.map(str::to_owned),
            outcome: outcome.map(str::to_owned),
            reason: reason.map(str::to_owned),
        };
        assert_eq!(
            form(Some("  task-9 "), None, None).decide().unwrap(),
            Reconciliation::Task("task-9".into())
        );
        assert_eq!(
            form(None, Some("failed"), Some("gone")).decide().unwrap(),
            Reconciliation::Failed {
                reason: "gone".into()
            }
        );
        let param = |r: Reconcile| r.decide().unwrap_err().param;
        let long = "x".repeat(257);
        for (bad, expected) in [
            (form(Some(" "), None, None), "upstream_task_id"),
            (form(Some(long.as_str()), None, None), "upstream_task_id"),
            (form(Some("a\u{7}b"), None, None), "upstream_task_id"),
            (form(None, Some("completed"), None), "outcome"),
            (form(None, None, None), "body"),
            (form(Some("t"), Some("failed"), None), "body"),
            (form(Some("t"), None, Some("why")), "body"),
        ] {
            assert_eq!(param(bad).as_deref(), Some(expected));
        }
    }

    #[test]
    fn public_ids_are_the_prefix_and_32_hex_digits() {
        let id = Uuid::now_v7();
        let public = public_id(id);
        assert_eq!(public.len(), ID_PREFIX.len() + 32);
        assert_eq!(public, format!("video_{}", id.simple()));
    }
}
