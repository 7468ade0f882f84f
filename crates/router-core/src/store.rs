//! The storage the lifecycles need: keys, reservations, attempts,
//! settlement ([`Store`]); the routing policies' experiments, affinity
//! preferences and cached answers ([`ExperimentStore`], [`AffinityStore`],
//! [`ResponseCacheStore`]); and video jobs with their holds ([`VideoStore`]).
//!
//! Implemented by `router-store` on PostgreSQL. Every method is one atomic
//! step; the lifecycle guarantees each request is reserved once and then
//! either settled once or voided once.

use crate::experiments::Experiment;
use crate::key_policy::{KeyLimit, KeyPolicy};
use router_canonical::{ApiError, ErrorCode, NanoUsd, Protocol, Response, Usage, VideoStatus};
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A scope an API key may carry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scope {
    Inference,
    AccountRead,
    AccountWrite,
    UsageRead,
}

impl Scope {
    pub const ALL: [Scope; 4] = [
        Scope::Inference,
        Scope::AccountRead,
        Scope::AccountWrite,
        Scope::UsageRead,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Scope::Inference => "inference",
            Scope::AccountRead => "account:read",
            Scope::AccountWrite => "account:write",
            Scope::UsageRead => "usage:read",
        }
    }

    pub fn parse(s: &str) -> Option<Scope> {
        Scope::ALL.into_iter().find(|scope| scope.as_str() == s)
    }
}

/// An active API key as authentication sees it. Expired and deleted keys
/// are never returned by the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyRecord {
    pub key_id: Uuid,
    pub account_id: Uuid,
    pub scopes: Vec<Scope>,
    /// When the key stops authenticating; a cached record is checked against it.
    pub expires_at: Option<SystemTime>,
    /// Models, client addresses and prompt-cache default (shared: cloning a
    /// cached record must stay cheap).
    pub policy: Arc<KeyPolicy>,
    /// The account's zero-data-retention switch (J-06), read with the key:
    /// on, inference needs verified ZDR supply and uploads are refused. A
    /// flip reaches every instance's key cache at once.
    pub account_zdr: bool,
}

impl ApiKeyRecord {
    pub fn has_scope(&self, scope: Scope) -> bool {
        self.scopes.contains(&scope)
    }
}

/// The key a request is admitted under, as it stood at admission: who
/// pays, and what the reservation checks the key against. Built from the
/// key by [`Requester::of`], for every kind of request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requester {
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    /// The key's policy version that admitted the request (see
    /// [`NewRequest::policy_version`]).
    pub policy_version: i64,
    /// Whether the key sets any limit (see [`NewRequest::key_limited`]).
    pub key_limited: bool,
    /// Whether its limits are on spend only (see [`NewRequest::key_spend_only`]).
    pub key_spend_only: bool,
}

impl Requester {
    pub fn of(key: &ApiKeyRecord) -> Requester {
        Requester {
            account_id: key.account_id,
            api_key_id: key.key_id,
            policy_version: key.policy.version,
            key_limited: key.policy.limits.any(),
            key_spend_only: key.policy.limits.spend_only(),
        }
    }
}

/// What is recorded when a request is admitted and its funds are held.
/// Built by [`NewRequest::admit`] for inference, images and videos alike.
#[derive(Debug, Clone, PartialEq)]
pub struct NewRequest {
    pub request_id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    /// The key's policy version that admitted the request: the reservation
    /// is refused ([`ReserveError::PolicyChanged`]) unless it is still current.
    pub policy_version: i64,
    /// Whether the key (as admitted) sets any limit: such a reservation
    /// takes the key's exclusive path, which reads the limits afresh from
    /// the locked key row.
    pub key_limited: bool,
    /// Whether the key's limits, if any, are spend limits and a monthly
    /// budget only (no request rates, no concurrency): such a key's
    /// admissions may be taken from a credit lease of the key's own
    /// (`router-store`'s lease book), which counts against its limits.
    pub key_spend_only: bool,
    /// The public model ID the client asked for.
    pub model: String,
    pub inbound_protocol: Protocol,
    /// The protocol history records: Completions rides Chat, so it is `Chat` there.
    pub recorded_protocol: Protocol,
    pub stream: bool,
    /// The worst-case charge over the eligible routes.
    pub reserve: NanoUsd,
    /// After this instant the hold is presumed orphaned (crashed process)
    /// and the reaper releases it. Live requests extend it.
    pub hold_expires_at: SystemTime,
    /// The experiment variant the request was assigned (F-01), recorded on
    /// its history row with the reservation, not in a statement of its own.
    pub experiment: Option<ExperimentArm>,
}

