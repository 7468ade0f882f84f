//! What every inference surface does before and after its own wire format:
//! authenticate, validate the common headers, read the body under the
//! surface's limit, apply the headers to the canonical request, and admit
//! it to the gateway.

use crate::app::App;
use crate::auth;
use crate::body::read_limited;
use bytes::Bytes;
use http::request::Parts;
use hyper::body::Incoming;
use router_canonical::{ApiError, PromptCacheMode, Protocol, Request};
use router_core::gateway::Admission;
use router_core::store::{ApiKeyRecord, Scope};
use uuid::Uuid;

/// An authenticated inference call with its body read.
pub struct Inbound {
    pub parts: Parts,
    pub key: ApiKeyRecord,
    pub body: Bytes,
}

/// Authenticate (scope `inference`), validate the `X-CI-*` headers, then
/// read at most `limit` bytes of body.
pub async fn receive(
    app: &App,
    request: http::Request<Incoming>,
    limit: usize,
) -> Result<Inbound, ApiError> {
    let (parts, body) = request.into_parts();
    let key = auth::authenticate(app, &parts.headers, Scope::Inference).await?;
    crate::inference_headers::validate(&parts.headers)?;
    let body = read_limited(&parts.headers, body, limit).await?;
    Ok(Inbound { parts, key, body })
}

/// Apply the common headers to a parsed request: `x-ci-prompt-cache`
/// overrides the key's mode, which defaults to passthrough (F-07).
pub fn apply_headers(headers: &http::HeaderMap, request: &mut Request) {
    if let Some(mode) = headers
        .get("x-ci-prompt-cache")
        .and_then(|v| v.to_str().ok())
        .and_then(PromptCacheMode::parse)
    {
        request.prompt_cache = mode;
    }
}

pub fn admission(request_id: Uuid, key: &ApiKeyRecord, inbound: Protocol) -> Admission {
    Admission {
        request_id,
        account_id: key.account_id,
        api_key_id: key.key_id,
        inbound,
    }
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
