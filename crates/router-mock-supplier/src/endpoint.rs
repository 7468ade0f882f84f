//! The script player every protocol endpoint shares: record the request,
//! pick its script, play it. What differs between protocols (how a request
//! is read, how replies, events and errors are written) comes from the
//! endpoint's [`WireProtocol`]; timing, failures and connection tricks live
//! here once.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CACHE_CONTROL, HeaderValue, LOCATION, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::Value;

use crate::connection::ConnectionControl;
use crate::playbook::Playbook;
use crate::recorded_call::RecordedCall;
use crate::reply_identity::ReplyIdentity;
use crate::response_body::{self, BodySender, ResponseBody, json_response, respond};
use crate::script::{MockImage, MockReply, Script};

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// Text of the reply a stream-breaking script cuts short.
pub(crate) const INTERRUPTED_TEXT: &str =
    "This reply from the mock supplier is interrupted before it completes.";

/// How one protocol reads requests and writes replies. Implementations are
/// pure: they know nothing of sockets or timing.
pub(crate) trait WireProtocol {
    /// What the mock needs to know about one request.
    type Request: Send + Sync;

    /// The body [`Script::InvalidJson`] sends.
    const INVALID_JSON_BODY: &'static [u8];

    /// The frame [`Script::MalformedStream`] sends after its valid events.
    const MALFORMED_EVENT: &'static [u8];

    /// Reads the fields the mock cares about; anything missing or mistyped
    /// takes its default.
    fn read_request(body: &Value) -> Self::Request;

    /// [`WireProtocol::read_request`] for a request at `path` on `host`
    /// (its `Host` header); only endpoints that answer with their own URLs
    /// need them.
    fn read_request_at(body: &Value, _path: &str, _host: Option<&str>) -> Self::Request {
        Self::read_request(body)
    }

    /// The body of a [`Script::Image`] answer; `None` (the default) on
    /// endpoints that generate no images.
    fn image_reply(_image: &MockImage, _request: &Self::Request) -> Option<Value> {
        None
    }

    /// Checks what a real supplier checks before it reads a request (its
    /// credentials, a signature): `Some((status, error body))` refuses the
    /// request, recorded all the same. `None` (the default) accepts.
    fn check_request(
        _headers: &http::HeaderMap,
        _path: &str,
        _query: Option<&str>,
        _body: &Bytes,
    ) -> Option<(u16, Value)> {
        None
    }

    /// The request's model, or empty.
    fn model(request: &Self::Request) -> &str;

    /// Whether the request asks for a stream.
    fn streams(request: &Self::Request) -> bool;

    /// The non-streaming reply body.
    fn reply_body(reply: &MockReply, request: &Self::Request, identity: &ReplyIdentity) -> Value;

    /// The events of a streamed reply.
    fn reply_events(
        reply: &MockReply,
        request: &Self::Request,
        identity: &ReplyIdentity,
    ) -> EventStream;

    /// The in-stream error event sent after `events_sent` events.
    fn stream_error_event(identity: &ReplyIdentity, events_sent: usize, message: &str) -> Bytes;

    /// The protocol's error body for an HTTP status.
    fn error_body(status: u16, message: &str) -> Value;

    /// The body of an error about the mock itself (a bad script).
    fn mock_error_body(message: &str) -> Value {
        Self::error_body(500, message)
    }
}

/// The events of a streamed reply, already framed.
#[derive(Debug, Clone, Default)]
pub(crate) struct EventStream {
    /// Every event before the terminal ones; failure scripts send a prefix.
    pub(crate) events: Vec<Bytes>,
    /// What ends a successful stream (`[DONE]`, `message_stop`,
    /// `response.completed`); failure scripts never send it.
    pub(crate) terminal: Vec<Bytes>,
}

