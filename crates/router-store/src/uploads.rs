//! Temporary uploads (section I): admission under the account's rate and
//! quota, each upload's state, lookups, deletion, and the expiry and purge
//! passes. The bytes live in the object store; this is their bookkeeping.
//!
//! An upload is admitted in one transaction that locks the account row, so
//! concurrent uploads of one account take turns: the rate (20 per rolling
//! minute, 120 per UTC day, counting every admitted upload, failed writes
//! and deleted ones included) and the quota (32 objects, 64 MiB, counting
//! writes in flight and queued deletions) can never be overrun (I-15..I-21,
//! GP-39). Rows outlive their objects as tombstones, so deleting never
//! resets a counter. Every time is the database's clock.

use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Bool, Int4, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use std::future::Future;
use std::time::Duration;
use uuid::Uuid;

/// Uploads admitted per account in any rolling 60 seconds (I-18).
pub const PER_MINUTE: i64 = 20;
/// Uploads admitted per account in one UTC calendar day (I-19).
pub const PER_DAY: i64 = 120;
/// Objects an account may hold, counting writes and queued deletions (I-15).
pub const MAX_OBJECTS: i64 = 32;
/// Bytes an account may hold, counting writes and queued deletions (I-16).
pub const MAX_BYTES: i64 = 64 * 1024 * 1024;

/// Why an upload is not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AdmitError {
    /// The account's zero data retention is on (I-13).
    #[error("zero data retention is on for this account")]
    DataProtection,
    /// The rate is spent; a slot opens in `retry_after_secs` (≥ 1).
    #[error("upload rate spent; retry after {retry_after_secs} s")]
    Rate { retry_after_secs: u64 },
    /// Admitting it would exceed the object or byte quota.
    #[error("upload quota exceeded")]
    Quota,
    #[error(transparent)]
    Store(#[from] StoreError),
}

impl From<diesel::result::Error> for AdmitError {
    fn from(error: diesel::result::Error) -> Self {
        AdmitError::Store(store_error(error))
    }
}

/// What the handler knows of an upload once its body checked out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewUpload {
    pub account_id: Uuid,
    /// Random, never derived from the client's file name.
    pub object_key: String,
    pub filename: Option<String>,
    pub bytes: i64,
    pub mime_type: String,
    pub width: i32,
    pub height: i32,
    /// How long it is readable; `expires_at` is recorded from it once (CF-24).
    pub ttl: Duration,
}

/// An upload as stored.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct UploadRow {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    pub account_id: Uuid,
    #[diesel(sql_type = Text)]
    pub object_key: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub filename: Option<String>,
    #[diesel(sql_type = BigInt)]
    pub bytes: i64,
    #[diesel(sql_type = Text)]
    pub mime_type: String,
    #[diesel(sql_type = Int4)]
    pub width: i32,
    #[diesel(sql_type = Int4)]
    pub height: i32,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub expires_at: DateTime<Utc>,
}

const ROW_COLUMNS: &str = "id, account_id, object_key, filename, bytes, mime_type, width, height, \
     status, created_at, expires_at";

#[derive(QueryableByName)]
struct Counters {
    #[diesel(sql_type = Bool)]
    zdr: bool,
    #[diesel(sql_type = BigInt)]
    minute: i64,
    #[diesel(sql_type = BigInt)]
    minute_retry: i64,
    #[diesel(sql_type = BigInt)]
    day: i64,
    #[diesel(sql_type = BigInt)]
    day_retry: i64,
    #[diesel(sql_type = BigInt)]
    objects: i64,
    #[diesel(sql_type = BigInt)]
    held_bytes: i64,
}

/// The account's switch, rate and quota counters in one statement.
async fn counters(conn: &mut AsyncPgConnection, account_id: Uuid) -> Result<Counters, AdmitError> {
    let sql = "WITH account AS (
            SELECT zero_data_retention FROM accounts WHERE id = $1
         ), mine AS (
            SELECT created_at, status, bytes FROM uploads WHERE account_id = $1
         )
         SELECT
            (SELECT zero_data_retention FROM account) AS zdr,
            count(*) FILTER (WHERE created_at > now() - interval '60 seconds') AS minute,
            coalesce(ceil(extract(epoch FROM
                min(created_at) FILTER (WHERE created_at > now() - interval '60 seconds')
                + interval '60 seconds' - now()))::bigint, 1) AS minute_retry,
            count(*) FILTER (WHERE created_at >= date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC') AS day,
            ceil(extract(epoch FROM
                (date_trunc('day', now() AT TIME ZONE 'UTC') + interval '1 day') AT TIME ZONE 'UTC'
                - now()))::bigint AS day_retry,
            count(*) FILTER (WHERE status IN ('writing', 'retained', 'deleting')) AS objects,
            coalesce(sum(bytes) FILTER (WHERE status IN ('writing', 'retained', 'deleting')), 0)::bigint
                AS held_bytes
         FROM mine";
    let counters: Counters = diesel::sql_query(sql)
        .bind::<SqlUuid, _>(account_id)
        .get_result(conn)
        .await?;
    Ok(counters)
}

