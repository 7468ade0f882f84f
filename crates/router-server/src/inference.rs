//! The one inference flow every surface shares: authenticate, validate the
//! common headers, read the body under the surface's limit, parse it with
//! the surface's wire crate, run the lifecycle, and answer as JSON or as the
//! surface's SSE dialect. What differs per surface is an [`InferenceSurface`]
//! (one small impl in each handler module).

use crate::app::App;
use crate::auth;
use crate::body::read_limited;
use crate::client_stream::{self, ClientEncoder};
use crate::reply::{self, Body, Surface};
use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, NanoUsd, PromptCacheMode, Protocol, Request};
use router_core::Outcome;
use router_core::gateway::Admission;
use router_core::store::{ApiKeyRecord, Scope};
use router_core::thinking_seal::SealError;
use std::sync::Arc;
use uuid::Uuid;

/// An authenticated inference call with its body read.
pub struct Inbound {
    pub parts: Parts,
    pub key: ApiKeyRecord,
    pub body: Bytes,
}

/// What the response of one surface is built from.
pub struct ReplyContext<'a, E> {
    /// The surface's response id (`chatcmpl-…`, `msg_…`).
    pub id: &'a str,
    /// The public model the client asked for, also after a fallback.
    pub model: &'a str,
    pub cost: NanoUsd,
    /// What the parser kept for the reply (e.g. the Completions echo).
    pub extra: &'a E,
}

/// One inference surface: its protocol, limits and wire crate.
pub trait InferenceSurface {
    const PROTOCOL: Protocol;
    const ERRORS: Surface;
    const BODY_LIMIT: usize;
    /// Prefix of the response id; the request id follows it.
    const ID_PREFIX: &'static str;
    /// What the reply needs from the request besides the canonical form.
    type Extra: Send + 'static;
    type StreamEncoder: ClientEncoder;

    fn parse(headers: &http::HeaderMap, body: &[u8]) -> Result<(Request, Self::Extra), ApiError>;
    fn encode_response(
        response: &router_canonical::Response,
        ctx: &ReplyContext<'_, Self::Extra>,
    ) -> Vec<u8>;
    fn stream_encoder(id: String, model: String, extra: Self::Extra) -> Self::StreamEncoder;
    /// Headers a surface adds to every response (Messages: `request-id`).
    fn finish_headers(_headers: &mut http::HeaderMap, _request_id: &str) {}
    /// The `param` naming a thinking block whose router signature was
    /// refused, in the surface's own indexes (called on that error only).
    fn signature_param(_body: &[u8], error: &SealError) -> String {
        error.canonical_path()
    }
}

pub async fn handle<S: InferenceSurface>(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
) -> Response<Body> {
    let id_text = request_id.to_string();
    match run::<S>(app, request, request_id, &id_text).await {
        Ok(response) => response,
        Err(error) => reply::error(S::ERRORS, &error, &id_text),
    }
}

async fn run<S: InferenceSurface>(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
    id_text: &str,
) -> Result<Response<Body>, ApiError> {
    let inbound = receive(&app, request, S::BODY_LIMIT).await?;
    let (mut canonical, extra) = S::parse(&inbound.parts.headers, &inbound.body)?;
    apply_headers(&inbound.parts.headers, &mut canonical);
    let model = canonical.model.clone();
    let admission = Admission {
        request_id,
        account_id: inbound.key.account_id,
        api_key_id: inbound.key.key_id,
        inbound: S::PROTOCOL,
    };
    let history = app
        .gateway
        .open_thinking(S::PROTOCOL, &canonical)
        .map_err(|e| e.to_api_error(S::signature_param(&inbound.body, &e)))?;
    let id = format!("{}{}", S::ID_PREFIX, request_id.simple());
    let mut response = match app
        .gateway
        .run_opened(admission, canonical, history)
        .await?
    {
        Outcome::Complete { response, cost } => {
            let ctx = ReplyContext {
                id: &id,
                model: &model,
                cost,
                extra: &extra,
            };
            reply::json(StatusCode::OK, S::encode_response(&response, &ctx), id_text)
        }
        Outcome::Stream(live) => {
            client_stream::relay(live, S::stream_encoder(id, model, extra), id_text)
        }
    };
    S::finish_headers(response.headers_mut(), id_text);
    Ok(response)
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
fn apply_headers(headers: &http::HeaderMap, request: &mut Request) {
    if let Some(mode) = headers
        .get("x-ci-prompt-cache")
        .and_then(|v| v.to_str().ok())
        .and_then(PromptCacheMode::parse)
    {
        request.prompt_cache = mode;
    }
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
