//! Prompt-cache routing affinity (issue 16; F-14, F-16): the route that
//! last served a cacheable prefix in a scope, and until when it is
//! preferred. Rows are keyed by a SHA-256 the server computes over the
//! scope, the model and the prefix, so no prompt text is stored.

use crate::error::store_error;
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Bytea, Integer, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use sha2::{Digest, Sha256};

/// The SHA-256 of `parts`, each length-prefixed so no two lists of parts
/// hash alike by shifting bytes between neighbours.
pub fn fingerprint(parts: &[&[u8]]) -> [u8; 32] {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part);
    }
    hash.finalize().into()
}

/// A stored preference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AffinityHint {
    pub route_id: String,
    /// Whether the preference still holds (by the database's clock).
    pub fresh: bool,
}

#[derive(QueryableByName)]
struct HintRow {
    #[diesel(sql_type = Text)]
    route_id: String,
    #[diesel(sql_type = Bool)]
    fresh: bool,
}

pub async fn lookup(
    conn: &mut AsyncPgConnection,
    fingerprint: &[u8; 32],
) -> Result<Option<AffinityHint>, StoreError> {
    let rows: Vec<HintRow> = diesel::sql_query(
        "SELECT route_id, expires_at > now() AS fresh
         FROM prompt_cache_affinity WHERE fingerprint = $1",
    )
    .bind::<Bytea, _>(&fingerprint[..])
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().next().map(|row| AffinityHint {
        route_id: row.route_id,
        fresh: row.fresh,
    }))
}

/// `route_id` served the prefix now: preferred for `ttl_seconds`.
pub async fn record(
    conn: &mut AsyncPgConnection,
    fingerprint: &[u8; 32],
    route_id: &str,
    ttl_seconds: i32,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "INSERT INTO prompt_cache_affinity (fingerprint, route_id, expires_at)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (fingerprint)
         DO UPDATE SET route_id = excluded.route_id, expires_at = excluded.expires_at",
    )
    .bind::<Bytea, _>(&fingerprint[..])
    .bind::<Text, _>(route_id)
    .bind::<Integer, _>(ttl_seconds)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// Deletes preferences that expired more than a day ago (a stale hint
/// still reports `stale` for a while; after that it is simply unknown).
pub async fn purge(conn: &mut AsyncPgConnection) -> Result<u64, StoreError> {
    let deleted = diesel::sql_query(
        "DELETE FROM prompt_cache_affinity WHERE expires_at < now() - interval '1 day'",
    )
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(deleted as u64)
}
