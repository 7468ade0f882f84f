//! What `/metrics` reads from the database when it is scraped: state every
//! instance shares (holds outstanding, credits granted, background jobs'
//! last passes), so
//! each instance reports the same value and a dashboard takes one of them
//! (`max`) instead of adding instances up.

use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamptz};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;

/// Holds not yet settled or released.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName)]
pub struct OutstandingHolds {
    #[diesel(sql_type = BigInt)]
    pub count: i64,
    #[diesel(sql_type = BigInt)]
    pub nano_usd: i64,
    /// Of them, past their expiry: the reaper's work not yet done.
    #[diesel(sql_type = BigInt)]
    pub expired: i64,
    /// Seconds since the oldest was taken (0 when there is none).
    #[diesel(sql_type = BigInt)]
    pub oldest_age_secs: i64,
}

/// A background job's last pass, from its lease row.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct JobPass {
    #[diesel(sql_type = Text)]
    pub name: String,
    #[diesel(sql_type = Timestamptz)]
    pub last_started_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_finished_at: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<BigInt>)]
    pub last_processed: Option<i64>,
    /// The last finished pass failed.
    #[diesel(sql_type = Bool)]
    pub last_failed: bool,
}

pub async fn outstanding_holds(
    conn: &mut AsyncPgConnection,
) -> Result<OutstandingHolds, StoreError> {
    // `released_at IS NULL` is the predicate of the partial index
    // `holds_live_expiry`: the scan touches live holds only.
    diesel::sql_query(
        "SELECT count(*) AS count,
                coalesce(sum(amount_nano), 0)::bigint AS nano_usd,
                count(*) FILTER (WHERE expires_at < now()) AS expired,
                coalesce(extract(epoch FROM now() - min(created_at)), 0)::bigint AS oldest_age_secs
         FROM holds
         WHERE released_at IS NULL AND status = 'held'",
    )
    .get_result(conn)
    .await
    .map_err(store_error)
}

pub async fn job_passes(conn: &mut AsyncPgConnection) -> Result<Vec<JobPass>, StoreError> {
    diesel::sql_query(
        "SELECT name, last_started_at, last_finished_at, last_processed,
                last_error IS NOT NULL AS last_failed
         FROM job_leases ORDER BY name",
    )
    .load(conn)
    .await
    .map_err(store_error)
}

/// Every credit ever granted, through the admin API or the CLI, from the
/// ledger's `grants` side (the partial index `ledger_entries_grants` keeps
/// this an index-only read of the few grant rows).
pub async fn credits_granted(conn: &mut AsyncPgConnection) -> Result<i64, StoreError> {
    #[derive(QueryableByName)]
    struct Granted {
        #[diesel(sql_type = BigInt)]
        nano_usd: i64,
    }
    let granted: Granted = diesel::sql_query(
        "SELECT coalesce(-sum(amount_nano), 0)::bigint AS nano_usd
         FROM ledger_entries WHERE ledger_account = 'grants'",
    )
    .get_result(conn)
    .await
    .map_err(store_error)?;
    Ok(granted.nano_usd)
}
