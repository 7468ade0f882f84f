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

use router_canonical::eventstream::{Decoder, HeaderValue, Message};
use router_canonical::{Request, StreamFraming, SupplierError};
use router_messages::{BedrockMessagesSupplier, SupplierCodec, SupplierTarget};
use router_wire_testkit::golden::{self, Golden};
use serde_json::Value;
use std::fs;
use std::path::Path;

const MODEL: &str = "anthropic.claude-3-5-sonnet-20241022-v2:0";
const SUPPLIER: BedrockMessagesSupplier = BedrockMessagesSupplier {
    require_usage: true,
};

fn target() -> SupplierTarget<'static> {
    SupplierTarget {
        model: MODEL,
        default_max_output_tokens: Some(4096),
    }
}

/// The wire bytes of a stream fixture.
fn stream_bytes(fixture: &[u8]) -> Vec<u8> {
    let messages: Vec<Value> = serde_json::from_slice(fixture).unwrap();
    let mut bytes = Vec::new();
    for message in messages {
        let headers = message["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    HeaderValue::String(v.as_str().unwrap().to_owned()),
                )
            })
            .collect();
        let payload = serde_json::to_vec(&message["payload"]).unwrap();
        bytes.extend(Message { headers, payload }.encode());
    }
    bytes
}

/// Decode a stream's bytes, fed in pieces of `piece` bytes.
fn decode_stream(
    bytes: &[u8],
    piece: usize,
) -> Result<(Vec<router_canonical::StreamEvent>, bool), SupplierError> {
    let mut framing = Decoder::default();
    let mut decoder = SUPPLIER.stream_decoder();
    let mut events = Vec::new();
    for chunk in bytes.chunks(piece) {
        let mut messages = Vec::new();
        framing.feed(chunk, &mut messages).unwrap();
        for message in messages {
            events.extend(decoder.decode(&message.into_frame().unwrap())?);
        }
    }
    Ok((events, decoder.is_finished()))
}

fn run_case(case: &Path, golden: &mut Golden) {
    let canonical: Request =
        serde_json::from_slice(&fs::read(case.join("canonical.json")).unwrap()).unwrap();
    let upstream = SUPPLIER
        .encode_request(&canonical, &target())
        .unwrap_or_else(|err| panic!("{}: encode_request failed: {err:?}", case.display()));
    let upstream: Value = serde_json::from_slice(&upstream).unwrap();
    assert_eq!(upstream["anthropic_version"], "bedrock-2023-05-31");
    assert!(upstream.get("model").is_none() && upstream.get("stream").is_none());
    golden.json(case, "upstream_request.json", &upstream);

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

    if let Ok(fixture) = fs::read(case.join("supplier_stream.json")) {
        let bytes = stream_bytes(&fixture);
        let (events, finished) = decode_stream(&bytes, 3)
            .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display()));
        assert!(finished, "{}: no message_stop", case.display());
        assert_eq!(decode_stream(&bytes, bytes.len()).unwrap().0, events);
        golden.json(
            case,
            "canonical_events.json",
            &serde_json::to_value(&events).unwrap(),
        );
    }
}

#[test]
fn fixtures_match() {
    let cases = golden::cases("bedrock_messages");
    assert!(
        cases.len() >= 2,
        "expected the golden cases, found {cases:?}"
    );
    let mut golden = Golden::new();
    for case in &cases {
        run_case(case, &mut golden);
    }
    golden.finish();
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
