//! The accept loop: HTTP/1.1 and h2c on one listener, TCP_NODELAY on every
//! socket, graceful drain on shutdown.

use crate::app::App;
use crate::client_addr::PeerAddr;
use crate::dispatch::dispatch;
use crate::reply::Body;
use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::server::graceful::GracefulShutdown;
use std::convert::Infallible;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error("accept failed: {0}")]
    Accept(std::io::Error),
}

/// A response body fed by a channel: each message is one frame, written as
/// it arrives (no buffering of whole streams).
pub fn channel_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(Frame::data(bytes)), rx))
    });
    StreamBody::new(frames).boxed()
}

/// The largest read (and write) buffer of an HTTP/1 connection.
const HTTP1_MAX_BUF: usize = 256 * 1024;

/// Serve until `shutdown` resolves, then drain open connections (up to 30 s).
pub async fn serve(
    listener: TcpListener,
    app: Arc<App>,
    shutdown: impl Future<Output = ()>,
) -> Result<(), ServeError> {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    // hyper's read buffer starts at 8 KiB and doubles while reads fill it,
    // up to ~400 KiB by default: a fast upload reaches the cap. At 256 KiB
    // an upload costs a quarter of the reads (and ACKs) of 64 KiB, which
    // made it 1.8x instead of 2.5x the time of plain file writes, while 50
    // of them grow RSS by ~25 MiB (docs/performance.md, Uploads).
    builder.http1().max_buf_size(HTTP1_MAX_BUF);
    let graceful = GracefulShutdown::new();
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            accepted = listener.accept() => {
                let (stream, peer) = match accepted {
                    Ok(pair) => pair,
                    Err(e) if is_transient(&e) => {
                        tracing::warn!(error = %e, "accept failed; continuing");
                        tokio::time::sleep(Duration::from_millis(10)).await;
                        continue;
                    }
                    Err(e) => return Err(ServeError::Accept(e)),
                };
                let _ = stream.set_nodelay(true);
                let app = app.clone();
                // The peer rides on each request (an extension) for key IP
                // allowlists; see `client_addr`.
                let peer = PeerAddr(peer.ip());
                let service = service_fn(move |mut request: http::Request<hyper::body::Incoming>| {
                    let app = app.clone();
                    request.extensions_mut().insert(peer);
                    async move { Ok::<_, Infallible>(dispatch(app, request).await) }
                });
                let connection = builder.serve_connection_with_upgrades(TokioIo::new(stream), service);
                let connection = graceful.watch(connection.into_owned());
                tokio::spawn(async move {
                    if let Err(e) = connection.await {
                        tracing::debug!(error = %e, "connection ended with an error");
                    }
                });
            }
            () = &mut shutdown => break,
        }
    }
    tokio::select! {
        () = graceful.shutdown() => {}
        () = tokio::time::sleep(Duration::from_secs(30)) => tracing::warn!("drain timed out"),
    }
    Ok(())
}

fn is_transient(error: &std::io::Error) -> bool {
    use std::io::ErrorKind::*;
    matches!(
        error.kind(),
        ConnectionAborted | ConnectionReset | Interrupted | WouldBlock
    ) || error.raw_os_error() == Some(24)
}
