//! Golden tests over `fixtures/gemini/<case>/`, compared as JSON values.
//!
//! Per case: `canonical.json` (a request as another protocol's client codec
//! parses it, written by hand) -> `upstream_request.json` (the
//! `generateContent` body); `supplier_response.json` ->
//! `canonical_response.json`; `supplier_stream.sse` (a
//! `streamGenerateContent?alt=sse` stream) -> `canonical_events.json`. The
//! supplier inputs follow Google's published `GenerateContentResponse`
//! shape and samples. `UPDATE_GOLDEN=1` rewrites the expectations.

use router_canonical::SupplierTarget;
use router_gemini::GeminiSupplier;
use router_wire_testkit::golden::{self, Golden};
use router_wire_testkit::supplier;
use std::path::Path;

const SUPPLIER: GeminiSupplier = GeminiSupplier {
    require_usage: true,
};

fn run_case(case: &Path, golden: &mut Golden) {
    let target = SupplierTarget::new("gemini-2.5-flash").with_default_max_output_tokens(Some(4096));
    let canonical = supplier::canonical_input(case);
    supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &target);
    supplier::canonical_response(case, golden, &SUPPLIER);
    supplier::canonical_events(case, golden, &SUPPLIER, "finish");
}

#[test]
fn fixtures_match() {
    golden::run_cases("gemini", 5, run_case);
}