fn check_switch_and_rate(counters: &Counters) -> Result<(), AdmitError> {
    if counters.zdr {
        return Err(AdmitError::DataProtection);
    }
    let retry = |secs: i64| u64::try_from(secs.max(1)).unwrap_or(1);
    if counters.minute >= PER_MINUTE {
        return Err(AdmitError::Rate {
            retry_after_secs: retry(counters.minute_retry),
        });
    }
    if counters.day >= PER_DAY {
        return Err(AdmitError::Rate {
            retry_after_secs: retry(counters.day_retry),
        });
    }
    Ok(())
}

/// What an account holds toward its quota: objects and bytes of uploads
/// being written, retained or queued for deletion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    pub objects: i64,
    pub bytes: i64,
}

/// The checks that come before the body (GP-39): the account's switch
/// (403) and the rate (429); then what the account holds, for the caller
/// to reserve its uploads in progress against. Not a reservation: [`admit`]
/// checks again, atomically, once the body checked out.
pub async fn precheck(conn: &mut AsyncPgConnection, account_id: Uuid) -> Result<Held, AdmitError> {
    let counters = counters(conn, account_id).await?;
    check_switch_and_rate(&counters)?;
    Ok(Held {
        objects: counters.objects,
        bytes: counters.held_bytes,
    })
}

/// Admits an upload whose body checked out: under the account row's lock,
/// the switch, the rate, then the quota with this upload counted; then the
/// row, `writing`. From here it counts toward the rate whatever happens.
pub async fn admit(conn: &mut AsyncPgConnection, new: &NewUpload) -> Result<UploadRow, AdmitError> {
    let ttl_secs = i64::try_from(new.ttl.as_secs()).unwrap_or(i64::MAX).max(1);
    conn.transaction(async |conn| {
        // The lock first, in a statement of its own: under Read Committed
        // the counting statement after it then sees every upload a
        // concurrent admission committed before releasing the lock (one
        // statement would count from the snapshot it started with).
        diesel::sql_query("SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE")
            .bind::<SqlUuid, _>(new.account_id)
            .execute(conn)
            .await?;
        let counters = counters(conn, new.account_id).await?;
        check_switch_and_rate(&counters)?;
        if counters.objects + 1 > MAX_OBJECTS || counters.held_bytes + new.bytes > MAX_BYTES {
            return Err(AdmitError::Quota);
        }
        // Whole seconds, so `expires_at - created_at` is exactly the TTL in
        // the Unix seconds a client sees.
        let row: UploadRow = diesel::sql_query(format!(
            "INSERT INTO uploads (id, account_id, object_key, filename, bytes, mime_type, width,
                                  height, status, created_at, expires_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'writing', date_trunc('second', now()),
                     date_trunc('second', now()) + $9 * interval '1 second')
             RETURNING {ROW_COLUMNS}"
        ))
        .bind::<SqlUuid, _>(Uuid::now_v7())
        .bind::<SqlUuid, _>(new.account_id)
        .bind::<Text, _>(&new.object_key)
        .bind::<Nullable<Text>, _>(new.filename.as_deref())
        .bind::<BigInt, _>(new.bytes)
        .bind::<Text, _>(&new.mime_type)
        .bind::<Int4, _>(new.width)
        .bind::<Int4, _>(new.height)
        .bind::<BigInt, _>(ttl_secs)
        .get_result(conn)
        .await?;
        Ok(row)
    })
    .await
}

/// The bytes are stored: `writing` → `retained`. `false` when the upload
/// was scheduled for deletion meanwhile (the account's switch went on): the
/// caller removes the object it wrote.
pub async fn mark_stored(conn: &mut AsyncPgConnection, id: Uuid) -> Result<bool, StoreError> {
    let updated = diesel::sql_query(
        "UPDATE uploads SET status = 'retained' WHERE id = $1 AND status = 'writing'",
    )
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(updated == 1)
}

/// The store failed: `writing` → `failed`, a tombstone at once. It keeps
/// counting toward the rate (I-20) and no longer toward the quota.
pub async fn mark_failed(conn: &mut AsyncPgConnection, id: Uuid) -> Result<(), StoreError> {
    diesel::sql_query(
        "UPDATE uploads SET status = 'failed', removed_at = now()
         WHERE id = $1 AND status = 'writing'",
    )
    .bind::<SqlUuid, _>(id)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// The account's readable upload `id`: retained and not expired. Unknown,
/// foreign, expired, deleted and scheduled all read as `None` (GP-42).
pub async fn find_readable(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    id: Uuid,
) -> Result<Option<UploadRow>, StoreError> {
    let rows: Vec<UploadRow> = diesel::sql_query(format!(
        "SELECT {ROW_COLUMNS} FROM uploads
         WHERE id = $1 AND account_id = $2 AND status = 'retained' AND expires_at > now()"
    ))
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(account_id)
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().next())
}

