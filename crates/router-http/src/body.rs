//! Reading request bodies under a size limit (Q-01, CF-02) and a pace:
//! every body the router reads is an [`Incoming`], which ends in
//! [`BodyError::Idle`] when the client sends nothing for a while and in
//! [`BodyError::TooSlow`] when it sends too little over time (issue 33:
//! a POST that declares a body and trickles or withholds it held memory
//! and a connection for as long as the client liked).

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::{Body, Frame, SizeHint};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;
use tokio::time::{Instant, Sleep};

/// How fast a request body must arrive (`ROUTER_BODY_IDLE_TIMEOUT_SECS`,
/// `ROUTER_BODY_MIN_BYTES_PER_SEC`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BodyPace {
    /// The longest wait for the next bytes of a body.
    pub idle: Duration,
    /// The least average rate, bytes per second, once the body has been
    /// arriving for longer than `idle`; 0: no minimum.
    pub min_bytes_per_sec: u64,
}

impl Default for BodyPace {
    fn default() -> Self {
        BodyPace {
            idle: Duration::from_secs(30),
            min_bytes_per_sec: 1024,
        }
    }
}

/// Why a body could not be read.
#[derive(Debug, thiserror::Error)]
pub enum BodyError {
    #[error("the connection failed while the body was read: {0}")]
    Read(#[from] hyper::Error),
    #[error("no body bytes arrived for {0:?}")]
    Idle(Duration),
    #[error("the body arrived slower than {0} bytes a second")]
    TooSlow(u64),
}

impl BodyError {
    /// The client was too slow (408), as opposed to a broken connection.
    pub fn is_timeout(&self) -> bool {
        matches!(self, BodyError::Idle(_) | BodyError::TooSlow(_))
    }
}

/// Why a whole body was not read ([`read_limited`]).
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// More than the limit: declared by `Content-Length`, or arrived.
    #[error("the request body exceeds the {limit}-byte limit")]
    TooLarge { limit: usize },
    #[error(transparent)]
    Body(#[from] BodyError),
}

/// A request body as the router reads it: hyper's, under a [`BodyPace`].
pub struct Incoming {
    inner: hyper::body::Incoming,
    pace: BodyPace,
    started: Instant,
    last_bytes: Instant,
    received: u64,
    /// Armed only when a read has to wait (most bodies arrive with their head).
    timer: Option<Pin<Box<Sleep>>>,
}

impl Incoming {
    pub fn new(inner: hyper::body::Incoming, pace: BodyPace) -> Incoming {
        let now = Instant::now();
        Incoming {
            inner,
            pace,
            started: now,
            last_bytes: now,
            received: 0,
            timer: None,
        }
    }

    /// Whether the average rate so far is below the minimum, once the
    /// body has been arriving for longer than the idle allowance.
    fn too_slow(&self, now: Instant) -> bool {
        let elapsed = now.saturating_duration_since(self.started);
        self.pace.min_bytes_per_sec > 0
            && elapsed > self.pace.idle
            && u128::from(self.received) * 1000
                < u128::from(self.pace.min_bytes_per_sec) * elapsed.as_millis()
    }
}

impl Body for Incoming {
    type Data = Bytes;
    type Error = BodyError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BodyError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref()
                    && !data.is_empty()
                {
                    let now = Instant::now();
                    this.received += data.len() as u64;
                    this.last_bytes = now;
                    if this.too_slow(now) {
                        return Poll::Ready(Some(Err(BodyError::TooSlow(
                            this.pace.min_bytes_per_sec,
                        ))));
                    }
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => Poll::Ready(Some(Err(BodyError::Read(e)))),
            Poll::Ready(None) => Poll::Ready(None),
            Poll::Pending => {
                let deadline = this.last_bytes + this.pace.idle;
                let timer = this
                    .timer
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
                if timer.deadline() != deadline {
                    timer.as_mut().reset(deadline);
                }
                match timer.as_mut().poll(cx) {
                    Poll::Ready(()) => Poll::Ready(Some(Err(if this.too_slow(Instant::now()) {
                        BodyError::TooSlow(this.pace.min_bytes_per_sec)
                    } else {
                        BodyError::Idle(this.pace.idle)
                    }))),
                    Poll::Pending => Poll::Pending,
                }
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The most a body's buffer reserves before its bytes arrive: a declared
/// length is a promise, not bytes (100 bodies declaring 8 MiB and sending
/// nothing must not take 800 MiB).
const INITIAL_BUFFER_CAP: usize = 256 * 1024;

/// The declared `Content-Length`, if any.
pub fn declared_length(headers: &http::HeaderMap) -> Option<u64> {
    headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Read the whole body, refusing more than `limit` bytes: first by the
/// declared Content-Length (413 at once, before any byte is read), then by
/// counting what actually arrives; a body that does not arrive in time is
/// [`BodyError`].
pub async fn read_limited(
    headers: &http::HeaderMap,
    body: Incoming,
    limit: usize,
) -> Result<Bytes, ReadError> {
    let too_large = || ReadError::TooLarge { limit };
    let declared = declared_length(headers);
    if declared.is_some_and(|n| n > limit as u64) {
        drain_in_background(headers, body, 0, limit);
        return Err(too_large());
    }
    let mut body = body;
    let mut buf = BytesMut::with_capacity(
        declared.map_or(8 * 1024, |n| (n as usize).min(INITIAL_BUFFER_CAP)),
    );
    while let Some(frame) = body.frame().await {
        let frame = frame?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                drain_in_background(headers, body, buf.len() + data.len(), limit);
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Read and discard the rest of a refused body after the answer has gone,
/// up to a few times the limit (and at the body's pace), so a client still
/// sending it reads the 413 instead of a reset connection; a larger body is
/// cut off and the connection closes. A client that asked to
/// `Expect: 100-continue` has sent nothing yet: the body is not read at
/// all, so it is never asked for.
pub fn drain_in_background(
    headers: &http::HeaderMap,
    mut body: Incoming,
    mut seen: usize,
    limit: usize,
) {
    let expects_continue = headers
        .get(http::header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"));
    if expects_continue {
        return;
    }
    let cap = limit.saturating_mul(4);
    tokio::spawn(async move {
        while seen <= cap {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
                _ => return,
            }
        }
    });
}
