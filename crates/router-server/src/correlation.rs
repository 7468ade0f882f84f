//! Which ids a request carries (issue 30, tracing): the W3C trace context
//! it joins, and the id its answers show.
//!
//! - `traceparent` (with `tracestate`) well formed: the request joins that
//!   trace; otherwise the router starts one. Each supplier attempt goes out
//!   as a child span (`router_core::AttemptCall`), with the router's request
//!   id as `x-request-id`.
//! - `x-request-id` well formed (1 to 128 of letters, digits and `-_.:+=/`):
//!   kept, so the answer's `x-request-id` (and `request-id`) is the
//!   client's own and the log line names it as `client_request_id`;
//!   otherwise the answer carries the router's request id. The router's id
//!   stays the key of the request's history and receipts either way.

use router_core::TraceContext;
use router_core::trace_context::is_well_formed_request_id;
use router_telemetry::request_log::RequestLog;

/// Reads the request's trace context and client request id into `log`;
/// returns the id its answers carry.
pub fn begin(headers: &http::HeaderMap, log: &RequestLog) -> String {
    let text = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    // A trace the router starts is sampled when its spans are exported.
    let export = router_telemetry::otlp::enabled();
    let context =
        TraceContext::from_headers_or_start(text("traceparent"), text("tracestate"), export);
    log.trace().set_context(context, export);
    if let Some(id) = text("x-request-id").map(str::trim)
        && is_well_formed_request_id(id)
    {
        log.client_request_id(id);
    }
    log.reply_id()
}
