//! The one inference flow every surface shares (once the route guard has
//! authenticated the key): validate the
//! common headers, read the body under the surface's limit, parse it with
//! the surface's client codec, run the lifecycle, and answer as JSON or as
//! the codec's SSE dialect. What differs per surface is a [`Surface`]: a
//! client codec and its HTTP settings (`surfaces.rs`).

use crate::app::App;
use crate::auth;
use crate::body::read_limited;
use crate::client_stream;
use crate::reply::{self, Body};
use crate::request_log::RequestLog;
use crate::surfaces::Surface;
use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{
    ApiError, ClientCodec, PromptCacheMode, ReplyContext, Request, StreamContext,
};
use router_core::Outcome;
use router_core::gateway::Admission;
use router_core::store::ApiKeyRecord;
use std::sync::Arc;
use uuid::Uuid;

/// An authenticated inference call with its body read.
pub struct Inbound {
    pub parts: Parts,
    pub key: ApiKeyRecord,
    pub body: Bytes,
}

/// HTTP headers as a codec reads them.
pub struct Headers<'a>(pub &'a http::HeaderMap);

impl router_canonical::HeaderSource for Headers<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(|v| v.to_str().ok())
    }
}

/// Serve one inference call; `key` is the caller the route guard let
/// through (scope `inference`, see `routes.rs`).
pub async fn handle<C: ClientCodec>(
    surface: &'static Surface<C>,
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    log: &RequestLog,
) -> Response<Body> {
    let id_text = request_id.to_string();
    match run(surface, app, request, key, request_id, &id_text, log).await {
        Ok(response) => response,
        Err(error) => surface.error(&error, &id_text),
    }
}

async fn run<C: ClientCodec>(
    surface: &'static Surface<C>,
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    id_text: &str,
    log: &RequestLog,
) -> Result<Response<Body>, ApiError> {
    let codec = &surface.codec;
    let inbound = receive(request, key, surface.body_limit).await?;
    let (mut canonical, extra) =
        codec.parse_request(&Headers(&inbound.parts.headers), &inbound.body)?;
    if let Some(model) = app.gateway.catalog().model(&canonical.model) {
        log.model(&model.id);
    }
    auth::check_model(app.gateway.catalog(), &inbound.key, &canonical.model)?;
    apply_headers(&inbound.parts.headers, &inbound.key, &mut canonical);
    // Upload references become their bytes before routing (H-02, GP-42).
    crate::uploads::resolve_references(&app, &inbound.key, &mut canonical).await?;
    // The conservative bound on image input (H-07), before any supplier call.
    crate::image_input::check(&canonical)?;
    let model = canonical.model.clone();
    let admission = Admission {
        request_id,
        account_id: inbound.key.account_id,
        api_key_id: inbound.key.key_id,
        policy_version: inbound.key.policy.version,
        key_limited: inbound.key.policy.limits.any(),
        inbound: codec.protocol(),
        // The account's data-protection switch needs verified ZDR supply
        // (J-06); the request's own `zdr` is read by routing as well.
        zdr: inbound.key.account_zdr,
        trace: log.trace(),
    };
    let history = app
        .gateway
        .open_thinking(admission.inbound, &canonical)
        .map_err(|e| e.to_api_error((surface.signature_param)(&inbound.body, &e)))?;
    let id = format!("{}{}", surface.id_prefix, request_id.simple());
    let mut response = match app
        .gateway
        .run_opened(admission, canonical, history)
        .await?
    {
        Outcome::Complete { response, cost } => {
            let reply = ReplyContext {
                id: &id,
                model: &model,
                created: response.created,
                cost: Some(cost),
            };
            let body = codec.encode_response(&response, &reply, &extra);
            reply::json(StatusCode::OK, body, id_text)
        }
        Outcome::Stream(live) => {
            let stream = StreamContext {
                id,
                model,
                created: unix_now(),
            };
            client_stream::relay(
                live,
                codec.stream_encoder(stream, extra),
                id_text,
                log.clone(),
            )
        }
    };
    if surface.messages_request_id {
        reply::set_messages_request_id(response.headers_mut(), id_text);
    }
    Ok(response)
}

/// Validate the `X-CI-*` headers of an authorized call, then read at most
/// `limit` bytes of body.
pub async fn receive(
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    limit: usize,
) -> Result<Inbound, ApiError> {
    let (parts, body) = request.into_parts();
    crate::inference_headers::validate(&parts.headers)?;
    let body = read_limited(&parts.headers, body, limit).await?;
    Ok(Inbound { parts, key, body })
}

/// Apply the common headers to a parsed request: `x-ci-prompt-cache`
/// overrides the key's `prompt_cache_mode`, which defaults to passthrough
/// (F-07).
fn apply_headers(headers: &http::HeaderMap, key: &ApiKeyRecord, request: &mut Request) {
    request.prompt_cache = headers
        .get("x-ci-prompt-cache")
        .and_then(|v| v.to_str().ok())
        .and_then(PromptCacheMode::parse)
        .unwrap_or_else(|| key.policy.default_prompt_cache());
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
