//! The request pipeline: every policy an inference request meets, in the
//! order it meets them, in one function ([`Gateway::handle`]):
//!
//! 0. the key's model policy (A-18, GP-46: an existing model the key may
//!    not use is 403 `model_not_allowed`, an unknown one 404), the catalog
//!    model noted for the log line;
//! 1. upload references (`file_id` image parts) replaced by their bytes
//!    (H-02, GP-42; refused under zero data retention, H-13), through the
//!    [`UploadReferences`] port;
//! 2. the conservative bound on image input (H-07), before any supplier
//!    call ([`crate::image_input`]);
//! 3. the experiment variant (`X-CI-Experiment`, F-01..F-06), which may
//!    rewrite the prompt and change the model (then checked against the
//!    key's policy again);
//! 4. the affinity preference of the request's cacheable prefix (F-16);
//! 5. the router thinking signatures a Messages client sent back;
//! 6. the exact-response cache: a hit is answered here, uncharged;
//! 7. plan (zero data retention, the preference first), reserve once,
//!    attempt the routes, settle once;
//! 8. the route that served the prefix recorded as its preference;
//! 9. a complete answer stored in the cache before it is replied.
//!
//! The store access is behind the ports [`ExperimentStore`],
//! [`AffinityStore`] and [`ResponseCacheStore`], the uploads behind
//! [`UploadReferences`]. What the server did before (authenticate, read
//! the body, parse it, the prompt-cache mode it asked for) and after
//! (render the reply and its headers) is the server's.

use crate::affinity::{self, Affinity, AffinityState, PromptCacheSettings};
use crate::catalog::Catalog;
use crate::experiments;
use crate::gateway::{Admission, Gateway, LiveStream, Outcome};
use crate::gateway_request::{GatewayRequest, PromptCacheMode};
use crate::product_codes;
use crate::response_cache::{CacheKey, CacheStatus};
use crate::store::{
    AffinityStore, ApiKeyRecord, CacheHit, ExperimentArm, ExperimentStore, Requester,
    ResponseCacheStore, Store,
};
use crate::supplier::Suppliers;
use crate::thinking_seal::SealError;
use crate::trace::RequestTrace;
use router_canonical::{ApiError, HeaderSource, NanoUsd, Protocol, Request, Response};
use std::sync::Arc;
use uuid::Uuid;

/// One inference request as the server hands it to [`Gateway::handle`]:
/// authenticated and parsed.
#[derive(Clone)]
pub struct Call<'a> {
    pub request_id: Uuid,
    /// The key the request came with.
    pub key: &'a ApiKeyRecord,
    /// The surface it arrived on.
    pub inbound: Protocol,
    /// Its headers, validated by the server; the pipeline reads only the
    /// `X-CI-*` ones it needs, when it needs them: `x-ci-experiment` (the
    /// slug of one of the account's experiments), `x-ci-end-user` (keeps an
    /// end user on one variant, F-06, and scopes `user` affinity, GP-34),
    /// `x-ci-prompt-cache-scope` and `x-ci-prompt-cache-session`.
    pub headers: &'a (dyn HeaderSource + Sync),
    /// The deployment's prompt-cache affinity settings.
    pub prompt_cache: &'a PromptCacheSettings,
    /// Filled as the request goes, for its log line.
    pub trace: Arc<RequestTrace>,
}

/// What the pipeline answered, for the server to render.
pub struct Handled<S: Store, P: Suppliers> {
    /// The model the reply names: the client's, or the variant's (F-01).
    pub model: String,
    pub reply: Reply<S, P>,
    /// `x-ci-cache`, when the exact-response cache applied.
    pub cache: Option<CacheStatus>,
    /// `x-ci-prompt-cache-affinity`, when the prefix took part and a route
    /// served it.
    pub affinity: Option<AffinityState>,
}

pub enum Reply<S: Store, P: Suppliers> {
    /// From the exact-response cache: nothing reserved, nothing charged.
    Cached(Response),
    /// A route's answer, settled; `cost` is what was charged.
    Complete { response: Response, cost: NanoUsd },
    /// A route's stream, to relay; it settles at its end.
    Stream(LiveStream<S, P>),
}

/// Why the pipeline answered no reply.
#[derive(Debug)]
pub enum HandleError {
    /// The public error.
    Api(ApiError),
    /// A thinking block's router signature was refused: the surface names
    /// the block in its own indexes ([`SealError::to_api_error`]).
    Thinking(SealError),
}

