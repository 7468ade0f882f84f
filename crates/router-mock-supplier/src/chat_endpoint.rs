//! The chat endpoint: records each request, picks its script and plays it.

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue, RETRY_AFTER};
use http::{Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::chat_reply::{
    self, ChatRequest, INTERRUPTED_TEXT, INVALID_JSON_BODY, ReplyIdentity, SSE_DONE, SSE_MALFORMED,
};
use crate::connection::ConnectionControl;
use crate::playbook::Playbook;
use crate::recorded_call::RecordedCall;
use crate::response_body::{self, BodySender, ResponseBody};
use crate::script::{MockReply, Script};

const JSON: &str = "application/json";
const EVENT_STREAM: &str = "text/event-stream";

/// Serves one chat request. The call is recorded before its script runs.
pub(crate) async fn serve(
    request: Request<Incoming>,
    playbook: &Playbook,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    let path = request.uri().path().to_owned();
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
            return error_response(
                StatusCode::BAD_REQUEST,
                &format!("could not read the request body: {error}"),
            );
        }
    };
    let body = parse_body(&bytes);
    let chat = ChatRequest::from_body(&body);
    let script = playbook.record_and_choose(RecordedCall {
        path,
        headers,
        body,
        received_at: Instant::now(),
    });
    play(script, &chat, connection).await
}

fn parse_body(bytes: &Bytes) -> Value {
    if bytes.is_empty() {
        return Value::Null;
    }
    serde_json::from_slice(bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(bytes).into_owned()))
}

async fn play(
    script: Script,
    chat: &ChatRequest,
    connection: &ConnectionControl,
) -> Response<ResponseBody> {
    match script {
        Script::Reply(reply) => {
            sleep_ms(reply.delay_ms).await;
            if chat.stream {
                stream_reply(reply, chat)
            } else {
                let identity = ReplyIdentity::new(chat);
                let body = chat_reply::completion_json(&reply, chat, &identity);
                respond(StatusCode::OK, JSON, response_body::full(body.to_string()))
            }
        }
        Script::Status {
            status,
            body,
            retry_after,
        } => status_response(status, body, retry_after),
        Script::Reset => {
            connection.request_reset();
            // The connection task drops this future together with the socket.
            std::future::pending().await
        }
        Script::ResetAfterHeaders => {
            let (sender, body) = response_body::channel();
            tokio::spawn(sender.abort());
            respond(StatusCode::OK, content_type(chat), body)
        }
        Script::Stall => std::future::pending().await,
        Script::InvalidJson => invalid_json(),
        Script::TruncatedStream { after_chunks } => truncated(after_chunks, chat),
        Script::MalformedStream { after_chunks } => malformed(after_chunks, chat),
    }
}

fn content_type(chat: &ChatRequest) -> &'static str {
    if chat.stream { EVENT_STREAM } else { JSON }
}

async fn sleep_ms(ms: u64) {
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
    }
}

/// A paced SSE stream: `first_chunk_delay_ms` before the first event,
/// `chunk_delay_ms` between events, `[DONE]` last.
fn stream_reply(reply: MockReply, chat: &ChatRequest) -> Response<ResponseBody> {
    let identity = ReplyIdentity::new(chat);
    let events: Vec<Bytes> = chat_reply::stream_chunks(&reply, chat, &identity)
        .iter()
        .map(chat_reply::sse_event)
        .chain([Bytes::from_static(SSE_DONE)])
        .collect();
    let (sender, body) = response_body::channel();
    tokio::spawn(async move {
        sleep_ms(reply.first_chunk_delay_ms).await;
        for (index, event) in events.into_iter().enumerate() {
            if index > 0 {
                sleep_ms(reply.chunk_delay_ms).await;
            }
            if !sender.send(event).await {
                return;
            }
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

/// The first `count` events of the interrupted reply.
fn leading_events(count: usize, chat: &ChatRequest) -> Vec<Bytes> {
    let identity = ReplyIdentity::new(chat);
    chat_reply::stream_chunks(&interrupted_reply(), chat, &identity)
        .iter()
        .take(count)
        .map(chat_reply::sse_event)
        .collect()
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

fn truncated(after_chunks: usize, chat: &ChatRequest) -> Response<ResponseBody> {
    let (sender, body) = response_body::channel();
    if chat.stream {
        let events = leading_events(after_chunks, chat);
        tokio::spawn(async move {
            if send_all(&sender, events).await {
                sender.abort().await;
            }
        });
        stream_response(body)
    } else {
        let identity = ReplyIdentity::new(chat);
        let full = Bytes::from(
            chat_reply::completion_json(&interrupted_reply(), chat, &identity).to_string(),
        );
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

fn malformed(after_chunks: usize, chat: &ChatRequest) -> Response<ResponseBody> {
    if !chat.stream {
        return invalid_json();
    }
    let (sender, body) = response_body::channel();
    let events = leading_events(after_chunks, chat);
    tokio::spawn(async move {
        if send_all(&sender, events).await {
            sender.send(Bytes::from_static(SSE_MALFORMED)).await;
        }
    });
    stream_response(body)
}

fn invalid_json() -> Response<ResponseBody> {
    respond(
        StatusCode::OK,
        JSON,
        response_body::full(Bytes::from_static(INVALID_JSON_BODY)),
    )
}

fn status_response(
    status: u16,
    body: Option<Value>,
    retry_after: Option<String>,
) -> Response<ResponseBody> {
    // An informational status is not a final response; hyper cannot send one.
    let code = match StatusCode::from_u16(status) {
        Ok(code) if !code.is_informational() => code,
        _ => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                &format!("the script's status {status} is not a final HTTP status"),
            );
        }
    };
    let retry_after = match retry_after.map(HeaderValue::try_from).transpose() {
        Ok(value) => value,
        Err(_) => {
            return error_response(
                StatusCode::INTERNAL_SERVER_ERROR,
                "the script's retry_after is not a valid header value",
            );
        }
    };
    let body = body.unwrap_or_else(|| chat_reply::error_envelope(status));
    let mut response = respond(code, JSON, response_body::full(body.to_string()));
    if let Some(value) = retry_after {
        response.headers_mut().insert(RETRY_AFTER, value);
    }
    response
}

/// An OpenAI-style error about the mock itself (bad request, bad script).
pub(crate) fn error_response(status: StatusCode, message: &str) -> Response<ResponseBody> {
    let body = json!({
        "error": { "message": message, "type": "mock_supplier_error", "param": null, "code": null }
    });
    respond(status, JSON, response_body::full(body.to_string()))
}

pub(crate) fn respond(
    status: StatusCode,
    content_type: &'static str,
    body: ResponseBody,
) -> Response<ResponseBody> {
    let mut response = Response::new(body);
    *response.status_mut() = status;
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    response
}
