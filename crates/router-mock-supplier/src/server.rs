//! [`MockSupplier`]: the handle, the accept loop, one task per connection,
//! and routing between the protocol endpoints, the control endpoints and 404.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::bedrock_endpoint::{self, Bedrock};
use crate::chat_endpoint::Chat;
use crate::connection::{ConnectionControl, ConnectionIo};
use crate::control;
use crate::converse_endpoint::{self, Converse};
use crate::endpoint;
use crate::gemini_endpoint::{self, Gemini};
use crate::google_auth;
use crate::images_endpoint::{self, Images};
use crate::messages_endpoint::Messages;
use crate::playbook::Playbook;
use crate::recorded_call::RecordedCall;
use crate::response_body::ResponseBody;
use crate::response_body::error_response;
use crate::responses_endpoint::Responses;
use crate::script::Script;
use crate::videos_endpoint::{self, VideoCounts, VideoPlan};

/// Pause after a failed `accept` (e.g. out of file descriptors), so the loop
/// does not spin.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(50);

/// A running mock supplier. Cloning gives another handle to the same server.
///
/// The server runs until [`MockSupplier::shutdown`] is called or its tokio
/// runtime is dropped (as at the end of a `#[tokio::test]`); dropping the
/// handles does not stop it.
#[derive(Debug, Clone)]
pub struct MockSupplier {
    addr: SocketAddr,
    playbook: Arc<Playbook>,
    shutdown: Arc<watch::Sender<bool>>,
}

impl MockSupplier {
    /// Binds `addr` (use `127.0.0.1:0` for an ephemeral port) and starts
    /// serving on the current tokio runtime.
    pub async fn start(addr: SocketAddr) -> std::io::Result<MockSupplier> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let playbook = Arc::new(Playbook::default());
        let shutdown = Arc::new(watch::Sender::new(false));
        tokio::spawn(accept_loop(listener, playbook.clone(), shutdown.clone()));
        Ok(MockSupplier {
            addr,
            playbook,
            shutdown,
        })
    }

    /// The bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The base URL, `http://ADDR/v1`, for every protocol: Chat Completions
    /// at `{base_url}/chat/completions`, Messages at `{base_url}/messages`,
    /// Responses at `{base_url}/responses`.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    /// Appends a script to the global queue.
    pub fn enqueue(&self, script: Script) {
        self.playbook.enqueue(script);
    }

    /// Appends a script to the queue of requests whose `model` is
    /// `upstream_model`; that queue is used before the global one.
    pub fn enqueue_for(&self, upstream_model: &str, script: Script) {
        self.playbook.enqueue_for(upstream_model, script);
    }

    /// Sets the script used when the queues are empty. Until set, it is a
    /// plain reply, "Hello from the mock supplier."
    pub fn set_default(&self, script: Script) {
        self.playbook.set_default(script);
    }

    /// Every protocol request received (Chat, Messages and Responses alike),
    /// in arrival order; [`RecordedCall::path`] tells them apart.
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.playbook.calls()
    }

    /// How many protocol requests were received.
    pub fn call_count(&self) -> usize {
        self.playbook.call_count()
    }

    /// The protocol requests whose `model` is `upstream_model`.
    pub fn calls_for(&self, upstream_model: &str) -> Vec<RecordedCall> {
        self.playbook.calls_for(upstream_model)
    }

    /// Sets what video jobs created under `upstream_model` do (`None`: the
    /// default plan for every other model; until set, complete after 2 polls).
    pub fn set_video_plan(&self, upstream_model: Option<&str>, plan: VideoPlan) {
        self.playbook.videos.set_plan(upstream_model, plan);
    }

    /// Changes what the existing task `task_id` does from its next poll on
    /// (its polls count afresh for the new plan); `false` if there is none.
    pub fn set_video_task_plan(&self, task_id: &str, plan: VideoPlan) -> bool {
        self.playbook.videos.set_task_plan(task_id, plan)
    }

    /// Sets how many bytes every completed video has.
    pub fn set_video_bytes(&self, bytes: usize) {
        self.playbook.videos.set_content_bytes(bytes);
    }

    /// Video submissions, polls and downloads seen so far.
    /// Google access tokens issued: (service account, metadata server).
    pub fn google_tokens_issued(&self) -> (usize, usize) {
        self.playbook.google.issued()
    }

    pub fn video_counts(&self) -> VideoCounts {
        self.playbook.videos.counts()
    }

    /// The bytes a completed video of `task_id` has.
    pub fn video_content(&self, task_id: &str) -> Vec<u8> {
        videos_endpoint::video_bytes(task_id, self.playbook.videos.content_len())
    }

    /// Clears the queues and the recorded calls; the default script stays.
    pub fn reset(&self) {
        self.playbook.reset();
    }

    /// Stops accepting and drops every open connection, stalled ones
    /// included. Idempotent.
    pub fn shutdown(&self) {
        self.shutdown.send_replace(true);
    }
}

