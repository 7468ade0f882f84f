//! Video jobs (section O): the row that is both the idempotency record and
//! the job, created with its hold in one transaction; the state machine of
//! GP-22 as conditional updates; and the money steps that end a job, each in
//! the same transaction as its state change, so a video is `completed`
//! exactly when its hold is settled and `failed` exactly when it is
//! released (RELIABILITY.md I7; new-api #2050 never again).
//!
//! Every transition is `UPDATE … WHERE status IN (…)` and reports whether it
//! matched, so two instances (or a poller and an operator) racing on one job
//! change it once: the loser matches nothing and writes nothing.
//!
//! [`Database`] implements core's [`VideoStore`] port with these, one pooled
//! connection per step; the lifecycle itself is `router_core::video_jobs`.

use crate::Database;
use crate::billing;
use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_canonical::NanoUsd;
use router_core::store::{
    FinishError, NewRequest, NewVideoJob, ReserveError, SettleError, Settlement, StoreError,
    StoredVideo, VideoCreated, VideoFailure, VideoJob, VideoJobStatus, VideoStore, Voiding,
};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A video job as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
struct VideoRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub account_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub api_key_id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub request_id: Uuid,
    #[diesel(sql_type = Text)]
    pub client_task_id: String,
    #[diesel(sql_type = Text)]
    pub fingerprint: String,
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = Text)]
    pub route_id: String,
    #[diesel(sql_type = Text)]
    pub supplier_id: String,
    #[diesel(sql_type = BigInt)]
    pub charge_nano: i64,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Int4)]
    pub progress: i32,
    #[diesel(sql_type = Nullable<Text>)]
    pub upstream_task_id: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub create_error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub fail_reason: Option<String>,
    /// The supplier's own failure text: operators only (P-08).
    #[diesel(sql_type = Nullable<Text>)]
    pub supplier_error: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub content_key: Option<String>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub content_bytes: Option<i64>,
    #[diesel(sql_type = Nullable<Text>)]
    pub content_type: Option<String>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub completed_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub next_poll_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Int4)]
    pub polls: i32,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub reconciled_at: Option<DateTime<Utc>>,
}

const COLUMNS: &str = "id, account_id, api_key_id, request_id, client_task_id, fingerprint, \
     model, route_id, supplier_id, charge_nano, status, progress, upstream_task_id, create_error, \
     fail_reason, supplier_error, content_key, content_bytes, content_type, created_at, \
     updated_at, completed_at, next_poll_at, polls, reconciled_at";

impl TryFrom<VideoRow> for VideoJob {
    type Error = StoreError;

    fn try_from(row: VideoRow) -> Result<VideoJob, StoreError> {
        let status = VideoJobStatus::parse(&row.status)
            .ok_or_else(|| StoreError::Query(format!("unknown video status `{}`", row.status)))?;
        let time = |t: DateTime<Utc>| SystemTime::from(t);
        Ok(VideoJob {
            id: row.id,
            account_id: row.account_id,
            api_key_id: row.api_key_id,
            request_id: row.request_id,
            client_task_id: row.client_task_id,
            fingerprint: row.fingerprint,
            model: row.model,
            route_id: row.route_id,
            supplier_id: row.supplier_id,
            charge: NanoUsd(row.charge_nano),
            status,
            progress: u8::try_from(row.progress.clamp(0, 100)).unwrap_or(0),
            upstream_task_id: row.upstream_task_id,
            create_error: row.create_error,
            fail_reason: row.fail_reason,
            supplier_error: row.supplier_error,
            content_key: row.content_key,
            content_bytes: row.content_bytes.map(|n| u64::try_from(n).unwrap_or(0)),
            content_type: row.content_type,
            created_at: time(row.created_at),
            updated_at: time(row.updated_at),
            completed_at: row.completed_at.map(time),
            next_poll_at: row.next_poll_at.map(time),
            polls: u32::try_from(row.polls).unwrap_or(0),
            reconciled_at: row.reconciled_at.map(time),
        })
    }
}

/// The job of the row the statement returned, if it returned one.
fn one(rows: Vec<VideoRow>) -> Result<Option<VideoJob>, StoreError> {
    rows.into_iter().next().map(VideoJob::try_from).transpose()
}

enum CreateFailure {
    Refused(ReserveError),
    Db(diesel::result::Error),
}

impl From<diesel::result::Error> for CreateFailure {
    fn from(error: diesel::result::Error) -> Self {
        CreateFailure::Db(error)
    }
}

