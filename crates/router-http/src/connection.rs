//! What a client connection may hold, and for how long (issue 33: a partial
//! request line, headers trickled a byte every 10 s or an idle keep-alive
//! connection stayed open for ever, and 20,000 half-open connections ran the
//! process out of file descriptors).
//!
//! - **Admission.** At most [`ConnectionLimits::max_connections`] at once:
//!   past it the accept loop waits (the kernel's backlog holds the rest)
//!   instead of accepting into `Too many open files`. At most
//!   [`ConnectionLimits::max_connections_per_address`] from one address
//!   (IPv6: one /64): past it a new connection is closed at once, so one
//!   client cannot take every slot.
//! - **Idle connections.** [`Activity`] follows each connection: a
//!   connection with no request in progress is closed when the head of its
//!   next request has not fully arrived within `header_read_timeout` of its
//!   first byte (or of the accept, for a connection that never sent one),
//!   or when it has sent nothing for `keep_alive_idle` since its last
//!   answer. A request in progress is bounded by the body's pace
//!   (`crate::body::BodyPace`) and the routing deadline, not by these.
//! - **HTTP/2.** A PING every `h2_keep_alive_interval`, unanswered for as
//!   long, closes the connection (a peer that vanished).

use std::collections::HashMap;
use std::future::Future;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

/// The limits of client connections (`ROUTER_HEADER_READ_TIMEOUT_SECS`,
/// `ROUTER_KEEP_ALIVE_IDLE_SECS`, `ROUTER_H2_KEEP_ALIVE_SECS`,
/// `ROUTER_MAX_CONNECTIONS`, `ROUTER_MAX_CONNECTIONS_PER_ADDRESS`, and the
/// body's pace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectionLimits {
    pub header_read_timeout: Duration,
    pub keep_alive_idle: Duration,
    pub h2_keep_alive_interval: Duration,
    pub max_connections: usize,
    /// 0: no per-address limit (behind a load balancer every connection
    /// comes from its few addresses).
    pub max_connections_per_address: usize,
    pub body: crate::body::BodyPace,
    /// How long requests in flight may run on after SIGTERM
    /// (`ROUTER_DRAIN_SECS`); those still running then are stopped.
    pub drain: Duration,
}

/// The default drain: the routing deadline (180 s) and a little more, so
/// a request that started just before SIGTERM can finish and settle.
pub const DEFAULT_DRAIN: Duration = Duration::from_secs(190);

/// Connections kept free of client use below the process's descriptor
/// limit: the database pool, supplier connections, spool and catalog files.
const RESERVED_DESCRIPTORS: u64 = 512;
/// The default cap never exceeds this, whatever the descriptor limit.
const DEFAULT_MAX_CONNECTIONS: u64 = 16_384;

impl ConnectionLimits {
    /// The default total: 16,384, or fewer when the descriptor limit
    /// (`RLIMIT_NOFILE`, raised to its hard limit at start) leaves less
    /// room than that beside [`RESERVED_DESCRIPTORS`].
    pub fn default_max_connections() -> usize {
        let descriptors = raise_descriptor_limit();
        let room = descriptors.saturating_sub(RESERVED_DESCRIPTORS).max(64);
        room.min(DEFAULT_MAX_CONNECTIONS) as usize
    }
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_idle: Duration::from_secs(75),
            h2_keep_alive_interval: Duration::from_secs(30),
            max_connections: Self::default_max_connections(),
            max_connections_per_address: 256,
            body: crate::body::BodyPace::default(),
            drain: DEFAULT_DRAIN,
        }
    }
}

/// Raises the soft descriptor limit to the hard one (as Go's runtime and
/// many servers do) and returns the limit in force.
fn raise_descriptor_limit() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    match getrlimit(Resource::RLIMIT_NOFILE) {
        Ok((soft, hard)) if soft < hard => {
            if setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
                hard
            } else {
                soft
            }
        }
        Ok((soft, _)) => soft,
        Err(_) => 1024,
    }
}

/// Admission of new connections, total and per address.
pub struct Admission {
    total: Arc<Semaphore>,
    per_address: Mutex<HashMap<IpAddr, usize>>,
    cap_per_address: usize,
}

/// One admitted connection's place; freed when dropped.
pub struct Admitted {
    _permit: OwnedSemaphorePermit,
    address: Option<IpAddr>,
    admission: Arc<Admission>,
}

impl Admission {
    pub fn new(limits: &ConnectionLimits) -> Arc<Admission> {
        Arc::new(Admission {
            total: Arc::new(Semaphore::new(limits.max_connections.max(1))),
            per_address: Mutex::new(HashMap::new()),
            cap_per_address: limits.max_connections_per_address,
        })
    }

    /// Waits for a free place in the total: back-pressure on the accept
    /// loop.
    pub async fn place(&self) -> OwnedSemaphorePermit {
        match self.total.clone().acquire_owned().await {
            Ok(permit) => permit,
            // The semaphore is never closed.
            Err(_) => std::future::pending().await,
        }
    }

