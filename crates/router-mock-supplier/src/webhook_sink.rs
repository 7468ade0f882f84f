//! A small HTTP receiver standing in for Slack incoming webhooks, Discord
//! webhooks and the Telegram Bot API in tests: it records every request
//! (path and JSON body) and answers as the platform would, or as scripted.
//!
//! Default answers by path: `/slack/...` → `200 ok`; `/discord/...` →
//! `204`; `.../sendMessage` (Telegram) → `200 {"ok": true, "result": {...}}`;
//! anything else → 404. [`WebhookSink::push`] queues answers that the next
//! requests take first: a status with a body, or [`Answer::Hang`] (accept
//! the request, never answer). Listen on loopback only.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::sync::Notify;

/// A scripted answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// This status and body.
    Status(u16, String),
    /// Read the request, then never answer (the client times out).
    Hang,
}

/// One request as received.
#[derive(Debug, Clone, PartialEq)]
pub struct Received {
    pub path: String,
    /// The body as JSON (`Null` if it was not JSON).
    pub body: serde_json::Value,
}

#[derive(Default)]
struct State {
    received: Mutex<Vec<Received>>,
    answers: Mutex<VecDeque<Answer>>,
    arrived: Notify,
}

/// A running receiver; cloning shares it.
#[derive(Clone)]
pub struct WebhookSink {
    addr: SocketAddr,
    state: Arc<State>,
}

impl WebhookSink {
    /// Binds `addr` (`127.0.0.1:0`) and serves on the current runtime.
    pub async fn start(addr: SocketAddr) -> std::io::Result<WebhookSink> {
        let listener = TcpListener::bind(addr).await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(State::default());
        let serving = state.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let state = serving.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(state.clone(), req));
                    let _ = auto::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(WebhookSink { addr, state })
    }

    /// `http://ADDR`.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Queues an answer for the next request.
    pub fn push(&self, answer: Answer) {
        lock(&self.state.answers).push_back(answer);
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        lock(&self.state.received).clone()
    }

    /// Waits until at least `count` requests arrived, or `timeout` passed;
    /// returns what arrived.
    pub async fn wait_for(&self, count: usize, timeout: Duration) -> Vec<Received> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            let notified = self.state.arrived.notified();
            let received = self.received();
            if received.len() >= count {
                return received;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return self.received();
            }
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// How long a hanging answer holds the request (longer than any client
/// timeout in the tests; bounded so the task ends).
const HANG: Duration = Duration::from_secs(120);

async fn handle(
    state: Arc<State>,
    request: Request<Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = request.uri().path().to_owned();
    let bytes = request
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let body = serde_json::from_slice(&bytes).unwrap_or(serde_json::Value::Null);
    lock(&state.received).push(Received {
        path: path.clone(),
        body,
    });
    state.arrived.notify_waiters();
    let scripted = lock(&state.answers).pop_front();
    let (status, text) = match scripted {
        Some(Answer::Hang) => {
            tokio::time::sleep(HANG).await;
            (500, String::new())
        }
        Some(Answer::Status(status, text)) => (status, text),
        None if path.starts_with("/slack/") => (200, "ok".to_owned()),
        None if path.starts_with("/discord/") => (204, String::new()),
        None if path.ends_with("/sendMessage") => {
            (200, r#"{"ok":true,"result":{"message_id":1}}"#.to_owned())
        }
        None => (404, "not found".to_owned()),
    };
    let mut response = Response::new(Full::new(Bytes::from(text)));
    *response.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::OK);
    Ok(response)
}
