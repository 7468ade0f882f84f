//! What one request's lifecycle did, for its log line and the metrics.
//!
//! The server gives each admitted request a [`RequestTrace`]; the gateway
//! fills it as it goes (the route of each attempt, how many, the charge),
//! and the server reads it when it writes the request's one log line, after
//! a stream has ended too. Counters and histograms of the lifecycle go to
//! the `metrics` facade: nothing is recorded until the binary installs a
//! recorder (tests and library users pay nothing).

use crate::catalog::{Model, Route};
use crate::trace_context::TraceContext;
use std::sync::atomic::{AtomicI64, AtomicU32, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

/// One request's progress through the lifecycle.
#[derive(Debug, Default)]
pub struct RequestTrace {
    attempts: AtomicU32,
    route: Mutex<Option<Arc<Route>>>,
    /// The route of the first attempt: a success elsewhere was a fallback.
    first_route: Mutex<Option<String>>,
    /// Nano-USD charged; negative until the request is settled.
    charged: AtomicI64,
    /// The catalog model the request asked for, once the key's policy
    /// looked it up (set once at most; reading it costs no lock).
    model: OnceLock<Arc<Model>>,
    /// The catalog model an experiment variant moved the request to (set
    /// once at most).
    variant_model: OnceLock<Arc<Model>>,
    /// The request's W3C trace context (the client's, or one the router
    /// started), set once by the server.
    context: OnceLock<TraceContext>,
    /// The router's span of the request: a child of `context`.
    request_span: OnceLock<TraceContext>,
    /// The timed steps of the request, kept only when its spans are
    /// exported (OTLP on and the trace sampled): otherwise never allocated.
    timeline: OnceLock<Mutex<Vec<TimedSpan>>>,
    /// The supplier's request id of the last attempt that got a reply head.
    supplier_request_id: Mutex<Option<String>>,
}

impl RequestTrace {
    pub fn new() -> Arc<RequestTrace> {
        Arc::new(RequestTrace {
            charged: AtomicI64::new(-1),
            ..RequestTrace::default()
        })
    }

    /// The request's trace context; set once, before the lifecycle starts.
    /// `record` keeps the timeline of its spans (when they are exported and
    /// the trace is sampled).
    pub fn set_context(&self, context: TraceContext, record: bool) {
        let _ = self.request_span.set(context.child());
        if record && context.sampled() {
            let _ = self.timeline.set(Mutex::new(Vec::new()));
        }
        let _ = self.context.set(context);
    }

    /// The router's span of the request (a child of the client's context).
    pub fn request_span(&self) -> Option<&TraceContext> {
        self.request_span.get()
    }

    /// Whether the request's steps are being timed ([`RequestTrace::span`]).
    pub fn recording(&self) -> bool {
        self.timeline.get().is_some()
    }

    /// One timed step of the request (`reservation`, `attempt`,
    /// `settlement`, `release`), kept when recording.
    pub fn span(&self, span: TimedSpan) {
        if let Some(timeline) = self.timeline.get()
            && let Ok(mut spans) = timeline.lock()
        {
            spans.push(span);
        }
    }

    /// The timed steps so far, emptied (for the exporter).
    pub fn take_timeline(&self) -> Vec<TimedSpan> {
        self.timeline
            .get()
            .and_then(|t| t.lock().ok().map(|mut spans| std::mem::take(&mut *spans)))
            .unwrap_or_default()
    }

    /// The request's trace context, if the server set one.
    pub fn context(&self) -> Option<&TraceContext> {
        self.context.get()
    }

    /// The context of a new attempt: a child span of the request's (a new
    /// unsampled trace when the server set none).
    pub fn attempt_context(&self) -> TraceContext {
        match self.request_span.get() {
            Some(context) => context.child(),
            None => TraceContext::start(false),
        }
    }

    /// The supplier's request id of the last attempt that got one.
    pub fn supplier_request_id(&self) -> Option<String> {
        self.supplier_request_id
            .lock()
            .ok()
            .and_then(|id| id.clone())
    }

    pub(crate) fn supplier_replied(&self, id: Option<&str>) {
        if let Some(id) = id
            && let Ok(mut last) = self.supplier_request_id.lock()
        {
            *last = Some(id.to_owned());
        }
    }

    /// How many supplier attempts were made.
    pub fn attempts(&self) -> u32 {
        self.attempts.load(Ordering::Relaxed)
    }

    /// The route of the last attempt (the one that served a success).
    pub fn route_id(&self) -> Option<String> {
        self.route
            .lock()
            .ok()
            .and_then(|route| route.as_ref().map(|r| r.id.clone()))
    }

    /// The catalog model of the last attempt's route.
    pub fn route_model_id(&self) -> Option<String> {
        self.route
            .lock()
            .ok()
            .and_then(|route| route.as_ref().map(|r| r.model.clone()))
    }

    /// The route of the first attempt.
    pub fn first_route_id(&self) -> Option<String> {
        self.first_route.lock().ok().and_then(|first| first.clone())
    }

    /// The catalog model ID the request was served under, for the log
    /// line: the one an experiment variant moved it to (F-01), else the
    /// one it asked for; `None` before the policy check or for a name the
    /// catalog does not know (what a client typed is never logged).
    pub fn model_id(&self) -> Option<String> {
        self.variant_model
            .get()
            .or(self.model.get())
            .map(|model| model.id.clone())
    }

    pub(crate) fn model(&self, model: &Arc<Model>) {
        let _ = self.model.set(model.clone());
    }

    pub(crate) fn variant_model(&self, model: &Arc<Model>) {
        let _ = self.variant_model.set(model.clone());
    }

    /// What was charged, once settled.
    pub fn charged_nano(&self) -> Option<i64> {
        let charged = self.charged.load(Ordering::Relaxed);
        (charged >= 0).then_some(charged)
    }

    pub(crate) fn attempt_started(&self, route: &Arc<Route>) {
        if self.attempts.fetch_add(1, Ordering::Relaxed) == 0
            && let Ok(mut first) = self.first_route.lock()
        {
            *first = Some(route.id.clone());
        }
        if let Ok(mut current) = self.route.lock() {
            *current = Some(route.clone());
        }
    }

    pub(crate) fn settled(&self, charged_nano: i64) {
        self.charged.store(charged_nano, Ordering::Relaxed);
    }
}

/// One timed step of a request, for its exported trace: a child span of
/// the router's request span.
#[derive(Debug, Clone, PartialEq)]
pub struct TimedSpan {
    pub name: &'static str,
    /// The attempt's own span id (the one its supplier was sent); a fresh
    /// one for the other steps.
    pub span_id: [u8; 8],
    pub start: SystemTime,
    pub end: SystemTime,
    pub failed: bool,
    pub attributes: Vec<(&'static str, SpanValue)>,
}

impl TimedSpan {
    /// A step from `start` to now, under a fresh span id.
    pub fn ended_now(name: &'static str, start: SystemTime, failed: bool) -> TimedSpan {
        TimedSpan {
            name,
            span_id: TraceContext::start(false).span_id_bytes(),
            start,
            end: SystemTime::now(),
            failed,
            attributes: Vec::new(),
        }
    }

    pub fn with(mut self, key: &'static str, value: impl Into<SpanValue>) -> TimedSpan {
        self.attributes.push((key, value.into()));
        self
    }
}

/// An attribute's value.
#[derive(Debug, Clone, PartialEq)]
pub enum SpanValue {
    Text(String),
    Int(i64),
}

impl From<String> for SpanValue {
    fn from(text: String) -> Self {
        SpanValue::Text(text)
    }
}

impl From<&str> for SpanValue {
    fn from(text: &str) -> Self {
        SpanValue::Text(text.to_owned())
    }
}

impl From<i64> for SpanValue {
    fn from(n: i64) -> Self {
        SpanValue::Int(n)
    }
}

/// One supplier attempt ended: `outcome` is `succeeded` or the failure
/// kind; `first_byte` says whether `elapsed` is the time to a stream's first
/// event (else to a complete reply, or to the failure).
pub(crate) fn attempt_finished(
    route: &Route,
    outcome: &'static str,
    elapsed: Duration,
    first_byte: bool,
) {
    metrics::counter!(
        "router_attempts_total",
        "route" => route.id.clone(),
        "outcome" => outcome
    )
    .increment(1);
    let histogram = if first_byte {
        "router_upstream_first_byte_seconds"
    } else {
        "router_upstream_latency_seconds"
    };
    metrics::histogram!(histogram, "route" => route.id.clone()).record(elapsed.as_secs_f64());
}

/// A failed attempt is followed by another: a retry on the same route or a
/// fallback to the next.
pub(crate) fn retried(route: &Route, same_route: bool) {
    metrics::counter!(
        "router_retries_total",
        "route" => route.id.clone(),
        "kind" => if same_route { "same_route" } else { "fallback" }
    )
    .increment(1);
}

/// The reservation's fate: `reserved`, `settled`, `voided`, or `refused`
/// with the public code.
pub(crate) fn reservation(event: &'static str) {
    metrics::counter!("router_reservations_total", "event" => event).increment(1);
}

/// A settlement committed: the nano-USD charged for `model`, its tokens,
/// and, when the supplier reported more than the hold, the shortfall the
/// operator absorbs (the hold is a ceiling, I4).
pub(crate) fn charged(model: &str, charged: i64, reported: i64, usage: &router_canonical::Usage) {
    let model = model.to_owned();
    metrics::counter!("router_charged_nano_usd_total", "model" => model.clone())
        .increment(charged.max(0) as u64);
    for (kind, tokens) in [
        ("input", usage.input_tokens),
        ("output", usage.output_tokens),
        ("cache_read", usage.cache_read_input_tokens),
        ("cache_write", usage.cache_creation_input_tokens),
        ("reasoning", usage.reasoning_tokens),
    ] {
        if tokens > 0 {
            metrics::counter!("router_tokens_total", "model" => model.clone(), "kind" => kind)
                .increment(tokens);
        }
    }
    if reported > charged {
        metrics::counter!("router_settlement_shortfalls_total", "model" => model.clone())
            .increment(1);
        metrics::counter!("router_settlement_shortfall_nano_usd_total", "model" => model)
            .increment((reported - charged) as u64);
    }
}

/// One call to a video supplier (`submit`, `poll` or `content`) ended:
/// `outcome` is `succeeded` or the failure kind.
pub(crate) fn video_call(route: &Route, call: &'static str, outcome: &'static str) {
    metrics::counter!(
        "router_video_supplier_calls_total",
        "route" => route.id.clone(),
        "call" => call,
        "outcome" => outcome
    )
    .increment(1);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Pricing;
    use router_canonical::NanoUsd;

    fn model(id: &str) -> Arc<Model> {
        Arc::new(Model::text(id, &[], Pricing::PerImage(NanoUsd(1))))
    }

    /// The access line names the catalog model core looked up, and an
    /// experiment variant's over it (F-01); nothing before the lookup.
    #[test]
    fn the_logged_model_is_the_variants_else_the_one_asked_for() {
        let trace = RequestTrace::new();
        assert_eq!(trace.model_id(), None);
        trace.model(&model("asked"));
        assert_eq!(trace.model_id().as_deref(), Some("asked"));
        trace.variant_model(&model("variant"));
        assert_eq!(trace.model_id().as_deref(), Some("variant"));
    }
}
