//! Prompt-cache routing affinity (issue 16; F-14, F-16): the route that
//! last served a cacheable prefix in a scope, and until when it is
//! preferred. Rows are keyed by a SHA-256 core computes over the scope,
//! the model and the prefix (`router_core::affinity`), so no prompt text is
//! stored.

use crate::error::store_error;
use crate::front::Front;
use diesel::QueryableByName;
use diesel::sql_types::{Bool, Bytea, Double, Integer, Text};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
pub use router_core::store::AffinityHint;
use router_core::store::StoreError;
use std::sync::Arc;
use std::time::{Duration, Instant};

#[derive(QueryableByName)]
struct HintRow {
    #[diesel(sql_type = Text)]
    route_id: String,
    #[diesel(sql_type = Bool)]
    fresh: bool,
    #[diesel(sql_type = Double)]
    remaining_seconds: f64,
}

pub async fn lookup(
    conn: &mut AsyncPgConnection,
    fingerprint: &[u8; 32],
) -> Result<Option<AffinityHint>, StoreError> {
    let rows: Vec<HintRow> = diesel::sql_query(
        "SELECT route_id, expires_at > now() AS fresh,
                greatest(extract(epoch FROM expires_at - now()), 0)::float8 AS remaining_seconds
         FROM prompt_cache_affinity WHERE fingerprint = $1",
    )
    .bind::<Bytea, _>(&fingerprint[..])
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().next().map(|row| AffinityHint {
        route_id: row.route_id,
        fresh: row.fresh,
        remaining: Duration::try_from_secs_f64(row.remaining_seconds).unwrap_or(Duration::ZERO),
    }))
}

/// `route_id` served the prefix now: preferred for `ttl_seconds`.
pub async fn record(
    conn: &mut AsyncPgConnection,
    fingerprint: &[u8; 32],
    route_id: &str,
    ttl_seconds: i32,
) -> Result<(), StoreError> {
    upsert(
        conn,
        "INSERT INTO prompt_cache_affinity (fingerprint, route_id, expires_at)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (fingerprint)
         DO UPDATE SET route_id = excluded.route_id, expires_at = excluded.expires_at",
        fingerprint,
        route_id,
        ttl_seconds,
    )
    .await
    .map(drop)
}

/// `route_id` served the prefix again as its fresh preference: extends the
/// preference for `ttl_seconds`, unless another instance has meanwhile
/// made a newer choice for the prefix (whose row then stands). Returns
/// whether this route is the stored preference now.
pub async fn refresh(
    conn: &mut AsyncPgConnection,
    fingerprint: &[u8; 32],
    route_id: &str,
    ttl_seconds: i32,
) -> Result<bool, StoreError> {
    let written = upsert(
        conn,
        "INSERT INTO prompt_cache_affinity (fingerprint, route_id, expires_at)
         VALUES ($1, $2, now() + make_interval(secs => $3))
         ON CONFLICT (fingerprint)
         DO UPDATE SET expires_at = excluded.expires_at
         WHERE prompt_cache_affinity.route_id = excluded.route_id",
        fingerprint,
        route_id,
        ttl_seconds,
    )
    .await?;
    Ok(written == 1)
}

