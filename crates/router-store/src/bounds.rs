//! Client-side bounds on the database waits of the request path.
//!
//! A database that stops answering (a black-holed path: connections
//! accepted, nothing answered) is seen by no error of its own: without a
//! bound of the router's, every request waits until the path heals. Each
//! wait therefore has one ([`DatabaseLimits`]): establishing a connection,
//! checking one out of the pool, the statements of one operation, and a
//! lock wait on the server (`lock_timeout`, so that a statement blocked on
//! a row lock ends on the server, rolled back, before the router gives up
//! on it). A connection whose operation outlived its bound is closed, not
//! returned to the pool ([`PooledConnection`]): what is still in flight on
//! it must not meet the next user.

use deadpool::managed::Object;
use diesel_async::AsyncPgConnection;
use diesel_async::pooled_connection::AsyncDieselConnectionManager;
use router_core::store::StoreError;
use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The bounds of [`crate::Database`]'s waits (`ROUTER_DB_*_MS`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DatabaseLimits {
    /// Establishing a new connection (TCP, TLS, start-up and authentication).
    pub connect_timeout: Duration,
    /// Waiting for a pooled connection (a new one is bounded by `connect_timeout`).
    pub checkout_timeout: Duration,
    /// The statements of one operation, once it has its connection.
    pub statement_timeout: Duration,
    /// A row-lock wait on the server (`lock_timeout` of every pooled
    /// connection); below `statement_timeout`, so that a statement blocked
    /// on a lock is rolled back before the router stops waiting for it.
    pub lock_timeout: Duration,
}

impl Default for DatabaseLimits {
    fn default() -> Self {
        DatabaseLimits {
            connect_timeout: Duration::from_secs(5),
            checkout_timeout: Duration::from_secs(5),
            statement_timeout: Duration::from_secs(5),
            lock_timeout: Duration::from_secs(2),
        }
    }
}

impl DatabaseLimits {
    /// Why these limits cannot work together, if they cannot.
    pub fn check(&self) -> Result<(), String> {
        if self.lock_timeout >= self.statement_timeout {
            return Err(format!(
                "the lock timeout ({} ms) must be below the statement timeout ({} ms)",
                self.lock_timeout.as_millis(),
                self.statement_timeout.as_millis()
            ));
        }
        Ok(())
    }

    /// The longest one operation of the request path waits: a checkout,
    /// then its statements.
    pub fn operation(&self) -> Duration {
        self.checkout_timeout + self.statement_timeout
    }
}

/// How far the database server's clock is ahead of this process's, in
/// milliseconds (negative: behind), as the last connection established
/// measured it. A billing statement's `valid_until` is written in the
/// server's time ([`server_deadline`]), so that a skew between the two
/// clocks neither refuses statements that arrive in time nor lets late
/// ones through. One value per process: the router talks to one server.
static SERVER_CLOCK_AHEAD_MS: AtomicI64 = AtomicI64::new(0);

/// Records the server's clock, read at `server` (Unix milliseconds) by a
/// query sent at `sent` and answered at `answered`.
pub(crate) fn server_clock_read(server_ms: i64, sent: SystemTime, answered: SystemTime) {
    let millis = |t: SystemTime| {
        t.duration_since(UNIX_EPOCH)
            .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
    };
    let midpoint = millis(sent) / 2 + millis(answered) / 2;
    SERVER_CLOCK_AHEAD_MS.store(server_ms.saturating_sub(midpoint), Ordering::Relaxed);
}

/// `after` from now, in the server's time (see [`SERVER_CLOCK_AHEAD_MS`]).
pub(crate) fn server_deadline(after: Duration) -> SystemTime {
    let ahead = SERVER_CLOCK_AHEAD_MS.load(Ordering::Relaxed);
    let skew = Duration::from_millis(ahead.unsigned_abs());
    let now = SystemTime::now();
    let now = if ahead >= 0 { now + skew } else { now - skew };
    now + after
}

/// A connection checked out of the pool, for composing the query functions
/// of this crate (they take `&mut AsyncPgConnection`; this derefs to one).
///
/// Dropped after its operation's bound (`statement_timeout` since the
/// checkout), it is closed instead of returned to the pool: its operation
/// was abandoned, or so slow that the connection is suspect, and a reply
/// still in flight must not meet the next user.
pub struct PooledConnection {
    conn: Option<Object<AsyncDieselConnectionManager<AsyncPgConnection>>>,
    taken_at: Instant,
    discard_after: Duration,
}

