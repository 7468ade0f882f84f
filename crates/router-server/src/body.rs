//! Reading request bodies under a size limit (Q-01, CF-02).

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use router_canonical::{ApiError, ErrorCode};

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

/// Read the whole body, refusing more than `limit` bytes: first by the
/// declared Content-Length, then by counting what actually arrives.
pub async fn read_limited(
    headers: &http::HeaderMap,
    body: Incoming,
    limit: usize,
) -> Result<Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("The request body exceeds the {limit}-byte limit."),
        )
    };
    let declared = headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let mut body = body;
    if declared.is_some_and(|n| n > limit as u64) {
        drain(&mut body, 0, limit).await;
        return Err(too_large());
    }
    let mut buf = BytesMut::with_capacity(declared.map_or(8 * 1024, |n| n as usize));
    while let Some(frame) = body.frame().await {
        let frame =
            frame.map_err(|_| ApiError::invalid("body", "The request body could not be read."))?;
        if let Ok(data) = frame.into_data() {
            if buf.len() + data.len() > limit {
                drain(&mut body, buf.len() + data.len(), limit).await;
                return Err(too_large());
            }
            buf.extend_from_slice(&data);
        }
    }
    Ok(buf.freeze())
}

/// Read and discard the rest of a refused body, up to a few times the
/// limit, so a client still sending it reads the 413 instead of a reset
/// connection. A larger body is cut off: the connection closes.
pub async fn drain(body: &mut Incoming, mut seen: usize, limit: usize) {
    let cap = limit.saturating_mul(4);
    while seen <= cap {
        match body.frame().await {
            Some(Ok(frame)) => seen += frame.data_ref().map_or(0, |d| d.len()),
            _ => return,
        }
    }
}
