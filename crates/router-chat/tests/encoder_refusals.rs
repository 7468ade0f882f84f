//! A Chat supplier's refusals name the field they refuse, in the terms of
//! the caller's protocol (`ApiError::field`, rendered by `named_in`).

#![expect(
    clippy::expect_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::SupplierTarget;
use router_canonical::{ContentPart, Field, Message, Protocol, Request, Role, SupplierCodec};
use router_chat::ChatSupplier;
use router_chat::client::field_name;
use serde_json::json;

fn refusal(request: &Request) -> router_canonical::ApiError {
    ChatSupplier::default()
        .encode_request(request, &SupplierTarget::new("up"))
        .expect_err("the Chat supplier carried it")
}

#[test]
fn a_part_chat_cannot_carry_names_the_conversation() {
    let request = Request {
        model: "m".into(),
        messages: vec![Message {
            content: vec![ContentPart::Opaque {
                protocol: Protocol::Messages,
                value: json!({"type": "document", "source": {}}),
            }],
            ..Message::text(Role::User, "")
        }],
        ..Request::default()
    };
    let error = refusal(&request);
    assert_eq!(error.code.as_str(), "unsupported_conversion");
    assert_eq!(error.field, Some(Field::Messages));
    // A Chat caller reads it as `messages`.
    assert_eq!(
        error.named_in(field_name).param.as_deref(),
        Some("messages")
    );
}

#[test]
fn a_tool_message_without_a_result_names_the_conversation() {
    let request = Request {
        model: "m".into(),
        messages: vec![
            Message::text(Role::User, "hi"),
            Message::text(Role::Tool, "no result part"),
        ],
        ..Request::default()
    };
    assert_eq!(refusal(&request).field, Some(Field::Messages));
}
