//! A process-local cache of API-key lookups, so the hot path does not pay a
//! round trip per request to authenticate.
//!
//! Staleness is bounded by invalidation, not by time alone: the cache serves
//! entries only while a dedicated connection LISTENs on
//! [`API_KEY_CHANGED_CHANNEL`] ([`crate::listener`]), where a trigger announces every key whose
//! deletion, expiry, scopes or policy changed, from whichever instance changed it.
//! When that connection is down the cache is emptied and bypassed until it is
//! back, and a short TTL covers a notification that never arrives. A key's
//! own expiry is checked on every hit. Deletions and changes made through
//! this process are also applied at once, before the admin call returns.

use crate::api_keys::API_KEY_CHANGED_CHANNEL;
use crate::front::Front;
use router_core::store::ApiKeyRecord;
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// Longest an entry is trusted without a fresh lookup, even while listening.
const TTL: Duration = Duration::from_secs(30);
/// Entries kept at most; a full cache starts over rather than grow.
const MAX_ENTRIES: usize = 100_000;

/// Keyed by the SHA-256 of the key's secret; entries weigh 1, so only
/// their count bounds the cache.
#[derive(Debug)]
pub struct KeyCache(Front<[u8; 32], ApiKeyRecord>);

impl Default for KeyCache {
    fn default() -> KeyCache {
        KeyCache(Front::new(MAX_ENTRIES, usize::MAX, false))
    }
}

impl KeyCache {
    /// The cached record for `key_hash`, when it may be trusted now.
    pub fn get(&self, key_hash: &[u8; 32]) -> Option<ApiKeyRecord> {
        let (record, _) = self.0.get(key_hash)?;
        record
            .expires_at
            .is_none_or(|at| at > SystemTime::now())
            .then_some(record)
    }

    /// Read before a lookup; pass to [`KeyCache::insert`] with its result.
    /// A lookup that raced an invalidation is not cached, so a row read
    /// just before a deletion cannot outlive its notification.
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Caches a lookup made at `generation`, unless an invalidation happened
    /// since or the listener is down.
    pub fn insert(&self, key_hash: [u8; 32], record: ApiKeyRecord, generation: u64) {
        self.0
            .insert(key_hash, record, Instant::now() + TTL, 1, generation);
    }

    /// Drops the entry of the key whose secret hashes to `key_hash`.
    pub fn forget(&self, key_hash: &[u8; 32]) {
        self.0.remove(key_hash);
    }

    /// Drops the entry of key `key_id` (admin deletions know the id only).
    pub fn forget_key_id(&self, key_id: Uuid) {
        self.0.forget(|_, record| record.key_id == key_id);
    }

    /// Drops the entries of every key of `account_id` (an account-level
    /// change, such as its data-protection switch, that its records carry).
    pub fn forget_account(&self, account_id: Uuid) {
        self.0.forget(|_, record| record.account_id == account_id);
    }

    /// Whether entries are being served (the LISTEN connection is up).
    pub fn is_listening(&self) -> bool {
        self.0.is_listening()
    }
}

impl crate::listener::Subscriber for KeyCache {
    fn channel(&self) -> &'static str {
        API_KEY_CHANGED_CHANNEL
    }

    fn notified(&self, payload: &str) {
        match decode_hash(payload) {
            Some(key_hash) => self.forget(&key_hash),
            None => {
                tracing::warn!(payload = %payload, "unreadable key change; clearing the key cache");
                self.0.clear();
            }
        }
    }

    fn set_listening(&self, listening: bool) {
        self.0.set_listening(listening);
    }
}

fn decode_hash(payload: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(payload).ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listener::Subscriber;
    use router_core::store::Scope;

    fn record(expires_at: Option<SystemTime>) -> ApiKeyRecord {
        ApiKeyRecord {
            key_id: Uuid::now_v7(),
            account_id: Uuid::now_v7(),
            scopes: vec![Scope::Inference],
            expires_at,
            policy: Default::default(),
            account_zdr: false,
        }
    }

    fn listening_cache() -> KeyCache {
        let cache = KeyCache::default();
        cache.set_listening(true);
        cache
    }

    #[test]
    fn forgetting_an_account_drops_all_its_keys_only() {
        let cache = listening_cache();
        let (a, b, other) = (record(None), record(None), record(None));
        let b = ApiKeyRecord {
            account_id: a.account_id,
            ..b
        };
        let generation = cache.generation();
        cache.insert([1; 32], a.clone(), generation);
        cache.insert([2; 32], b, generation);
        cache.insert([3; 32], other, generation);
        cache.forget_account(a.account_id);
        assert!(cache.get(&[1; 32]).is_none());
        assert!(cache.get(&[2; 32]).is_none());
        assert!(cache.get(&[3; 32]).is_some());
    }

    #[test]
    fn serves_entries_only_while_listening() {
        let cache = KeyCache::default();
        let generation = cache.generation();
        cache.insert([1; 32], record(None), generation);
        assert_eq!(cache.get(&[1; 32]), None, "not listening: nothing cached");

        cache.set_listening(true);
        let generation = cache.generation();
        let rec = record(None);
        cache.insert([1; 32], rec.clone(), generation);
        assert_eq!(cache.get(&[1; 32]), Some(rec));

        cache.set_listening(false);
        assert_eq!(cache.get(&[1; 32]), None);
        cache.set_listening(true);
        assert_eq!(cache.get(&[1; 32]), None, "a reconnect starts empty");
    }

    #[test]
    fn a_lookup_that_raced_an_invalidation_is_not_cached() {
        let cache = listening_cache();
        let generation = cache.generation();
        cache.forget(&[9; 32]);
        cache.insert([1; 32], record(None), generation);
        assert_eq!(cache.get(&[1; 32]), None);
    }

    #[test]
    fn forgets_by_hash_and_by_key_id() {
        let cache = listening_cache();
        let (a, b) = (record(None), record(None));
        cache.insert([1; 32], a.clone(), cache.generation());
        cache.insert([2; 32], b.clone(), cache.generation());
        cache.forget(&[1; 32]);
        assert_eq!(cache.get(&[1; 32]), None);
        assert_eq!(cache.get(&[2; 32]), Some(b.clone()));
        cache.forget_key_id(b.key_id);
        assert_eq!(cache.get(&[2; 32]), None);
    }

    #[test]
    fn an_expired_key_is_not_served() {
        let cache = listening_cache();
        let past = SystemTime::now() - Duration::from_secs(1);
        cache.insert([1; 32], record(Some(past)), cache.generation());
        assert_eq!(cache.get(&[1; 32]), None);
    }

    #[test]
    fn notification_payloads_are_hex_hashes() {
        assert_eq!(decode_hash(&"ab".repeat(32)), Some([0xab; 32]));
        assert_eq!(decode_hash("abc"), None);
        assert_eq!(decode_hash(&"ab".repeat(31)), None);
    }
}
