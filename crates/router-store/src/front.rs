//! A bounded in-process front for a table that every instance shares: API
//! keys, the response cache, the experiments and the prompt-cache affinity
//! map put one before their PostgreSQL rows so the hot path skips a round
//! trip.
//!
//! An entry carries the instant after which it must not be served, set by
//! its owner from the row's own lifetime, so a front never serves what the
//! table would no longer answer. Fronts kept honest by a NOTIFY channel
//! ([`crate::listener`]) serve entries only while that channel is heard:
//! when the connection is lost the front is emptied and bypassed until it
//! is back, since a change announced meanwhile would be missed. A lookup
//! that raced an invalidation is not cached (the generation check), so a
//! row read just before a change cannot outlive its notification.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::RwLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;
use uuid::Uuid;

#[derive(Debug)]
pub(crate) struct Front<K, V> {
    entries: RwLock<Entries<K, V>>,
    /// Bumped by every invalidation (see [`Front::insert`]).
    generation: AtomicU64,
    /// Entries are served and stored only while this is true.
    listening: AtomicBool,
    max_entries: usize,
    /// The most the entries' weights (e.g. their bytes) add up to.
    max_weight: usize,
}

#[derive(Debug)]
struct Entries<K, V> {
    map: HashMap<K, Entry<V>>,
    weight: usize,
}

#[derive(Debug, Clone)]
struct Entry<V> {
    value: V,
    /// Not served from this instant on.
    until: Instant,
    weight: usize,
}

impl<K: Eq + Hash, V: Clone> Front<K, V> {
    /// An empty front; `listening` false for one that a NOTIFY channel
    /// turns on ([`Front::set_listening`]), true for one bounded by time
    /// alone.
    pub(crate) fn new(max_entries: usize, max_weight: usize, listening: bool) -> Front<K, V> {
        Front {
            entries: RwLock::new(Entries {
                map: HashMap::new(),
                weight: 0,
            }),
            generation: AtomicU64::new(0),
            listening: AtomicBool::new(listening),
            max_entries,
            max_weight,
        }
    }

    /// The value of `key` and the instant it expires, when it may be served now.
    pub(crate) fn get(&self, key: &K) -> Option<(V, Instant)> {
        if !self.listening.load(Ordering::Acquire) {
            return None;
        }
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        let entry = entries.map.get(key)?;
        (entry.until > Instant::now()).then(|| (entry.value.clone(), entry.until))
    }

    /// Read before the lookup whose result goes to [`Front::insert`].
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Keeps `value` for `key` until `until`, unless an invalidation
    /// happened since `generation` was read, the front is off, or the value
    /// alone outweighs the front. A full front starts over rather than grow.
    pub(crate) fn insert(&self, key: K, value: V, until: Instant, weight: usize, generation: u64) {
        if !self.listening.load(Ordering::Acquire) || weight > self.max_weight / 8 {
            return;
        }
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        // Checked under the write lock: invalidations bump it under the same lock.
        if self.generation.load(Ordering::Acquire) != generation {
            return;
        }
        if entries.map.len() >= self.max_entries || entries.weight + weight > self.max_weight {
            entries.map.clear();
            entries.weight = 0;
        }
        let entry = Entry {
            value,
            until,
            weight,
        };
        entries.weight += weight;
        if let Some(old) = entries.map.insert(key, entry) {
            entries.weight -= old.weight;
        }
    }

    /// Drops the entries `drop` selects (e.g. one account's).
    pub(crate) fn forget(&self, mut drop: impl FnMut(&K, &V) -> bool) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        let Entries { map, weight } = &mut *entries;
        map.retain(|key, entry| {
            let dropped = drop(key, &entry.value);
            if dropped {
                *weight -= entry.weight;
            }
            !dropped
        });
    }

    /// Drops the entry of `key`.
    pub(crate) fn remove(&self, key: &K) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        if let Some(old) = entries.map.remove(key) {
            entries.weight -= old.weight;
        }
    }

    /// Drops every entry.
    pub(crate) fn clear(&self) {
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        self.generation.fetch_add(1, Ordering::AcqRel);
        entries.map.clear();
        entries.weight = 0;
    }

    /// Turns the front on or off; either way it starts empty, since
    /// whatever happened while nobody listened is unknown.
    pub(crate) fn set_listening(&self, listening: bool) {
        self.clear();
        self.listening.store(listening, Ordering::Release);
    }

    /// Whether entries are being served.
    pub(crate) fn is_listening(&self) -> bool {
        self.listening.load(Ordering::Acquire)
    }

    /// How many entries are held (expired ones included until replaced).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        let entries = self.entries.read().unwrap_or_else(|e| e.into_inner());
        entries.map.len()
    }
}

