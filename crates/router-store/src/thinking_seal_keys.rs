//! The key of router thinking signatures (router-core `thinking_seal`): one
//! secret per signature version, created by whichever instance asks first.

use crate::error::store_error;
use crate::schema::thinking_seal_keys;
use diesel::{ExpressionMethods, QueryDsl};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use router_core::thinking_seal::SEAL_VERSION;

/// The stored secret of the current signature version, storing `candidate`
/// first if there is none. Race-free without a transaction: the insert does
/// nothing when another instance's row exists (committed or committing, it
/// waits for it), and the select, a statement of its own, then sees that row.
pub async fn load_or_insert(
    conn: &mut AsyncPgConnection,
    candidate: &[u8],
) -> Result<Vec<u8>, StoreError> {
    diesel::insert_into(thinking_seal_keys::table)
        .values((
            thinking_seal_keys::version.eq(SEAL_VERSION),
            thinking_seal_keys::secret.eq(candidate),
        ))
        .on_conflict(thinking_seal_keys::version)
        .do_nothing()
        .execute(conn)
        .await
        .map_err(store_error)?;
    thinking_seal_keys::table
        .filter(thinking_seal_keys::version.eq(SEAL_VERSION))
        .select(thinking_seal_keys::secret)
        .first(conn)
        .await
        .map_err(store_error)
}
