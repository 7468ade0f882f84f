//! Optional export of each request's spans over OTLP/HTTP (protobuf) to an
//! OpenTelemetry collector (`ROUTER_OTLP_ENDPOINT`; off by default).
//!
//! A sampled request (the client's `traceparent` says so, or the router
//! started the trace while export is on) is exported when it ends, as a
//! server span `{METHOD} {route}` (child of the client's span, if any) with
//! children `reservation`, one `attempt` per supplier call (whose span id
//! is the one the supplier was sent in `traceparent`), and `settlement` or
//! `release`. The spans are built from the times the lifecycle recorded
//! (`router_core::RequestTrace::span`), handed to a bounded queue and sent
//! in batches by one task with the `opentelemetry-otlp` exporter: a slow or
//! absent collector never slows a request; spans that do not fit the queue
//! are dropped and counted (`router_otlp_spans_dropped_total`).
//!
//! Off, nothing of this runs: the lifecycle records no timeline
//! (`RequestTrace::recording` is false) and no span is built.

use opentelemetry::trace::{
    SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState,
};
use opentelemetry::{InstrumentationScope, KeyValue};
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanExporter, SpanLinks};
use router_core::trace::{SpanValue, TimedSpan};
use router_core::{RequestTrace, TraceContext};
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};
use tokio::sync::mpsc;

/// Spans waiting to be sent; past it new ones are dropped.
const QUEUE: usize = 8192;
/// The most spans one export sends.
const BATCH: usize = 512;
/// How long a span may wait for its batch to fill.
const BATCH_DELAY: Duration = Duration::from_secs(1);
/// One export's limit (the exporter's own timeout).
const EXPORT_TIMEOUT: Duration = Duration::from_secs(10);

static QUEUE_SENDER: OnceLock<mpsc::Sender<SpanData>> = OnceLock::new();

#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    #[error("`{0}` is not an http:// or https:// URL")]
    Endpoint(String),
    #[error(
        "the URL may not carry credentials (they would be logged); put them in OTEL_EXPORTER_OTLP_HEADERS"
    )]
    Credentials,
    #[error("cannot build the OTLP exporter: {0}")]
    Exporter(String),
}

/// `ROUTER_OTLP_ENDPOINT`: the collector's base URL (`http://host:4318`);
/// spans go to `{base}/v1/traces`.
pub fn traces_url(base: &str) -> Result<String, OtlpError> {
    let url = url::Url::parse(base.trim()).map_err(|_| OtlpError::Endpoint(base.to_owned()))?;
    if !matches!(url.scheme(), "http" | "https") || url.host().is_none() {
        return Err(OtlpError::Endpoint(base.to_owned()));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(OtlpError::Credentials);
    }
    Ok(format!("{}/v1/traces", base.trim().trim_end_matches('/')))
}

/// Starts exporting to the collector at `base` (once per process; a second
/// call does nothing). Must run inside the tokio runtime.
pub fn install(base: &str) -> Result<(), OtlpError> {
    if QUEUE_SENDER.get().is_some() {
        return Ok(());
    }
    let mut exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_endpoint(traces_url(base)?)
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|e| OtlpError::Exporter(e.to_string()))?;
    exporter.set_resource(
        &Resource::builder()
            .with_service_name("router")
            .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
            .build(),
    );
    let (sender, receiver) = mpsc::channel(QUEUE);
    if QUEUE_SENDER.set(sender).is_ok() {
        tokio::spawn(send_batches(exporter, receiver));
    }
    Ok(())
}

/// Whether spans are exported.
pub fn enabled() -> bool {
    QUEUE_SENDER.get().is_some()
}

async fn send_batches(
    exporter: opentelemetry_otlp::SpanExporter,
    mut receiver: mpsc::Receiver<SpanData>,
) {
    let mut failures_logged: Option<std::time::Instant> = None;
    while let Some(first) = receiver.recv().await {
        let mut batch = vec![first];
        let deadline = tokio::time::Instant::now() + BATCH_DELAY;
        while batch.len() < BATCH {
            match tokio::time::timeout_at(deadline, receiver.recv()).await {
                Ok(Some(span)) => batch.push(span),
                Ok(None) | Err(_) => break,
            }
        }
        let count = batch.len() as u64;
        match exporter.export(batch).await {
            Ok(()) => metrics::counter!("router_otlp_spans_exported_total").increment(count),
            Err(e) => {
                metrics::counter!("router_otlp_spans_failed_total").increment(count);
                // One warning a minute at most while the collector is away.
                if failures_logged.is_none_or(|at| at.elapsed() >= Duration::from_secs(60)) {
                    tracing::warn!(error = %e, spans = count, "OTLP export failed");
                    failures_logged = Some(std::time::Instant::now());
                }
            }
        }
    }
}

