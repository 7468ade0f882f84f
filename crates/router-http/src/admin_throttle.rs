//! Failed operator authentication, limited per client address
//! (`ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE`): an address that presented
//! that many wrong or missing operator tokens within a minute is answered
//! 429 `rate_limited` with `Retry-After` on every operator route, before its
//! token is even compared, until its minute is over. So a weak token cannot
//! be guessed at the speed of the network (issue 33). The counts live in
//! this process (each instance limits on its own) and are bounded: at most
//! [`MAX_ADDRESSES`] addresses are remembered, the oldest minute forgotten
//! first.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// The window the failures are counted over.
const WINDOW: Duration = Duration::from_secs(60);
/// Addresses remembered at most (a flood from many addresses cannot grow
/// the map without bound).
pub const MAX_ADDRESSES: usize = 4096;

struct Window {
    started: Instant,
    failures: u32,
}

/// The failure counts of one process.
pub struct AdminAuthThrottle {
    /// Failures allowed per address per minute; 0: no limit.
    per_minute: u32,
    windows: Mutex<HashMap<IpAddr, Window>>,
}

impl AdminAuthThrottle {
    pub fn new(per_minute: u32) -> AdminAuthThrottle {
        AdminAuthThrottle {
            per_minute,
            windows: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Window>> {
        self.windows
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `Some(seconds)` to wait when `address` has used up its failures.
    pub fn blocked(&self, address: IpAddr, now: Instant) -> Option<u64> {
        if self.per_minute == 0 {
            return None;
        }
        let windows = self.lock();
        let window = windows.get(&address)?;
        let elapsed = now.saturating_duration_since(window.started);
        (elapsed < WINDOW && window.failures >= self.per_minute)
            .then(|| (WINDOW - elapsed).as_secs().max(1))
    }

    /// Counts one failed authentication from `address`.
    pub fn failed(&self, address: IpAddr, now: Instant) {
        if self.per_minute == 0 {
            return;
        }
        let mut windows = self.lock();
        if windows.len() >= MAX_ADDRESSES && !windows.contains_key(&address) {
            windows.retain(|_, w| now.saturating_duration_since(w.started) < WINDOW);
            if windows.len() >= MAX_ADDRESSES
                && let Some(oldest) = windows
                    .iter()
                    .min_by_key(|(_, w)| w.started)
                    .map(|(a, _)| *a)
            {
                windows.remove(&oldest);
            }
        }
        let window = windows.entry(address).or_insert(Window {
            started: now,
            failures: 0,
        });
        if now.saturating_duration_since(window.started) >= WINDOW {
            *window = Window {
                started: now,
                failures: 0,
            };
        }
        window.failures = window.failures.saturating_add(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_is_blocked_after_its_failures_until_its_minute_ends() {
        let throttle = AdminAuthThrottle::new(3);
        let (a, b): (IpAddr, IpAddr) = ("192.0.2.1".parse().unwrap(), "192.0.2.2".parse().unwrap());
        let t0 = Instant::now();
        for _ in 0..3 {
            assert_eq!(throttle.blocked(a, t0), None);
            throttle.failed(a, t0);
        }
        assert_eq!(throttle.blocked(a, t0), Some(60));
        assert_eq!(throttle.blocked(a, t0 + Duration::from_secs(45)), Some(15));
        assert_eq!(throttle.blocked(b, t0), None, "per address");
        assert_eq!(throttle.blocked(a, t0 + WINDOW), None);
        throttle.failed(a, t0 + WINDOW);
        assert_eq!(throttle.blocked(a, t0 + WINDOW), None, "a new minute");
    }

    #[test]
    fn zero_is_no_limit_and_the_map_is_bounded() {
        let off = AdminAuthThrottle::new(0);
        let a: IpAddr = "192.0.2.1".parse().unwrap();
        let t0 = Instant::now();
        for _ in 0..100 {
            off.failed(a, t0);
        }
        assert_eq!(off.blocked(a, t0), None);
        let throttle = AdminAuthThrottle::new(1);
        for i in 0..(MAX_ADDRESSES as u32 + 10) {
            throttle.failed(IpAddr::from(i.to_be_bytes()), t0);
        }
        assert!(throttle.lock().len() <= MAX_ADDRESSES);
    }
}