    /// Admits a connection from `peer` into `place`; `None` when its
    /// address already holds its share.
    pub fn admit(self: &Arc<Self>, place: OwnedSemaphorePermit, peer: IpAddr) -> Option<Admitted> {
        if self.cap_per_address == 0 {
            return Some(Admitted {
                _permit: place,
                address: None,
                admission: self.clone(),
            });
        }
        let address = address_key(peer);
        let mut counts = self.per_address.lock().unwrap_or_else(|e| e.into_inner());
        let count = counts.entry(address).or_insert(0);
        if *count >= self.cap_per_address {
            return None;
        }
        *count += 1;
        Some(Admitted {
            _permit: place,
            address: Some(address),
            admission: self.clone(),
        })
    }
}

impl Drop for Admitted {
    fn drop(&mut self) {
        if let Some(address) = self.address {
            let mut counts = self
                .admission
                .per_address
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            if let Some(count) = counts.get_mut(&address) {
                *count -= 1;
                if *count == 0 {
                    counts.remove(&address);
                }
            }
        }
    }
}

/// The address a connection counts against: IPv4 as it is (an IPv4-mapped
/// IPv6 address as its IPv4), IPv6 by its /64, the smallest block one
/// client is usually given.
fn address_key(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6) & !((1u128 << 64) - 1);
                IpAddr::V6(bits.into())
            }
        },
    }
}

/// What one connection is doing, for its idle deadlines.
pub struct Activity {
    opened: Instant,
    /// Requests in progress (h2 may have several).
    active: AtomicU32,
    /// Milliseconds after `opened` when the connection last became idle.
    idle_since_ms: AtomicU64,
    /// Milliseconds after `opened`, plus one, when the first byte of the
    /// next request arrived; 0: none yet.
    head_started_ms: AtomicU64,
    /// Whether a request was ever answered (an idle connection then waits
    /// `keep_alive_idle`, a fresh one `header_read_timeout`).
    served: AtomicBool,
    /// HTTP/2 (its idle connection still exchanges frames: no head timer).
    h2: AtomicBool,
}

