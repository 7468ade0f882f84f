//! Golden tests over `fixtures/responses/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` -> `canonical.json` -> `upstream_request.json`;
//! `supplier_response.json` -> `canonical_response.json` -> `response.json`;
//! `supplier_stream.sse` -> `canonical_events.json` -> `client_stream.sse`.
//! The inputs (`request.json`, `supplier_*`) are written by hand from the
//! public OpenAI Responses reference; the rest are expectations. Run with
//! `UPDATE_GOLDEN=1` to rewrite the expectations, then review the diff.
//!
//! Besides the comparison, every client stream is checked for the protocol's
//! own rules: each SSE `event:` name equals its data's `type`, and
//! `sequence_number` counts 0, 1, 2, ... (C-10, GP-04).
//!
//! Per case, `fixtures/responses/<case>/` holds the client `request.json`,
//! the parsed `canonical.json`, the `upstream_request.json` sent to a
//! supplier, a `supplier_response.json` with its `canonical_response.json`
//! and the client `response.json`, and for streams `supplier_stream.sse`,
//! `canonical_events.json` and `client_stream.sse`. To regenerate the
//! expectations after an intended change, run
//! `UPDATE_GOLDEN=1 cargo test -p router-responses --test golden` and review
//! the diff.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::codec::finish_of;
use router_responses::{
    ClientCodec, ClientStreamEncoder, NanoUsd, ReplyContext, ResponsesClient, ResponsesSupplier,
    StreamContext, SupplierTarget,
};
use router_wire_testkit::golden::{self, Golden, frame_values, frames};
use router_wire_testkit::supplier;
use serde_json::Value;
use std::fs;
use std::path::Path;

const UPSTREAM_MODEL: &str = "supplier-resp-model-2025-01";
const ROUTER_ID: &str = "resp_router0001";
const CREATED: i64 = 1_735_689_600;
/// $0.000123456: shows `usage.cost` keeps all nine fraction digits.
const COST: NanoUsd = NanoUsd(123_456);
/// The supplier codec as a gateway that bills by usage sets it.
const SUPPLIER: ResponsesSupplier = ResponsesSupplier::new().with_require_usage(true);

/// The Responses stream rules every client stream must keep.
fn check_client_stream(case: &Path, bytes: &[u8]) {
    let values = frame_values(bytes);
    assert!(
        !values.is_empty(),
        "{}: empty client stream",
        case.display()
    );
    for (n, (event, data)) in values.iter().enumerate() {
        assert_eq!(
            event.as_deref(),
            data["type"].as_str(),
            "{}: frame {n}: `event:` differs from the data's type",
            case.display()
        );
        assert_eq!(
            data["sequence_number"],
            Value::from(n),
            "{}: frame {n}: sequence_number",
            case.display()
        );
    }
    let names: Vec<_> = values.iter().map(|(e, _)| e.as_deref()).collect();
    assert_eq!(
        names[..2],
        [Some("response.created"), Some("response.in_progress")],
        "{}",
        case.display()
    );
    let (_, last) = values.last().unwrap();
    assert!(
        matches!(
            last["type"].as_str(),
            Some("response.completed" | "response.incomplete")
        ),
        "{}: the stream must end with response.completed",
        case.display()
    );
    assert_eq!(last["response"]["usage"]["cost"], 0.000123456);
}

fn run_case(case: &Path, golden: &mut Golden) {
    let request = fs::read(case.join("request.json")).expect("every case has a request.json");
    let (canonical, namespaces) = ResponsesClient
        .parse_request(&(), &request)
        .unwrap_or_else(|err| panic!("{}: request rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&canonical).unwrap(),
    );
    let target = SupplierTarget::new(UPSTREAM_MODEL);
    supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &target);

    if let Ok(body) = fs::read(case.join("supplier_response.json")) {
        let response = SUPPLIER
            .decode_reply(&body)
            .unwrap_or_else(|err| panic!("{}: supplier reply rejected: {err}", case.display()));
        golden.json(
            case,
            "canonical_response.json",
            &serde_json::to_value(&response).unwrap(),
        );
        let ctx = ReplyContext::new(ROUTER_ID, &canonical.model, CREATED).with_cost(Some(COST));
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&ResponsesClient.encode_response(&response, &ctx, &namespaces))
                .unwrap(),
        );
    }

    if let Ok(sse) = fs::read(case.join("supplier_stream.sse")) {
        let mut decoder = SUPPLIER.decoder();
        let mut events = Vec::new();
        for frame in frames(&sse) {
            events.extend(
                decoder
                    .decode_frame(&frame)
                    .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display())),
            );
        }
        assert!(
            decoder.is_finished(),
            "{}: no response.completed",
            case.display()
        );
        golden.json(
            case,
            "canonical_events.json",
            &serde_json::to_value(&events).unwrap(),
        );
        let ctx = StreamContext::new(ROUTER_ID.to_owned(), canonical.model.clone(), CREATED);
        let mut encoder = ResponsesClient.stream_encoder(ctx, namespaces.clone());
        let mut out = Vec::new();
        for event in &events {
            match finish_of(event) {
                Some(end) => encoder.finish(&end.with_cost(Some(COST)), &mut out),
                None => encoder.event(event, &mut out),
            }
        }
        check_client_stream(case, &out);
        golden.sse(case, "client_stream.sse", &out);
    }
}

#[test]
fn fixtures_match() {
    golden::run_cases("responses", 10, run_case);
}