/// Serves one request of protocol `P`. The call is recorded before its
/// script runs.
pub(crate) async fn serve<P: WireProtocol>(
    request: Request<Incoming>,
    playbook: &Playbook,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    let path = request.uri().path().to_owned();
    let query = request.uri().query().map(str::to_owned);
    let header_map = request.headers().clone();
    let host = request
        .headers()
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let headers = request
        .headers()
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect();
    let bytes = match request.into_body().collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(error) => {
            let message = format!("could not read the request body: {error}");
            return json_response(StatusCode::BAD_REQUEST, &P::mock_error_body(&message));
        }
    };
    let refusal = P::check_request(&header_map, &path, query.as_deref(), &bytes);
    let body = parse_body(&bytes);
    let parsed = P::read_request_at(&body, &path, host.as_deref());
    let call = RecordedCall {
        path,
        query: query.clone(),
        headers,
        body,
        received_at: Instant::now(),
    };
    if let Some((status, body)) = refusal {
        // Refused before it is read: recorded, but it takes no script.
        playbook.record(call);
        let code = StatusCode::from_u16(status).unwrap_or(StatusCode::FORBIDDEN);
        return json_response(code, &body);
    }
    let script = playbook.record_and_choose(call);
    play::<P>(script, &parsed, connection).await
}

fn parse_body(bytes: &Bytes) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

async fn play<P: WireProtocol>(
    script: Script,
    request: &P::Request,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    match script {
        Script::Reply(reply) => {
            sleep_ms(reply.delay_ms).await;
            let identity = ReplyIdentity::new(P::model(request));
            if P::streams(request) {
                let stream = P::reply_events(&reply, request, &identity);
                let (events, cut) = match reply.cut_after_chunks {
                    Some(n) => (stream.events.into_iter().take(n).collect(), true),
                    None => (
                        stream.events.into_iter().chain(stream.terminal).collect(),
                        false,
                    ),
                };
                paced_stream(
                    events,
                    reply.first_chunk_delay_ms,
                    reply.chunk_delay_ms,
                    cut,
                )
            } else {
                let body = P::reply_body(&reply, request, &identity);
                respond(StatusCode::OK, JSON, response_body::full(body.to_string()))
            }
        }
        Script::Status {
            status,
            body,
            retry_after,
        } => status_response::<P>(status, body, retry_after),
        Script::Redirect { status, location } => redirect::<P>(status, &location),
        Script::Reset => {
            connection.request_reset();
            // The connection task drops this future together with the socket.
            std::future::pending().await
        }
        Script::ResetAfterHeaders => {
            let (sender, body) = response_body::channel();
            tokio::spawn(sender.abort());
            respond(StatusCode::OK, content_type::<P>(request), body)
        }
        Script::Stall => std::future::pending().await,
        Script::InvalidJson => invalid_json::<P>(),
        Script::TruncatedStream { after_chunks } => truncated::<P>(after_chunks, request),
        Script::MalformedStream { after_chunks } => malformed::<P>(after_chunks, request),
        Script::StreamError {
            after_chunks,
            message,
        } => stream_error::<P>(after_chunks, &message, request),
        Script::Image(image) => match P::image_reply(&image, request) {
            Some(body) => {
                sleep_ms(image.delay_ms).await;
                json_response(StatusCode::OK, &body)
            }
            None => json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &P::mock_error_body("an image script reached an endpoint that generates no images"),
            ),
        },
    }
}

fn content_type<P: WireProtocol>(request: &P::Request) -> &'static str {
    if P::streams(request) {
        EVENT_STREAM
    } else {
        JSON
    }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// A paced SSE stream: `first_chunk_delay_ms` before the first event,
/// `chunk_delay_ms` between events; `cut`: the connection is then aborted.
fn paced_stream(
    events: Vec<Bytes>,
    first_chunk_delay_ms: u64,
    chunk_delay_ms: u64,
    cut: bool,
) -> Response<ResponseBody> {
    let (sender, body) = response_body::channel();
    tokio::spawn(async move {
        sleep_ms(first_chunk_delay_ms).await;
        for (index, event) in events.into_iter().enumerate() {
            if index > 0 {
                sleep_ms(chunk_delay_ms).await;
            }
            if !sender.send(event).await {
                return;
            }
        }
        if cut {
            sleep_ms(chunk_delay_ms).await;
            sender.abort().await;
        }
    });
    stream_response(body)
}

