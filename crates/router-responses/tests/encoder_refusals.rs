//! A Responses supplier's refusals name the field they refuse, in the terms
//! of the caller's protocol (`ApiError::field`, rendered by `named_in`).

#![expect(
    clippy::expect_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::{
    ContentPart, Field, Message, Protocol, Request, ResponseFormat, Role, Sampling, SupplierCodec,
    SupplierTarget,
};
use router_responses::ResponsesSupplier;
use router_responses::client::field_name;
use serde_json::{Value, json};

fn refusal(request: Request) -> router_canonical::ApiError {
    ResponsesSupplier::default()
        .encode_request(&request, &SupplierTarget::new("up"))
        .expect_err("the Responses supplier carried it")
}

fn hello() -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

#[test]
fn stop_sequences_are_named_by_the_callers_codec() {
    let error = refusal(Request {
        sampling: Sampling {
            stop: vec!["END".into()],
            ..Sampling::default()
        },
        ..hello()
    });
    // Named by the caller's codec, not fixed here (a Messages caller's
    // field is `stop_sequences`).
    assert_eq!(error.param, None);
    assert_eq!(error.field, Some(Field::StopSequences));
    assert_eq!(error.named_in(field_name).param.as_deref(), Some("stop"));
}

#[test]
fn a_part_of_another_protocol_names_the_conversation() {
    let error = refusal(Request {
        messages: vec![Message {
            content: vec![ContentPart::Opaque {
                protocol: Protocol::Chat,
                value: json!({"type": "input_audio"}),
            }],
            ..Message::text(Role::User, "")
        }],
        ..hello()
    });
    assert_eq!(error.code.as_str(), "unsupported_conversion");
    assert_eq!(error.field, Some(Field::Messages));
    assert_eq!(error.named_in(field_name).param.as_deref(), Some("input"));
}

#[test]
fn a_json_schema_without_a_schema_names_the_response_format() {
    let error = refusal(Request {
        response_format: Some(ResponseFormat::JsonSchema {
            name: "out".into(),
            schema: Value::Null,
            strict: None,
            description: None,
        }),
        ..hello()
    });
    assert_eq!(error.field, Some(Field::ResponseFormat));
    assert_eq!(
        error.named_in(field_name).param.as_deref(),
        Some("text.format")
    );
}
