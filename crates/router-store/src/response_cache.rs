//! The exact-response cache (issue 16; G-20, H-10, J-09): an account's
//! answers to non-streaming text requests, keyed by the fingerprint of the
//! canonical request (`router_core::response_cache`), kept in PostgreSQL so every instance sees them and
//! account zero data retention removes them in one statement.
//!
//! A hit is answered without a reservation or a charge; it is recorded in
//! the request history as a succeeded request charged 0 with
//! `cache_hit = true` (no hold, no ledger entry).

use crate::error::store_error;
use crate::front::Front;
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bytea, Double, Integer, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
pub use router_core::store::CacheHit;
use router_core::store::StoreError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The channel on which clearing an account's entries is announced, with
/// the account ID as payload, for in-process fronts of the cache.
pub const RESPONSE_CACHE_CLEARED_CHANNEL: &str = "response_cache_cleared";

/// The longest TTL a key may set; the purge job removes older entries.
pub const MAX_TTL_SECONDS: i32 = 86_400;

#[derive(QueryableByName)]
struct CachedRow {
    #[diesel(sql_type = Text)]
    response: String,
    #[diesel(sql_type = Double)]
    age_seconds: f64,
}

/// A stored answer and how old it is (by the database's clock).
#[derive(Debug, Clone, PartialEq)]
pub struct Cached {
    /// The canonical response JSON.
    pub response: String,
    pub age: Duration,
}

/// The account's answer to `fingerprint` stored within the last
/// `ttl_seconds`, as stored (the canonical response JSON), with its age.
pub async fn lookup(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    fingerprint: &[u8; 32],
    ttl_seconds: i32,
) -> Result<Option<Cached>, StoreError> {
    let rows: Vec<CachedRow> = diesel::sql_query(
        "SELECT response,
                greatest(extract(epoch FROM now() - created_at), 0)::float8 AS age_seconds
         FROM response_cache
         WHERE account_id = $1 AND fingerprint = $2
           AND created_at > now() - make_interval(secs => $3)",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Bytea, _>(&fingerprint[..])
    .bind::<Integer, _>(ttl_seconds)
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().next().map(|row| Cached {
        response: row.response,
        age: Duration::try_from_secs_f64(row.age_seconds).unwrap_or(Duration::MAX),
    }))
}

/// Stores (or refreshes) the account's answer to `fingerprint`.
pub async fn store(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    fingerprint: &[u8; 32],
    response: &str,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "INSERT INTO response_cache (account_id, fingerprint, response)
         VALUES ($1, $2, $3)
         ON CONFLICT (account_id, fingerprint)
         DO UPDATE SET response = excluded.response, created_at = now()",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Bytea, _>(&fingerprint[..])
    .bind::<Text, _>(response)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

fn tokens(n: u64) -> Result<i64, StoreError> {
    i64::try_from(n).map_err(|_| StoreError::Query("token count out of range".into()))
}

/// Records a hit: succeeded, reserved and charged 0, `cache_hit`.
pub async fn record_hit(conn: &mut AsyncPgConnection, hit: &CacheHit) -> Result<(), StoreError> {
    diesel::sql_query(
        "INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                               recorded_protocol, stream, status, reserved_nano,
                               charged_nano, reported_nano, input_tokens, output_tokens,
                               cache_read_tokens, cache_write_tokens, reasoning_tokens,
                               cache_hit, finished_at, experiment_id, experiment_variant)
         VALUES ($1, $2, $3, $4, $5, $6, false, 'succeeded', 0, 0, 0, $7, $8, $9, $10, $11,
                 true, now(), $12, $13)",
    )
    .bind::<SqlUuid, _>(hit.request_id)
    .bind::<SqlUuid, _>(hit.account_id)
    .bind::<SqlUuid, _>(hit.api_key_id)
    .bind::<Text, _>(&hit.model)
    .bind::<Text, _>(hit.inbound_protocol.as_str())
    .bind::<Text, _>(hit.inbound_protocol.rides().as_str())
    .bind::<BigInt, _>(tokens(hit.usage.input_tokens)?)
    .bind::<BigInt, _>(tokens(hit.usage.output_tokens)?)
    .bind::<BigInt, _>(tokens(hit.usage.cache_read_input_tokens)?)
    .bind::<BigInt, _>(tokens(hit.usage.cache_creation_input_tokens)?)
    .bind::<BigInt, _>(tokens(hit.usage.reasoning_tokens)?)
    .bind::<Nullable<SqlUuid>, _>(hit.experiment.as_ref().map(|e| e.experiment_id))
    .bind::<Nullable<Text>, _>(hit.experiment.as_ref().map(|e| e.variant.as_str()))
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}

/// Deletes every entry of the account (account zero data retention, J-09)
/// and announces it on [`RESPONSE_CACHE_CLEARED_CHANNEL`] in the same
/// transaction, so no instance's front keeps serving them. Returns how
/// many entries went.
pub async fn clear(conn: &mut AsyncPgConnection, account_id: Uuid) -> Result<u64, StoreError> {
    conn.transaction::<u64, diesel::result::Error, _>(async move |conn| {
        let deleted = diesel::sql_query("DELETE FROM response_cache WHERE account_id = $1")
            .bind::<SqlUuid, _>(account_id)
            .execute(conn)
            .await?;
        diesel::sql_query("SELECT pg_notify($1, $2)")
            .bind::<Text, _>(RESPONSE_CACHE_CLEARED_CHANNEL)
            .bind::<Text, _>(account_id.to_string())
            .execute(conn)
            .await?;
        Ok(deleted as u64)
    })
    .await
    .map_err(store_error)
}

