//! Golden tests of Claude on Amazon Bedrock over `fixtures/bedrock_messages/<case>/`:
//! `canonical.json` -> `upstream_request.json` (the InvokeModel body);
//! `supplier_response.json` -> `canonical_response.json`;
//! `supplier_stream.json` (the event-stream messages of
//! InvokeModelWithResponseStream: headers and payload, each `chunk`'s
//! `bytes` one base64 Messages event, as Bedrock documents them) ->
//! `canonical_events.json`. The stream goes through the binary framing
//! (CRCs included) and is cut at every third byte. `UPDATE_GOLDEN=1`
//! rewrites the expectations.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::eventstream::Message;
use router_canonical::{Request, StreamFraming, SupplierError};
use router_messages::{BedrockMessagesSupplier, SupplierCodec, SupplierTarget};
use router_wire_testkit::golden::{self, Golden};
use router_wire_testkit::supplier;
use serde_json::Value;
use std::fs;
use std::path::Path;

const MODEL: &str = "anthropic.claude-3-5-sonnet-20241022-v2:0";
const SUPPLIER: BedrockMessagesSupplier = BedrockMessagesSupplier::new().with_require_usage(true);

fn target() -> SupplierTarget<'static> {
    SupplierTarget::new(MODEL).with_default_max_output_tokens(Some(4096))
}

/// The wire bytes of a stream fixture.
fn stream_bytes(fixture: &[u8]) -> Vec<u8> {
    let messages: Vec<Value> = serde_json::from_slice(fixture).unwrap();
    supplier::event_stream_bytes(&messages)
}

/// Decode a stream's bytes, fed in pieces of `piece` bytes.
fn decode_stream(
    bytes: &[u8],
    piece: usize,
) -> Result<(Vec<router_canonical::StreamEvent>, bool), SupplierError> {
    supplier::decode_event_stream(&SUPPLIER, bytes, piece)
}

fn run_case(case: &Path, golden: &mut Golden) {
    let canonical = supplier::canonical_input(case);
    let upstream = supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &target());
    assert_eq!(upstream["anthropic_version"], "bedrock-2023-05-31");
    assert!(upstream.get("model").is_none() && upstream.get("stream").is_none());
    supplier::canonical_response(case, golden, &SUPPLIER);

    if let Ok(fixture) = fs::read(case.join("supplier_stream.json")) {
        let bytes = stream_bytes(&fixture);
        let (events, finished) = decode_stream(&bytes, 3)
            .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display()));
        assert!(finished, "{}: no message_stop", case.display());
        assert_eq!(decode_stream(&bytes, bytes.len()).unwrap().0, events);
        supplier::compare_events(case, golden, &events);
    }
}

#[test]
fn fixtures_match() {
    golden::run_cases("bedrock_messages", 2, run_case);
}

#[test]
fn the_model_and_the_streaming_choice_are_in_the_path() {
    assert_eq!(
        SUPPLIER.request_path(&target(), false),
        "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/invoke"
    );
    assert_eq!(
        SUPPLIER.request_path(&target(), true),
        "/model/anthropic.claude-3-5-sonnet-20241022-v2%3A0/invoke-with-response-stream"
    );
    assert_eq!(SUPPLIER.stream_framing(), StreamFraming::AwsEventStream);
    assert!(
        SUPPLIER
            .headers(&Request::default(), Some("key"))
            .is_empty()
    );
}

#[test]
fn an_exception_in_the_stream_is_the_suppliers_reported_failure() {
    let start = r#"{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":3,"output_tokens":1}}}"#;
    let mut bytes = Message::event(
        "chunk",
        serde_json::to_vec(&serde_json::json!({"bytes": base64_of(start)})).unwrap(),
    )
    .encode();
    bytes.extend(
        Message::exception(
            "throttlingException",
            r#"{"message":"Too many requests, please wait before trying again."}"#,
        )
        .encode(),
    );
    let error = decode_stream(&bytes, 7).unwrap_err();
    let failure = error.reported().expect("a reported failure");
    assert_eq!(failure.kind.as_deref(), Some("throttlingException"));
    assert_eq!(failure.status, None);
}

#[test]
fn an_error_reply_keeps_bedrocks_message() {
    let error = SUPPLIER.decode_error(
        400,
        &(),
        br#"{"message":"Malformed input request: #: extraneous key [foo] is not permitted"}"#,
    );
    let failure = error.reported().unwrap();
    assert_eq!(failure.status, Some(400));
    assert!(
        failure
            .message
            .as_deref()
            .unwrap()
            .starts_with("Malformed input")
    );
}

fn base64_of(text: &str) -> String {
    // A small encoder keeps the test free of another dependency.
    const ALPHABET: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |acc, &b| (acc << 8) | b as u32) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