impl NewRequest {
    /// The admission record of request `request_id` of `requester` for
    /// `model` arriving in `inbound`: a hold of `reserve` until
    /// `hold_expires_at`, recorded under the protocol `inbound` rides, not
    /// streamed, in no experiment (set those fields after, where they apply).
    pub fn admit(
        request_id: Uuid,
        requester: Requester,
        model: impl Into<String>,
        inbound: Protocol,
        reserve: NanoUsd,
        hold_expires_at: SystemTime,
    ) -> NewRequest {
        NewRequest {
            request_id,
            account_id: requester.account_id,
            api_key_id: requester.api_key_id,
            policy_version: requester.policy_version,
            key_limited: requester.key_limited,
            key_spend_only: requester.key_spend_only,
            model: model.into(),
            inbound_protocol: inbound,
            recorded_protocol: inbound.rides(),
            stream: false,
            reserve,
            hold_expires_at,
            experiment: None,
        }
    }
}

/// An experiment and the name of the variant a request was assigned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExperimentArm {
    pub experiment_id: Uuid,
    pub variant: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReserveError {
    #[error("the wallet's available balance is below the reservation")]
    InsufficientCredits,
    /// The key's policy changed after the request was admitted under it.
    #[error("the API key's policy changed while the request was admitted")]
    PolicyChanged,
    /// A key limit refused the request; `retry_after` is the number of
    /// seconds (≥ 1) until it may fit, when that can be computed.
    #[error("the API key's {limit:?} limit refused the request")]
    KeyLimit {
        limit: KeyLimit,
        retry_after: Option<u64>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// One physical attempt against a supplier route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptRecord {
    pub request_id: Uuid,
    /// 1-based, across all routes of the request.
    pub attempt_no: u32,
    pub route_id: String,
    pub supplier_id: String,
    pub upstream_protocol: Protocol,
    pub started_at: SystemTime,
    pub duration_ms: u64,
    pub outcome: AttemptOutcome,
    /// The supplier's own id of this call (its `x-request-id` or
    /// `request-id` reply header), when it sent one.
    pub supplier_request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    Succeeded,
    Failed {
        /// The supplier's HTTP status, when one arrived.
        upstream_status: Option<u16>,
        /// A stable, internal failure class (e.g. `status`, `connect`, `timeout`, `invalid_response`).
        kind: String,
        retryable: bool,
    },
}

/// The final, valid success to charge, with the attempt that produced it.
/// The store records that attempt in the same atomic step as the charge, so
/// the hot path pays one round trip for both.
#[derive(Debug, Clone, PartialEq)]
pub struct Settlement {
    pub request_id: Uuid,
    /// What the reported usage costs at the route's rates. The store debits
    /// at most the hold (the hold is a ceiling, RELIABILITY.md I4) and
    /// records the difference as the request's shortfall.
    pub reported: NanoUsd,
    pub usage: Usage,
    /// Its outcome is `Succeeded`; its route is the one the request is billed to.
    pub attempt: AttemptRecord,
}

/// Why a request ended without a charge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Voiding {
    pub request_id: Uuid,
    /// The public error code returned (or `client_cancelled`, `stream_failed`).
    pub reason: String,
    /// The last attempt, when it is not recorded yet (a stream that failed or
    /// was abandoned): recorded in the same step as the release.
    pub attempt: Option<AttemptRecord>,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettleError {
    /// The request was already settled or voided: settlement is exactly once.
    #[error("request {0} is no longer reserved")]
    NotReserved(Uuid),
    #[error(transparent)]
    Store(#[from] StoreError),
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    #[error("database unavailable: {0}")]
    Unavailable(String),
    #[error("database query failed: {0}")]
    Query(String),
}

/// Seconds a client is told to wait after a database outage answer; the
/// pool's own checkout timeout is about as long.
pub const OUTAGE_RETRY_AFTER_SECS: u64 = 2;

impl StoreError {
    /// The public answer to a storage failure, logged here with its cause
    /// (never shown to the client). An unreachable database is a retryable
    /// 503 `service_unavailable` with `Retry-After` (issue 30: it was a 500,
    /// "a fault of the router"); a failed query is the 500 it is.
    pub fn api_error(&self) -> ApiError {
        match self {
            StoreError::Unavailable(cause) => {
                // Every request says so while the database is away: once a second.
                static OUTAGE: crate::throttle::Throttle = crate::throttle::Throttle::new();
                if let Some(held_back) = OUTAGE.allow(Duration::from_secs(1)) {
                    tracing::warn!(error = %cause, held_back, "database unavailable");
                }
                ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "The service is briefly unavailable; retry shortly.",
                )
                .with_retry_after(Some(OUTAGE_RETRY_AFTER_SECS))
            }
            StoreError::Query(cause) => {
                tracing::error!(error = %cause, "storage failure");
                ApiError::new(ErrorCode::InternalError, "Storage failure.")
            }
        }
    }
}

/// Storage operations of the request lifecycle.
pub trait Store: Send + Sync + 'static {
    /// Find the active key whose SHA-256 secret hash is `key_hash`.
    fn find_api_key(
        &self,
        key_hash: [u8; 32],
    ) -> impl Future<Output = Result<Option<ApiKeyRecord>, StoreError>> + Send;

    /// Insert the Request row and hold `reserve` against the wallet, atomically:
    /// either both happen and the available balance covered the hold, or
    /// neither does. No overspend under any concurrency.
    fn reserve(&self, request: NewRequest)
    -> impl Future<Output = Result<(), ReserveError>> + Send;

    /// Push the hold's expiry forward (long streams keep their hold alive).
    fn extend_hold(
        &self,
        request_id: Uuid,
        until: SystemTime,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    fn record_attempt(
        &self,
        attempt: AttemptRecord,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Charge a valid final success, release the rest of the hold and record
    /// the succeeded attempt, once. Returns what was charged: the reported
    /// cost, capped at the hold (I4); never more than the reservation.
    fn settle(
        &self,
        settlement: Settlement,
    ) -> impl Future<Output = Result<NanoUsd, SettleError>> + Send;

    /// Release the whole hold without a charge, once.
    fn void(&self, voiding: Voiding) -> impl Future<Output = Result<(), SettleError>> + Send;

    /// Releases every hold whose expiry is before `now` (its process died:
    /// live requests extend theirs) and fails its request; how many. Safe
    /// to run from every instance at once.
    fn reap_expired_holds(
        &self,
        now: SystemTime,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// The secret that authenticates router thinking signatures: the stored
    /// one, or `candidate` (fresh random bytes) stored now if there is none.
    /// Instances starting at once all get the same one. Never logged.
    fn thinking_seal_key(
        &self,
        candidate: Vec<u8>,
    ) -> impl Future<Output = Result<Vec<u8>, StoreError>> + Send;

    /// One round trip to the storage, for readiness (`/readyz`).
    fn ping(&self) -> impl Future<Output = Result<(), StoreError>> + Send;
}

// ---------------------------------------------------------------------------
// The routing policies of the request pipeline (`pipeline.rs`). Each is
// read on the hot path, so an implementation answers from an in-process
// front where it can (`router-store`'s `ExperimentFront`, `AffinityFront`,
// `ResponseFront`).

/// The experiments a request names (`X-CI-Experiment`, F-01).
pub trait ExperimentStore: Send + Sync + 'static {
    /// The account's experiment `slug`, in any status; another account's
    /// is `None`, as an unknown one.
    fn experiment(
        &self,
        account_id: Uuid,
        slug: &str,
    ) -> impl Future<Output = Result<Option<Arc<Experiment>>, StoreError>> + Send;
}

/// A stored prompt-cache route preference (F-14, F-16).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityHint {
    pub route_id: String,
    /// Whether the preference still holds (by the store's clock).
    pub fresh: bool,
    /// How long it still holds (zero when it no longer does).
    pub remaining: Duration,
}

/// Prompt-cache affinity's preferences, keyed by a prefix's fingerprint
/// (`affinity.rs`), shared by every instance.
pub trait AffinityStore: Send + Sync + 'static {
    /// The prefix's stored preference, fresh or not.
    fn affinity_hint(
        &self,
        fingerprint: &[u8; 32],
    ) -> impl Future<Output = Result<Option<AffinityHint>, StoreError>> + Send;

    /// Prefers `route_id`, which served the prefix, for `ttl_seconds`.
    /// `preferred` says it was the prefix's fresh preference already: then
    /// the preference is only extended, and a newer choice another
    /// instance made meanwhile stands.
    fn record_affinity(
        &self,
        fingerprint: &[u8; 32],
        route_id: &str,
        ttl_seconds: i32,
        preferred: bool,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes preferences that expired long ago; how many.
    fn purge_affinity(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

/// A request answered from the exact-response cache, for its history row:
/// succeeded, charged 0, no hold.
#[derive(Debug, Clone, PartialEq)]
pub struct CacheHit {
    pub request_id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    /// The catalog model's ID.
    pub model: String,
    pub inbound_protocol: Protocol,
    pub usage: Usage,
    /// The experiment variant the request was assigned (F-01).
    pub experiment: Option<ExperimentArm>,
}

/// The exact-response cache (G-20, H-10, J-09): an account's answers keyed
/// by the fingerprint of the whole canonical request
/// (`response_cache.rs`).
pub trait ResponseCacheStore: Send + Sync + 'static {
    /// The account's answer to `key` stored within the last `ttl_seconds`.
    /// An entry that cannot be read back is `None`, as a miss.
    fn cached_response(
        &self,
        account_id: Uuid,
        key: &[u8; 32],
        ttl_seconds: i32,
    ) -> impl Future<Output = Result<Option<Response>, StoreError>> + Send;

    /// Stores (or refreshes) the account's answer to `key`.
    fn cache_response(
        &self,
        account_id: Uuid,
        key: &[u8; 32],
        response: &Response,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Records a request answered from the cache in the history.
    fn record_cache_hit(
        &self,
        hit: &CacheHit,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Deletes entries older than any key's TTL (reads check the TTL
    /// themselves; this only bounds what is kept); how many.
    fn purge_response_cache(&self) -> impl Future<Output = Result<u64, StoreError>> + Send;
}

// ---------------------------------------------------------------------------
// Video jobs.

/// A video job's state (GP-22). `Submitting` is the router's own: the job
/// and its hold exist and the supplier call is in flight; clients see it as
/// queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VideoJobStatus {
    Submitting,
    Queued,
    InProgress,
    Completed,
    Failed,
    /// Sent, but whether the supplier took it is not known (GP-25): held
    /// until an operator reconciles it.
    Unknown,
}

impl VideoJobStatus {
    pub const ALL: [VideoJobStatus; 6] = [
        VideoJobStatus::Submitting,
        VideoJobStatus::Queued,
        VideoJobStatus::InProgress,
        VideoJobStatus::Completed,
        VideoJobStatus::Failed,
        VideoJobStatus::Unknown,
    ];

    /// The stored name.
    pub fn as_str(self) -> &'static str {
        match self {
            VideoJobStatus::Submitting => "submitting",
            VideoJobStatus::Queued => "queued",
            VideoJobStatus::InProgress => "in_progress",
            VideoJobStatus::Completed => "completed",
            VideoJobStatus::Failed => "failed",
            VideoJobStatus::Unknown => "unknown",
        }
    }

    pub fn parse(name: &str) -> Option<VideoJobStatus> {
        VideoJobStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// What a client is shown: a submission in flight is queued (its money
    /// is held and the job exists, GP-23).
    pub fn public(self) -> VideoStatus {
        match self {
            VideoJobStatus::Submitting | VideoJobStatus::Queued => VideoStatus::Queued,
            VideoJobStatus::InProgress => VideoStatus::InProgress,
            VideoJobStatus::Completed => VideoStatus::Completed,
            VideoJobStatus::Failed => VideoStatus::Failed,
            VideoJobStatus::Unknown => VideoStatus::Unknown,
        }
    }
}

/// A video job as stored: the idempotency record and the job in one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoJob {
    pub id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    /// The request its hold belongs to.
    pub request_id: Uuid,
    pub client_task_id: String,
    /// The request's GP-26 fingerprint.
    pub fingerprint: String,
    /// The model as the client named it.
    pub model: String,
    pub route_id: String,
    pub supplier_id: String,
    /// The price held, charged in full on completion.
    pub charge: NanoUsd,
    pub status: VideoJobStatus,
    /// 0 to 100; 100 only once completed.
    pub progress: u8,
    pub upstream_task_id: Option<String>,
    /// The public error code a refused create answered with, which its
    /// replay answers again (GP-25).
    pub create_error: Option<String>,
    /// The public reason of a failed job.
    pub fail_reason: Option<String>,
    /// The supplier's own failure text: operators only (P-08).
    pub supplier_error: Option<String>,
    pub content_key: Option<String>,
    pub content_bytes: Option<u64>,
    pub content_type: Option<String>,
    pub created_at: SystemTime,
    pub updated_at: SystemTime,
    pub completed_at: Option<SystemTime>,
    pub next_poll_at: Option<SystemTime>,
    pub polls: u32,
    pub reconciled_at: Option<SystemTime>,
}

/// A new job's row; its hold is the [`NewRequest`] beside it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVideoJob {
    pub id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    pub client_task_id: String,
    pub fingerprint: String,
    pub model: String,
    pub route_id: String,
    pub supplier_id: String,
    pub charge: NanoUsd,
}

/// What a create found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VideoCreated {
    /// A new job, `submitting`, its hold taken: the caller submits it.
    New(VideoJob),
    /// The account already has a job under this `client_task_id`.
    Existing(VideoJob),
}