fn stream_response(body: ResponseBody) -> Response<ResponseBody> {
    let mut response = respond(StatusCode::OK, EVENT_STREAM, body);
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

/// The reply a stream-breaking script starts before it breaks.
fn interrupted_reply() -> MockReply {
    MockReply::text(INTERRUPTED_TEXT)
}

/// The first `count` events (never a terminal one) of the interrupted reply.
fn leading_events<P: WireProtocol>(
    count: usize,
    request: &P::Request,
    identity: &ReplyIdentity,
) -> Vec<Bytes> {
    let mut events = P::reply_events(&interrupted_reply(), request, identity).events;
    events.truncate(count);
    events
}

/// Sends the events; `false` when the client has gone away.
async fn send_all(sender: &BodySender, events: Vec<Bytes>) -> bool {
    for event in events {
        if !sender.send(event).await {
            return false;
        }
    }
    true
}

fn truncated<P: WireProtocol>(after_chunks: usize, request: &P::Request) -> Response<ResponseBody> {
    let (sender, body) = response_body::channel();
    let identity = ReplyIdentity::new(P::model(request));
    if P::streams(request) {
        let events = leading_events::<P>(after_chunks, request, &identity);
        tokio::spawn(async move {
            if send_all(&sender, events).await {
                sender.abort().await;
            }
        });
        stream_response(body)
    } else {
        let full = Bytes::from(P::reply_body(&interrupted_reply(), request, &identity).to_string());
        // Half an object is never valid JSON.
        let half = full.slice(..full.len() / 2);
        tokio::spawn(async move {
            if sender.send(half).await {
                sender.abort().await;
            }
        });
        respond(StatusCode::OK, JSON, body)
    }
}

fn malformed<P: WireProtocol>(after_chunks: usize, request: &P::Request) -> Response<ResponseBody> {
    if !P::streams(request) {
        return invalid_json::<P>();
    }
    let (sender, body) = response_body::channel();
    let identity = ReplyIdentity::new(P::model(request));
    let events = leading_events::<P>(after_chunks, request, &identity);
    tokio::spawn(async move {
        if send_all(&sender, events).await {
            sender.send(Bytes::from_static(P::MALFORMED_EVENT)).await;
        }
    });
    stream_response(body)
}

fn stream_error<P: WireProtocol>(
    after_chunks: usize,
    message: &str,
    request: &P::Request,
) -> Response<ResponseBody> {
    if !P::streams(request) {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &P::error_body(500, message),
        );
    }
    let (sender, body) = response_body::channel();
    let identity = ReplyIdentity::new(P::model(request));
    let mut events = leading_events::<P>(after_chunks, request, &identity);
    events.push(P::stream_error_event(&identity, events.len(), message));
    tokio::spawn(async move {
        // Dropping the sender afterwards ends the body cleanly.
        send_all(&sender, events).await;
    });
    stream_response(body)
}

fn invalid_json<P: WireProtocol>() -> Response<ResponseBody> {
    respond(
        StatusCode::OK,
        JSON,
        response_body::full(Bytes::from_static(P::INVALID_JSON_BODY)),
    )
}

fn status_response<P: WireProtocol>(
    status: u16,
    body: Option<Value>,
    retry_after: Option<String>,
) -> Response<ResponseBody> {
    // An informational status is not a final response; hyper cannot send one.
    let code = match StatusCode::from_u16(status) {
        Ok(code) if !code.is_informational() => code,
        _ => {
            let message = format!("the script's status {status} is not a final HTTP status");
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &P::mock_error_body(&message),
            );
        }
    };
    let retry_after = match retry_after.map(HeaderValue::try_from).transpose() {
        Ok(value) => value,
        Err(_) => {
            let message = "the script's retry_after is not a valid header value";
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &P::mock_error_body(message),
            );
        }
    };
    let body = body.unwrap_or_else(|| {
        P::error_body(status, &format!("mock supplier scripted status {status}"))
    });
    let mut response = json_response(code, &body);
    if let Some(value) = retry_after {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

/// A 3xx with a `Location` header (and the protocol's error body, which a
/// client that stops at the redirect may read).
fn redirect<P: WireProtocol>(status: u16, location: &str) -> Response<ResponseBody> {
    let code = match StatusCode::from_u16(status) {
        Ok(code) if code.is_redirection() => code,
        _ => {
            let message = format!("the redirect script's status {status} is not a 3xx");
            return json_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &P::mock_error_body(&message),
            );
        }
    };
    let Ok(location) = HeaderValue::try_from(location) else {
        return json_response(
            StatusCode::INTERNAL_SERVER_ERROR,
            &P::mock_error_body("the redirect script's location is not a valid header value"),
        );
    };
    let mut response = json_response(
        code,
        &P::error_body(status, &format!("mock supplier scripted redirect {status}")),
    );
    response.headers_mut().insert(LOCATION, location);
    response
}