/// Creates the job and its hold in one transaction, or finds the account's
/// job under the same `client_task_id`.
///
/// The row goes in first, `ON CONFLICT DO NOTHING` on the idempotency
/// index: of concurrent identical creates, one inserts and the others wait
/// on the index entry until it commits, then find its row; so 50 at once
/// make one job and one hold (A5). A refused hold (402, a key limit) rolls
/// the row back: no job.
pub async fn create(
    conn: &mut AsyncPgConnection,
    video: &NewVideoJob,
    request: &NewRequest,
) -> Result<VideoCreated, ReserveError> {
    billing::check_reservation(request)?;
    let (video, request) = (video.clone(), request.clone());
    let (account_id, client_task_id) = (video.account_id, video.client_task_id.clone());
    let outcome = conn
        .transaction(async move |conn| {
            let inserted: Option<VideoRow> = diesel::sql_query(format!(
                "INSERT INTO videos (id, account_id, api_key_id, request_id, client_task_id,
                     fingerprint, model, route_id, supplier_id, charge_nano, status)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'submitting')
                 ON CONFLICT (account_id, client_task_id) DO NOTHING
                 RETURNING {COLUMNS}"
            ))
            .bind::<SqlUuid, _>(video.id)
            .bind::<SqlUuid, _>(video.account_id)
            .bind::<SqlUuid, _>(video.api_key_id)
            .bind::<SqlUuid, _>(request.request_id)
            .bind::<Text, _>(&video.client_task_id)
            .bind::<Text, _>(&video.fingerprint)
            .bind::<Text, _>(&video.model)
            .bind::<Text, _>(&video.route_id)
            .bind::<Text, _>(&video.supplier_id)
            .bind::<BigInt, _>(video.charge.0)
            .get_results(conn)
            .await?
            .pop();
            let Some(row) = inserted else {
                return Ok(None);
            };
            let reserved = if request.key_limited {
                billing::reserve_limited(conn, &request).await
            } else {
                billing::reserve(conn, &request).await
            };
            match reserved {
                Ok(()) => Ok(Some(row)),
                Err(refusal) => Err(CreateFailure::Refused(refusal)),
            }
        })
        .await;
    match outcome {
        Ok(Some(row)) => Ok(VideoCreated::New(row.try_into()?)),
        Ok(None) => match find_by_key(conn, account_id, &client_task_id).await? {
            Some(job) => Ok(VideoCreated::Existing(job)),
            // Only a deleted account loses its videos; never mid-create.
            None => Err(StoreError::Query("the conflicting video vanished".into()).into()),
        },
        Err(CreateFailure::Refused(refusal)) => Err(refusal),
        Err(CreateFailure::Db(error)) => Err(ReserveError::Store(store_error(error))),
    }
}

pub async fn find(conn: &mut AsyncPgConnection, id: Uuid) -> Result<Option<VideoJob>, StoreError> {
    let rows: Vec<VideoRow> =
        diesel::sql_query(format!("SELECT {COLUMNS} FROM videos WHERE id = $1"))
            .bind::<SqlUuid, _>(id)
            .get_results(conn)
            .await
            .map_err(store_error)?;
    one(rows)
}

pub async fn find_by_key(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    client_task_id: &str,
) -> Result<Option<VideoJob>, StoreError> {
    let rows: Vec<VideoRow> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM videos WHERE account_id = $1 AND client_task_id = $2"
    ))
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(client_task_id)
    .get_results(conn)
    .await
    .map_err(store_error)?;
    one(rows)
}

/// `submitting` → `queued` / `in_progress`: the supplier accepted the job
/// as `upstream_task_id`; its first poll is due `first_poll` from now.
pub async fn submitted(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    upstream_task_id: &str,
    in_progress: bool,
    progress: u8,
    first_poll: Duration,
) -> Result<Option<VideoJob>, StoreError> {
    // `None` when the job is no longer `submitting` (moved by another).
    let rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET status = CASE WHEN $3 THEN 'in_progress' ELSE 'queued' END,
             upstream_task_id = $2, progress = least(greatest($4, 0), 99),
             next_poll_at = now() + $5 * interval '1 millisecond', updated_at = now()
         WHERE id = $1 AND status = 'submitting'
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(upstream_task_id)
    .bind::<diesel::sql_types::Bool, _>(in_progress)
    .bind::<Int4, _>(i32::from(progress))
    .bind::<BigInt, _>(millis(first_poll))
    .get_results(conn)
    .await
    .map_err(store_error)?;
    one(rows)
}

/// `submitting` → `unknown`: the submission was sent but its answer is
/// lost (GP-25). The hold stays until an operator reconciles.
pub async fn submission_unknown(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    detail: &str,
) -> Result<Option<VideoJob>, StoreError> {
    let rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET status = 'unknown', supplier_error = $2, updated_at = now()
         WHERE id = $1 AND status = 'submitting'
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(detail)
    .get_results(conn)
    .await
    .map_err(store_error)?;
    one(rows)
}

