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

use crate::billing;
use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_canonical::NanoUsd;
use router_core::store::{NewRequest, ReserveError, SettleError, Settlement, StoreError, Voiding};
use std::time::Duration;
use uuid::Uuid;

/// A video job as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct VideoRow {
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

/// States a job is still running in (its hold is live).
pub const ACTIVE: [&str; 4] = ["submitting", "queued", "in_progress", "unknown"];

/// What a create found or made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new job, `submitting`, its hold taken: the caller submits it.
    New(VideoRow),
    /// The account already has a job under this `client_task_id`.
    Existing(VideoRow),
}

/// The new job's row (its hold is the `NewRequest` beside it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewVideo {
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
    video: &NewVideo,
    request: &NewRequest,
) -> Result<Created, ReserveError> {
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
        Ok(Some(row)) => Ok(Created::New(row)),
        Ok(None) => match find_by_key(conn, account_id, &client_task_id).await? {
            Some(row) => Ok(Created::Existing(row)),
            // Only a deleted account loses its videos; never mid-create.
            None => Err(StoreError::Query("the conflicting video vanished".into()).into()),
        },
        Err(CreateFailure::Refused(refusal)) => Err(refusal),
        Err(CreateFailure::Db(error)) => Err(ReserveError::Store(store_error(error))),
    }
}

pub async fn find(conn: &mut AsyncPgConnection, id: Uuid) -> Result<Option<VideoRow>, StoreError> {
    let mut rows: Vec<VideoRow> =
        diesel::sql_query(format!("SELECT {COLUMNS} FROM videos WHERE id = $1"))
            .bind::<SqlUuid, _>(id)
            .get_results(conn)
            .await
            .map_err(store_error)?;
    Ok(rows.pop())
}

pub async fn find_by_key(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    client_task_id: &str,
) -> Result<Option<VideoRow>, StoreError> {
    let mut rows: Vec<VideoRow> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM videos WHERE account_id = $1 AND client_task_id = $2"
    ))
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(client_task_id)
    .get_results(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.pop())
}

/// `submitting` → `queued` / `in_progress`: the supplier accepted the job
/// as `upstream_task_id`; its first poll is due `first_poll` from now.
pub async fn submitted(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    upstream_task_id: &str,
    in_progress: bool,
    progress: i32,
    first_poll: Duration,
) -> Result<Option<VideoRow>, StoreError> {
    // `None` when the job is no longer `submitting` (moved by another).
    let mut rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET status = CASE WHEN $3 THEN 'in_progress' ELSE 'queued' END,
             upstream_task_id = $2, progress = least(greatest($4, 0), 99),
             next_poll_at = now() + $5 * interval '1 millisecond', updated_at = now()
         WHERE id = $1 AND status = 'submitting'
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(upstream_task_id)
    .bind::<diesel::sql_types::Bool, _>(in_progress)
    .bind::<Int4, _>(progress)
    .bind::<BigInt, _>(millis(first_poll))
    .get_results(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.pop())
}

/// `submitting` → `unknown`: the submission was sent but its answer is
/// lost (GP-25). The hold stays until an operator reconciles.
pub async fn submission_unknown(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    detail: &str,
) -> Result<Option<VideoRow>, StoreError> {
    let mut rows: Vec<VideoRow> = diesel::sql_query(format!(
        "UPDATE videos SET status = 'unknown', supplier_error = $2, updated_at = now()
         WHERE id = $1 AND status = 'submitting'
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<Text, _>(detail)
    .get_results(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.pop())
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
    limit: i64,
    interval: Duration,
) -> Result<Vec<VideoRow>, StoreError> {
    diesel::sql_query(format!(
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
    .bind::<BigInt, _>(limit)
    .bind::<BigInt, _>(millis(interval))
    .get_results(conn)
    .await
    .map_err(store_error)
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
    progress: i32,
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
    .bind::<Int4, _>(progress)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// Why a terminal step did not happen.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FinishError {
    /// The job was not in a state this step ends (already terminal, or
    /// moved by someone else): nothing was written.
    #[error("the video is not in a state this step ends")]
    NotActive,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<diesel::result::Error> for FinishError {
    fn from(error: diesel::result::Error) -> Self {
        FinishError::Store(store_error(error))
    }
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

/// The content is in the object store: `queued`/`in_progress` →
/// `completed` and the hold settled at the video's price, in one
/// transaction. Returns the charge.
pub async fn complete(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    content_key: &str,
    content_bytes: i64,
    content_type: &str,
    settlement: &Settlement,
) -> Result<NanoUsd, FinishError> {
    billing::check_settlement(settlement)?;
    let (key, kind, settlement) = (
        content_key.to_owned(),
        content_type.to_owned(),
        settlement.clone(),
    );
    conn.transaction(async move |conn| {
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
            return Err(FinishError::NotActive);
        }
        Ok(billing::settle(conn, &settlement).await?)
    })
    .await
}

/// The job failed (the supplier said so, refused the submission, or an
/// operator decided): a job in one of `from` becomes `failed` with the
/// public `reason` and the supplier's own text, and its hold is released,
/// in one transaction. `create_error` is the code a refused create
/// answered with.
pub async fn fail(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    from: &[&str],
    reason: &str,
    supplier_error: Option<&str>,
    create_error: Option<&str>,
    voiding: &Voiding,
) -> Result<(), FinishError> {
    let from: Vec<String> = from.iter().map(|s| (*s).to_owned()).collect();
    let (reason, supplier_error, create_error, voiding) = (
        reason.to_owned(),
        supplier_error.map(str::to_owned),
        create_error.map(str::to_owned),
        voiding.clone(),
    );
    conn.transaction(async move |conn| {
        let moved = diesel::sql_query(
            "UPDATE videos SET status = 'failed', fail_reason = $3,
                 supplier_error = coalesce($4, supplier_error), create_error = $5,
                 completed_at = now(), next_poll_at = NULL, updated_at = now(),
                 reconciled_at = CASE WHEN status = 'unknown' THEN now() ELSE reconciled_at END
             WHERE id = $1 AND status = ANY($2)",
        )
        .bind::<SqlUuid, _>(id)
        .bind::<diesel::sql_types::Array<Text>, _>(&from)
        .bind::<Text, _>(&reason)
        .bind::<Nullable<Text>, _>(&supplier_error)
        .bind::<Nullable<Text>, _>(&create_error)
        .execute(conn)
        .await?;
        if moved != 1 {
            return Err(FinishError::NotActive);
        }
        billing::void(conn, &voiding).await?;
        Ok(())
    })
    .await
}

/// An operator found the supplier's task of an `unknown` job: it becomes
/// `queued` under that task and is polled at once (GP-25).
pub async fn reconcile_task(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    upstream_task_id: &str,
) -> Result<Option<VideoRow>, StoreError> {
    let mut rows: Vec<VideoRow> = diesel::sql_query(format!(
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
    Ok(rows.pop())
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}
