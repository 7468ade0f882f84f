//! Start-up without the database (RELIABILITY.md D5, issue 33): when
//! PostgreSQL cannot be reached as the router starts, the process does not
//! exit (an orchestrator would restart it in a loop) but listens at once and
//! answers while it retries: `/healthz` 200 (the process is alive),
//! `/readyz` 503 `database unavailable`, and every other route its
//! protocol's 503 `service_unavailable` with `Retry-After` and
//! `Connection: close`, so that a client's next connection reaches the
//! full router once it is up. Connections are admitted under the same caps
//! and timeouts as the full router's.

use crate::dispatch::envelope_of;
use crate::reply::{self, Body};
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto;
use router_canonical::{ApiError, ErrorCode};
use router_http::connection::{Admission, ConnectionLimits};
use std::convert::Infallible;
use std::future::Future;
use std::time::Duration;
use tokio::net::TcpListener;

/// What a client is told to wait before it retries.
const RETRY_AFTER_SECS: u64 = 1;
/// The longest a connection is kept while starting (one answer each).
const CONNECTION_LIMIT: Duration = Duration::from_secs(30);

/// The answer to `request` while the router waits for its database.
pub fn reply(request: &http::Request<impl Send>) -> http::Response<Body> {
    let request_id = uuid::Uuid::now_v7().to_string();
    let path = request.uri().path();
    let mut response = match path {
        "/healthz" => crate::health::healthz(&request_id),
        "/readyz" => crate::health::not_ready(&request_id),
        _ => {
            let error = ApiError::new(
                ErrorCode::ServiceUnavailable,
                "The service is starting; retry shortly.",
            )
            .with_retry_after(Some(RETRY_AFTER_SECS));
            reply::error(envelope_of(path), &error, &request_id)
        }
    };
    response.headers_mut().insert(
        http::header::CONNECTION,
        http::HeaderValue::from_static("close"),
    );
    response
}

/// Answers on `listener` as [`reply`] says until `ready` resolves, then
/// returns its output; the listener is left open for the full router (a
/// connection that arrives in between waits in the backlog).
pub async fn serve_until<T>(
    listener: &TcpListener,
    limits: &ConnectionLimits,
    ready: impl Future<Output = T>,
) -> T {
    let mut builder = auto::Builder::new(TokioExecutor::new());
    builder
        .http1()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .keep_alive(false);
    let admission = Admission::new(limits);
    tokio::pin!(ready);
    loop {
        let place = tokio::select! {
            place = admission.place() => place,
            out = &mut ready => return out,
        };
        tokio::select! {
            accepted = listener.accept() => {
                let Ok((stream, peer)) = accepted else {
                    // Out of descriptors or the like: a pause, not a spin.
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                };
                let Some(admitted) = admission.admit(place, peer.ip()) else {
                    continue;
                };
                let service = service_fn(|request: http::Request<hyper::body::Incoming>| async move {
                    Ok::<_, Infallible>(reply(&request))
                });
                let connection = builder
                    .serve_connection(TokioIo::new(stream), service)
                    .into_owned();
                tokio::spawn(async move {
                    let _admitted = admitted;
                    let _ = tokio::time::timeout(CONNECTION_LIMIT, connection).await;
                });
            }
            out = &mut ready => return out,
        }
    }
}
