//! A gateway's routing fields (`zdr`, `min_discount_percent`) are no member
//! of the protocol: `parse_request` accepts and drops them as any unknown
//! member, and only a gateway that asks for them (`parse_request_with`)
//! reads and validates them.

use router_completions::{parse_request, parse_request_with};
use router_wire_testkit::RoutingOptions;
use serde_json::json;

#[test]
fn a_library_caller_ignores_them_and_a_gateway_validates_them() {
    let body = serde_json::to_vec(&json!({"model": "m", "prompt": "hi", "zdr": "yes"})).unwrap();
    let parsed = parse_request(&body).unwrap();
    let plain = serde_json::to_vec(&json!({"model": "m", "prompt": "hi"})).unwrap();
    assert_eq!(parsed.request, parse_request(&plain).unwrap().request);
    let error = parse_request_with(&body, &mut RoutingOptions::default()).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("zdr"));
}