/// Where an inference request's upload references (`file_id` image parts)
/// become their bytes, before routing, so a supplier gets them in its own
/// dialect and never the router's ID (H-02, GP-42): the uploads wing
/// implements it over its store and object store.
pub trait UploadReferences: Send + Sync {
    /// Replaces every reference of `request` by the account's upload. With
    /// the account's zero data retention on, a request that references an
    /// upload is refused (H-13); an unknown, foreign, expired or deleted
    /// reference is one error naming the part (H-03).
    fn resolve_references(
        &self,
        account_id: Uuid,
        account_zdr: bool,
        request: &mut Request,
    ) -> impl Future<Output = Result<(), ApiError>> + Send;
}

impl From<ApiError> for HandleError {
    fn from(error: ApiError) -> Self {
        HandleError::Api(error)
    }
}

impl<S, P> Gateway<S, P>
where
    S: Store + ExperimentStore + AffinityStore + ResponseCacheStore,
    P: Suppliers,
{
    /// Serves one inference request through every policy step, in order
    /// (see the module's list).
    pub async fn handle(
        &self,
        call: Call<'_>,
        gateway_request: GatewayRequest,
        uploads: &impl UploadReferences,
    ) -> Result<Handled<S, P>, HandleError> {
        let GatewayRequest {
            mut request,
            routing,
            prompt_cache,
        } = gateway_request;
        // 0. The key's model policy.
        check_model(&self.catalog(), call.key, &call.trace, &request.model)?;
        // 1. Upload references.
        uploads
            .resolve_references(call.key.account_id, call.key.account_zdr, &mut request)
            .await?;
        // 2. The bound on image input.
        crate::image_input::check(&request)?;
        // 3. The experiment variant.
        let experiment = self.assign_experiment(&call, &mut request).await?;
        if experiment.is_some() {
            // A variant's model is served under its own name and policies.
            let catalog = self.catalog();
            if let Some(model) = catalog.model(&request.model) {
                call.trace.variant_model(model);
                call.key.policy.check_allowed(model, &request.model)?;
            }
        }
        // The request's `zdr`, and the account's data-protection switch,
        // which `zdr: false` cannot override (F-26, F-27, J-06).
        let zdr = routing.zdr || call.key.account_zdr;
        // 4. The affinity preference.
        let affinity = self
            .affinity_preference(&call, &request, prompt_cache)
            .await;
        // 5. Thinking signatures.
        let history = self
            .open_thinking(call.inbound, &request)
            .map_err(HandleError::Thinking)?;
        let model = request.model.clone();
        let admission = Admission {
            request_id: call.request_id,
            requester: Requester::of(call.key),
            inbound: call.inbound,
            zdr,
            preferred_route: affinity.as_ref().and_then(Affinity::preferred_route),
            experiment,
            trace: call.trace.clone(),
        };
        // 6. The exact-response cache.
        let mut request = GatewayRequest {
            request,
            routing,
            prompt_cache,
        };
        let cache = CacheKey::for_request(call.key, &request, zdr);
        if let Some(key) = &cache
            && let Some(response) = self.cached_response(key).await
        {
            self.record_cache_hit(key, admission, &model, &response)
                .await;
            return Ok(Handled {
                model,
                reply: Reply::Cached(response),
                cache: Some(CacheStatus::Hit),
                affinity: None,
            });
        }
        // 7. Plan, reserve, attempts, settle.
        let plan = self.plan(&admission, &mut request)?;
        let reservation = self
            .reserve_plan(&plan, admission, &request.request)
            .await?;
        let outcome = self
            .attempt_routes(plan, request, call.inbound, history, reservation)
            .await?;
        // 8. The route is known once a reply or a stream has started.
        let affinity = match &affinity {
            Some(affinity) => self.record_affinity(affinity, &call).await,
            None => None,
        };
        // 9. A fresh answer is stored before replying, so the client's next
        // identical request finds it (only keys that opted in pay the write).
        let reply = match outcome {
            Outcome::Complete { response, cost } => {
                if let Some(key) = &cache {
                    self.cache_response(key, &response).await;
                }
                Reply::Complete { response, cost }
            }
            Outcome::Stream(live) => Reply::Stream(live),
        };
        Ok(Handled {
            model,
            reply,
            cache: cache.map(|_| CacheStatus::Miss),
            affinity,
        })
    }

    /// `X-CI-Experiment` (F-01..F-06): the caller's account's experiment of
    /// that slug, or 404 `experiment_not_found`, the same for an unknown and
    /// another account's slug (GP-10). A running or promoted experiment
    /// rewrites the request with its variant and returns (experiment,
    /// variant) for the history; any other status leaves the request
    /// untouched (F-03).
    async fn assign_experiment(
        &self,
        call: &Call<'_>,
        request: &mut Request,
    ) -> Result<Option<ExperimentArm>, ApiError> {
        let Some(slug) = call.headers.header("x-ci-experiment") else {
            return Ok(None);
        };
        let experiment = self
            .store()
            .experiment(call.key.account_id, slug)
            .await
            .map_err(|e| e.api_error())?
            .ok_or_else(|| {
                ApiError::new(product_codes::EXPERIMENT_NOT_FOUND, "No such experiment.")
                    .with_param("x-ci-experiment")
            })?;
        if !experiment.is_live() {
            return Ok(None);
        }
        // Image requests bypass text techniques (H-06, H-10, GP-45).
        if request.has_images() && experiment.rewrites() {
            return Err(ApiError::new(
                product_codes::INCOMPATIBLE_IMAGE_INPUT,
                "This experiment rewrites the prompt, which image input does not allow.",
            )
            .with_param("x-ci-experiment"));
        }
        // Without an end user the draw is per request (GP-44): the request
        // ID's random bits, mixed.
        let draw = experiments::mix(call.request_id.as_u64_pair().1);
        let end_user = call.headers.header("x-ci-end-user");
        let Some(variant) = experiment.assign(end_user, draw) else {
            return Ok(None);
        };
        variant.apply(request);
        Ok(Some(ExperimentArm {
            experiment_id: experiment.id,
            variant: variant.name.clone(),
        }))
    }

    /// The prefix's stored preference, when the request takes part.
    async fn affinity_preference(
        &self,
        call: &Call<'_>,
        request: &Request,
        mode: PromptCacheMode,
    ) -> Option<Affinity> {
        let fingerprint =
            affinity::fingerprint(call.prompt_cache, call.headers, call.key, request, mode)?;
        let hint = match self.store().affinity_hint(&fingerprint).await {
            Ok(hint) => Some(hint),
            Err(e) => {
                tracing::warn!(error = %e, "prompt-cache affinity read failed");
                None
            }
        };
        Some(Affinity { fingerprint, hint })
    }

    /// The route that served the prefix is preferred from now on; the
    /// state the response reports.
    async fn record_affinity(&self, affinity: &Affinity, call: &Call<'_>) -> Option<AffinityState> {
        let served = call.trace.route_id()?;
        let state = affinity.state(call.trace.first_route_id().as_deref(), Some(&served));
        // The preference held (`hit`): extend it, never overwrite a newer
        // choice another instance made meanwhile. Otherwise a new choice.
        if let Err(e) = self
            .store()
            .record_affinity(
                &affinity.fingerprint,
                &served,
                call.prompt_cache.ttl_seconds(),
                affinity.preferred_is(&served),
            )
            .await
        {
            tracing::warn!(error = %e, "could not record prompt-cache affinity");
        }
        Some(state)
    }

    /// The cached answer; a failed read is a miss, never an error.
    async fn cached_response(&self, key: &CacheKey) -> Option<Response> {
        self.store()
            .cached_response(key.account_id, &key.fingerprint, key.ttl_seconds)
            .await
            .map_err(|e| tracing::warn!(error = %e, "response cache read failed"))
            .ok()?
    }

    async fn record_cache_hit(
        &self,
        key: &CacheKey,
        admission: Admission,
        model: &str,
        response: &Response,
    ) {
        let request_id = admission.request_id;
        let hit = CacheHit {
            request_id,
            account_id: key.account_id,
            api_key_id: key.api_key_id,
            model: self
                .catalog()
                .model(model)
                .map_or_else(|| model.to_owned(), |m| m.id.clone()),
            inbound_protocol: admission.inbound,
            usage: response.usage,
            experiment: admission.experiment,
        };
        if let Err(e) = self.store().record_cache_hit(&hit).await {
            tracing::warn!(%request_id, error = %e, "could not record a cache hit");
        }
    }

    async fn cache_response(&self, key: &CacheKey, response: &Response) {
        if let Err(e) = self
            .store()
            .cache_response(key.account_id, &key.fingerprint, response)
            .await
        {
            tracing::warn!(error = %e, "could not store a cached response");
        }
    }
}

/// The key's model policy for the model asked for as `name` (A-18, GP-46),
/// with the catalog model (never what the client typed) noted on `trace`
/// for the log line; a name the catalog does not know passes, for routing's
/// 404. Step 0 of [`Gateway::handle`], and the first check of an image.
pub(crate) fn check_model(
    catalog: &Catalog,
    key: &ApiKeyRecord,
    trace: &RequestTrace,
    name: &str,
) -> Result<(), ApiError> {
    match catalog.model(name) {
        Some(model) => {
            trace.model(model);
            key.policy.check_allowed(model, name)
        }
        None => Ok(()),
    }
}
