//! One structured line per request (target `router::request`), and the
//! per-request metrics, written when the request has really ended: at the
//! response head for a whole reply, when the relay finishes for a stream.
//!
//! The line carries the request id, the route pattern, account and key IDs
//! (never the key), the model (only a catalog model: what a client typed is
//! not logged or used as a metric label), the route and number of supplier
//! attempts, status, error code, latency and the nano-USD charged, the
//! client's address (as `ROUTER_TRUSTED_PROXIES` finds it), the time to the
//! first byte of the answer and the bytes of its body sent (counted by the
//! connection, `router_http::connection::Tracked`, which holds a handle until
//! the body is sent, so the line is written then). Request and reply bodies
//! are never part of it. The HTTP edge fills the line as the request goes.
//!
//! A [`RequestLog`] is a shared handle: dispatch holds one, a stream relay
//! another; the line is written when the last is dropped.

use http::Method;
use router_canonical::ErrorCode;
use router_core::RequestTrace;
use serde::Serialize;
use std::io::Write;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;
use uuid::Uuid;

#[derive(Clone)]
pub struct RequestLog(Arc<Entry>);

struct Entry {
    request_id: Uuid,
    method: Method,
    started: Instant,
    trace: Arc<RequestTrace>,
    state: Mutex<State>,
    /// Microseconds from `started` to the first byte of the answer, plus
    /// one (0: none yet).
    first_byte_us: AtomicU64,
    /// Bytes of the answer's body handed to the connection.
    bytes_sent: AtomicU64,
}

#[derive(Default)]
struct State {
    /// The route pattern (`/v1/channels/{channel_id}`), not the raw path:
    /// bounded for metric labels, and free of IDs; `-` when none matched.
    route: &'static str,
    account_id: Option<Uuid>,
    key_id: Option<Uuid>,
    status: u16,
    /// The public error code, or `client_closed` for a stream the client
    /// left.
    code: Option<&'static str>,
    /// The client's address (the peer, or what a trusted proxy forwarded).
    client: Option<IpAddr>,
    /// The client's own well-formed `x-request-id` (`correlation`).
    client_request_id: Option<String>,
}

impl RequestLog {
    pub fn new(request_id: Uuid, method: Method) -> RequestLog {
        RequestLog(Arc::new(Entry {
            request_id,
            method,
            started: Instant::now(),
            trace: RequestTrace::new(),
            first_byte_us: AtomicU64::new(0),
            bytes_sent: AtomicU64::new(0),
            state: Mutex::new(State {
                route: "-",
                ..State::default()
            }),
        }))
    }

    /// The client's well-formed `x-request-id`, kept for its answers.
    pub fn client_request_id(&self, id: &str) {
        self.update(|s| s.client_request_id = Some(id.to_owned()));
    }

    /// The id the answers carry (`x-request-id`, `request-id`, an error
    /// body's `requestId`): the client's own when it sent a well-formed
    /// one, else the router's request id.
    pub fn reply_id(&self) -> String {
        self.0
            .state
            .lock()
            .ok()
            .and_then(|s| s.client_request_id.clone())
            .unwrap_or_else(|| self.0.request_id.to_string())
    }

    /// The route the path matched.
    pub fn route(&self, pattern: &'static str) {
        self.update(|s| s.route = pattern);
    }

    /// What the gateway fills for this request.
    pub fn trace(&self) -> Arc<RequestTrace> {
        self.0.trace.clone()
    }

    fn update(&self, change: impl FnOnce(&mut State)) {
        if let Ok(mut state) = self.0.state.lock() {
            change(&mut state);
        }
    }

    /// The caller the guard let through.
    pub fn caller(&self, account_id: Uuid, key_id: Option<Uuid>) {
        self.update(|s| {
            s.account_id = Some(account_id);
            s.key_id = key_id;
        });
    }

    /// The client's address.
    pub fn client(&self, address: IpAddr) {
        self.update(|s| s.client = Some(address));
    }

    /// `bytes` of the answer's body went to the connection (the first
    /// call also marks the time to first byte).
    pub fn sent(&self, bytes: usize) {
        self.mark_first_byte();
        self.0.bytes_sent.fetch_add(bytes as u64, Ordering::Relaxed);
    }

    /// The answer's first byte (its head) leaves now, unless it already did
    /// (then the clock is not read: this runs for every frame sent).
    fn mark_first_byte(&self) {
        if self.0.first_byte_us.load(Ordering::Relaxed) != 0 {
            return;
        }
        let us = u64::try_from(self.0.started.elapsed().as_micros()).unwrap_or(u64::MAX - 1);
        let _ =
            self.0
                .first_byte_us
                .compare_exchange(0, us + 1, Ordering::Relaxed, Ordering::Relaxed);
    }

    /// The response head: its status and, for an error, its code.
    pub fn head(&self, status: u16, code: Option<ErrorCode>) {
        self.update(|s| {
            s.status = status;
            // A stream may already have ended with its own code.
            if let Some(code) = code {
                s.code = Some(code.as_str());
            }
        });
    }

    /// A stream that failed after its head was sent.
    pub fn stream_failed(&self, code: ErrorCode) {
        self.update(|s| s.code = Some(code.as_str()));
    }

    /// A stream whose client went away before its end.
    pub fn client_closed(&self) {
        self.update(|s| s.code = Some("client_closed"));
    }
}

/// Set once by the binary when log lines are JSON: the request line is then
/// written here, at a fraction of the cost of the generic JSON formatter
/// (it is the one line every request writes), in the same shape:
/// `{"timestamp", "level", "fields": {"message": "request", ...}, "target"}`.
static JSON_LINES: OnceLock<()> = OnceLock::new();

/// Write request lines as JSON directly (see [`JSON_LINES`]).
pub fn write_json_lines() {
    let _ = JSON_LINES.set(());
}

