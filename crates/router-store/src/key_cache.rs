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
use router_core::store::ApiKeyRecord;
use std::collections::HashMap;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// Longest an entry is trusted without a fresh lookup, even while listening.
const TTL: Duration = Duration::from_secs(30);
/// Entries kept at most; a full cache starts over rather than grow.
const MAX_ENTRIES: usize = 100_000;

#[derive(Debug, Default)]
pub struct KeyCache {
    entries: RwLock<HashMap<[u8; 32], Cached>>,
    /// Bumped by every invalidation. A lookup that raced one is not cached,
    /// so a row read just before a deletion cannot outlive its notification.
    generation: AtomicU64,
    /// True while the LISTEN connection is up; entries are served only then.
    listening: AtomicBool,
}

#[derive(Debug, Clone)]
struct Cached {
    record: ApiKeyRecord,
    fetched: Instant,
}

impl KeyCache {
    /// The cached record for `key_hash`, when it may be trusted now.
    pub fn get(&self, key_hash: &[u8; 32]) -> Option<ApiKeyRecord> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let cached = entries.get(key_hash)?;
        let fresh = cached.fetched.elapsed() < TTL;
        let unexpired = cached
            .record
            .expires_at
            .is_none_or(|at| at > SystemTime::now());
        (fresh && unexpired).then(|| cached.record.clone())
    }

    /// Read before a lookup; pass to [`KeyCache::insert`] with its result.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches a lookup made at `generation`, unless an invalidation happened
    /// since or the listener is down.
    pub fn insert(&self, key_hash: [u8; 32], record: ApiKeyRecord, generation: u64) {
        if !self.listening.load(Ordering::Acquire) {
            return;
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        // Checked under the write lock: invalidations bump it under the same lock.
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        let fetched = Instant::now();
        entries.insert(key_hash, Cached { record, fetched });
    }

    /// Drops the entry of the key whose secret hashes to `key_hash`.
    pub fn forget(&self, key_hash: &[u8; 32]) {
        self.invalidate(|entries| {
            entries.remove(key_hash);
        });
    }

    /// Drops the entry of key `key_id` (admin deletions know the id only).
    pub fn forget_key_id(&self, key_id: Uuid) {
        self.invalidate(|entries| entries.retain(|_, cached| cached.record.key_id != key_id));
    }

    /// Drops the entries of every key of `account_id` (an account-level
    /// change, such as its data-protection switch, that its records carry).
    pub fn forget_account(&self, account_id: Uuid) {
        self.invalidate(|entries| {
            entries.retain(|_, cached| cached.record.account_id != account_id)
        });
    }

    fn clear(&self) {
        self.invalidate(HashMap::clear);
    }

    fn invalidate(&self, change: impl FnOnce(&mut HashMap<[u8; 32], Cached>)) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        change(&mut entries);
    }

    fn set_listening(&self, listening: bool) {
        // Whatever happened while nobody listened is unknown: start empty.
        self.clear();
        self.listening.store(listening, Ordering::Release);
    }

    /// Whether entries are being served (the LISTEN connection is up).
    pub fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
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
                self.clear();
            }
        }
    }

    fn set_listening(&self, listening: bool) {
        KeyCache::set_listening(self, listening);
    }
}

fn decode_hash(payload: &str) -> Option<[u8; 32]> {
    let bytes = hex::decode(payload).ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
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