/// Submissions older than `age` still `submitting`: their process died
/// between taking the hold and recording the supplier's answer, so whether
/// the supplier got the job is unknown (K7). They become `unknown`, never
/// resubmitted. Returns how many.
pub async fn orphaned_submissions(
    conn: &mut AsyncPgConnection,
    age: Duration,
) -> Result<u64, StoreError> {
    let moved = diesel::sql_query(
        "UPDATE videos SET status = 'unknown', updated_at = now(),
             supplier_error = 'the submitting process stopped before recording the answer'
         WHERE id IN (
             SELECT id FROM videos
             WHERE status = 'submitting' AND created_at < now() - $1 * interval '1 millisecond'
             FOR UPDATE SKIP LOCKED)
           AND status = 'submitting'",
    )
    .bind::<BigInt, _>(millis(age))
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(moved as u64)
}

/// Claims up to `limit` jobs whose poll is due and moves their next poll
/// `interval` on, in one statement (`FOR UPDATE SKIP LOCKED`): of any
/// number of instances, one gets each job, once per interval. A process
/// that dies after claiming loses nothing; the job is due again after the
/// interval.
pub async fn claim_due(
    conn: &mut AsyncPgConnection,
    limit: u32,
    interval: Duration,
) -> Result<Vec<VideoJob>, StoreError> {
    let rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET next_poll_at = now() + $2 * interval '1 millisecond',
             polls = polls + 1
         WHERE id IN (
             SELECT id FROM videos
             WHERE status IN ('queued', 'in_progress') AND next_poll_at <= now()
             ORDER BY next_poll_at
             LIMIT $1
             FOR UPDATE SKIP LOCKED)
         RETURNING {COLUMNS}"
    ))
    .bind::<BigInt, _>(i64::from(limit))
    .bind::<BigInt, _>(millis(interval))
    .get_results(conn)
    .await
    .map_err(store_error)?;
    rows.into_iter().map(VideoJob::try_from).collect()
}