async fn accept_loop(
    listener: TcpListener,
    playbook: Arc<Playbook>,
    shutdown: Arc<watch::Sender<bool>>,
) {
    let mut stopping = shutdown.subscribe();
    // Dropping the set at the end aborts every connection task.
    let mut connections = JoinSet::new();
    loop {
        tokio::select! {
            () = stopped(&mut stopping) => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _peer)) => {
                    connections.spawn(serve_connection(stream, playbook.clone()));
                }
                Err(_) => tokio::time::sleep(ACCEPT_BACKOFF).await,
            },
            Some(_) = connections.join_next(), if !connections.is_empty() => {}
        }
    }
}

/// Completes once shutdown is requested. The accept loop holds the sender,
/// so the channel cannot close first.
async fn stopped(stopping: &mut watch::Receiver<bool>) {
    let _ = stopping.wait_for(|stop| *stop).await;
}

async fn serve_connection(stream: TcpStream, playbook: Arc<Playbook>) {
    // Streamed chunks are small; send each one as soon as it is written.
    // Without it only latency suffers, so a failure is ignored.
    let _ = stream.set_nodelay(true);
    let control = Arc::new(ConnectionControl::default());
    let io = TokioIo::new(ConnectionIo::new(stream, control.clone()));
    let service = {
        let control = control.clone();
        service_fn(move |request| {
            let playbook = playbook.clone();
            let control = control.clone();
            async move { Ok::<_, Infallible>(route(request, &playbook, &control).await) }
        })
    };
    let builder = auto::Builder::new(TokioExecutor::new()).http1_only();
    let connection = builder.serve_connection(io, service);
    tokio::select! {
        // A connection error (client gone, scripted abort) just ends the task.
        _ = connection => {}
        // Returning drops the connection; `ConnectionIo` then resets the socket.
        () = control.reset_requested() => {}
    }
}

async fn route(
    request: Request<Incoming>,
    playbook: &Playbook,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    let path = request.uri().path();
    if path.starts_with(control::PREFIX) {
        control::serve(request, playbook).await
    } else if google_auth::is_token_path(request.method(), path) {
        google_auth::serve(request, &playbook.google).await
    } else if gemini_endpoint::is_gemini_path(path) {
        endpoint::serve::<Gemini>(request, playbook, connection).await
    } else if converse_endpoint::is_converse_path(path) {
        endpoint::serve::<Converse>(request, playbook, connection).await
    } else if bedrock_endpoint::is_bedrock_path(path) {
        endpoint::serve::<Bedrock>(request, playbook, connection).await
    } else if path.ends_with("/chat/completions") {
        with_request_id(
            "x-request-id",
            endpoint::serve::<Chat>(request, playbook, connection).await,
        )
    } else if path.ends_with("/messages") {
        with_request_id(
            "request-id",
            endpoint::serve::<Messages>(request, playbook, connection).await,
        )
    } else if path.ends_with("/responses") {
        with_request_id(
            "x-request-id",
            endpoint::serve::<Responses>(request, playbook, connection).await,
        )
    } else if path.ends_with("/images/generations") {
        with_request_id(
            "x-request-id",
            endpoint::serve::<Images>(request, playbook, connection).await,
        )
    } else if path.contains("/images/content/") && request.method() == http::Method::GET {
        images_endpoint::serve_content(path, request.uri().query())
    } else if videos_endpoint::is_videos_path(path) {
        videos_endpoint::serve(request, &playbook.videos, connection).await
    } else {
        let message = format!("the mock supplier has no endpoint at {path}");
        error_response(StatusCode::NOT_FOUND, &message)
    }
}

/// Every protocol answer names itself as a real supplier's does: OpenAI's
/// `x-request-id`, Anthropic's `request-id`, `req_mock_<serial>` (a router
/// keeps it on the attempt's record).
fn with_request_id(
    header: &'static str,
    mut response: Response<ResponseBody>,
) -> Response<ResponseBody> {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let serial = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    if let Ok(value) = http::HeaderValue::from_str(&format!("req_mock_{serial}")) {
        response.headers_mut().insert(header, value);
    }
    response
}