/// Deletes entries older than the longest TTL (the purge job).
pub async fn purge(conn: &mut AsyncPgConnection) -> Result<u64, StoreError> {
    let deleted = diesel::sql_query(
        "DELETE FROM response_cache WHERE created_at < now() - make_interval(secs => $1)",
    )
    .bind::<Integer, _>(MAX_TTL_SECONDS)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(deleted as u64)
}

/// Entries the in-process front keeps at most, and the bytes of response
/// JSON they hold at most (an answer over an eighth of it is not kept).
const FRONT_MAX_ENTRIES: usize = 10_000;
const FRONT_MAX_BYTES: usize = 64 << 20;

/// The in-process front of the cache: answers this instance read or
/// stored, served without a round trip while the change listener is up
/// ([`crate::listener`]). Clearing an account (J-09) reaches every
/// instance's front by NOTIFY on [`RESPONSE_CACHE_CLEARED_CHANNEL`]; an
/// entry is served only within the asking key's TTL of the row's
/// `created_at`, so it never outlives the row's own answer.
#[derive(Debug)]
pub struct ResponseFront(Front<(Uuid, [u8; 32]), FrontEntry>);

#[derive(Debug, Clone)]
pub struct FrontEntry {
    response: Arc<str>,
    /// No later than the row's `created_at`.
    stored: Instant,
}

impl Default for ResponseFront {
    fn default() -> ResponseFront {
        ResponseFront(Front::new(FRONT_MAX_ENTRIES, FRONT_MAX_BYTES, false))
    }
}

impl ResponseFront {
    /// The account's answer to `fingerprint`, if held and stored within
    /// `ttl_seconds`.
    pub fn get(
        &self,
        account_id: Uuid,
        fingerprint: &[u8; 32],
        ttl_seconds: i32,
    ) -> Option<Arc<str>> {
        let (entry, _) = self.0.get(&(account_id, *fingerprint))?;
        let ttl = Duration::from_secs(u64::try_from(ttl_seconds).ok()?);
        (entry.stored.elapsed() < ttl).then_some(entry.response)
    }

    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Keeps an answer stored at `stored` (read at `generation`).
    pub fn insert(
        &self,
        account_id: Uuid,
        fingerprint: [u8; 32],
        response: Arc<str>,
        stored: Instant,
        generation: u64,
    ) {
        let weight = response.len();
        // No key's TTL reaches past the longest one.
        let until = stored + Duration::from_secs(MAX_TTL_SECONDS.unsigned_abs().into());
        let entry = FrontEntry { response, stored };
        self.0
            .insert((account_id, fingerprint), entry, until, weight, generation);
    }

    /// Drops every answer of the account.
    pub fn forget_account(&self, account_id: Uuid) {
        self.0.forget_account(account_id);
    }

    /// Whether answers are being served from the front.
    pub fn is_listening(&self) -> bool {
        self.0.is_listening()
    }
}

impl crate::listener::Subscriber for ResponseFront {
    fn channel(&self) -> &'static str {
        RESPONSE_CACHE_CLEARED_CHANNEL
    }

    fn notified(&self, payload: &str) {
        self.0.account_notified(
            payload,
            "unreadable cache clearing; clearing the response front",
        );
    }

    fn set_listening(&self, listening: bool) {
        self.0.set_listening(listening);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listener::Subscriber;

    fn listening() -> ResponseFront {
        let front = ResponseFront::default();
        front.set_listening(true);
        front
    }

    #[test]
    fn an_answer_is_served_only_within_the_asking_keys_ttl() {
        let front = listening();
        let account = Uuid::now_v7();
        let stored = Instant::now() - Duration::from_secs(10);
        front.insert(
            account,
            [1; 32],
            "answer".into(),
            stored,
            front.generation(),
        );
        assert_eq!(front.get(account, &[1; 32], 60).as_deref(), Some("answer"));
        assert_eq!(front.get(account, &[1; 32], 10), None, "older than 10 s");
        assert_eq!(front.get(account, &[1; 32], -1), None);
        assert_eq!(
            front.get(Uuid::now_v7(), &[1; 32], 60),
            None,
            "never across accounts"
        );
    }

    #[test]
    fn a_clearing_notification_drops_that_accounts_answers_only() {
        let front = listening();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        for account in [a, b] {
            front.insert(
                account,
                [1; 32],
                "x".into(),
                Instant::now(),
                front.generation(),
            );
        }
        front.notified(&a.to_string());
        assert_eq!(front.get(a, &[1; 32], 60), None);
        assert!(front.get(b, &[1; 32], 60).is_some());
        front.notified("not an id");
        assert_eq!(
            front.get(b, &[1; 32], 60),
            None,
            "unreadable: everything goes"
        );
    }

    #[test]
    fn off_until_the_listener_is_up() {
        let front = ResponseFront::default();
        let account = Uuid::now_v7();
        front.insert(
            account,
            [1; 32],
            "x".into(),
            Instant::now(),
            front.generation(),
        );
        assert_eq!(front.get(account, &[1; 32], 60), None);
    }
}
