//! Golden tests over `fixtures/messages/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` (+ optional `headers.json`) -> `canonical.json`
//! -> `upstream_request.json`; `supplier_response.json` ->
//! `canonical_response.json` -> `response.json`; `supplier_stream.sse` ->
//! `canonical_events.json` -> `client_stream.sse`. A case without
//! `request.json` is a conversion case: its hand-written `canonical.json`
//! (a request that came in over another protocol) is the input. An optional
//! `target.json` sets the encoding options of the target beyond the model
//! and the default cap (`{"prompt_cache_marker": true}`). The inputs
//! (`request.json`, `headers.json`, `supplier_*`, conversion
//! `canonical.json`, `target.json`) are written by hand from the public Anthropic
//! reference; the rest are expectations. Run with `UPDATE_GOLDEN=1` to
//! rewrite the expectations, then review the diff.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::Request;
use router_messages::{
    ClientCodec, ClientStreamEncoder, HeaderSource, MessagesClient, MessagesSupplier, ReplyContext,
    StreamContext, SupplierTarget,
};
use router_wire_testkit::RoutingOptions;
use router_wire_testkit::golden::{self, Golden, frame_values};
use router_wire_testkit::supplier;
use serde_json::Value;
use std::fs;
use std::path::Path;

const UPSTREAM_MODEL: &str = "claude-supplier-model-20250101";
const DEFAULT_MAX_TOKENS: u32 = 4096;
const ROUTER_ID: &str = "msg_router_0001";
/// The gateway's setting: a reply without usage is invalid.
const SUPPLIER: MessagesSupplier = MessagesSupplier::new().with_require_usage(true);

/// A case's `headers.json`, plus the JSON content type.
struct Headers(Value);

impl HeaderSource for Headers {
    fn header(&self, name: &str) -> Option<&str> {
        match name {
            "content-type" => Some("application/json"),
            _ => self.0.get(name).and_then(Value::as_str),
        }
    }
}

/// The canonical request of a case: parsed from `request.json` (and checked
/// against `canonical.json`), or read from `canonical.json` for a conversion case.
fn canonical(case: &Path, golden: &mut Golden) -> Request {
    let Ok(body) = fs::read(case.join("request.json")) else {
        let input = fs::read(case.join("canonical.json"))
            .expect("a case has request.json or an input canonical.json");
        return serde_json::from_slice(&input).unwrap();
    };
    let headers: Value = fs::read(case.join("headers.json"))
        .map(|b| serde_json::from_slice(&b).unwrap())
        .unwrap_or_else(|_| serde_json::json!({"anthropic-version": "2023-06-01"}));
    // As the gateway parses it: the routing fields into the gateway's
    // `RoutingOptions`, beside the canonical request.
    let (request, ()) = MessagesClient
        .parse_request_with(&Headers(headers), &body, &mut RoutingOptions::default())
        .unwrap_or_else(|err| panic!("{}: request or headers rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&request).unwrap(),
    );
    request
}

fn run_case(case: &Path, golden: &mut Golden) {
    let canonical = canonical(case, golden);
    let marker = fs::read(case.join("target.json"))
        .ok()
        .map(|b| serde_json::from_slice::<Value>(&b).unwrap())
        .and_then(|t| t["prompt_cache_marker"].as_bool())
        .unwrap_or(false);
    let target = SupplierTarget::new(UPSTREAM_MODEL)
        .with_default_max_output_tokens(Some(DEFAULT_MAX_TOKENS))
        .with_prompt_cache_marker(marker);
    supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &target);

    if let Some(response) = supplier::canonical_response(case, golden, &SUPPLIER) {
        let ctx = ReplyContext::new(ROUTER_ID, &canonical.model, 0);
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&MessagesClient.encode_response(&response, &ctx, &())).unwrap(),
        );
    }

    if let Some(events) = supplier::canonical_events(case, golden, &SUPPLIER, "message_stop") {
        let stream = StreamContext::new(ROUTER_ID.to_owned(), canonical.model.clone(), 0);
        let mut encoder = MessagesClient.stream_encoder(stream, ());
        let mut out = Vec::new();
        for event in &events {
            // `Finish` writes the ending, as `finish` without a cost does.
            encoder.event(event, &mut out);
        }
        // D-31: every event name equals its payload's type.
        for (event, data) in frame_values(&out) {
            assert_eq!(
                event.as_deref(),
                data.get("type").and_then(Value::as_str),
                "{}: event name and type differ",
                case.display()
            );
        }
        golden.sse(case, "client_stream.sse", &out);
    }
}

#[test]
fn fixtures_match() {
    golden::run_cases("messages", 12, run_case);
}
