//! Leases of background jobs (`job_leases`): which instance runs a job's
//! next scheduled pass, and when the one after may start.

use crate::error::store_error;
use crate::schema::job_leases;
use diesel::dsl::now;
use diesel::pg::data_types::PgInterval;
use diesel::sql_types::{BigInt, Text};
use diesel::{ExpressionMethods, OptionalExtension};
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

/// Extends `holder`'s lease of job `name` to `lease` from now, while its
/// pass runs: a pass holds a short lease and renews it, so that a holder
/// that died mid-pass keeps the job from the other instances for one short
/// lease at most. `false` when `holder` no longer holds it (another
/// instance took it after it ran out; the pass goes on, its items are
/// claimed `FOR UPDATE SKIP LOCKED` anyway).
pub async fn renew(
    conn: &mut AsyncPgConnection,
    name: &str,
    holder: &str,
    lease: Duration,
) -> Result<bool, StoreError> {
    let lease_ms = i64::try_from(lease.as_millis()).unwrap_or(i64::MAX);
    let renewed = diesel::sql_query(
        "UPDATE job_leases SET leased_until = now() + $3 * interval '1 millisecond'
          WHERE name = $1 AND leased_by = $2",
    )
    .bind::<Text, _>(name)
    .bind::<Text, _>(holder)
    .bind::<BigInt, _>(lease_ms)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(renewed == 1)
}

/// How long until job `name`'s lease runs out (zero when it has, or when
/// the job has no row yet): when another instance's pass may be due.
pub async fn due_in(conn: &mut AsyncPgConnection, name: &str) -> Result<Duration, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Due {
        #[diesel(sql_type = BigInt)]
        ms: i64,
    }
    let due: Option<Due> = diesel::sql_query(
        "SELECT greatest(0, ceil(extract(epoch FROM leased_until - now()) * 1000))::bigint AS ms
           FROM job_leases WHERE name = $1",
    )
    .bind::<Text, _>(name)
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)?;
    Ok(Duration::from_millis(
        due.map_or(0, |d| u64::try_from(d.ms).unwrap_or(0)),
    ))
}

/// Records the end of `holder`'s pass of `name` and holds the job until
/// `next_after` from the pass's *start*, so passes (on any instance) begin
/// once an interval, however long each takes (issue 30: from the finish,
/// every job ran at its interval plus the scheduler's next tick, half speed).
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
            job_leases::leased_until.eq(job_leases::last_started_at + interval(next_after)),
            job_leases::last_finished_at.eq(now),
            job_leases::last_processed.eq(processed),
            job_leases::last_error.eq(error),
        ))
        .execute(conn)
        .await
        .map_err(store_error)?;
    Ok(())
}

/// `duration` as a PostgreSQL interval (whole microseconds).
fn interval(duration: Duration) -> PgInterval {
    PgInterval::from_microseconds(i64::try_from(duration.as_micros()).unwrap_or(i64::MAX))
}
