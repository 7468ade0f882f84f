//! Reading request bodies: the routes' size limits (Q-01, CF-02), JSON
//! bodies and wing inputs, and the public errors of a body that could not
//! be read. The reading itself, under a pace, is `router_http::body`.

use bytes::Bytes;
use router_canonical::{ApiError, ErrorCode};
use router_http::body::ReadError;
pub use router_http::body::{BodyError, Incoming, declared_length, drain_in_background};

/// The public error of a body that could not be read: 408 when the client
/// was too slow, 400 when the connection broke.
fn body_error(error: &BodyError) -> ApiError {
    if error.is_timeout() {
        request_timeout()
    } else {
        ApiError::invalid("body", "The request body could not be read.")
    }
}

/// 408: the body did not arrive in time.
fn request_timeout() -> ApiError {
    ApiError::new(
        ErrorCode::RequestTimeout,
        "The request body did not arrive in time.",
    )
}

/// The whole body, at most `limit` bytes (`router_http::body::read_limited`),
/// or its public error: 413 `payload_too_large`, 408 or 400.
pub async fn read_limited(
    headers: &http::HeaderMap,
    body: Incoming,
    limit: usize,
) -> Result<Bytes, ApiError> {
    router_http::body::read_limited(headers, body, limit)
        .await
        .map_err(|e| match e {
            ReadError::TooLarge { limit } => ApiError::new(
                ErrorCode::PayloadTooLarge,
                format!("The request body exceeds the {limit}-byte limit."),
            ),
            ReadError::Body(e) => body_error(&e),
        })
}

/// 2 MiB: chat, responses and completions bodies (CF-02).
pub const INFERENCE_BODY_LIMIT: usize = 2 * 1024 * 1024;
/// 8 MiB: `/v1/messages` and count_tokens, whose base64 images
/// legitimately exceed 2 MiB (CF-02, D-35).
pub const MESSAGES_BODY_LIMIT: usize = 8 * 1024 * 1024;
/// Admin API bodies are small.
pub const ADMIN_BODY_LIMIT: usize = 64 * 1024;

/// A small JSON body (the admin API, sign-in) as `T`, refusing unknown
/// fields where `T` says so: 400 `invalid_parameter` naming the field.
pub async fn json_body<T: for<'de> serde::Deserialize<'de>>(
    request: http::Request<Incoming>,
    limit: usize,
) -> Result<T, ApiError> {
    let (parts, body) = request.into_parts();
    let bytes = read_limited(&parts.headers, body, limit).await?;
    let mut de = serde_json::Deserializer::from_slice(&bytes);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        ApiError::invalid(
            if path == "." { "body".to_owned() } else { path },
            e.inner().to_string(),
        )
    })
}

/// A wing operation's input (the operator's, the dashboard's, a channel's
/// provisioning): a JSON object of at most [`ADMIN_BODY_LIMIT`], then the
/// input's fields, an unknown one refused (`router_operator::from_json`).
pub async fn input<T: serde::de::DeserializeOwned>(
    request: http::Request<Incoming>,
) -> Result<T, ApiError> {
    let body = json_body(request, ADMIN_BODY_LIMIT).await?;
    Ok(router_operator::from_json(body)?)
}
