//! The account's zero-data-retention switch (section J) and its audit trail.
//!
//! Turning it on is one transaction: the switch, the audit row, every
//! upload scheduled for deletion (J-08) and the account's exact-response
//! cache cleared (J-09). Turning it off restores nothing (GP-37). Every key
//! record carries the switch (`ApiKeyRecord::account_zdr`); a trigger on
//! the account row notifies each of its keys' hashes, so every instance's
//! key cache drops them when the transaction commits.

use crate::error::store_error;
use crate::schema::{accounts, data_protection_changes};
use crate::uploads;
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use uuid::Uuid;

/// The account's switch; `None` for an unknown account.
pub async fn zero_data_retention(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<Option<bool>, StoreError> {
    accounts::table
        .find(account_id)
        .select(accounts::zero_data_retention)
        .first(conn)
        .await
        .optional()
        .map_err(store_error)
}

/// What a change did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SwitchChange {
    /// The value now stored.
    pub zero_data_retention: bool,
    /// Whether it differed before (and an audit row was written).
    pub changed: bool,
    /// Uploads scheduled for deletion by this change.
    pub uploads_scheduled: u64,
}

/// Sets the account's switch on behalf of browser session `session_id`
/// (idempotent: setting the current value changes nothing and writes no
/// audit row). `None` for an unknown account.
pub async fn set_zero_data_retention(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    session_id: Uuid,
    enabled: bool,
) -> Result<Option<SwitchChange>, StoreError> {
    conn.transaction(async |conn| -> Result<_, Failed> {
        let Some(previous) = accounts::table
            .find(account_id)
            .select(accounts::zero_data_retention)
            .for_update()
            .first::<bool>(conn)
            .await
            .optional()?
        else {
            return Ok(None);
        };
        let changed = previous != enabled;
        if changed {
            diesel::update(accounts::table.find(account_id))
                .set(accounts::zero_data_retention.eq(enabled))
                .execute(conn)
                .await?;
            diesel::insert_into(data_protection_changes::table)
                .values((
                    data_protection_changes::id.eq(Uuid::now_v7()),
                    data_protection_changes::account_id.eq(account_id),
                    data_protection_changes::zero_data_retention.eq(enabled),
                    data_protection_changes::session_id.eq(session_id),
                ))
                .execute(conn)
                .await?;
        }
        let mut uploads_scheduled = 0;
        if enabled {
            // Idempotent: with the switch already on there is nothing left
            // to schedule or clear, and doing it again costs two lookups.
            uploads_scheduled = uploads::schedule_account_deletion(conn, account_id).await?;
            clear_response_cache(conn, account_id).await?;
        }
        Ok(Some(SwitchChange {
            zero_data_retention: enabled,
            changed,
            uploads_scheduled,
        }))
    })
    .await
    .map_err(|Failed(error)| error)
}

/// A transaction's failure: diesel's, or one of ours already mapped.
struct Failed(StoreError);

impl From<diesel::result::Error> for Failed {
    fn from(error: diesel::result::Error) -> Self {
        Failed(store_error(error))
    }
}

impl From<StoreError> for Failed {
    fn from(error: StoreError) -> Self {
        Failed(error)
    }
}

/// Clears the account's exact-response cache, inside the enabling
/// transaction (J-09), announcing it so no instance's front keeps serving
/// an entry.
pub async fn clear_response_cache(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<u64, StoreError> {
    crate::response_cache::clear(conn, account_id).await
}

/// One recorded change of the switch.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SwitchAudit {
    pub zero_data_retention: bool,
    /// The browser session that changed it.
    pub session_id: Uuid,
    /// RFC 3339, UTC.
    pub changed_at: String,
}

/// The account's changes of the switch, oldest first.
pub async fn changes(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<Vec<SwitchAudit>, StoreError> {
    let rows: Vec<(bool, Uuid, chrono::DateTime<chrono::Utc>)> = data_protection_changes::table
        .filter(data_protection_changes::account_id.eq(account_id))
        .order((
            data_protection_changes::changed_at.asc(),
            data_protection_changes::id.asc(),
        ))
        .select((
            data_protection_changes::zero_data_retention,
            data_protection_changes::session_id,
            data_protection_changes::changed_at,
        ))
        .load(conn)
        .await
        .map_err(store_error)?;
    Ok(rows
        .into_iter()
        .map(|(zero_data_retention, session_id, at)| SwitchAudit {
            zero_data_retention,
            session_id,
            changed_at: crate::timestamps::rfc3339(at),
        })
        .collect())
}
