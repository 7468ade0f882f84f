//! Failures of a listener's `accept`: which pass, and how long the accept
//! loop waits before trying again.

use std::time::Duration;

/// Accept failures that pass (out of descriptors, a connection reset in
/// the backlog): waited out with a growing pause, and logged at most once
/// a second instead of at every retry.
#[derive(Default)]
pub struct AcceptErrors {
    pause: Duration,
    last_logged: Option<std::time::Instant>,
    since_logged: u64,
}

impl AcceptErrors {
    /// Waits out `error`, each time longer (10 ms to 1 s).
    pub async fn wait(&mut self, error: &std::io::Error) {
        self.since_logged += 1;
        if self
            .last_logged
            .is_none_or(|at| at.elapsed() >= Duration::from_secs(1))
        {
            tracing::warn!(error = %error, failures = self.since_logged, "accept failed; pausing");
            self.last_logged = Some(std::time::Instant::now());
            self.since_logged = 0;
        }
        self.pause = (self.pause * 2).clamp(Duration::from_millis(10), Duration::from_secs(1));
        tokio::time::sleep(self.pause).await;
    }

    /// An accept succeeded: the next failure waits the least again.
    pub fn reset(&mut self) {
        self.pause = Duration::ZERO;
    }
}

/// Whether an accept failure passes (the listener stays usable).
pub fn is_transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || matches!(
        error.raw_os_error(),
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: resources that come back.
        Some(24 | 23 | 105 | 12)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{Error, ErrorKind};

    #[test]
    fn running_out_of_descriptors_passes_and_a_bad_listener_does_not() {
        assert!(is_transient(&Error::from_raw_os_error(24)), "EMFILE");
        assert!(is_transient(&Error::from(ErrorKind::ConnectionAborted)));
        assert!(!is_transient(&Error::from(ErrorKind::InvalidInput)));
        assert!(!is_transient(&Error::from_raw_os_error(9)), "EBADF");
    }

    #[tokio::test(start_paused = true)]
    async fn each_failure_waits_longer_until_an_accept_succeeds() {
        let mut errors = AcceptErrors::default();
        let error = Error::from_raw_os_error(24);
        let mut waited = Vec::new();
        for _ in 0..9 {
            let before = tokio::time::Instant::now();
            errors.wait(&error).await;
            waited.push(before.elapsed().as_millis());
        }
        assert_eq!(waited, [10, 20, 40, 80, 160, 320, 640, 1000, 1000]);
        errors.reset();
        let before = tokio::time::Instant::now();
        errors.wait(&error).await;
        assert_eq!(before.elapsed().as_millis(), 10);
    }
}