/// What the request's log knows of it when it ends.
pub struct RequestSpan<'a> {
    pub method: &'a str,
    pub route: &'static str,
    pub status: u16,
    pub request_id: uuid::Uuid,
    pub model: Option<&'a str>,
    pub code: Option<&'static str>,
    pub started: SystemTime,
}

/// Queues the spans of a request that has ended (when it is recorded).
pub fn export(request: RequestSpan<'_>, trace: &RequestTrace) {
    let Some(sender) = QUEUE_SENDER.get() else {
        return;
    };
    if !trace.recording() {
        return;
    }
    let (Some(client), Some(own)) = (trace.context(), trace.request_span()) else {
        return;
    };
    let scope = InstrumentationScope::builder("router")
        .with_version(env!("CARGO_PKG_VERSION"))
        .build();
    let parent = if client.is_remote() {
        SpanId::from_bytes(client.span_id_bytes())
    } else {
        SpanId::INVALID
    };
    let mut attributes = vec![
        KeyValue::new("http.request.method", request.method.to_owned()),
        KeyValue::new("http.route", request.route),
        KeyValue::new("http.response.status_code", i64::from(request.status)),
        KeyValue::new("router.request_id", request.request_id.to_string()),
    ];
    if let Some(model) = request.model {
        attributes.push(KeyValue::new("router.model", model.to_owned()));
    }
    if let Some(code) = request.code {
        attributes.push(KeyValue::new("error.type", code));
    }
    if let Some(charged) = trace.charged_nano() {
        attributes.push(KeyValue::new("router.charged_nano_usd", charged));
    }
    let failed = request.status >= 500;
    let mut spans = vec![span_data(
        own,
        SpanId::from_bytes(own.span_id_bytes()),
        parent,
        client.is_remote(),
        SpanKind::Server,
        format!("{} {}", request.method, request.route),
        (request.started, SystemTime::now()),
        attributes,
        failed,
        &scope,
    )];
    for step in trace.take_timeline() {
        spans.push(step_data(own, step, &scope));
    }
    for span in spans {
        if sender.try_send(span).is_err() {
            metrics::counter!("router_otlp_spans_dropped_total").increment(1);
        }
    }
}

fn step_data(request: &TraceContext, step: TimedSpan, scope: &InstrumentationScope) -> SpanData {
    let kind = if step.name == "attempt" {
        SpanKind::Client
    } else {
        SpanKind::Internal
    };
    let attributes = step
        .attributes
        .into_iter()
        .map(|(key, value)| match value {
            SpanValue::Text(text) => KeyValue::new(key, text),
            SpanValue::Int(n) => KeyValue::new(key, n),
        })
        .collect();
    span_data(
        request,
        SpanId::from_bytes(step.span_id),
        SpanId::from_bytes(request.span_id_bytes()),
        false,
        kind,
        step.name.to_owned(),
        (step.start, step.end),
        attributes,
        step.failed,
        scope,
    )
}

#[expect(clippy::too_many_arguments)] // one span's fields, each named at the call
fn span_data(
    trace: &TraceContext,
    span_id: SpanId,
    parent: SpanId,
    parent_is_remote: bool,
    kind: SpanKind,
    name: String,
    (start, end): (SystemTime, SystemTime),
    attributes: Vec<KeyValue>,
    failed: bool,
    scope: &InstrumentationScope,
) -> SpanData {
    SpanData {
        span_context: SpanContext::new(
            TraceId::from_bytes(trace.trace_id_bytes()),
            span_id,
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        ),
        parent_span_id: parent,
        parent_span_is_remote: parent_is_remote,
        span_kind: kind,
        name: name.into(),
        start_time: start,
        end_time: end.max(start),
        attributes,
        dropped_attributes_count: 0,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: if failed {
            Status::error("")
        } else {
            Status::Unset
        },
        instrumentation_scope: scope.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_is_a_base_url() {
        assert_eq!(
            traces_url("http://collector:4318").unwrap(),
            "http://collector:4318/v1/traces"
        );
        assert_eq!(
            traces_url("https://otel.example.com/").unwrap(),
            "https://otel.example.com/v1/traces"
        );
        for bad in ["collector:4318", "ftp://x", "", "http://"] {
            assert!(traces_url(bad).is_err(), "{bad}");
        }
        let e = traces_url("https://user:secret@otel.example.com").unwrap_err();
        assert!(!e.to_string().contains("secret"), "{e}");
    }
}
