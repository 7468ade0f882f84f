//! Building responses: bodies, the request-ID header, error envelopes.

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use router_canonical::{ApiError, ClientCodec};
use router_chat::ChatClient;
use router_messages::MessagesClient;
use serde::Serialize;
use std::convert::Infallible;

pub type Body = BoxBody<Bytes, Infallible>;
pub type Reply = Response<Body>;

/// The error code a reply was rendered from, riding on the response so the
/// access line sees it without parsing the body ([`error_with`] sets it).
#[derive(Debug, Clone, Copy)]
pub struct ReplyCode(pub router_canonical::ErrorCode);

/// A response body fed by a channel: each message is one frame, written as
/// it arrives (no buffering of whole streams).
pub fn channel_body(rx: tokio::sync::mpsc::Receiver<Bytes>) -> Body {
    let frames = futures::stream::unfold(rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|bytes| (Ok::<_, Infallible>(hyper::body::Frame::data(bytes)), rx))
    });
    http_body_util::StreamBody::new(frames).boxed()
}

/// Which envelope the errors of a non-inference endpoint use (inference
/// surfaces use their codec's, see `surfaces.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Envelope {
    /// `{"error":{"message","type","param","code"}}` with `x-request-id` (P-01).
    OpenAi,
    /// `{"type":"error","error":{"type","message"}}` with `request-id` and
    /// `x-request-id` (D-34, CF-12).
    Messages,
    /// The OpenAI-style envelope plus `error.requestId`, equal to
    /// `x-request-id` (P-03, O-31).
    Video,
    /// `{"detail": "..."}`, the public catalog's (P-04, L-40).
    Public,
}

pub const REQUEST_ID: &str = "x-request-id";
/// The Messages surface's name for the same header (CF-12).
pub const MESSAGES_REQUEST_ID: &str = "request-id";

pub fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

pub fn json(status: StatusCode, body: impl Into<Bytes>, request_id: &str) -> Response<Body> {
    let mut response = Response::new(full(body));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    set_request_id(headers, request_id);
    response
}

/// 204 with no body.
pub fn no_content(request_id: &str) -> Response<Body> {
    let mut response = Response::new(full(Bytes::new()));
    *response.status_mut() = StatusCode::NO_CONTENT;
    set_request_id(response.headers_mut(), request_id);
    response
}

pub fn json_value(
    status: StatusCode,
    value: &impl serde::Serialize,
    request_id: &str,
) -> Response<Body> {
    json(
        status,
        serde_json::to_vec(value).unwrap_or_default(),
        request_id,
    )
}

/// `response`, which no cache may keep (`Cache-Control: no-store`): a
/// person's settings, a secret shown once, a channel's destination.
pub fn no_store(mut response: Reply) -> Reply {
    response.headers_mut().insert(
        http::header::CACHE_CONTROL,
        HeaderValue::from_static("no-store"),
    );
    response
}

/// A handler's 200 with a wing's view as JSON.
pub fn ok(view: &impl serde::Serialize, request_id: &str) -> Result<Reply, ApiError> {
    Ok(json_value(StatusCode::OK, view, request_id))
}

/// A handler's 201 with the view of what an operation made.
pub fn created(view: &impl serde::Serialize, request_id: &str) -> Result<Reply, ApiError> {
    Ok(json_value(StatusCode::CREATED, view, request_id))
}

/// A handler's 204: what the operation removed is gone.
pub fn removed(request_id: &str) -> Result<Reply, ApiError> {
    Ok(no_content(request_id))
}

pub fn set_request_id(headers: &mut http::HeaderMap, request_id: &str) {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(REQUEST_ID, value);
    }
}

pub fn error(envelope: Envelope, error: &ApiError, request_id: &str) -> Reply {
    match envelope {
        // The surfaces' own codecs render these (`surfaces.rs` does the
        // same for a surface's request; the envelope is the codec's).
        Envelope::OpenAi => codec_error(
            ChatClient::default().error_body(error),
            error,
            request_id,
            false,
        ),
        Envelope::Messages => {
            codec_error(MessagesClient.error_body(error), error, request_id, true)
        }
        Envelope::Video => {
            let code = error.code;
            let body = VideoError {
                error: VideoErrorObject {
                    message: &error.message,
                    kind: code.openai_type(),
                    param: error.param.as_deref(),
                    code: code.as_str(),
                    request_id,
                },
            };
            error_with(
                serde_json::to_vec(&body).unwrap_or_default(),
                error,
                request_id,
            )
        }
        Envelope::Public => {
            let body = DetailError {
                detail: &error.message,
            };
            error_with(
                serde_json::to_vec(&body).unwrap_or_default(),
                error,
                request_id,
            )
        }
    }
}

// P-03, O-31.
/// The video endpoints' error: the OpenAI shape plus `error.requestId`,
/// equal to the `x-request-id` header.
#[derive(Serialize, utoipa::ToSchema)]
pub struct VideoError<'a> {
    pub error: VideoErrorObject<'a>,
}

#[derive(Serialize, utoipa::ToSchema)]
pub struct VideoErrorObject<'a> {
    pub message: &'a str,
    #[serde(rename = "type")]
    pub kind: &'a str,
    #[schema(required)]
    pub param: Option<&'a str>,
    pub code: &'a str,
    #[serde(rename = "requestId")]
    pub request_id: &'a str,
}

// P-04, L-40.
/// The public catalog's error.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DetailError<'a> {
    pub detail: &'a str,
}

/// An error reply with an envelope already rendered.
/// An error rendered by a client codec (`body`), with the Messages
/// surface's `request-id` header when `messages` (D-34, CF-12).
pub fn codec_error(body: Vec<u8>, error: &ApiError, request_id: &str, messages: bool) -> Reply {
    let mut response = error_with(body, error, request_id);
    if messages {
        set_messages_request_id(response.headers_mut(), request_id);
    }
    response
}

pub fn error_with(body: Vec<u8>, error: &ApiError, request_id: &str) -> Reply {
    let status = StatusCode::from_u16(error.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json(status, body, request_id);
    response.extensions_mut().insert(ReplyCode(error.code));
    if let Some(seconds) = error.retry_after {
        response
            .headers_mut()
            .insert(http::header::RETRY_AFTER, HeaderValue::from(seconds.max(1)));
    }
    response
}

/// Messages responses carry `request-id` as well as `x-request-id` (CF-12).
pub fn set_messages_request_id(headers: &mut http::HeaderMap, request_id: &str) {
    if let Ok(value) = HeaderValue::from_str(request_id) {
        headers.insert(MESSAGES_REQUEST_ID, value);
    }
}