/// `DELETE /v1/uploads/{id}`: schedules the account's readable upload for
/// removal; `false` for anything else (one 404, GP-12).
pub async fn schedule_deletion(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    id: Uuid,
) -> Result<bool, StoreError> {
    let updated = diesel::sql_query(
        "UPDATE uploads SET status = 'deleting', deleted_at = now()
         WHERE id = $1 AND account_id = $2 AND status = 'retained' AND expires_at > now()",
    )
    .bind::<SqlUuid, _>(id)
    .bind::<SqlUuid, _>(account_id)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(updated == 1)
}

/// Schedules every upload of the account that is readable or being written
/// for removal (the account's zero data retention went on, J-08).
pub async fn schedule_account_deletion(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<u64, StoreError> {
    let updated = diesel::sql_query(
        "UPDATE uploads SET status = 'deleting', deleted_at = now()
         WHERE account_id = $1 AND status IN ('writing', 'retained')",
    )
    .bind::<SqlUuid, _>(account_id)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(updated as u64)
}

/// One expiry pass: up to `limit` uploads past `expires_at` are scheduled
/// for removal. Rows another instance is on are skipped, never waited for.
pub async fn expire(conn: &mut AsyncPgConnection, limit: i64) -> Result<u64, StoreError> {
    let updated = diesel::sql_query(
        "UPDATE uploads SET status = 'deleting', deleted_at = now()
         WHERE id IN (
            SELECT id FROM uploads
            WHERE status IN ('writing', 'retained') AND expires_at <= now()
            ORDER BY expires_at LIMIT $1
            FOR UPDATE SKIP LOCKED)",
    )
    .bind::<BigInt, _>(limit)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(updated as u64)
}

#[derive(QueryableByName)]
struct Claimed {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = Text)]
    object_key: String,
}

/// One purge pass: claims up to `limit` uploads scheduled for removal
/// (`FOR UPDATE SKIP LOCKED`, so instances never share one), calls `remove`
/// with each object key, and marks those it removed `removed`: their
/// tombstone's clock starts (CF-23). A failed removal stays queued.
pub async fn purge<F, Fut>(
    conn: &mut AsyncPgConnection,
    limit: i64,
    mut remove: F,
) -> Result<u64, StoreError>
where
    F: FnMut(String) -> Fut + Send,
    Fut: Future<Output = bool> + Send,
{
    conn.transaction(async |conn| {
        let claimed: Vec<Claimed> = diesel::sql_query(
            "SELECT id, object_key FROM uploads WHERE status = 'deleting'
             ORDER BY deleted_at LIMIT $1 FOR UPDATE SKIP LOCKED",
        )
        .bind::<BigInt, _>(limit)
        .load(conn)
        .await?;
        let mut removed = Vec::with_capacity(claimed.len());
        for row in claimed {
            if remove(row.object_key).await {
                removed.push(row.id);
            }
        }
        let updated = diesel::sql_query(
            "UPDATE uploads SET status = 'removed', removed_at = now() WHERE id = ANY($1)",
        )
        .bind::<Array<SqlUuid>, _>(&removed)
        .execute(conn)
        .await?;
        Ok::<u64, diesel::result::Error>(updated as u64)
    })
    .await
    .map_err(store_error)
}

/// Drops up to `limit` tombstones older than `keep` after their removal
/// (24 h by default, Q-11).
pub async fn drop_tombstones(
    conn: &mut AsyncPgConnection,
    keep: Duration,
    limit: i64,
) -> Result<u64, StoreError> {
    let keep_secs = i64::try_from(keep.as_secs()).unwrap_or(i64::MAX);
    let deleted = diesel::sql_query(
        "DELETE FROM uploads WHERE id IN (
            SELECT id FROM uploads
            WHERE status IN ('removed', 'failed')
              AND removed_at <= now() - $1 * interval '1 second'
            ORDER BY removed_at LIMIT $2
            FOR UPDATE SKIP LOCKED)",
    )
    .bind::<BigInt, _>(keep_secs)
    .bind::<BigInt, _>(limit)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(deleted as u64)
}

/// A fresh object key: 128 random bits under `uploads/`, unguessable and
/// unrelated to anything the client sent.
pub fn new_object_key() -> String {
    format!("uploads/{}", crate::secret::random_hex(16))
}
