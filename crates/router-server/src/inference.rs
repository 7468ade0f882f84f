//! The one inference flow every surface shares (once the route guard has
//! authenticated the key): validate the
//! common headers, read the body under the surface's limit, parse it with
//! the surface's client codec, run the lifecycle, and answer as JSON or as
//! the codec's SSE dialect. What differs per surface is a [`Surface`]: a
//! client codec and its HTTP settings (`surfaces.rs`).

use crate::affinity::{self, Affinity};
use crate::app::App;
use crate::auth;
use crate::body::Incoming;
use crate::body::read_limited;
use crate::client_stream;
use crate::reply::{self, Body};
use crate::request_log::RequestLog;
use crate::surfaces::Surface;
use bytes::Bytes;
use http::request::Parts;
use http::{Response, StatusCode};
use router_canonical::{
    ApiError, ClientCodec, ErrorCode, PromptCacheMode, ReplyContext, Request, StreamContext,
};
use router_core::Outcome;
use router_core::gateway::Admission;
use router_core::store::{ApiKeyRecord, Requester};
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
    // One catalog for the whole admission (each `catalog()` takes a lock).
    let catalog = app.gateway.catalog();
    check_model(&catalog, &inbound.key, &canonical.model, log)?;
    apply_headers(&inbound.parts.headers, &inbound.key, &mut canonical);
    // Upload references become their bytes before routing (H-02, GP-42).
    app.uploads
        .resolve_references(
            inbound.key.account_id,
            inbound.key.account_zdr,
            &mut canonical,
        )
        .await?;
    // The conservative bound on image input (H-07), before any supplier call.
    crate::image_input::check(&canonical)?;
    let assignment = experiment(&app, &inbound, &mut canonical, request_id).await?;
    if assignment.is_some() {
        // A variant's model is served under its own name and policies.
        check_model(&catalog, &inbound.key, &canonical.model, log)?;
    }
    let model = canonical.model.clone();
    // The request's `zdr`, and the account's data-protection switch, which
    // `zdr: false` cannot override (F-26, F-27, J-06).
    let zdr = canonical.routing.zdr || inbound.key.account_zdr;
    let affinity = Affinity::lookup(&app, &inbound.parts.headers, &inbound.key, &canonical).await;
    let trace = log.trace();
    let admission = Admission {
        request_id,
        requester: Requester::of(&inbound.key),
        inbound: codec.protocol(),
        zdr,
        preferred_route: affinity.as_ref().and_then(Affinity::preferred_route),
        experiment: assignment,
        trace: trace.clone(),
    };
    let history = app
        .gateway
        .open_thinking(admission.inbound, &canonical)
        .map_err(|e| e.to_api_error((surface.signature_param)(&inbound.body, &e)))?;
    let id = format!("{}{}", surface.id_prefix, request_id.simple());
    let cache = ResponseCache::for_request(&inbound.key, &canonical, zdr);
    if let Some(cache) = &cache
        && let Some(cached) = cache.lookup(&app).await
    {
        cache
            .record_hit(&app, &admission, &model, &cached.usage)
            .await;
        let reply = ReplyContext {
            id: &id,
            model: &model,
            created: unix_now(),
            cost: Some(router_canonical::NanoUsd::ZERO),
        };
        let body = codec.encode_response(&cached, &reply, &extra);
        let mut response = reply::json(StatusCode::OK, body, id_text);
        response
            .headers_mut()
            .insert(CACHE_HEADER, http::HeaderValue::from_static("hit"));
        if surface.messages_request_id {
            reply::set_messages_request_id(response.headers_mut(), id_text);
        }
        return Ok(response);
    }
    let outcome = app
        .gateway
        .run_opened(admission, canonical, history)
        .await?;
    // The route is known once a reply or a stream has started.
    let affinity_state = match (&affinity, trace.route_id()) {
        (Some(affinity), Some(served)) => {
            let state = affinity.state(trace.first_route_id().as_deref(), Some(&served));
            affinity.record(&app, &served).await;
            Some(state)
        }
        _ => None,
    };
    let mut response = match outcome {
        Outcome::Complete { response, cost } => {
            let reply = ReplyContext {
                id: &id,
                model: &model,
                created: response.created,
                cost: Some(cost),
            };
            let body = codec.encode_response(&response, &reply, &extra);
            let mut reply = reply::json(StatusCode::OK, body, id_text);
            if let Some(cache) = cache {
                cache.store(&app, &response).await;
                reply
                    .headers_mut()
                    .insert(CACHE_HEADER, http::HeaderValue::from_static("miss"));
            }
            reply
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
    // Completions validates and applies the prompt-cache headers but has no
    // affinity header (CF-10).
    if let Some(state) = affinity_state
        && codec.protocol() != router_canonical::Protocol::Completions
    {
        response
            .headers_mut()
            .insert(affinity::HEADER, http::HeaderValue::from_static(state));
    }
    Ok(response)
}

/// Says whether the exact-response cache answered (`hit`) or was asked
/// and did not (`miss`); absent when the cache does not apply.
const CACHE_HEADER: &str = "x-ci-cache";

/// The exact-response cache of one request (issue 16): only for a key that
/// opted in, a non-streaming request without image input (G-20, H-10), and
/// never under zero data retention (J-09). The fingerprint covers the whole
/// canonical request: model, body (experiment variant applied) and routing
/// options; the account is the other half of the key.
struct ResponseCache {
    account_id: Uuid,
    api_key_id: Uuid,
    ttl_seconds: i32,
    fingerprint: [u8; 32],
}

impl ResponseCache {
    fn for_request(key: &ApiKeyRecord, request: &Request, zdr: bool) -> Option<ResponseCache> {
        let ttl_seconds = key.policy.response_cache_ttl_seconds?;
        if zdr || request.stream || request.has_images() {
            return None;
        }
        let canonical = serde_json::to_vec(request).ok()?;
        Some(ResponseCache {
            account_id: key.account_id,
            api_key_id: key.key_id,
            ttl_seconds,
            fingerprint: router_store::response_cache::fingerprint(&canonical),
        })
    }

    /// The cached reply; a failed read is a miss, never an error.
    async fn lookup(&self, app: &App) -> Option<router_canonical::Response> {
        let stored = app
            .database()
            .cached_response(self.account_id, &self.fingerprint, self.ttl_seconds)
            .await
            .map_err(|e| tracing::warn!(error = %e, "response cache read failed"))
            .ok()??;
        serde_json::from_str(&stored)
            .map_err(|e| tracing::warn!(error = %e, "unreadable response cache entry"))
            .ok()
    }

    async fn record_hit(
        &self,
        app: &App,
        admission: &Admission,
        model: &str,
        usage: &router_canonical::Usage,
    ) {
        let request_id = admission.request_id;
        let hit = router_store::response_cache::CacheHit {
            request_id,
            account_id: self.account_id,
            api_key_id: self.api_key_id,
            model: app
                .gateway
                .catalog()
                .model(model)
                .map_or_else(|| model.to_owned(), |m| m.id.clone()),
            inbound_protocol: admission.inbound,
            usage: *usage,
            experiment: admission.experiment.clone(),
        };
        if let Err(e) = app.database().record_cache_hit(&hit).await {
            tracing::warn!(%request_id, error = %e, "could not record a cache hit");
        }
    }

    /// Stores a fresh answer before replying, so the client's next
    /// identical request finds it (only keys that opted in pay the write).
    async fn store(self, app: &App, response: &router_canonical::Response) {
        let Ok(json) = serde_json::to_string(response) else {
            return;
        };
        if let Err(e) = app
            .database()
            .cache_response(self.account_id, &self.fingerprint, &json)
            .await
        {
            tracing::warn!(error = %e, "could not store a cached response");
        }
    }
}

/// `X-CI-Experiment` (F-01..F-06): the caller's account's experiment of
/// that slug, or 404 `experiment_not_found`, the same for an unknown and
/// another account's slug (GP-10). A running or promoted experiment
/// rewrites the request with its variant and returns (experiment, variant)
/// for the history; any other status leaves the request untouched (F-03).
async fn experiment(
    app: &App,
    inbound: &Inbound,
    request: &mut Request,
    request_id: Uuid,
) -> Result<Option<router_core::store::ExperimentArm>, ApiError> {
    let headers = &inbound.parts.headers;
    let Some(slug) = headers.get("x-ci-experiment").and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    let experiment = app
        .database()
        .find_experiment_cached(inbound.key.account_id, slug)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "experiment lookup failed");
            ApiError::new(
                ErrorCode::InternalError,
                "An internal error occurred; the request was not charged.",
            )
        })?
        .ok_or_else(|| {
            ApiError::new(ErrorCode::ExperimentNotFound, "No such experiment.")
                .with_param("x-ci-experiment")
        })?;
    if !experiment.is_live() {
        return Ok(None);
    }
    // Image requests bypass text techniques (H-06, H-10, GP-45).
    if request.has_images() && experiment.rewrites() {
        return Err(ApiError::new(
            ErrorCode::IncompatibleImageInput,
            "This experiment rewrites the prompt, which image input does not allow.",
        )
        .with_param("x-ci-experiment"));
    }
    let end_user = headers.get("x-ci-end-user").and_then(|v| v.to_str().ok());
    // Without an end user the draw is per request (GP-44): the request ID's
    // random bits, mixed.
    let draw = router_core::experiments::mix(request_id.as_u64_pair().1);
    let Some(variant) = experiment.assign(end_user, draw) else {
        return Ok(None);
    };
    variant.apply(request);
    Ok(Some(router_core::store::ExperimentArm {
        experiment_id: experiment.id,
        variant: variant.name.clone(),
    }))
}

/// The key's model policy for `name` (A-18, GP-46), noting the catalog
/// model (never what the client typed) for the request's log line.
fn check_model(
    catalog: &router_core::Catalog,
    key: &ApiKeyRecord,
    name: &str,
    log: &RequestLog,
) -> Result<(), ApiError> {
    if let Some(model) = catalog.model(name) {
        log.model(&model.id);
    }
    auth::check_model(catalog, key, name)
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
