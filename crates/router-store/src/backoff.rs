//! Reconnecting a lost LISTEN connection without flooding the log: the
//! pause doubles from half a second to 30 s while the database stays
//! away, and one warning is logged when the connection is lost, then at
//! most one a minute with how many attempts failed since (issue 30: a
//! warning every 500 ms while the database was down).

use std::time::{Duration, Instant};

const FIRST_PAUSE: Duration = Duration::from_millis(500);
const LONGEST_PAUSE: Duration = Duration::from_secs(30);
/// At most one warning this often while the failures go on.
const WARN_EVERY: Duration = Duration::from_secs(60);

/// The state of one reconnecting loop.
#[derive(Debug)]
pub(crate) struct Reconnect {
    what: &'static str,
    pause: Duration,
    failures: u64,
    last_warned: Option<Instant>,
}

impl Reconnect {
    /// `what` names the connection in the log lines.
    pub(crate) fn new(what: &'static str) -> Reconnect {
        Reconnect {
            what,
            pause: FIRST_PAUSE,
            failures: 0,
            last_warned: None,
        }
    }

    /// A failure (losing the connection, or a reconnect that failed): logs
    /// it if due, and returns how long to wait before the next attempt.
    pub(crate) fn failed(&mut self, error: &dyn std::fmt::Display) -> Duration {
        self.failures += 1;
        let due = self.last_warned.is_none_or(|at| at.elapsed() >= WARN_EVERY);
        if due {
            tracing::warn!(
                error = %error,
                failures = self.failures,
                retry_in_ms = self.pause.as_millis() as u64,
                "{} lost; reconnecting",
                self.what
            );
            self.last_warned = Some(Instant::now());
        } else {
            tracing::debug!(error = %error, failures = self.failures, "{} reconnect failed", self.what);
        }
        let pause = self.pause;
        self.pause = (self.pause * 2).min(LONGEST_PAUSE);
        pause
    }

    /// Connected again: logged once if a warning was, and the pause starts over.
    pub(crate) fn connected(&mut self) {
        if self.failures > 0 {
            tracing::info!(failures = self.failures, "{} back", self.what);
        }
        *self = Reconnect::new(self.what);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_pause_doubles_to_a_ceiling_and_starts_over_when_connected() {
        let mut reconnect = Reconnect::new("test listener");
        let pauses: Vec<u64> = (0..9)
            .map(|_| reconnect.failed(&"down").as_millis() as u64)
            .collect();
        assert_eq!(
            pauses,
            [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000]
        );
        // Only the first failure of the minute warned.
        assert!(reconnect.last_warned.is_some());
        assert_eq!(reconnect.failures, 9);
        reconnect.connected();
        assert_eq!(reconnect.failed(&"down again"), FIRST_PAUSE);
    }
}