/// A completed video's content as kept in the object store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredVideo {
    pub key: String,
    pub bytes: u64,
    pub content_type: String,
}

/// How a job failed: what its client is told, what its operator is told.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoFailure {
    /// The public reason.
    pub reason: String,
    /// The supplier's own text (operators only); `None` keeps what is stored.
    pub supplier_error: Option<String>,
    /// The code a refused create answered with (its replay answers it again).
    pub create_error: Option<String>,
}

/// Why a step that ends a job did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FinishError {
    /// The job was not in a state this step ends (already terminal, or
    /// moved by someone else): nothing was written.
    #[error("the video is not in a state this step ends")]
    NotActive,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<SettleError> for FinishError {
    fn from(error: SettleError) -> Self {
        match error {
            // The state change and the money step share a transaction, so a
            // hold no longer held means the job had ended already.
            SettleError::NotReserved(_) => FinishError::NotActive,
            SettleError::Store(e) => FinishError::Store(e),
        }
    }
}

/// Storage operations of the video job lifecycle. Every transition is
/// conditional on the job's state and reports whether it happened, so two
/// instances (or a poller and an operator) racing on one job change it
/// once; each step that ends a job moves its money in the same atomic step
/// (a job is `completed` exactly when its hold is settled, `failed` exactly
/// when it is released: RELIABILITY.md I7).
pub trait VideoStore: Send + Sync + 'static {
    /// Creates the job `submitting` and takes its hold atomically, or finds
    /// the account's job under the same `client_task_id` (one job per key
    /// however many arrive at once). A refused hold leaves no job.
    fn create_video_job(
        &self,
        video: NewVideoJob,
        request: NewRequest,
    ) -> impl Future<Output = Result<VideoCreated, ReserveError>> + Send;

    fn video_job(
        &self,
        id: Uuid,
    ) -> impl Future<Output = Result<Option<VideoJob>, StoreError>> + Send;

    fn video_job_by_key(
        &self,
        account_id: Uuid,
        client_task_id: &str,
    ) -> impl Future<Output = Result<Option<VideoJob>, StoreError>> + Send;

    /// `submitting` → `queued` (or `in_progress`): the supplier took the
    /// job as `upstream_task_id`; first poll due after `first_poll`. `None`
    /// when the job is no longer `submitting`.
    fn video_submitted(
        &self,
        id: Uuid,
        upstream_task_id: &str,
        in_progress: bool,
        progress: u8,
        first_poll: Duration,
    ) -> impl Future<Output = Result<Option<VideoJob>, StoreError>> + Send;

    /// `submitting` → `unknown`, the hold kept; `detail` for operators.
    fn video_submission_unknown(
        &self,
        id: Uuid,
        detail: &str,
    ) -> impl Future<Output = Result<Option<VideoJob>, StoreError>> + Send;

    /// Jobs `submitting` for longer than `age` (their process died) become
    /// `unknown`, never resubmitted (K7). Returns how many.
    fn orphaned_video_submissions(
        &self,
        age: Duration,
    ) -> impl Future<Output = Result<u64, StoreError>> + Send;

    /// Claims up to `limit` active jobs whose poll is due, moving their
    /// next poll `interval` on (each job to one claimer per interval).
    fn claim_due_videos(
        &self,
        limit: u32,
        interval: Duration,
    ) -> impl Future<Output = Result<Vec<VideoJob>, StoreError>> + Send;

    /// Keeps an active job from other passes for `lease`.
    fn defer_video_poll(
        &self,
        id: Uuid,
        lease: Duration,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Still running: `queued` may become `in_progress`, never back;
    /// progress never decreases and stays below 100.
    fn record_video_progress(
        &self,
        id: Uuid,
        in_progress: bool,
        progress: u8,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// `queued`/`in_progress` → `completed` with its stored content, and
    /// the hold settled, atomically. Returns the charge.
    fn complete_video(
        &self,
        id: Uuid,
        content: StoredVideo,
        settlement: Settlement,
    ) -> impl Future<Output = Result<NanoUsd, FinishError>> + Send;

    /// A job in one of `from` → `failed`, and its hold released, atomically.
    fn fail_video(
        &self,
        id: Uuid,
        from: &[VideoJobStatus],
        failure: VideoFailure,
        voiding: Voiding,
    ) -> impl Future<Output = Result<(), FinishError>> + Send;

    /// `unknown` → `queued` under the supplier's task an operator found,
    /// polled at once. `None` when the job is not `unknown`.
    fn reconcile_video_task(
        &self,
        id: Uuid,
        upstream_task_id: &str,
    ) -> impl Future<Output = Result<Option<VideoJob>, StoreError>> + Send;
}
