//! Limited admissions of one key take turns in this process before they
//! take a database connection (issue 33: 1,000 simultaneous requests of a
//! key with a spend limit each held a pooled connection while waiting for
//! the key's row lock; the last ones outwaited the pool's checkout and
//! answered 503, and every other account waited for connections too). The
//! row lock still orders admissions across instances; this only keeps the
//! waiting in memory instead of in the pool.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use uuid::Uuid;

/// Keys whose admissions are queued at once before dead entries are swept.
const SWEEP_ABOVE: usize = 1024;

#[derive(Default)]
pub(crate) struct KeyTurns {
    turns: Mutex<HashMap<Uuid, Weak<tokio::sync::Mutex<()>>>>,
}

impl KeyTurns {
    /// Waits for `key`'s turn; the turn lasts as long as the guard.
    pub(crate) async fn take(&self, key: Uuid) -> tokio::sync::OwnedMutexGuard<()> {
        let turn = {
            let mut turns = self
                .turns
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if turns.len() > SWEEP_ABOVE {
                turns.retain(|_, turn| turn.strong_count() > 0);
            }
            match turns.get(&key).and_then(Weak::upgrade) {
                Some(turn) => turn,
                None => {
                    let turn = Arc::new(tokio::sync::Mutex::new(()));
                    turns.insert(key, Arc::downgrade(&turn));
                    turn
                }
            }
        };
        turn.lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_key_takes_turns_and_other_keys_do_not_wait() {
        let turns = KeyTurns::default();
        let (a, b) = (Uuid::new_v4(), Uuid::new_v4());
        let first = turns.take(a).await;
        // Another key is not held up.
        let other =
            tokio::time::timeout(std::time::Duration::from_millis(100), turns.take(b)).await;
        assert!(other.is_ok());
        // The same key waits until the first turn ends.
        let waiting =
            tokio::time::timeout(std::time::Duration::from_millis(50), turns.take(a)).await;
        assert!(waiting.is_err());
        drop(first);
        let next = tokio::time::timeout(std::time::Duration::from_millis(100), turns.take(a)).await;
        assert!(next.is_ok());
    }

    #[tokio::test]
    async fn finished_keys_are_swept() {
        let turns = KeyTurns::default();
        for _ in 0..(SWEEP_ABOVE + 10) {
            drop(turns.take(Uuid::new_v4()).await);
        }
        drop(turns.take(Uuid::new_v4()).await);
        assert!(turns.turns.lock().unwrap().len() <= SWEEP_ABOVE + 1);
    }
}
