//! Golden tests over `fixtures/completions/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` -> `canonical.json` (the request that rides the
//! Chat path, E-09); `canonical_response.json` -> `response.json`;
//! `canonical_events.json` -> `client_stream.sse`. The inputs
//! (`request.json`, `canonical_response.json`, `canonical_events.json`) are
//! written by hand; the rest are expectations. Run with `UPDATE_GOLDEN=1` to
//! rewrite the expectations, then review the diff.

#![expect(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use router_canonical::{NanoUsd, Response, StreamEvent};
use router_completions::{
    ClientStreamEncoder, CompletionRequest, CompletionStreamContext, ResponseContext,
    StreamEncoder, StreamEnd, encode_response,
};
use router_wire_testkit::RoutingOptions;
use router_wire_testkit::golden::{self, Golden};
use std::fs;
use std::path::Path;

/// The body parsed as the gateway parses it: its routing fields taken into
/// the gateway's `RoutingOptions` (`parse_request_with`), which the
/// canonical request does not hold.
fn parse_request(body: &[u8]) -> Result<CompletionRequest, router_completions::ApiError> {
    router_completions::parse_request_with(body, &mut RoutingOptions::default())
}

const ROUTER_ID: &str = "cmpl-router-0001";
const CREATED: i64 = 1_735_689_600;
/// $0.000123456: shows `usage.cost` keeps all nine fraction digits.
const COST: NanoUsd = NanoUsd(123_456);

/// The cases that must exist; a missing directory fails the test.
const CASES: [&str; 6] = [
    "array_prompt",
    "echo",
    "plain_prompt",
    "stop_and_sampling",
    "stream_echo",
    "stream_text",
];

fn run_case(case: &Path, golden: &mut Golden) {
    let request = fs::read(case.join("request.json")).expect("every case has a request.json");
    let parsed = parse_request(&request)
        .unwrap_or_else(|err| panic!("{}: request rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&parsed.request).unwrap(),
    );

    let mut outputs = 0;
    if let Ok(body) = fs::read(case.join("canonical_response.json")) {
        outputs += 1;
        let response: Response = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{}: bad canonical_response.json: {err}", case.display()));
        let ctx = ResponseContext {
            id: ROUTER_ID,
            model: &parsed.request.model,
            created: CREATED,
            cost: Some(COST),
            echo: parsed.echo.as_deref(),
        };
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&encode_response(&response, &ctx)).unwrap(),
        );
    }

    if let Ok(body) = fs::read(case.join("canonical_events.json")) {
        outputs += 1;
        let events: Vec<StreamEvent> = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{}: bad canonical_events.json: {err}", case.display()));
        let mut encoder = StreamEncoder::new(CompletionStreamContext {
            id: ROUTER_ID.to_owned(),
            model: parsed.request.model.clone(),
            created: CREATED,
            echo: parsed.echo.clone(),
        });
        let mut out = Vec::new();
        for event in &events {
            match event {
                StreamEvent::Finish {
                    stop_reason, usage, ..
                } => encoder.finish(
                    &StreamEnd::new(stop_reason, usage).with_cost(Some(COST)),
                    &mut out,
                ),
                other => encoder.event(other, &mut out),
            }
        }
        golden.sse(case, "client_stream.sse", &out);
    }
    assert!(
        outputs > 0,
        "{}: a case needs canonical_response.json or canonical_events.json",
        case.display()
    );
}

#[test]
fn fixtures_match() {
    let cases = golden::cases("completions");
    for name in CASES {
        assert!(
            cases.iter().any(|c| c.ends_with(name)),
            "golden case `{name}` is missing from {cases:?}"
        );
    }
    let mut golden = Golden::new();
    for case in &cases {
        run_case(case, &mut golden);
    }
    golden.finish();
}
