//! Leases of background jobs (`job_leases`): which instance runs a job's
//! next scheduled pass, and when the one after may start.

use crate::error::store_error;
use crate::schema::job_leases;
use chrono::Utc;
use diesel::ExpressionMethods;
use diesel::dsl::now;
use diesel::sql_types::{BigInt, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use std::time::Duration;

/// Takes job `name` for `holder` until `lease` from now, if no instance
/// holds it (or its lease ran out). One statement: of instances asking at
/// once, exactly one gets `true`.
pub async fn try_lease(
    conn: &mut AsyncPgConnection,
    name: &str,
    holder: &str,
    lease: Duration,
) -> Result<bool, StoreError> {
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let taken = diesel::sql_query(
        "INSERT INTO job_leases (name, leased_until, leased_by, last_started_at)
         VALUES ($1, now() + $3 * interval '1 millisecond', $2, now())
         ON CONFLICT (name) DO UPDATE
            SET leased_until = excluded.leased_until,
                leased_by = excluded.leased_by,
                last_started_at = now()
            WHERE job_leases.leased_until < now()",
    )
    .bind::<Text, _>(name)
    .bind::<Text, _>(holder)
    .bind::<BigInt, _>(lease_ms)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(taken == 1)
}

/// Records the end of `holder`'s pass of `name` and holds the job until
/// `next_after` from now, so the next scheduled pass (on any instance)
/// starts no sooner.
pub async fn finish(
    conn: &mut AsyncPgConnection,
    name: &str,
    holder: &str,
    next_after: Duration,
    outcome: Result<u64, &str>,
) -> Result<(), StoreError> {
    let (processed, error) = match outcome {
        Ok(n) => (i64::try_from(n).ok(), None),
        Err(e) => (None, Some(e)),
    };
    diesel::update(job_leases::table)
        .filter(job_leases::name.eq(name))
        .filter(job_leases::leased_by.eq(holder))
        .set((
            job_leases::leased_until.eq(Utc::now() + next_after),
            job_leases::last_finished_at.eq(now),
            job_leases::last_processed.eq(processed),
            job_leases::last_error.eq(error),
        ))
        .execute(conn)
        .await
        .map_err(store_error)?;
    Ok(())
}
