//! A router that is stopping (SIGTERM): first it *drains* (no new
//! connections, readiness answers 503, requests in flight run on), then,
//! if the drain's time runs out with requests still running, it *stops*
//! them: each in-flight attempt ends as [`crate::supplier::AttemptError::shutdown`],
//! recorded, its hold voided at once, and the client gets its protocol's
//! error reply or stream error event (issue 30: the stream was cut with no
//! error event and its hold waited for the reaper).

use std::sync::atomic::{AtomicBool, Ordering};

/// The stopping state of one gateway.
#[derive(Debug)]
pub struct Shutdown {
    draining: AtomicBool,
    stop: tokio::sync::watch::Sender<bool>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown {
            draining: AtomicBool::new(false),
            stop: tokio::sync::watch::Sender::new(false),
        }
    }
}

impl Shutdown {
    /// The drain begins: readiness answers 503 from now on.
    pub fn begin_drain(&self) {
        self.draining.store(true, Ordering::Release);
    }

    pub fn is_draining(&self) -> bool {
        self.draining.load(Ordering::Acquire)
    }

    /// The drain's time is over: every request still running stops now.
    pub fn stop_in_flight(&self) {
        self.begin_drain();
        self.stop.send_replace(true);
    }

    /// A handle that resolves once [`Shutdown::stop_in_flight`] is called.
    pub fn watcher(&self) -> StopWatcher {
        StopWatcher(self.stop.subscribe())
    }
}

/// Waits for the stop of in-flight requests (see [`Shutdown`]).
#[derive(Debug, Clone)]
pub struct StopWatcher(tokio::sync::watch::Receiver<bool>);

impl StopWatcher {
    /// Resolves when in-flight requests must stop (never, if the gateway
    /// is dropped without stopping them).
    pub async fn stopped(&mut self) {
        if self.0.wait_for(|stop| *stop).await.is_err() {
            std::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn a_watcher_wakes_when_in_flight_requests_stop() {
        let shutdown = Shutdown::default();
        let mut watcher = shutdown.watcher();
        assert!(!shutdown.is_draining());
        shutdown.begin_drain();
        assert!(shutdown.is_draining());
        let waiting = tokio::time::timeout(Duration::from_millis(50), watcher.stopped()).await;
        assert!(waiting.is_err(), "draining alone stops nothing");
        shutdown.stop_in_flight();
        tokio::time::timeout(Duration::from_secs(1), watcher.stopped())
            .await
            .expect("stopped");
        // A watcher made after the stop sees it at once.
        tokio::time::timeout(Duration::from_secs(1), shutdown.watcher().stopped())
            .await
            .expect("stopped");
    }
}
