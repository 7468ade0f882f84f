//! Warnings that repeat (every request while the database is down, every
//! readiness probe, every job tick) logged at most once a period, with how
//! many were held back (issue 30: rate-limited repeated warnings).

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// One kind of repeated warning.
#[derive(Debug, Default)]
pub struct Throttle {
    /// Milliseconds since the process's first throttle, plus one, of the
    /// last warning let through (0: none yet).
    last_ms: AtomicU64,
    held_back: AtomicU64,
}

fn now_ms() -> u64 {
    static START: OnceLock<Instant> = OnceLock::new();
    u64::try_from(START.get_or_init(Instant::now).elapsed().as_millis()).unwrap_or(u64::MAX - 1)
}

impl Throttle {
    pub const fn new() -> Throttle {
        Throttle {
            last_ms: AtomicU64::new(0),
            held_back: AtomicU64::new(0),
        }
    }

    /// `Some(n)` when this occurrence may be logged (`n` were held back
    /// since the last one), `None` when it is held back.
    pub fn allow(&self, every: Duration) -> Option<u64> {
        let now = now_ms() + 1;
        let last = self.last_ms.load(Ordering::Relaxed);
        let every_ms = u64::try_from(every.as_millis()).unwrap_or(u64::MAX);
        if last != 0 && now.saturating_sub(last) < every_ms {
            self.held_back.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        match self
            .last_ms
            .compare_exchange(last, now, Ordering::Relaxed, Ordering::Relaxed)
        {
            Ok(_) => Some(self.held_back.swap(0, Ordering::Relaxed)),
            Err(_) => {
                self.held_back.fetch_add(1, Ordering::Relaxed);
                None
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_occurrence_a_period_is_let_through_with_the_count_held_back() {
        let throttle = Throttle::new();
        assert_eq!(throttle.allow(Duration::from_millis(50)), Some(0));
        for _ in 0..5 {
            assert_eq!(throttle.allow(Duration::from_millis(50)), None);
        }
        std::thread::sleep(Duration::from_millis(60));
        assert_eq!(throttle.allow(Duration::from_millis(50)), Some(5));
    }
}