/// Fronts keyed by account first, whose NOTIFY payload is the account.
impl<T: Eq + Hash, V: Clone> Front<(Uuid, T), V> {
    /// Drops one account's entries.
    pub(crate) fn forget_account(&self, account_id: Uuid) {
        self.forget(|(account, _), _| *account == account_id);
    }

    /// A notification naming an account drops its entries; an unreadable
    /// one (`what` says whose, in the warning) drops everything.
    pub(crate) fn account_notified(&self, payload: &str, what: &'static str) {
        match payload.parse::<Uuid>() {
            Ok(account_id) => self.forget_account(account_id),
            Err(_) => {
                tracing::warn!(payload = %payload, "{what}");
                self.clear();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn later() -> Instant {
        Instant::now() + Duration::from_secs(60)
    }

    #[test]
    fn serves_only_while_listening_and_restarts_empty() {
        let front: Front<u32, &str> = Front::new(10, 1_000, false);
        front.insert(1, "a", later(), 1, front.generation());
        assert!(front.get(&1).is_none(), "off: nothing stored");
        front.set_listening(true);
        front.insert(1, "a", later(), 1, front.generation());
        assert_eq!(front.get(&1).map(|(v, _)| v), Some("a"));
        front.set_listening(false);
        assert!(front.get(&1).is_none());
        front.set_listening(true);
        assert!(front.get(&1).is_none(), "a reconnect starts empty");
    }

    #[test]
    fn an_entry_is_not_served_past_its_instant() {
        let front: Front<u32, &str> = Front::new(10, 1_000, true);
        let past = Instant::now() - Duration::from_millis(1);
        front.insert(1, "a", past, 1, front.generation());
        assert!(front.get(&1).is_none());
    }

    #[test]
    fn a_lookup_that_raced_an_invalidation_is_not_stored() {
        let front: Front<u32, &str> = Front::new(10, 1_000, true);
        let generation = front.generation();
        front.forget(|k, _| *k == 9);
        front.insert(1, "a", later(), 1, generation);
        assert!(front.get(&1).is_none());
    }

    #[test]
    fn forgets_what_is_selected_only() {
        let front: Front<u32, &str> = Front::new(10, 1_000, true);
        for k in 0..4 {
            front.insert(k, "v", later(), 10, front.generation());
        }
        front.forget(|k, _| k % 2 == 0);
        assert!(front.get(&0).is_none() && front.get(&2).is_none());
        assert!(front.get(&1).is_some() && front.get(&3).is_some());
    }

    #[test]
    fn stays_within_its_bounds() {
        let front: Front<u32, u32> = Front::new(3, 80, true);
        for k in 0..10 {
            front.insert(k, k, later(), 10, front.generation());
            assert!(front.len() <= 3);
        }
        // Weight: 80 in all, one entry at most an eighth of it.
        let heavy: Front<u32, u32> = Front::new(100, 80, true);
        heavy.insert(1, 1, later(), 11, heavy.generation());
        assert!(heavy.get(&1).is_none(), "heavier than an eighth: not kept");
        for k in 0..20 {
            heavy.insert(k, k, later(), 10, heavy.generation());
            assert!(heavy.len() <= 8);
        }
        // Replacing an entry does not count its weight twice.
        let one: Front<u32, u32> = Front::new(100, 80, true);
        for _ in 0..20 {
            one.insert(1, 1, later(), 10, one.generation());
        }
        one.insert(2, 2, later(), 10, one.generation());
        assert!(one.get(&1).is_some() && one.get(&2).is_some());
    }
}
