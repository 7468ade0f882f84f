//! The request lifecycle: plan -> reserve once -> attempts within one
//! deadline -> settle once (or void), for complete and streamed replies.
//!
//! A [`Reservation`] guard owns the hold from the moment it is taken: if the
//! handler's future is dropped (the client left) or a stream is abandoned,
//! the guard voids the hold, so no path leaves a reservation behind. A crash
//! is covered by the store's reaper (holds carry an expiry).

use crate::catalog::{Catalog, Model, Route};
use crate::gateway_request::{GatewayRequest, PromptCacheMode};
use crate::key_policy::KeyLimit;
use crate::pricing;
use crate::product_codes;
use crate::routing::{self, Plan};
use crate::store::{
    AttemptOutcome, AttemptRecord, NewRequest, Requester, ReserveError, SettleError, Settlement,
    Store, Voiding,
};
use crate::supplier::{
    AttemptCall, AttemptError, DEADLINE_PASSED, Encoding, EventStream, Retry, SupplierReply,
    Suppliers,
};
use crate::thinking_seal::{self, SealError, SealKey, SealedDialect, SealedHistory, StreamSealer};
use crate::trace::{self, RequestTrace, TimedSpan};
use futures::StreamExt;
use router_canonical::{
    ApiError, Capability, ErrorCode, Field, NanoUsd, Protocol, Request, Response, StopReason,
    StreamEvent, Usage,
};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use uuid::Uuid;

#[derive(Debug, Clone)]
pub struct GatewayConfig {
    /// One routing deadline shared by every attempt and wait.
    pub deadline: Duration,
    /// Attempts per eligible route.
    pub attempts_per_route: u32,
    /// How long a hold lives without being extended before the reaper may
    /// release it. Live streams extend it at half this interval.
    pub hold_lease: Duration,
    /// How long the single supplier attempt of an image generation may take
    /// before the request ends with 408 and its hold is released
    /// (`ROUTER_IMAGE_DEADLINE_SECS`, GP-27).
    pub image_deadline: Duration,
}

impl Default for GatewayConfig {
    fn default() -> Self {
        GatewayConfig {
            deadline: Duration::from_secs(180),
            attempts_per_route: 2,
            hold_lease: Duration::from_secs(600),
            image_deadline: Duration::from_secs(120),
        }
    }
}

/// Who is asking, established by the server before the lifecycle starts.
#[derive(Debug, Clone)]
pub struct Admission {
    pub request_id: Uuid,
    /// The key the request is admitted under ([`Requester::of`]).
    pub requester: Requester,
    pub inbound: Protocol,
    /// Only routes marked `zdr` (verified zero data retention) may serve
    /// the request, else 503 `zdr_capacity_unavailable` (F-26, F-27, J-06).
    /// The server sets it from the request's `zdr` or the account's
    /// data-protection switch; `false` never relaxes a request's own `zdr`.
    pub zdr: bool,
    /// Prompt-cache affinity (F-16): the route that last served this
    /// request's cacheable prefix. Tried first when the plan has it;
    /// it never brings back a route the plan filtered out.
    pub preferred_route: Option<String>,
    /// The experiment variant applied to the request, for its history.
    pub experiment: Option<crate::store::ExperimentArm>,
    /// Filled as the lifecycle goes, for the request's log line.
    pub trace: Arc<RequestTrace>,
}

pub enum Outcome<S: Store, P: Suppliers> {
    Complete { response: Response, cost: NanoUsd },
    Stream(LiveStream<S, P>),
}

pub(crate) struct Inner<S, P> {
    /// The catalog in force; a reload swaps the `Arc`, and a request keeps
    /// the one it planned with.
    pub(crate) catalog: std::sync::RwLock<Arc<Catalog>>,
    pub(crate) store: S,
    pub(crate) suppliers: P,
    pub(crate) config: GatewayConfig,
    /// Signs thinking that no Anthropic supplier signed (`thinking_seal`).
    seal_key: SealKey,
    /// Draining, and the stop of requests still running when it ends.
    shutdown: crate::shutdown::Shutdown,
}

pub struct Gateway<S, P> {
    pub(crate) inner: Arc<Inner<S, P>>,
}

impl<S, P> Clone for Gateway<S, P> {
    fn clone(&self) -> Self {
        Gateway {
            inner: self.inner.clone(),
        }
    }
}

impl<S: Store, P: Suppliers> Gateway<S, P> {
    /// `seal_key` is the deployment's thinking seal key ([`SealKey::load`]).
    pub fn new(
        catalog: Arc<Catalog>,
        store: S,
        suppliers: P,
        config: GatewayConfig,
        seal_key: SealKey,
    ) -> Self {
        Gateway {
            inner: Arc::new(Inner {
                catalog: std::sync::RwLock::new(catalog),
                store,
                suppliers,
                config,
                seal_key,
                shutdown: crate::shutdown::Shutdown::default(),
            }),
        }
    }