/// Runs one of the two upserts above: rows written.
async fn upsert(
    conn: &mut AsyncPgConnection,
    statement: &'static str,
    fingerprint: &[u8; 32],
    route_id: &str,
    ttl_seconds: i32,
) -> Result<usize, StoreError> {
    diesel::sql_query(statement)
        .bind::<Bytea, _>(&fingerprint[..])
        .bind::<Text, _>(route_id)
        .bind::<Integer, _>(ttl_seconds)
        .execute(conn)
        .await
        .map_err(store_error)
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

/// The longest an instance trusts its front for a prefix before reading
/// the shared row again: another instance's newer choice for the same
/// prefix wins here within this long. A short lifetime, not a NOTIFY per
/// choice: every served request records its route, so announcing each
/// write would cost every instance a notification per request.
pub const FRONT_TTL: Duration = Duration::from_secs(1);
const FRONT_MAX_ENTRIES: usize = 100_000;

/// The in-process front of the affinity map. An entry is a fresh
/// preference this instance read or wrote, kept until the sooner of the
/// row's expiry and [`FRONT_TTL`]. While it holds a route this instance
/// wrote itself, recording the same route again skips the write, so the
/// row's expiry trails the last use by at most [`FRONT_TTL`]. A preference
/// served again is only extended if the row still names it ([`refresh`]):
/// a request that read this front just before another instance's newer
/// choice does not overwrite that choice.
///
/// A front cannot serve a wrong route: a preference only reorders the
/// routes the plan already allowed (capabilities, discount floor, zero
/// data retention, the current catalog), wherever it was read.
#[derive(Debug)]
pub struct AffinityFront(Front<[u8; 32], FrontHint>);

#[derive(Debug, Clone)]
pub struct FrontHint {
    route_id: Arc<str>,
    /// Written by this instance (not only read).
    written: bool,
}

impl Default for AffinityFront {
    fn default() -> AffinityFront {
        // Bounded by time, not by a channel: on from the start.
        AffinityFront(Front::new(FRONT_MAX_ENTRIES, FRONT_MAX_ENTRIES, true))
    }
}

impl AffinityFront {
    /// A fresh preference for the prefix, when the front holds one.
    pub fn get(&self, fingerprint: &[u8; 32]) -> Option<AffinityHint> {
        let (hint, until) = self.0.get(fingerprint)?;
        Some(AffinityHint {
            route_id: hint.route_id.to_string(),
            fresh: true,
            remaining: until.saturating_duration_since(Instant::now()),
        })
    }

    /// Whether `route_id` is what this instance itself last wrote for the
    /// prefix, within [`FRONT_TTL`].
    pub fn wrote(&self, fingerprint: &[u8; 32], route_id: &str) -> bool {
        self.0
            .get(fingerprint)
            .is_some_and(|(hint, _)| hint.written && *hint.route_id == *route_id)
    }

    /// Drops what the front holds for the prefix.
    pub fn forget(&self, fingerprint: &[u8; 32]) {
        self.0.remove(fingerprint);
    }

    /// Keeps a preference read or written at `at`, holding for `remaining`.
    pub fn insert(
        &self,
        fingerprint: [u8; 32],
        route_id: &str,
        at: Instant,
        remaining: Duration,
        written: bool,
    ) {
        let until = at + remaining.min(FRONT_TTL);
        let hint = FrontHint {
            route_id: route_id.into(),
            written,
        };
        let generation = self.0.generation();
        self.0.insert(fingerprint, hint, until, 1, generation);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_front_entry_lives_no_longer_than_the_row_nor_the_front_ttl() {
        let front = AffinityFront::default();
        let now = Instant::now();
        front.insert([1; 32], "r1", now, Duration::from_secs(300), false);
        let hint = front.get(&[1; 32]).unwrap();
        assert_eq!(hint.route_id, "r1");
        assert!(hint.fresh && hint.remaining <= FRONT_TTL);
        // A row that expired by the time it was read is never served.
        front.insert(
            [2; 32],
            "r2",
            now - Duration::from_secs(5),
            Duration::from_secs(3),
            false,
        );
        assert_eq!(front.get(&[2; 32]), None);
    }

    #[test]
    fn only_a_route_this_instance_wrote_skips_the_next_write() {
        let front = AffinityFront::default();
        front.insert(
            [1; 32],
            "read",
            Instant::now(),
            Duration::from_secs(300),
            false,
        );
        assert!(
            !front.wrote(&[1; 32], "read"),
            "read from the row: refresh it"
        );
        front.insert(
            [1; 32],
            "mine",
            Instant::now(),
            Duration::from_secs(300),
            true,
        );
        assert!(front.wrote(&[1; 32], "mine"));
        assert!(!front.wrote(&[1; 32], "other"));
        assert!(!front.wrote(&[2; 32], "mine"));
    }
}
