//! Golden tests over `fixtures/bedrock_converse/<case>/`, compared as JSON:
//! `canonical.json` -> `upstream_request.json` (the Converse body);
//! `supplier_response.json` -> `canonical_response.json`;
//! `supplier_stream.json` (ConverseStream's event-stream messages, headers
//! and payload, as AWS documents them) -> `canonical_events.json`, through
//! the binary framing cut every five bytes. `UPDATE_GOLDEN=1` rewrites the
//! expectations.

#![expect(
    clippy::unwrap_used,
    reason = "test helpers: a panic is the failure report"
)]

use router_canonical::{
    Request, StreamEvent, SupplierCodec, SupplierError, SupplierErrorCategory, SupplierTarget,
};
use router_converse::ConverseSupplier;
use router_wire_testkit::golden::{self, Golden};
use router_wire_testkit::supplier;
use serde_json::Value;
use std::fs;
use std::path::Path;

const SUPPLIER: ConverseSupplier = ConverseSupplier {
    require_usage: true,
};
const TARGET: SupplierTarget<'static> =
    SupplierTarget::new("us.anthropic.claude-3-7-sonnet-20250219-v1:0")
        .with_default_max_output_tokens(Some(4096));

fn stream_bytes(messages: &[Value]) -> Vec<u8> {
    supplier::event_stream_bytes(messages)
}

fn decode(bytes: &[u8], piece: usize) -> Result<(Vec<StreamEvent>, bool), SupplierError> {
    supplier::decode_event_stream(&SUPPLIER, bytes, piece)
}

fn run_case(case: &Path, golden: &mut Golden) {
    let canonical = supplier::canonical_input(case);
    supplier::upstream_request(case, golden, &SUPPLIER, &canonical, &TARGET);
    supplier::canonical_response(case, golden, &SUPPLIER);
    if let Ok(fixture) = fs::read(case.join("supplier_stream.json")) {
        let messages: Vec<Value> = serde_json::from_slice(&fixture).unwrap();
        let bytes = stream_bytes(&messages);
        let (events, finished) = decode(&bytes, 5)
            .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display()));
        assert!(finished, "{}: no metadata", case.display());
        supplier::compare_events(case, golden, &events);
    }
}

#[test]
fn fixtures_match() {
    golden::run_cases("bedrock_converse", 4, run_case);
}

#[test]
fn the_model_and_the_stream_choice_are_in_the_path() {
    assert_eq!(
        SUPPLIER.request_path(&TARGET, false),
        "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse"
    );
    assert_eq!(
        SUPPLIER.request_path(&TARGET, true),
        "/model/us.anthropic.claude-3-7-sonnet-20250219-v1%3A0/converse-stream"
    );
}

fn hello() -> Request {
    Request {
        model: "m".into(),
        messages: vec![router_canonical::Message::text(
            router_canonical::Role::User,
            "hi",
        )],
        ..Request::default()
    }
}

#[test]
fn what_converse_cannot_carry_is_refused_by_field() {
    use router_canonical::{ErrorCode, Field, ResponseFormat};
    let mut penalties = hello();
    penalties.sampling.presence_penalty = Some(0.5);
    let mut json_out = hello();
    json_out.response_format = Some(ResponseFormat::JsonObject);
    let mut effort = hello();
    effort.reasoning.effort = Some("high".into());
    for (request, field) in [
        (penalties, Field::Penalties),
        (json_out, Field::ResponseFormat),
        (effort, Field::ReasoningEffort),
    ] {
        let error = SUPPLIER.encode_request(&request, &TARGET).unwrap_err();
        assert_eq!(error.code, ErrorCode::UnsupportedConversion);
        assert_eq!(error.field, Some(field));
    }
    let mut tiff = hello();
    tiff.messages[0]
        .content
        .push(router_canonical::ContentPart::Image {
            source: router_canonical::ImageSource::Base64 {
                media_type: "image/tiff".into(),
                data: "AAAA".into(),
            },
            detail: None,
            cache_control: None,
        });
    let error = SUPPLIER.encode_request(&tiff, &TARGET).unwrap_err();
    assert_eq!(error.param.as_deref(), Some("messages[0].content[1]"));
    // Every caller's codec names its own conversation field; the canonical
    // path stays in the message.
    assert_eq!(error.field, Some(router_canonical::Field::Messages));
    assert!(
        error.message.starts_with("messages[0].content[1]: "),
        "{error:?}"
    );
    let shown = error.named_in(|field| match field {
        router_canonical::Field::Messages => "input",
        _ => "other",
    });
    assert_eq!(shown.param.as_deref(), Some("input"));
    assert!(shown.message.contains("messages[0].content[1]"));
}

#[test]
fn usage_is_required_and_an_exception_is_reported() {
    let no_usage = br#"{"output":{"message":{"role":"assistant","content":[{"text":"hi"}]}},"stopReason":"end_turn"}"#;
    assert!(matches!(
        SUPPLIER.decode_response(no_usage),
        Err(SupplierError::InvalidReply(_))
    ));
    let bytes = stream_bytes(&[
        serde_json::json!({"headers": {":event-type": "messageStart", ":message-type": "event"}, "payload": {"role": "assistant"}}),
        serde_json::json!({"headers": {":exception-type": "throttlingException", ":message-type": "exception"}, "payload": {"message": "Too many tokens, please wait before trying again."}}),
    ]);
    let error = decode(&bytes, 1000).unwrap_err();
    assert_eq!(
        error.reported().unwrap().kind.as_deref(),
        Some("throttlingException")
    );
    assert_eq!(error.category(), SupplierErrorCategory::RateLimited);
    assert!(error.retryable());
    let error = SUPPLIER.decode_error(
        403,
        &(),
        br#"{"message":"The security token included in the request is invalid."}"#,
    );
    assert_eq!(error.reported().unwrap().status, Some(403));
    assert_eq!(error.category(), SupplierErrorCategory::Permission);
}

/// Bedrock names an error reply's type in `x-amzn-ErrorType`, and its wait
/// in `Retry-After`; both reach the supplier error.
#[test]
fn an_error_reply_reads_its_type_and_wait_from_the_headers() {
    let error = SUPPLIER.decode_error(
        429,
        &[
            (
                "X-Amzn-ErrorType",
                "ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/",
            ),
            ("Retry-After", "2"),
        ],
        br#"{"message":"Too many requests"}"#,
    );
    let failure = error.reported().unwrap();
    assert_eq!(failure.kind.as_deref(), Some("ThrottlingException"));
    assert_eq!(error.supplier_code(), Some("ThrottlingException"));
    assert_eq!(error.retry_after(), Some(std::time::Duration::from_secs(2)));
    assert_eq!(error.category(), SupplierErrorCategory::RateLimited);
}