impl PooledConnection {
    pub(crate) fn new(
        conn: Object<AsyncDieselConnectionManager<AsyncPgConnection>>,
        discard_after: Duration,
    ) -> Self {
        PooledConnection {
            conn: Some(conn),
            taken_at: Instant::now(),
            discard_after,
        }
    }
}

impl Deref for PooledConnection {
    type Target = AsyncPgConnection;
    fn deref(&self) -> &AsyncPgConnection {
        match &self.conn {
            Some(conn) => conn,
            None => unreachable!("taken only when dropped"),
        }
    }
}

impl DerefMut for PooledConnection {
    fn deref_mut(&mut self) -> &mut AsyncPgConnection {
        match &mut self.conn {
            Some(conn) => conn,
            None => unreachable!("taken only when dropped"),
        }
    }
}

impl Drop for PooledConnection {
    fn drop(&mut self) {
        if self.taken_at.elapsed() >= self.discard_after
            && let Some(conn) = self.conn.take()
        {
            metrics::counter!("router_db_connections_discarded_total").increment(1);
            drop(Object::take(conn));
        }
    }
}

/// `operation`, given at most `bound`: past it, the database is
/// unavailable for this request (a 503 with `Retry-After`). The operation
/// is dropped where it stands; its connection is closed, not pooled
/// ([`PooledConnection`]).
pub(crate) async fn within<T, E: From<StoreError>>(
    bound: Duration,
    what: &'static str,
    operation: impl Future<Output = Result<T, E>>,
) -> Result<T, E> {
    match tokio::time::timeout(bound, operation).await {
        Ok(outcome) => outcome,
        Err(_) => Err(timed_out(what, bound).into()),
    }
}

/// The error of a database wait that outlived its bound.
pub(crate) fn timed_out(what: &'static str, bound: Duration) -> StoreError {
    metrics::counter!("router_db_timeouts_total", "operation" => what).increment(1);
    StoreError::Unavailable(format!(
        "the database did not answer {what} within {} ms",
        bound.as_millis()
    ))
}

/// Whether `error` is a wait that outlived its bound ([`timed_out`]): what
/// was sent may have been done, its answer lost.
pub(crate) fn is_timeout(error: &StoreError) -> bool {
    matches!(error, StoreError::Unavailable(cause) if cause.starts_with("the database did not answer"))
}

/// Whether `error` is a statement the server cancelled on its lock
/// timeout: it was rolled back, so running it again is safe.
pub(crate) fn is_lock_timeout(error: &StoreError) -> bool {
    matches!(error, StoreError::Unavailable(cause) if cause.contains("due to lock timeout"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_lock_wait_must_end_before_the_statement_wait() {
        assert!(DatabaseLimits::default().check().is_ok());
        let limits = DatabaseLimits {
            lock_timeout: Duration::from_secs(5),
            ..DatabaseLimits::default()
        };
        assert!(limits.check().unwrap_err().contains("lock timeout"));
    }

    #[test]
    fn a_statement_deadline_is_in_the_servers_time() {
        let now = SystemTime::now();
        let server = now + Duration::from_secs(30);
        let server_ms = server.duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
        server_clock_read(server_ms, now, now);
        let deadline = server_deadline(Duration::from_secs(1));
        SERVER_CLOCK_AHEAD_MS.store(0, Ordering::Relaxed);
        let ahead = deadline.duration_since(now).unwrap();
        assert!(
            ahead >= Duration::from_secs(31) && ahead < Duration::from_secs(32),
            "{ahead:?}"
        );
    }

    #[tokio::test]
    async fn an_operation_past_its_bound_is_unavailable() {
        let slow = within(Duration::from_millis(20), "a test", async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, StoreError>(())
        });
        let started = Instant::now();
        let outcome = slow.await;
        assert!(started.elapsed() < Duration::from_secs(2));
        assert!(
            matches!(outcome, Err(StoreError::Unavailable(cause)) if cause.contains("within 20 ms"))
        );
    }
}