/// Holds an active job back from other passes for `lease` (its content is
/// being copied, which may take longer than an interval).
pub async fn defer_poll(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    lease: Duration,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "UPDATE videos SET next_poll_at = now() + $2 * interval '1 millisecond'
         WHERE id = $1 AND status IN ('queued', 'in_progress')",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<BigInt, _>(millis(lease))
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// A poll said the job is still running: `queued` may become
/// `in_progress`, never back; progress never decreases and stays below 100
/// until the job completes (GP-22).
pub async fn record_progress(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    in_progress: bool,
    progress: u8,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "UPDATE videos SET
             status = CASE WHEN $2 THEN 'in_progress' ELSE status END,
             progress = greatest(progress, least(greatest($3, 0), 99)),
             updated_at = now()
         WHERE id = $1 AND status IN ('queued', 'in_progress')",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<diesel::sql_types::Bool, _>(in_progress)
    .bind::<Int4, _>(i32::from(progress))
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// A terminal step's transaction failed: core's [`FinishError`], or the
/// database error that rolled it back.
enum Finish {
    Ended(FinishError),
    Db(diesel::result::Error),
}

impl From<diesel::result::Error> for Finish {
    fn from(error: diesel::result::Error) -> Self {
        Finish::Db(error)
    }
}

impl From<FinishError> for Finish {
    fn from(error: FinishError) -> Self {
        Finish::Ended(error)
    }
}

impl From<SettleError> for Finish {
    fn from(error: SettleError) -> Self {
        Finish::Ended(error.into())
    }
}

impl From<Finish> for FinishError {
    fn from(error: Finish) -> Self {
        match error {
            Finish::Ended(error) => error,
            Finish::Db(error) => FinishError::Store(store_error(error)),
        }
    }
}

/// The content is in the object store: `queued`/`in_progress` →
/// `completed` and the hold settled at the video's price, in one
/// transaction. Returns the charge.
pub async fn complete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    content: &StoredVideo,
    settlement: &Settlement,
) -> Result<NanoUsd, FinishError> {
    billing::check_settlement(settlement)?;
    let content_bytes = i64::try_from(content.bytes)
        .map_err(|_| StoreError::Query("the video content is too large".into()))?;
    let (key, kind, settlement) = (
        content.key.clone(),
        content.content_type.clone(),
        settlement.clone(),
    );
    conn.transaction(async move |conn| -> Result<NanoUsd, Finish> {
        let moved = diesel::sql_query(
            "UPDATE videos SET status = 'completed', progress = 100, content_key = $2,
                 content_bytes = $3, content_type = $4, completed_at = now(),
                 next_poll_at = NULL, updated_at = now()
             WHERE id = $1 AND status IN ('queued', 'in_progress')",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<Text, _>(&key)
        .bind::<BigInt, _>(content_bytes)
        .bind::<Text, _>(&kind)
        .execute(conn)
        .await?;
        if moved != 1 {
            return Err(FinishError::NotActive.into());
        }
        Ok(billing::settle(conn, &settlement).await?)
    })
    .await
    .map_err(FinishError::from)
}

/// The job failed (the supplier said so, refused the submission, or an
/// operator decided): a job in one of `from` becomes `failed` with the
/// failure's public reason and the supplier's own text, and its hold is
/// released, in one transaction. The failure's `create_error` is the code a
/// refused create answered with.
pub async fn fail(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    from: &[VideoJobStatus],
    failure: &VideoFailure,
    voiding: &Voiding,
) -> Result<(), FinishError> {
    let from: Vec<&'static str> = from.iter().map(|s| s.as_str()).collect();
    let (failure, voiding) = (failure.clone(), voiding.clone());
    conn.transaction(async move |conn| -> Result<(), Finish> {
        let moved = diesel::sql_query(
            "UPDATE videos SET status = 'failed', fail_reason = $3,
                 supplier_error = coalesce($4, supplier_error), create_error = $5,
                 completed_at = now(), next_poll_at = NULL, updated_at = now(),
                 reconciled_at = CASE WHEN status = 'unknown' THEN now() ELSE reconciled_at END
             WHERE id = $1 AND status = ANY($2)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<diesel::sql_types::Array<Text>, _>(&from)
        .bind::<Text, _>(&failure.reason)
        .bind::<Nullable<Text>, _>(&failure.supplier_error)
        .bind::<Nullable<Text>, _>(&failure.create_error)
        .execute(conn)
        .await?;
        if moved != 1 {
            return Err(FinishError::NotActive.into());
        }
        billing::void(conn, &voiding).await?;
        Ok(())
    })
    .await
    .map_err(FinishError::from)
}

/// An operator found the supplier's task of an `unknown` job: it becomes
/// `queued` under that task and is polled at once (GP-25).
pub async fn reconcile_task(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    upstream_task_id: &str,
) -> Result<Option<VideoJob>, StoreError> {
    let rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET status = 'queued', upstream_task_id = $2, next_poll_at = now(),
             reconciled_at = now(), updated_at = now()
         WHERE id = $1 AND status = 'unknown'
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(upstream_task_id)
    .get_results(conn)
    .await
    .map_err(store_error)?;
    one(rows)
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

impl VideoStore for Database {
    async fn create_video_job(
        &self,
        video: NewVideoJob,
        request: NewRequest,
    ) -> Result<VideoCreated, ReserveError> {
        let mut conn = self.connection().await?;
        create(&mut conn, &video, &request).await
    }

    async fn video_job(&self, id: Uuid) -> Result<Option<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        find(&mut conn, id).await
    }

    async fn video_job_by_key(
        &self,
        account_id: Uuid,
        client_task_id: &str,
    ) -> Result<Option<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        find_by_key(&mut conn, account_id, client_task_id).await
    }

    async fn video_submitted(
        &self,
        id: Uuid,
        upstream_task_id: &str,
        in_progress: bool,
        progress: u8,
        first_poll: Duration,
    ) -> Result<Option<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        submitted(
            &mut conn,
            id,
            upstream_task_id,
            in_progress,
            progress,
            first_poll,
        )
        .await
    }

    async fn video_submission_unknown(
        &self,
        id: Uuid,
        detail: &str,
    ) -> Result<Option<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        submission_unknown(&mut conn, id, detail).await
    }

    async fn orphaned_video_submissions(&self, age: Duration) -> Result<u64, StoreError> {
        let mut conn = self.connection().await?;
        orphaned_submissions(&mut conn, age).await
    }

    async fn claim_due_videos(
        &self,
        limit: u32,
        interval: Duration,
    ) -> Result<Vec<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        claim_due(&mut conn, limit, interval).await
    }

    async fn defer_video_poll(&self, id: Uuid, lease: Duration) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        defer_poll(&mut conn, id, lease).await
    }

    async fn record_video_progress(
        &self,
        id: Uuid,
        in_progress: bool,
        progress: u8,
    ) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        record_progress(&mut conn, id, in_progress, progress).await
    }

    async fn complete_video(
        &self,
        id: Uuid,
        content: StoredVideo,
        settlement: Settlement,
    ) -> Result<NanoUsd, FinishError> {
        let mut conn = self.connection().await?;
        complete(&mut conn, id, &content, &settlement).await
    }

    async fn fail_video(
        &self,
        id: Uuid,
        from: &[VideoJobStatus],
        failure: VideoFailure,
        voiding: Voiding,
    ) -> Result<(), FinishError> {
        let mut conn = self.connection().await?;
        fail(&mut conn, id, from, &failure, &voiding).await
    }

    async fn reconcile_video_task(
        &self,
        id: Uuid,
        upstream_task_id: &str,
    ) -> Result<Option<VideoJob>, StoreError> {
        let mut conn = self.connection().await?;
        reconcile_task(&mut conn, id, upstream_task_id).await
    }
}