impl Activity {
    pub fn new() -> Arc<Activity> {
        Arc::new(Activity {
            opened: Instant::now(),
            active: AtomicU32::new(0),
            idle_since_ms: AtomicU64::new(0),
            head_started_ms: AtomicU64::new(0),
            served: AtomicBool::new(false),
            h2: AtomicBool::new(false),
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX - 1)
    }

    /// A request's head has arrived; the guard ends it.
    pub fn request_started(self: &Arc<Self>) -> RequestInProgress {
        self.active.fetch_add(1, Ordering::AcqRel);
        self.head_started_ms.store(0, Ordering::Release);
        RequestInProgress(self.clone())
    }

    /// Bytes arrived: the first of an idle connection start its next head.
    fn bytes_read(&self, first: &[u8]) {
        if self.active.load(Ordering::Acquire) == 0
            && self.head_started_ms.load(Ordering::Acquire) == 0
            && !self.h2.load(Ordering::Relaxed)
        {
            if !self.served.load(Ordering::Relaxed) && first.starts_with(b"PRI * HTTP/2") {
                self.h2.store(true, Ordering::Relaxed);
                return;
            }
            self.head_started_ms
                .store(self.now_ms() + 1, Ordering::Release);
        }
    }

    /// When the connection should be closed if nothing changes; `None`
    /// while a request is in progress.
    fn deadline(&self, limits: &ConnectionLimits) -> Option<Instant> {
        if self.active.load(Ordering::Acquire) > 0 {
            return None;
        }
        let head = self.head_started_ms.load(Ordering::Acquire);
        let at = |ms: u64, wait: Duration| self.opened + Duration::from_millis(ms) + wait;
        if head > 0 {
            return Some(at(head - 1, limits.header_read_timeout));
        }
        let idle_since = self.idle_since_ms.load(Ordering::Acquire);
        let wait = if self.served.load(Ordering::Acquire) {
            limits.keep_alive_idle
        } else {
            limits.header_read_timeout
        };
        Some(at(idle_since, wait))
    }
}

/// A request in progress on a connection; dropped with its response body
/// (or with the handler, when the client left first).
pub struct RequestInProgress(Arc<Activity>);

impl Drop for RequestInProgress {
    fn drop(&mut self) {
        let activity = &self.0;
        activity.served.store(true, Ordering::Release);
        activity
            .idle_since_ms
            .store(activity.now_ms(), Ordering::Release);
        activity.active.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Runs `connection` until it ends or its idle deadline passes (then it is
/// dropped, which closes the socket).
///
/// Nothing wakes the watcher when a request starts or ends (that would be a
/// task wake-up per request): it looks again at least every
/// `header_read_timeout` or `keep_alive_idle`, whichever is shorter, so a
/// deadline is kept to within that much.
pub async fn watch<F: Future>(
    connection: F,
    activity: Arc<Activity>,
    limits: Arc<ConnectionLimits>,
) -> Option<F::Output> {
    tokio::pin!(connection);
    let look_every = limits.header_read_timeout.min(limits.keep_alive_idle);
    let timer = tokio::time::sleep(look_every);
    tokio::pin!(timer);
    loop {
        let now = Instant::now();
        let next_look = now + look_every;
        let wake = match activity.deadline(&limits) {
            Some(at) if at <= now => {
                tracing::debug!("closing an idle connection");
                return None;
            }
            Some(at) => at.min(next_look),
            None => next_look,
        };
        timer.as_mut().reset(wake);
        tokio::select! {
            output = &mut connection => return Some(output),
            () = &mut timer => {}
        }
    }
}

/// A socket that tells its [`Activity`] when bytes arrive.
pub struct Watched<T> {
    inner: T,
    activity: Arc<Activity>,
}

impl<T> Watched<T> {
    pub fn new(inner: T, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Watched<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(polled, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.bytes_read(&buf.filled()[before..]);
        }
        polled
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Watched<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

/// A response body that keeps its request in progress until it is sent,
/// and tells `sent` what went out: 0 bytes as it is created (the head goes
/// out with, or before, the first frame), then each data frame's length.
pub struct Tracked<B, S> {
    inner: B,
    _request: RequestInProgress,
    _counted: InFlight,
    sent: Option<S>,
}

impl<B, S: Fn(usize)> Tracked<B, S> {
    pub fn new(inner: B, request: RequestInProgress, counted: InFlight, sent: Option<S>) -> Self {
        if let Some(sent) = &sent {
            sent(0);
        }
        Tracked {
            inner,
            _request: request,
            _counted: counted,
            sent,
        }
    }
}

/// One request counted among the server's requests in flight (what a
/// drain waits for), from its head to the end of its answer.
pub struct InFlight(Arc<AtomicU64>);

impl InFlight {
    pub fn enter(count: &Arc<AtomicU64>) -> InFlight {
        count.fetch_add(1, Ordering::AcqRel);
        InFlight(count.clone())
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl<B: hyper::body::Body + Unpin, S: Fn(usize) + Unpin> hyper::body::Body for Tracked<B, S> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<B::Data>, B::Error>>> {
        let polled = Pin::new(&mut self.inner).poll_frame(cx);
        if let (Poll::Ready(Some(Ok(frame))), Some(sent)) = (&polled, &self.sent)
            && let Some(data) = frame.data_ref()
        {
            sent(bytes::Buf::remaining(data));
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_counts_as_itself_or_its_slash_64() {
        let v4: IpAddr = "203.0.113.7".parse().unwrap();
        assert_eq!(address_key(v4), v4);
        let mapped: IpAddr = "::ffff:203.0.113.7".parse().unwrap();
        assert_eq!(address_key(mapped), v4);
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::9".parse().unwrap();
        let other: IpAddr = "2001:db8:1:3::1".parse().unwrap();
        assert_eq!(address_key(a), address_key(b));
        assert_ne!(address_key(a), address_key(other));
    }

    #[tokio::test]
    async fn an_address_past_its_share_is_refused_and_freed_on_drop() {
        let limits = ConnectionLimits {
            max_connections: 10,
            max_connections_per_address: 2,
            ..ConnectionLimits::default()
        };
        let admission = Admission::new(&limits);
        let peer: IpAddr = "192.0.2.1".parse().unwrap();
        let first = admission.admit(admission.place().await, peer).unwrap();
        let _second = admission.admit(admission.place().await, peer).unwrap();
        assert!(admission.admit(admission.place().await, peer).is_none());
        let stranger: IpAddr = "192.0.2.2".parse().unwrap();
        assert!(admission.admit(admission.place().await, stranger).is_some());
        drop(first);
        assert!(admission.admit(admission.place().await, peer).is_some());
    }

    #[tokio::test(start_paused = true)]
    async fn deadlines_follow_the_connection() {
        let limits = ConnectionLimits {
            header_read_timeout: Duration::from_secs(10),
            keep_alive_idle: Duration::from_secs(75),
            ..ConnectionLimits::default()
        };
        let activity = Activity::new();
        let opened = activity.opened;
        // A fresh connection has the head timeout from its accept.
        assert_eq!(
            activity.deadline(&limits),
            Some(opened + Duration::from_secs(10))
        );
        let request = activity.request_started();
        assert_eq!(activity.deadline(&limits), None, "busy");
        tokio::time::advance(Duration::from_secs(100)).await;
        drop(request);
        // Idle after an answer: the keep-alive wait.
        assert_eq!(
            activity.deadline(&limits),
            Some(opened + Duration::from_secs(175))
        );
        tokio::time::advance(Duration::from_secs(5)).await;
        activity.bytes_read(b"G");
        // A head begun: ten seconds to finish it.
        assert_eq!(
            activity.deadline(&limits),
            Some(opened + Duration::from_secs(115))
        );
    }
}
