//! The one inference flow every surface shares (once the route guard has
//! authenticated the key): validate the
//! common headers, read the body under the surface's limit, parse it with
//! the surface's client codec, hand it to core's request pipeline
//! (`Gateway::handle`: the key's model policy, upload references,
//! experiment, affinity, response cache, the lifecycle), and answer as JSON or as the codec's SSE dialect. What differs per surface is a [`Surface`]: a
//! client codec and its HTTP settings (`surfaces.rs`).

use crate::app::App;
use crate::body::Incoming;
use crate::body::read_limited;
use crate::client_stream;
use crate::reply::{self, Body};
use crate::surfaces::Surface;
use bytes::Bytes;
use http::request::Parts;
use http::{HeaderValue, Response, StatusCode};
use router_canonical::{ApiError, ClientCodec, ReplyContext, StreamContext};
use router_core::store::ApiKeyRecord;
use router_core::{
    Call, GatewayRequest, HandleError, Handled, PromptCacheMode, Reply, RoutingOptions,
};
use router_telemetry::request_log::RequestLog;
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
    let id_text = log.reply_id();
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
    // `zdr` and `min_discount_percent` are the gateway's members of every
    // body, not the protocol's: the codec hands them over before judging
    // its unknown members.
    let mut routing = RoutingOptions::default();
    let (canonical, extra) = codec.parse_request_with(
        &Headers(&inbound.parts.headers),
        &inbound.body,
        &mut routing,
    )?;
    // The protocol's content, the gateway's options beside it; what the
    // gateway does not serve (`n` other than 1) is refused here.
    let mut canonical = GatewayRequest::new(canonical, routing)?;
    canonical.prompt_cache = prompt_cache_mode(&inbound.parts.headers, &inbound.key);
    // Every policy from here on, in order, is core's pipeline.
    let call = Call {
        request_id,
        key: &inbound.key,
        inbound: codec.protocol(),
        headers: &Headers(&inbound.parts.headers),
        prompt_cache: &app.prompt_cache,
        trace: log.trace(),
    };
    let handled = app
        .gateway
        .handle(call, canonical, &app.uploads)
        .await
        .map_err(|e| match e {
            HandleError::Api(error) => error,
            HandleError::Thinking(e) => {
                e.to_api_error((surface.signature_param)(&inbound.body, &e))
            }
        })?;
    let Handled {
        model,
        reply,
        cache,
        affinity,
    } = handled;
    let id = format!("{}{}", surface.id_prefix, request_id.simple());
    let mut response = match reply {
        Reply::Cached(cached) => {
            let reply = ReplyContext::new(&id, &model, unix_now())
                .with_cost(Some(router_canonical::NanoUsd::ZERO));
            let body = codec.encode_response(&cached, &reply, &extra);
            reply::json(StatusCode::OK, body, id_text)
        }
        Reply::Complete { response, cost } => {
            let reply = ReplyContext::new(&id, &model, response.created).with_cost(Some(cost));
            let body = codec.encode_response(&response, &reply, &extra);
            reply::json(StatusCode::OK, body, id_text)
        }
        Reply::Stream(live) => {
            let stream = StreamContext::new(id, model, unix_now());
            client_stream::relay(
                live,
                codec.stream_encoder(stream, extra),
                id_text,
                log.clone(),
            )
        }
    };
    let headers = response.headers_mut();
    if let Some(cache) = cache {
        headers.insert(CACHE_HEADER, HeaderValue::from_static(cache.as_str()));
    }
    if surface.messages_request_id {
        reply::set_messages_request_id(headers, id_text);
    }
    // Completions validates and applies the prompt-cache headers but has no
    // affinity header (CF-10).
    if let Some(state) = affinity
        && codec.protocol() != router_canonical::Protocol::Completions
    {
        headers.insert(AFFINITY_HEADER, HeaderValue::from_static(state.as_str()));
    }
    Ok(response)
}

/// Says whether the exact-response cache answered (`hit`) or was asked
/// and did not (`miss`); absent when the cache does not apply.
const CACHE_HEADER: &str = "x-ci-cache";

/// Prompt-cache affinity's state (chat, responses and messages only, CF-10).
const AFFINITY_HEADER: &str = "x-ci-prompt-cache-affinity";

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

/// The request's prompt-cache mode: `x-ci-prompt-cache` overrides the
/// key's `prompt_cache_mode`, which defaults to passthrough (F-07).
fn prompt_cache_mode(headers: &http::HeaderMap, key: &ApiKeyRecord) -> PromptCacheMode {
    headers
        .get("x-ci-prompt-cache")
        .and_then(|v| v.to_str().ok())
        .and_then(PromptCacheMode::parse)
        .unwrap_or_else(|| key.policy.default_prompt_cache())
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
