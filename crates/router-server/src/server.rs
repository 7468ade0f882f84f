//! The accept loop: HTTP/1.1 and h2c on one listener, TCP_NODELAY on every
//! socket, graceful drain on shutdown.
//!
//! The drain (issue 30): when `shutdown` resolves the listening socket is
//! closed at once (new connections are refused, so a load balancer moves
//! on; `/readyz` answers 503 on connections still open), a line says how
//! many requests are draining, and they run on for up to
//! [`ConnectionLimits::drain`]. Requests still running then are stopped
//! through the gateway ([`router_core::shutdown`]): each gets its
//! protocol's error reply or stream error event, its hold is voided and
//! its attempt recorded, and the connections get [`STOP_GRACE`] to write
//! that before the process ends.

use crate::admin_listener::Listener;
use crate::app::App;
use crate::dispatch::dispatch;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use router_http::accept::{AcceptErrors, is_transient};
use router_http::client_addr::ClientAddr;
use router_http::connection::{
    Activity, Admission, ConnectionLimits, InFlight, Tracked, Watched, watch,
};
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("accept failed: {0}")]
    Accept(std::io::Error),
}

/// The largest read (and write) buffer of an HTTP/1 connection.
const HTTP1_MAX_BUF: usize = 256 * 1024;

/// How long connections get to write the error of a request stopped at the
/// end of the drain (and to close) before the process ends anyway.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Serve until `shutdown` resolves, then drain open connections (up to
/// `limits.drain`, see the module's text), under `limits` (see
/// [`router_http::connection`]).
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    serve_routes(listener, Listener::Both, app, limits, shutdown).await
}

/// [`serve`] on a listener that serves only the routes of `role` (the
/// public and admin listeners of `ROUTER_ADMIN_LISTEN`).
pub async fn serve_routes(
    listener: TcpListener,
    role: Listener,
    app: Arc<App>,
    limits: ConnectionLimits,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's read buffer starts at 8 KiB and doubles while reads fill it,
    // up to ~400 KiB by default: a fast upload reaches the cap. At 256 KiB
    // an upload costs a quarter of the reads (and ACKs) of 64 KiB, which
    // made it 1.8x instead of 2.5x the time of plain file writes, while 50
    // of them grow RSS by ~25 MiB (docs/performance.md, Uploads).
    builder.http1().max_buf_size(HTTP1_MAX_BUF);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.h2_keep_alive_interval)
        .keep_alive_timeout(limits.h2_keep_alive_interval);
    let limits = Arc::new(limits);
    let admission = Admission::new(&limits);
    let graceful = GracefulShutdown::new();
    let mut accept_errors = AcceptErrors::default();
    let in_flight = Arc::new(AtomicU64::new(0));
    tokio::pin!(shutdown);
    loop {
        // Back-pressure: no accept without a free place.
        let place = tokio::select! {
            place = admission.place() => place,
            () = &mut shutdown => break,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(e) if is_transient(&e) => {
                        accept_errors.wait(&e).await;
                        continue;
                    }
                    Err(e) => return Err(ServeError::Accept(e)),
                };
                accept_errors.reset();
                let Some(admitted) = admission.admit(place, peer.ip()) else {
                    tracing::debug!(peer = %peer.ip(), "connection refused: the address holds its share");
                    continue;
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                let activity = Activity::new();
                let pace = limits.body;
                // Each request carries its client address (an extension),
                // resolved once behind trusted proxies; see `router_http::client_addr`.
                let peer = peer.ip();
                let requests = activity.clone();
                let in_flight = in_flight.clone();
                let service = service_fn(move |request: http::Request<hyper::body::Incoming>| {
                    let app = app.clone();
                    let in_progress = requests.request_started();
                    let counted = InFlight::enter(&in_flight);
                    let mut request = request.map(|body| crate::body::Incoming::new(body, pace));
                    let client = ClientAddr::of(peer, &app.trusted_proxies, request.headers());
                    request.extensions_mut().insert(client);
                    request.extensions_mut().insert(role);
                    async move {
                        let mut response = dispatch(app, request).await;
                        let log = response.extensions_mut().remove::<router_telemetry::request_log::RequestLog>();
                        Ok::<_, Infallible>(response.map(|body| Tracked::new(body, in_progress, counted, log.map(|log| move |bytes| log.sent(bytes)))))
                    }
                });
                let io = TokioIo::new(Watched::new(stream, activity.clone()));
                let connection = builder.serve_connection_with_upgrades(io, service);
                let connection = graceful.watch(connection.into_owned());
                let limits = limits.clone();
                tokio::spawn(async move {
                    let _admitted = admitted;
                    if let Some(Err(e)) = watch(connection, activity, limits).await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    // New connections are refused from now on; readiness says draining.
    drop(listener);
    let shutdown = app.gateway.shutdown();
    shutdown.begin_drain();
    tracing::info!(
        requests = in_flight.load(Ordering::Acquire),
        drain_secs = limits.drain.as_secs(),
        "shutting down: listener closed, draining requests in flight"
    );
    let drained = graceful.shutdown();
    tokio::pin!(drained);
    tokio::select! {
        () = &mut drained => {
            tracing::info!("drained: every request in flight finished");
            return Ok(());
        }
        () = tokio::time::sleep(limits.drain) => {}
    }
    tracing::warn!(
        requests = in_flight.load(Ordering::Acquire),
        "drain time over: stopping the requests still running (error reply or stream error event, hold voided)"
    );
    shutdown.stop_in_flight();
    tokio::select! {
        () = &mut drained => tracing::info!("stopped requests answered; connections closed"),
        () = tokio::time::sleep(STOP_GRACE) => tracing::warn!(
            requests = in_flight.load(Ordering::Acquire),
            "connections still open after the stop; closing them"
        ),
    }
    Ok(())
}
