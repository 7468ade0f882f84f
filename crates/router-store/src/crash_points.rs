//! Crash point `K5` of the reliability suite (`router_core::failpoints`):
//! inside the settlement's transaction, its statement run, before COMMIT.
//! The settlement batch is one statement in autocommit, so it has no such
//! instant of its own; only while `K5` is armed (never in a release build
//! without the `failpoints` feature) it runs in an explicit transaction
//! that waits at the point, so that a SIGKILL there leaves PostgreSQL to
//! roll it back.

use crate::billing::{self, BatchBounds};
use crate::error::store_error;
use diesel_async::{AsyncPgConnection, SimpleAsyncConnection};
use router_canonical::NanoUsd;
use router_core::store::{Settlement, StoreError};

/// [`billing::settle_batch`], stopped at `K5` when it is armed.
pub(crate) async fn settle_batch(
    conn: &mut AsyncPgConnection,
    settlements: &[Settlement],
    bounds: &BatchBounds,
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    if !router_core::failpoints::armed("K5") {
        return billing::settle_batch_within(conn, settlements, bounds).await;
    }
    conn.batch_execute("BEGIN").await.map_err(store_error)?;
    let settled = billing::settle_batch_within(conn, settlements, bounds).await?;
    router_core::failpoints::reached("K5").await;
    conn.batch_execute("COMMIT").await.map_err(store_error)?;
    Ok(settled)
}

/// [`crate::leases::settle_batch`] (credit leases), stopped at `K5` the
/// same way.
pub(crate) async fn settle_leased_batch(
    conn: &mut AsyncPgConnection,
    items: &[crate::leases::LeasedSettlement],
    bounds: &BatchBounds,
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    if !router_core::failpoints::armed("K5") {
        return crate::leases::settle_batch_within(conn, items, bounds).await;
    }
    conn.batch_execute("BEGIN").await.map_err(store_error)?;
    let settled = crate::leases::settle_batch_within(conn, items, bounds).await?;
    router_core::failpoints::reached("K5").await;
    conn.batch_execute("COMMIT").await.map_err(store_error)?;
    Ok(settled)
}