    /// Whether the router is draining, and the stop of what still runs
    /// when the drain ends (see [`crate::shutdown`]).
    pub fn shutdown(&self) -> &crate::shutdown::Shutdown {
        &self.inner.shutdown
    }

    /// The catalog in force now.
    pub fn catalog(&self) -> Arc<Catalog> {
        match self.inner.catalog.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Serve `catalog` from now on; requests already planned keep theirs.
    pub fn set_catalog(&self, catalog: Arc<Catalog>) {
        match self.inner.catalog.write() {
            Ok(mut guard) => *guard = catalog,
            Err(poisoned) => *poisoned.into_inner() = catalog,
        }
    }

    pub fn store(&self) -> &S {
        &self.inner.store
    }

    /// The supplier clients.
    pub fn suppliers(&self) -> &P {
        &self.inner.suppliers
    }

    pub fn config(&self) -> &GatewayConfig {
        &self.inner.config
    }

    /// Checks the router signatures of the thinking a Messages client sent
    /// back (other surfaces never receive any). A refused one is named by
    /// its canonical position, for the caller to put in its own terms.
    pub fn open_thinking(
        &self,
        inbound: Protocol,
        request: &Request,
    ) -> Result<SealedHistory, SealError> {
        match inbound {
            Protocol::Messages => self.inner.seal_key.open(request),
            _ => Ok(SealedHistory::default()),
        }
    }

    /// Route, reserve, attempt, and settle one request.
    pub async fn run(
        &self,
        admission: Admission,
        request: GatewayRequest,
    ) -> Result<Outcome<S, P>, ApiError> {
        let history = self
            .open_thinking(admission.inbound, &request.request)
            .map_err(|e| e.to_api_error(e.canonical_path()))?;
        self.run_opened(admission, request, history).await
    }

    /// [`Gateway::run`] for a request whose thinking was already opened by
    /// [`Gateway::open_thinking`].
    pub async fn run_opened(
        &self,
        admission: Admission,
        mut request: GatewayRequest,
        history: SealedHistory,
    ) -> Result<Outcome<S, P>, ApiError> {
        let plan = self.plan(&admission, &mut request)?;
        let inbound = admission.inbound;
        let reservation = self
            .reserve_plan(&plan, admission, &request.request)
            .await?;
        self.attempt_routes(plan, request, inbound, history, reservation)
            .await
    }

    /// The routes that may serve `request`, in the order they are tried:
    /// the admission's zero data retention added to the request's own
    /// option (never relaxing it, F-27), the affinity preference first when
    /// the plan has it (F-16), and an output limit above the model's refused.
    pub(crate) fn plan(
        &self,
        admission: &Admission,
        request: &mut GatewayRequest,
    ) -> Result<Plan, ApiError> {
        request.routing.zdr |= admission.zdr;
        let mut plan = routing::plan(
            &self.catalog(),
            &request.request,
            request.routing,
            admission.inbound,
        )?;
        if let Some(preferred) = &admission.preferred_route
            && let Some(at) = plan.routes.iter().position(|r| &r.id == preferred)
        {
            let route = plan.routes.remove(at);
            plan.routes.insert(0, route);
        }
        check_output_limit(&plan.model, &request.request)?;
        Ok(plan)
    }

    /// Holds the worst case of `plan` for `request` (one reservation).
    pub(crate) async fn reserve_plan(
        &self,
        plan: &Plan,
        admission: Admission,
        request: &Request,
    ) -> Result<Reservation<S, P>, ApiError> {
        let reserve = pricing::reservation(&plan.model, &plan.routes, request).map_err(|_| {
            ApiError::for_field(
                ErrorCode::InvalidParameter,
                Field::MaxOutputTokens,
                "The requested output length makes the worst-case cost overflow.",
            )
        })?;
        let new = NewRequest {
            stream: request.stream,
            experiment: admission.experiment,
            ..NewRequest::admit(
                admission.request_id,
                admission.requester,
                plan.model.id.clone(),
                admission.inbound,
                reserve,
                SystemTime::now() + self.inner.config.hold_lease,
            )
        };
        self.reserve(new, admission.trace).await
    }

    /// Takes the hold. A store that answers at once (a credit lease, in
    /// memory) is answered inline, with no task hand-off. Otherwise the
    /// statement finishes in a task of its own: if the client leaves while
    /// it is in flight (this future dropped), the task still sees the
    /// outcome and voids a hold nobody will use. Voiding from a drop guard
    /// instead could race the reservation's commit and leave it to the reaper.
    pub(crate) async fn reserve(
        &self,
        new: NewRequest,
        request_trace: Arc<RequestTrace>,
    ) -> Result<Reservation<S, P>, ApiError> {
        let request_id = new.request_id;
        let inner = self.inner.clone();
        let started = SystemTime::now();
        let timing = request_trace.clone();
        let mut reserving = Box::pin(async move {
            // The hold travels as its guard: if the client left before
            // reading it (the receiver gone, or dropped with the guard
            // unread inside), dropping the guard voids the hold. Sending a
            // bare `Ok(())` leaked the hold to the reaper when the client
            // left between the send and the read.
            let result = inner
                .store
                .reserve(new)
                .await
                .map(|()| Reservation::new(inner, request_id, request_trace));
            trace::reservation(match result {
                Ok(_) => "reserved",
                Err(_) => "refused",
            });
            result
        });
        // The first poll, here: nothing is in flight if it is ready, so a
        // client leaving later drops the guard, which voids the hold.
        let outcome = match futures::poll!(reserving.as_mut()) {
            std::task::Poll::Ready(result) => Ok(result),
            std::task::Poll::Pending => {
                let (reply, outcome) = tokio::sync::oneshot::channel();
                tokio::spawn(async move {
                    if let Err(Ok(mut reservation)) = reply.send(reserving.await) {
                        reservation.void("client_cancelled").await;
                    }
                });
                outcome.await
            }
        };
        let result = match outcome {
            Ok(Ok(reservation)) => Ok(reservation),
            Ok(Err(refusal)) => Err(reserve_error(refusal)),
            Err(_) => Err(internal(&"the reservation task stopped")),
        };
        if timing.recording() {
            let span = TimedSpan::ended_now("reservation", started, result.is_err());
            timing.span(match &result {
                Err(error) => span.with("router.code", error.code.as_str()),
                Ok(_) => span,
            });
        }
        result
    }

    /// Attempts the plan's routes in order within one deadline, each at
    /// most `attempts_per_route` times, and settles the first valid success
    /// (or voids the hold). `history` is the thinking the client sent back,
    /// opened from `inbound`'s router signatures.
    pub(crate) async fn attempt_routes(
        &self,
        plan: Plan,
        request: GatewayRequest,
        inbound: Protocol,
        history: SealedHistory,
        mut reservation: Reservation<S, P>,
    ) -> Result<Outcome<S, P>, ApiError> {
        let GatewayRequest {
            request,
            prompt_cache,
            ..
        } = request;
        let thinking = ThinkingAttempts { inbound, history };
        crate::failpoints::reached("K1").await;
        let inner = &self.inner;
        let deadline = Instant::now() + inner.config.deadline;
        let mut stop = inner.shutdown.watcher();
        let mut attempt_no = 0u32;
        let mut last_error: Option<AttemptError> = None;
        let mut previous_route: Option<&str> = None;
        'routes: for route in &plan.routes {
            for try_on_route in 0..inner.config.attempts_per_route {
                if Instant::now() >= deadline {
                    break 'routes;
                }
                attempt_no += 1;
                if let Some(previous) = previous_route {
                    trace::retried(route, previous == route.id);
                }
                previous_route = Some(&route.id);
                reservation.trace.attempt_started(route);
                // Each attempt sends the thinking history its route can take.
                let restored;
                let (attempt_request, thinking_signed_by) = if thinking.history.is_empty() {
                    (&request, None)
                } else {
                    let signed_by;
                    (restored, signed_by) = thinking.history.for_route(&request, route.protocol);
                    (&restored, signed_by)
                };
                // Automatic cache markers only where they mean something (F-08).
                let encoding = Encoding {
                    thinking_signed_by,
                    prompt_cache_marker: prompt_cache == PromptCacheMode::On
                        && automatic_markers(&plan.model, route),
                };
                let started_at = SystemTime::now();
                let started = Instant::now();
                // Should the client leave during the call, the attempt is
                // recorded with the release (the supplier saw it).
                reservation.in_flight = Some(InFlight {
                    attempt_no,
                    route: route.clone(),
                    started_at,
                    started,
                });
                let call =
                    AttemptCall::new(reservation.request_id, reservation.trace.attempt_context());
                let result = tokio::select! {
                    result = tokio::time::timeout_at(
                        deadline,
                        inner
                            .suppliers
                            .attempt(route, attempt_request, encoding, deadline, &call),
                    ) => match result {
                        Ok(result) => result,
                        Err(_) => Err(AttemptError::timeout()),
                    },
                    () = stop.stopped() => Err(AttemptError::shutdown()),
                };
                reservation.in_flight = None;
                let supplier_request_id = call.supplier_request_id().map(str::to_owned);
                reservation
                    .trace
                    .supplier_replied(supplier_request_id.as_deref());
                let mut record = AttemptRecord {
                    request_id: reservation.request_id,
                    attempt_no,
                    route_id: route.id.clone(),
                    supplier_id: route.supplier.id.clone(),
                    upstream_protocol: route.protocol,
                    started_at,
                    duration_ms: started.elapsed().as_millis() as u64,
                    outcome: AttemptOutcome::Succeeded,
                    supplier_request_id,
                };
                let outcome = match &result {
                    Ok(_) => "succeeded",
                    Err(error) => error.kind.as_str(),
                };
                let first_byte = matches!(result, Ok(SupplierReply::Stream(_)));
                trace::attempt_finished(route, outcome, started.elapsed(), first_byte);
                if reservation.trace.recording() {
                    reservation
                        .trace
                        .span(attempt_span(&call, route, &record, &result, outcome));
                }
                match result {
                    Ok(SupplierReply::Complete(mut response)) => {
                        crate::failpoints::reached("K2").await;
                        if let Some(dialect) = thinking.sealed_dialect(route.protocol) {
                            inner.seal_key.seal_response(dialect, &mut response);
                        }
                        return self
                            .settle_complete(&plan.model, route, response, record, &mut reservation)
                            .await;
                    }
                    Ok(SupplierReply::Stream(events)) => {
                        let events = match thinking.sealed_dialect(route.protocol) {
                            Some(dialect) => thinking_seal::seal_stream(
                                events,
                                StreamSealer::new(inner.seal_key.clone(), dialect),
                            ),
                            None => events,
                        };
                        let hold_lease = inner.config.hold_lease;
                        reservation.stream_attempt = Some(record);
                        return Ok(Outcome::Stream(LiveStream {
                            events,
                            reservation,
                            model: plan.model.clone(),
                            route: route.clone(),
                            next_extension: Instant::now() + hold_lease / 2,
                            deadline,
                            stop,
                            output_forwarded: false,
                            done: false,
                        }));
                    }
                    Err(error) => {
                        tracing::info!(
                            request_id = %reservation.request_id,
                            route = %route.id,
                            attempt_no,
                            supplier_request_id = record.supplier_request_id.as_deref(),
                            error = %error,
                            "attempt failed"
                        );
                        record.outcome = failed_outcome(&error);
                        self.record(record).await;
                        let retry = error.retry;
                        last_error = Some(error);
                        match retry {
                            Retry::Stop => break 'routes,
                            Retry::NextRoute => continue 'routes,
                            Retry::SameRoute { after } => {
                                if try_on_route + 1 >= inner.config.attempts_per_route {
                                    continue 'routes;
                                }
                                if let Some(wait) = after {
                                    // Honour Retry-After only when it fits the remaining budget (G-13).
                                    if Instant::now() + wait >= deadline {
                                        continue 'routes;
                                    }
                                    tokio::select! {
                                        () = tokio::time::sleep(wait) => {}
                                        () = stop.stopped() => {
                                            last_error = Some(AttemptError::shutdown());
                                            break 'routes;
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut error = final_error(last_error.as_ref());
        // Out of time, whatever the last attempt said: say so.
        if error.code == ErrorCode::UpstreamUnavailable && Instant::now() >= deadline {
            error = ApiError::new(ErrorCode::UpstreamUnavailable, DEADLINE_PASSED);
        }
        // Only vision routes were planned for image input: when none could
        // serve it, say so rather than fall back to text-only supply (H-05).
        if error.code == ErrorCode::UpstreamUnavailable
            && plan.requirements.needs(Capability::Vision)
        {
            error = ApiError::new(
                product_codes::IMAGE_CAPACITY_UNAVAILABLE,
                "No vision route could serve this image request.",
            );
        }
        reservation.void(error.code.as_str()).await;
        Err(error)
    }

    async fn settle_complete(
        &self,
        model: &Model,
        route: &Arc<Route>,
        response: Response,
        mut record: AttemptRecord,
        reservation: &mut Reservation<S, P>,
    ) -> Result<Outcome<S, P>, ApiError> {
        let reported = match validated_charge(model, route, &response.usage) {
            Ok(reported) => reported,
            Err(error) => {
                record.outcome = failed_outcome(&error);
                self.record(record).await;
                let public = final_error(Some(&error));
                reservation.void(public.code.as_str()).await;
                return Err(public);
            }
        };
        let cost = reservation.settle(reported, response.usage, record).await?;
        Ok(Outcome::Complete { response, cost })
    }

    pub(crate) async fn record(&self, record: AttemptRecord) {
        if let Err(e) = self.inner.store.record_attempt(record).await {
            tracing::warn!(error = %e, "could not record attempt");
        }
    }
}

/// `x-ci-prompt-cache: on` adds markers only on a native Messages route of
/// a vendor-Claude model whose route has the `prompt_cache` capability
/// (F-08); elsewhere the request goes as with `passthrough`.
fn automatic_markers(model: &Model, route: &Route) -> bool {
    route.protocol == Protocol::Messages
        && model.vendor.as_deref() == Some("anthropic")
        && route
            .capabilities
            .contains(router_canonical::Capability::PromptCache)
}

/// What the attempts of one request do with thinking signatures.
struct ThinkingAttempts {
    inbound: Protocol,
    /// The router seals the client sent back, verified.
    history: SealedHistory,
}

impl ThinkingAttempts {
    /// The dialect whose thinking is sealed for the client: a Messages
    /// client served by a Chat or Responses route gets router signatures.
    fn sealed_dialect(&self, route: Protocol) -> Option<SealedDialect> {
        match self.inbound {
            Protocol::Messages => SealedDialect::of_route(route),
            _ => None,
        }
    }
}

/// The exported span of one supplier attempt: the span id its supplier was
/// sent in `traceparent`.
fn attempt_span(
    call: &AttemptCall,
    route: &Route,
    record: &AttemptRecord,
    result: &Result<SupplierReply, AttemptError>,
    outcome: &'static str,
) -> TimedSpan {
    let mut span = TimedSpan {
        name: "attempt",
        span_id: call.trace.span_id_bytes(),
        start: record.started_at,
        end: SystemTime::now(),
        failed: result.is_err(),
        attributes: Vec::new(),
    }
    .with("router.attempt_no", i64::from(record.attempt_no))
    .with("router.route_id", route.id.as_str())
    .with("router.supplier_id", route.supplier.id.as_str())
    .with("router.upstream_protocol", route.protocol.as_str())
    .with("router.outcome", outcome);
    if let Err(AttemptError {
        upstream_status: Some(status),
        ..
    }) = result
    {
        span = span.with("http.response.status_code", i64::from(*status));
    }
    if let Some(id) = &record.supplier_request_id {
        span = span.with("router.supplier_request_id", id.as_str());
    }
    span
}

fn failed_outcome(error: &AttemptError) -> AttemptOutcome {
    AttemptOutcome::Failed {
        upstream_status: error.upstream_status,
        kind: error.kind.as_str().to_owned(),
        retryable: matches!(error.retry, Retry::SameRoute { .. }),
    }
}

/// Usage must be plausible before it is billed (G-12).
fn validated_charge(model: &Model, route: &Route, usage: &Usage) -> Result<NanoUsd, AttemptError> {
    if !usage.is_consistent() {
        return Err(AttemptError::invalid_response(
            "supplier usage is inconsistent",
        ));
    }
    pricing::charge(model, route, usage)
        .map_err(|_| AttemptError::invalid_response("supplier usage overflows the charge"))
}

/// The one public error for a request whose attempts all failed (GP-47).
fn final_error(last: Option<&AttemptError>) -> ApiError {
    match last {
        Some(last) => last.public_error(),
        None => ApiError::new(ErrorCode::UpstreamUnavailable, DEADLINE_PASSED),
    }
}

/// The 429 of a key limit (A-21, G-21, GP-08); nothing was charged.
fn key_limit_error(limit: KeyLimit) -> ApiError {
    let (code, message) = match limit {
        KeyLimit::Spend => (
            product_codes::API_KEY_SPEND_LIMIT_EXCEEDED,
            "This API key's spend limit does not cover this request's maximum cost.",
        ),
        KeyLimit::MonthlyBudget => (
            product_codes::API_KEY_MONTHLY_BUDGET_EXCEEDED,
            "This API key's monthly budget does not cover this request's maximum cost.",
        ),
        KeyLimit::RequestsPerMinute => (
            ErrorCode::RateLimitExceeded,
            "This API key's requests-per-minute limit is reached.",
        ),
        KeyLimit::RequestsPerDay => (
            product_codes::DAILY_REQUEST_LIMIT_EXCEEDED,
            "This API key's daily request limit is reached.",
        ),
        KeyLimit::Concurrency => (
            product_codes::CONCURRENCY_LIMIT_EXCEEDED,
            "This API key's concurrent request limit is reached.",
        ),
    };
    ApiError::new(code, message)
}

/// The public error of a refused reservation (402, 403, 429, 503, 500).
pub fn reserve_error(refusal: ReserveError) -> ApiError {
    match refusal {
        ReserveError::InsufficientCredits => ApiError::new(
            product_codes::INSUFFICIENT_CREDITS,
            "Your available credits do not cover this request's maximum cost.",
        ),
        ReserveError::PolicyChanged => ApiError::new(
            product_codes::POLICY_CHANGED,
            "The API key's policy changed while this request was admitted; nothing was charged.",
        ),
        ReserveError::KeyLimit { limit, retry_after } => {
            key_limit_error(limit).with_retry_after(retry_after)
        }
        ReserveError::Store(e) => e.api_error(),
    }
}

pub(crate) fn internal(error: &dyn std::fmt::Display) -> ApiError {
    tracing::error!(error = %error, "storage failure");
    ApiError::new(
        ErrorCode::InternalError,
        "An internal error occurred; the request was not charged.",
    )
}

/// The hold of one request. Settles or voids exactly once; voids on drop.
pub(crate) struct Reservation<S: Store, P: Suppliers> {
    inner: Option<Arc<Inner<S, P>>>,
    pub(crate) request_id: Uuid,
    pub(crate) trace: Arc<RequestTrace>,
    /// A stream's attempt, recorded when the stream ends: with the charge,
    /// or with the release if it fails or the client leaves.
    pub(crate) stream_attempt: Option<AttemptRecord>,
    /// The supplier call under way, if any: recorded as cut by the client
    /// (`client_cancelled`) with the release when the client leaves during it.
    in_flight: Option<InFlight>,
}

/// A supplier call under way (see [`Reservation::in_flight`]).
struct InFlight {
    attempt_no: u32,
    route: Arc<Route>,
    started_at: SystemTime,
    started: Instant,
}

impl InFlight {
    /// The attempt as the client's leaving ended it.
    fn cut(self, request_id: Uuid) -> AttemptRecord {
        AttemptRecord {
            request_id,
            attempt_no: self.attempt_no,
            route_id: self.route.id.clone(),
            supplier_id: self.route.supplier.id.clone(),
            upstream_protocol: self.route.protocol,
            started_at: self.started_at,
            duration_ms: self.started.elapsed().as_millis() as u64,
            outcome: AttemptOutcome::Failed {
                upstream_status: None,
                kind: "client_cancelled".to_owned(),
                retryable: false,
            },
            supplier_request_id: None,
        }
    }
}

impl<S: Store, P: Suppliers> Reservation<S, P> {
    fn new(inner: Arc<Inner<S, P>>, request_id: Uuid, trace: Arc<RequestTrace>) -> Self {
        Reservation {
            inner: Some(inner),
            request_id,
            trace,
            stream_attempt: None,
            in_flight: None,
        }
    }

    /// Charges the `reported` cost, capped at the hold, and records
    /// `attempt`, the succeeded one, in one step. Returns what was charged,
    /// the client's `usage.cost` (B-21, G-18).
    pub(crate) async fn settle(
        &mut self,
        reported: NanoUsd,
        usage: Usage,
        mut attempt: AttemptRecord,
    ) -> Result<NanoUsd, ApiError> {
        crate::failpoints::reached("K4").await;
        let Some(inner) = self.inner.take() else {
            return Err(internal(&"reservation already finished"));
        };
        attempt.outcome = AttemptOutcome::Succeeded;
        let settlement = Settlement {
            request_id: self.request_id,
            reported,
            usage,
            attempt,
        };
        let started = SystemTime::now();
        let settled = inner.store.settle(settlement).await;
        if settled.is_ok() {
            crate::failpoints::reached("K6").await;
        }
        if self.trace.recording() {
            let span = TimedSpan::ended_now("settlement", started, settled.is_err());
            self.trace.span(match &settled {
                Ok(charged) => span.with("router.charged_nano_usd", charged.0),
                Err(_) => span,
            });
        }
        match settled {
            Ok(charged) => {
                self.trace.settled(charged.0);
                trace::reservation("settled");
                if let Some(model) = self.trace.route_model_id() {
                    trace::charged(&model, charged.0, reported.0, &usage);
                }
                if charged < reported {
                    // The hold is a ceiling (I4): the supplier reported more
                    // than the reservation bounded; the operator absorbs it.
                    tracing::warn!(
                        request_id = %self.request_id,
                        reported_nano = reported.0,
                        charged_nano = charged.0,
                        shortfall_nano = reported.0 - charged.0,
                        "settlement capped at the hold"
                    );
                }
                Ok(charged)
            }
            Err(SettleError::NotReserved(id)) => {
                // The hold was released before the success could be
                // settled (the request outlived its hold lease while the
                // database was away, and the reaper freed it; or its credit
                // lease expired): nothing was charged, and a retry is
                // the client's answer, as for any outage (issue 33).
                tracing::warn!(request_id = %id, "the hold was released before settlement");
                Err(ApiError::new(
                    ErrorCode::ServiceUnavailable,
                    "The service is briefly unavailable; retry shortly.",
                )
                .with_retry_after(Some(crate::store::OUTAGE_RETRY_AFTER_SECS)))
            }
            Err(SettleError::Store(e)) => {
                // The outcome of a failed commit is unknown; the hold stays
                // for the reaper rather than risking a double release.
                Err(e.api_error())
            }
        }
    }

    /// Marks a stream's attempt as failed with `kind` (recorded with the
    /// release).
    fn fail_stream(&mut self, kind: &str) {
        if let Some(attempt) = &mut self.stream_attempt {
            attempt.outcome = AttemptOutcome::Failed {
                upstream_status: None,
                kind: kind.to_owned(),
                retryable: false,
            };
        }
    }

    pub(crate) async fn void(&mut self, reason: &str) {
        if let Some(inner) = self.inner.take() {
            let voiding = Voiding {
                request_id: self.request_id,
                reason: reason.to_owned(),
                attempt: self.stream_attempt.take(),
            };
            trace::reservation("voided");
            let started = SystemTime::now();
            let voided = inner.store.void(voiding).await;
            if self.trace.recording() {
                self.trace.span(
                    TimedSpan::ended_now("release", started, voided.is_err())
                        .with("router.reason", reason),
                );
            }
            if let Err(e) = voided {
                tracing::warn!(request_id = %self.request_id, error = %e, "could not void reservation");
            }
        }
    }

    async fn extend(&self, until: SystemTime) {
        if let Some(inner) = &self.inner
            && let Err(e) = inner.store.extend_hold(self.request_id, until).await
        {
            tracing::warn!(request_id = %self.request_id, error = %e, "could not extend hold");
        }
    }
}

impl<S: Store, P: Suppliers> Drop for Reservation<S, P> {
    fn drop(&mut self) {
        let Some(inner) = self.inner.take() else {
            return;
        };
        let request_id = self.request_id;
        let reason = "client_cancelled";
        self.fail_stream(reason);
        let attempt = self
            .stream_attempt
            .take()
            .or_else(|| self.in_flight.take().map(|call| call.cut(request_id)));
        // The client left before a valid final success: release the hold (G-22).
        trace::reservation("voided");
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                let voiding = Voiding {
                    request_id,
                    reason: reason.to_owned(),
                    attempt,
                };
                if let Err(e) = inner.store.void(voiding).await {
                    tracing::warn!(%request_id, error = %e, "could not void abandoned reservation");
                }
            });
        }
    }
}

/// An explicit output limit above the model's maximum is refused up front
/// (D-08, GP-51: the maximum itself is accepted).
fn check_output_limit(model: &Model, request: &Request) -> Result<(), ApiError> {
    match request.sampling.max_output_tokens {
        Some(limit) if limit > model.max_output_tokens => Err(ApiError::for_field(
            ErrorCode::InvalidParameter,
            Field::MaxOutputTokens,
            format!(
                "The output limit is {limit}, above this model's maximum of {max}: ask for at most {max} output tokens.",
                max = model.max_output_tokens
            ),
        )),
        _ => Ok(()),
    }
}

/// What a live stream yields to the server.
#[derive(Debug)]
pub enum StreamItem {
    Event(StreamEvent),
    /// The stream ended validly and was settled; `cost` is what was charged.
    Finished {
        stop_reason: StopReason,
        stop_sequence: Option<String>,
        usage: Usage,
        cost: NanoUsd,
    },
    /// The stream failed after it started; nothing was charged.
    Failed(ApiError),
}

/// A supplier stream being relayed to the client. Settles on its valid
/// `Finish`, voids on failure or when dropped unfinished. A client that
/// leaves is handled by [`LiveStream::abandon`] (GP-48).
pub struct LiveStream<S: Store, P: Suppliers> {
    events: EventStream,
    reservation: Reservation<S, P>,
    model: Arc<Model>,
    route: Arc<Route>,
    next_extension: Instant,
    /// The request's routing deadline: an abandoned stream is read no
    /// longer than this.
    deadline: Instant,
    /// Ends the stream with a shutdown error when the router's drain ends.
    stop: crate::shutdown::StopWatcher,
    /// Whether a content event (a block or a delta) was handed out: from
    /// then on the client holds part of an answer the supplier bills.
    output_forwarded: bool,
    done: bool,
}

/// How an abandoned stream ended (see [`LiveStream::abandon`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Abandoned {
    /// No output had reached the client: the supplier call was stopped and
    /// the hold released.
    Released,
    /// Output had reached the client and the supplier's stream completed
    /// validly: settled from its usage, as if the client had stayed.
    Settled { cost: NanoUsd },
    /// Output had reached the client but the stream did not complete
    /// validly before the deadline: nothing charged, the hold released.
    Failed,
}

impl<S: Store, P: Suppliers> LiveStream<S, P> {
    pub fn request_id(&self) -> Uuid {
        self.reservation.request_id
    }

    /// The client left before the stream's end (GP-48 as revised). Before
    /// any content event was handed out, the supplier call is stopped (the
    /// stream dropped) and the hold released. After, the supplier is still
    /// producing an answer it bills the operator for, and the client holds
    /// part of it: the stream is read to its end within the request's
    /// deadline, what it says discarded, and a valid end settles from the
    /// supplier's usage exactly as if the client had stayed (`max_tokens`
    /// bounds what that can cost); anything else releases the hold.
    pub async fn abandon(mut self) -> Abandoned {
        if self.done {
            // Finished or failed already: nothing is left to decide.
            return Abandoned::Failed;
        }
        if !self.output_forwarded {
            self.done = true;
            self.events = Box::pin(futures::stream::empty());
            self.reservation.fail_stream("client_cancelled");
            self.reservation.void("client_cancelled").await;
            return Abandoned::Released;
        }
        loop {
            match tokio::time::timeout_at(self.deadline, self.next()).await {
                Ok(Some(StreamItem::Event(_))) => continue,
                Ok(Some(StreamItem::Finished { cost, .. })) => return Abandoned::Settled { cost },
                Ok(Some(StreamItem::Failed(_)) | None) => return Abandoned::Failed,
                Err(_) => {
                    self.done = true;
                    self.fail(AttemptError::timeout()).await;
                    return Abandoned::Failed;
                }
            }
        }
    }

    /// The next item; `None` after `Finished` or `Failed`.
    pub async fn next(&mut self) -> Option<StreamItem> {
        if self.done {
            return None;
        }
        if self.output_forwarded {
            crate::failpoints::reached("K3").await;
        }
        if Instant::now() >= self.next_extension
            && let Some(lease) = self
                .reservation
                .inner
                .as_ref()
                .map(|inner| inner.config.hold_lease)
        {
            self.reservation.extend(SystemTime::now() + lease).await;
            self.next_extension = Instant::now() + lease / 2;
        }
        let next = tokio::select! {
            next = self.events.next() => next,
            () = self.stop.stopped() => Some(Err(AttemptError::shutdown())),
        };
        match next {
            Some(Ok(StreamEvent::Finish {
                stop_reason,
                stop_sequence,
                usage,
            })) => {
                self.done = true;
                let (reported, attempt) = match validated_charge(&self.model, &self.route, &usage) {
                    Ok(reported) => match self.reservation.stream_attempt.take() {
                        Some(attempt) => (reported, attempt),
                        None => {
                            return Some(StreamItem::Failed(internal(&"attempt already recorded")));
                        }
                    },
                    Err(error) => return Some(self.fail(error).await),
                };
                match self.reservation.settle(reported, usage, attempt).await {
                    Ok(cost) => Some(StreamItem::Finished {
                        stop_reason,
                        stop_sequence,
                        usage,
                        cost,
                    }),
                    Err(e) => Some(StreamItem::Failed(e)),
                }
            }
            Some(Ok(event)) => {
                if matches!(
                    event,
                    StreamEvent::BlockStart { .. } | StreamEvent::Delta { .. }
                ) {
                    self.output_forwarded = true;
                }
                Some(StreamItem::Event(event))
            }
            Some(Err(error)) => {
                self.done = true;
                Some(self.fail(error).await)
            }
            None => {
                self.done = true;
                Some(
                    self.fail(AttemptError::stream_interrupted(
                        "stream ended without a final event",
                    ))
                    .await,
                )
            }
        }
    }

    async fn fail(&mut self, error: AttemptError) -> StreamItem {
        if let Some(attempt) = &mut self.reservation.stream_attempt {
            attempt.outcome = failed_outcome(&error);
        }
        let reason = match error.kind {
            crate::supplier::FailureKind::Shutdown => "shutdown",
            _ => "stream_failed",
        };
        self.reservation.void(reason).await;
        let public = error.stream_public_error();
        StreamItem::Failed(public)
    }
}
