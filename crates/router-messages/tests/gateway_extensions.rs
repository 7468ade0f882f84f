//! A gateway's routing fields (`zdr`, `min_discount_percent`) are no member
//! of the Messages API: `parse_request` refuses them as it refuses every
//! unknown top-level member, and only a gateway that asks for them
//! (`parse_request_with`) reads and validates them.

#![expect(
    clippy::unwrap_used,
    reason = "test code: a panic is the failure report"
)]

use router_canonical::ClientCodec;
use router_messages::MessagesClient;
use router_wire_testkit::RoutingOptions;
use serde_json::json;

const HEADERS: [(&str, &str); 2] = [
    ("content-type", "application/json"),
    ("anthropic-version", "2023-06-01"),
];

fn body(extra: serde_json::Value) -> Vec<u8> {
    let mut body = json!({"model": "m", "max_tokens": 16,
                          "messages": [{"role": "user", "content": "hi"}]});
    body.as_object_mut()
        .unwrap()
        .extend(extra.as_object().unwrap().clone());
    serde_json::to_vec(&body).unwrap()
}

#[test]
fn a_library_caller_refuses_them_as_unknown_members() {
    let error = MessagesClient
        .parse_request(&HEADERS, &body(json!({"zdr": true})))
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("zdr"));
    assert!(
        MessagesClient
            .parse_request(&HEADERS, &body(json!({})))
            .is_ok()
    );
}

#[test]
fn a_gateway_reads_and_validates_them() {
    let mut routing = RoutingOptions::default();
    MessagesClient
        .parse_request_with(&HEADERS, &body(json!({"zdr": true})), &mut routing)
        .unwrap();
    assert!(routing.zdr);
    let error = MessagesClient
        .parse_request_with(
            &HEADERS,
            &body(json!({"min_discount_percent": "5"})),
            &mut RoutingOptions::default(),
        )
        .unwrap_err();
    assert_eq!(error.param.as_deref(), Some("min_discount_percent"));
}
