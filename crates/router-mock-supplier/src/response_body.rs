//! The one response body type the server sends: either a full body (sent with
//! `Content-Length` in one write) or a stream fed through a channel, whose
//! chunks hyper flushes as they arrive.

use std::time::Duration;

use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use serde_json::Value;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::Frame;
use tokio::sync::mpsc;

use crate::openai_error;

/// The body of every response.
pub(crate) type ResponseBody = BoxBody<Bytes, ScriptedAbort>;

/// The error a streamed body yields to make hyper drop the connection.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ScriptedAbort {
    /// The script closes the connection in the middle of the response.
    #[error("the mock supplier's script closes the connection mid-response")]
    ConnectionClosed,
}

/// How long a stream stays quiet before it aborts.
///
/// hyper buffers a data frame and, if the body's next poll returns an error
/// at once, drops the connection without flushing that buffer. Staying
/// pending for a moment lets hyper flush what was already produced (headers
/// and chunks), so the client really receives them before the connection
/// goes away.
const FLUSH_GRACE: Duration = Duration::from_millis(10);

/// Frames queued ahead of the connection; small, so pacing stays real.
const CHANNEL_CAPACITY: usize = 4;

/// A complete body with a known length.
pub(crate) fn full(bytes: impl Into<Bytes>) -> ResponseBody {
    Full::new(bytes.into())
        .map_err(|never| match never {})
        .boxed()
}

/// A streamed body and the sender that feeds it.
pub(crate) fn channel() -> (BodySender, ResponseBody) {
    let (sender, mut receiver) = mpsc::channel(CHANNEL_CAPACITY);
    let stream = futures::stream::poll_fn(move |cx| receiver.poll_recv(cx));
    (BodySender { sender }, StreamBody::new(stream).boxed())
}

/// Feeds a streamed body. Dropping it ends the body cleanly.
#[derive(Debug)]
pub(crate) struct BodySender {
    sender: mpsc::Sender<Result<Frame<Bytes>, ScriptedAbort>>,
}

impl BodySender {
    /// Sends one data frame; `false` when the client has gone away.
    pub(crate) async fn send(&self, bytes: impl Into<Bytes>) -> bool {
        self.sender
            .send(Ok(Frame::data(bytes.into())))
            .await
            .is_ok()
    }

    /// Lets hyper flush what was sent, then closes the connection without
    /// ending the body.
    pub(crate) async fn abort(self) {
        tokio::time::sleep(FLUSH_GRACE).await;
        // If the client is already gone there is nothing left to abort.
        let _ = self.sender.send(Err(ScriptedAbort::ConnectionClosed)).await;
    }
}

/// An OpenAI-style error about the mock itself, for paths that belong to no
/// protocol (control endpoints, unknown paths).
pub(crate) fn error_response(status: StatusCode, message: &str) -> Response<ResponseBody> {
    json_response(
        status,
        &openai_error::envelope(message, "mock_supplier_error"),
    )
}

pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response<ResponseBody> {
    respond(status, "application/json", full(body.to_string()))
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
