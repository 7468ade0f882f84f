//! Golden tests over `fixtures/chat/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` -> `canonical.json` -> `upstream_request.json`;
//! `supplier_response.json` -> `canonical_response.json` -> `response.json`;
//! `supplier_stream.sse` -> `canonical_events.json` -> `client_stream.sse`.
//! The inputs (`request.json`, `supplier_*`) are written by hand from the
//! public OpenAI reference; the rest are expectations. Run
//! `UPDATE_GOLDEN=1 cargo test -p router-chat --test golden` to rewrite the
//! expectations, then review the diff.

#![expect(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is the failure report"
)]

use router_chat::{
    ChatClient, ChatSupplier, ClientCodec, ClientStreamEncoder, NanoUsd, ReplyContext,
    StreamContext, SupplierTarget, finish_of,
};
use router_wire_testkit::golden::{self, Golden};
use router_wire_testkit::supplier;
use std::fs;
use std::path::Path;

const UPSTREAM_MODEL: &str = "supplier-chat-model-2025-01";
const ROUTER_ID: &str = "chatcmpl-router-0001";
const CREATED: i64 = 1_735_689_600;
/// $0.000123456: shows `usage.cost` keeps all nine fraction digits.
const COST: NanoUsd = NanoUsd(123_456);

/// The codecs as the gateway sets them: usage is always reported and required.
const CLIENT: ChatClient = ChatClient::new().with_always_include_usage(true);
const SUPPLIER: ChatSupplier = ChatSupplier::new().with_require_usage(true);
const TARGET: SupplierTarget<'static> = SupplierTarget::new(UPSTREAM_MODEL);

fn run_case(case: &Path, golden: &mut Golden) {
    let request = fs::read(case.join("request.json")).expect("every case has a request.json");
    let (canonical, extra) = CLIENT
        .parse_request(&(), &request)
        .unwrap_or_else(|err| panic!("{}: request rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&canonical).unwrap(),
    );
    supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &TARGET);

    if let Some(response) = supplier::canonical_response(case, golden, &SUPPLIER) {
        let reply = ReplyContext::new(ROUTER_ID, &canonical.model, CREATED).with_cost(Some(COST));
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&CLIENT.encode_response(&response, &reply, &extra)).unwrap(),
        );
    }

    if let Some(events) = supplier::canonical_events(case, golden, &SUPPLIER, "[DONE]") {
        let mut encoder = CLIENT.stream_encoder(
            StreamContext::new(ROUTER_ID.to_owned(), canonical.model.clone(), CREATED),
            extra,
        );
        let mut out = Vec::new();
        for event in &events {
            match finish_of(event) {
                Some(end) => encoder.finish(&end.with_cost(Some(COST)), &mut out),
                None => encoder.event(event, &mut out),
            }
        }
        golden.sse(case, "client_stream.sse", &out);
    }
}

#[test]
fn fixtures_match() {
    golden::run_cases("chat", 8, run_case);
}
