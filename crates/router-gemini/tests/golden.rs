//! Golden tests over `fixtures/gemini/<case>/`, compared as JSON values.
//!
//! Per case: `canonical.json` (a request as another protocol's client codec
//! parses it, written by hand) -> `upstream_request.json` (the
//! `generateContent` body); `supplier_response.json` ->
//! `canonical_response.json`; `supplier_stream.sse` (a
//! `streamGenerateContent?alt=sse` stream) -> `canonical_events.json`. The
//! supplier inputs follow Google's published `GenerateContentResponse`
//! shape and samples. `UPDATE_GOLDEN=1` rewrites the expectations.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::{Request, SupplierCodec, SupplierTarget};
use router_gemini::GeminiSupplier;
use router_wire_testkit::golden::{self, Golden, frames};
use std::fs;
use std::path::Path;

const SUPPLIER: GeminiSupplier = GeminiSupplier {
    require_usage: true,
};

fn run_case(case: &Path, golden: &mut Golden) {
    let canonical: Request =
        serde_json::from_slice(&fs::read(case.join("canonical.json")).unwrap()).unwrap();
    let target = SupplierTarget {
        model: "gemini-2.5-flash",
        default_max_output_tokens: Some(4096),
    };
    let upstream = SUPPLIER
        .encode_request(&canonical, &target)
        .unwrap_or_else(|err| panic!("{}: encode_request failed: {err:?}", case.display()));
    golden.json(
        case,
        "upstream_request.json",
        &serde_json::from_slice(&upstream).unwrap(),
    );
    if let Ok(body) = fs::read(case.join("supplier_response.json")) {
        let response = SUPPLIER
            .decode_response(&body)
            .unwrap_or_else(|err| panic!("{}: reply rejected: {err}", case.display()));
        golden.json(
            case,
            "canonical_response.json",
            &serde_json::to_value(&response).unwrap(),
        );
    }
    if let Ok(sse) = fs::read(case.join("supplier_stream.sse")) {
        let mut decoder = SUPPLIER.stream_decoder();
        let mut events = Vec::new();
        for frame in frames(&sse) {
            events.extend(
                decoder
                    .decode(&frame)
                    .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display())),
            );
        }
        assert!(decoder.is_finished(), "{}: no finish", case.display());
        golden.json(
            case,
            "canonical_events.json",
            &serde_json::to_value(&events).unwrap(),
        );
    }
}

#[test]
fn fixtures_match() {
    let cases = golden::cases("gemini");
    assert!(
        cases.len() >= 5,
        "expected the golden cases, found {cases:?}"
    );
    let mut golden = Golden::new();
    for case in &cases {
        run_case(case, &mut golden);
    }
    golden.finish();
}
