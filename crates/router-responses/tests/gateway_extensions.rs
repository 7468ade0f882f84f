//! A gateway's routing fields (`zdr`, `min_discount_percent`) are no
//! member of the protocol: `parse_request` treats them as any unknown
//! top-level member (accepted and dropped), and only a gateway that asks
//! for them (`parse_request_with`) reads and validates them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use router_canonical::ClientCodec;
use router_responses::ResponsesClient;
use router_wire_testkit::RoutingOptions;
use serde_json::json;

fn body(extra: serde_json::Value) -> Vec<u8> {
    let mut body = json!({"model": "m", "input": "hi"});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::to_vec(&body).unwrap()
}

#[test]
fn a_library_caller_ignores_a_gateways_fields_whatever_their_value() {
    let with = body(json!({"zdr": "yes", "min_discount_percent": 250}));
    let (request, _) = ResponsesClient.parse_request(&(), &with).unwrap();
    let (without, _) = ResponsesClient
        .parse_request(&(), &body(json!({})))
        .unwrap();
    assert_eq!(request, without);
}

#[test]
fn a_gateway_reads_and_validates_them() {
    let mut routing = RoutingOptions::default();
    ResponsesClient
        .parse_request_with(&(), &body(json!({"zdr": true})), &mut routing)
        .unwrap();
    assert!(routing.zdr);
    let error = ResponsesClient
        .parse_request_with(
            &(),
            &body(json!({"zdr": "yes"})),
            &mut RoutingOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("zdr"));
    let error = ResponsesClient
        .parse_request_with(
            &(),
            &body(json!({"min_discount_percent": 250})),
            &mut RoutingOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("min_discount_percent"));
}