#[derive(Serialize)]
struct JsonLine<'a> {
    timestamp: String,
    level: &'static str,
    fields: Fields<'a>,
    target: &'static str,
}

#[derive(Serialize)]
struct Fields<'a> {
    message: &'static str,
    request_id: Uuid,
    #[serde(skip_serializing_if = "Option::is_none")]
    client_request_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    trace_id: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    supplier_request_id: Option<&'a str>,
    method: &'a str,
    route: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    account_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    key_id: Option<Uuid>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    route_id: Option<&'a str>,
    attempts: u32,
    status: u16,
    #[serde(skip_serializing_if = "Option::is_none")]
    code: Option<&'static str>,
    latency_ms: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    charged_nano_usd: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    client: Option<IpAddr>,
    #[serde(skip_serializing_if = "Option::is_none")]
    ttfb_ms: Option<u64>,
    bytes_sent: u64,
}

impl Drop for Entry {
    fn drop(&mut self) {
        let latency = self.started.elapsed();
        let mut state = match self.state.get_mut() {
            Ok(state) => std::mem::take(state),
            Err(poisoned) => std::mem::take(poisoned.into_inner()),
        };
        // No answer head: the client left before one was ready (a complete
        // request's handler is dropped with its connection). Logged as the
        // 499 of common proxies, `client_closed` like a stream left midway,
        // never as status 0 (issue 33).
        if state.status == 0 {
            state.status = CLIENT_CLOSED_STATUS;
            state.code = Some("client_closed");
        }
        // The catalog model core served the request under (an experiment
        // variant's, when one applied); never what the client typed.
        let model = self.trace.model_id();
        let code = state.code;
        let ttfb_ms = match self.first_byte_us.load(Ordering::Relaxed) {
            0 => None,
            us => Some((us - 1) / 1000),
        };
        let bytes_sent = self.bytes_sent.load(Ordering::Relaxed);
        if tracing::enabled!(target: "router::request", tracing::Level::INFO) {
            let route_id = self.trace.route_id();
            let trace_id = self.trace.context().map(|c| c.trace_id());
            let supplier_request_id = self.trace.supplier_request_id();
            let latency_ms = u64::try_from(latency.as_millis()).unwrap_or(u64::MAX);
            if JSON_LINES.get().is_some() {
                let line = JsonLine {
                    timestamp: chrono::Utc::now()
                        .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
                    level: "INFO",
                    fields: Fields {
                        message: "request",
                        request_id: self.request_id,
                        client_request_id: state.client_request_id.as_deref(),
                        trace_id: trace_id.as_deref(),
                        supplier_request_id: supplier_request_id.as_deref(),
                        method: self.method.as_str(),
                        route: state.route,
                        account_id: state.account_id,
                        key_id: state.key_id,
                        model: model.as_deref(),
                        route_id: route_id.as_deref(),
                        attempts: self.trace.attempts(),
                        status: state.status,
                        code,
                        latency_ms,
                        charged_nano_usd: self.trace.charged_nano(),
                        client: state.client,
                        ttfb_ms,
                        bytes_sent,
                    },
                    target: "router::request",
                };
                let mut buf = Vec::with_capacity(512);
                if serde_json::to_writer(&mut buf, &line).is_ok() {
                    buf.push(b'\n');
                    // One write per line, as the generic formatter does.
                    let _ = std::io::stderr().write_all(&buf);
                }
            } else {
                tracing::info!(
                    target: "router::request",
                    request_id = %self.request_id,
                    client_request_id = state.client_request_id.as_deref(),
                    trace_id = trace_id.as_deref(),
                    supplier_request_id = supplier_request_id.as_deref(),
                    method = %self.method,
                    route = state.route,
                    account_id = state.account_id.map(tracing::field::display),
                    key_id = state.key_id.map(tracing::field::display),
                    model = model.as_deref(),
                    route_id = route_id.as_deref(),
                    attempts = self.trace.attempts(),
                    status = state.status,
                    code,
                    latency_ms,
                    charged_nano_usd = self.trace.charged_nano(),
                    client = state.client.map(tracing::field::display),
                    ttfb_ms,
                    bytes_sent,
                    "request"
                );
            }
        }
        if self.trace.recording() {
            crate::otlp::export(
                crate::otlp::RequestSpan {
                    method: self.method.as_str(),
                    route: state.route,
                    status: state.status,
                    request_id: self.request_id,
                    model: model.as_deref(),
                    code,
                    started: std::time::SystemTime::now() - latency,
                },
                &self.trace,
            );
        }
        metrics::counter!(
            "router_requests_total",
            "surface" => state.route,
            "model" => model.unwrap_or_else(|| "-".to_owned()),
            "status" => status_label(state.status),
            "code" => code.unwrap_or("-")
        )
        .increment(1);
        metrics::histogram!("router_request_duration_seconds", "surface" => state.route)
            .record(latency.as_secs_f64());
    }
}

/// The status logged for a request whose client left before its answer's
/// head (nginx's "client closed request"; never sent on the wire).
pub const CLIENT_CLOSED_STATUS: u16 = 499;

/// Status codes as static labels (no allocation per request).
fn status_label(status: u16) -> &'static str {
    match status {
        200 => "200",
        201 => "201",
        202 => "202",
        204 => "204",
        400 => "400",
        401 => "401",
        402 => "402",
        403 => "403",
        404 => "404",
        405 => "405",
        408 => "408",
        409 => "409",
        413 => "413",
        429 => "429",
        499 => "499",
        500 => "500",
        502 => "502",
        503 => "503",
        504 => "504",
        s if s < 300 => "2xx",
        s if s < 500 => "4xx",
        _ => "5xx",
    }
}
