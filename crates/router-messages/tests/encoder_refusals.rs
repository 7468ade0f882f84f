//! A Messages supplier's refusals name the field they refuse, in the terms
//! of the caller's protocol (`ApiError::field`, rendered by `named_in`).

#![expect(
    clippy::expect_used,
    reason = "helpers outside #[test] functions: a panic is the failure report"
)]

use router_canonical::{
    CacheControl, ContentPart, Field, Message, Protocol, Reasoning, Request, ResponseFormat, Role,
    SupplierCodec, SupplierTarget, ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
use router_messages::MessagesSupplier;
use serde_json::json;

fn refusal(request: Request) -> router_canonical::ApiError {
    MessagesSupplier::default()
        .encode_request(
            &request,
            &SupplierTarget::new("up").with_default_max_output_tokens(Some(64)),
        )
        .expect_err("the Messages supplier carried it")
}

fn hello() -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

fn tool(cache_control: Option<CacheControl>) -> Tool {
    Tool {
        name: "get_time".into(),
        description: None,
        parameters: json!({"type": "object"}),
        strict: None,
        cache_control,
    }
}

#[test]
fn content_refusals_name_the_conversation() {
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
}

#[test]
fn a_one_hour_marker_names_where_it_is() {
    let hour = CacheControl {
        kind: "ephemeral".into(),
        ttl: Some("1h".into()),
    };
    let error = refusal(Request {
        tools: vec![tool(Some(hour))],
        inbound: Some(Protocol::Chat),
        ..hello()
    });
    assert_eq!(error.field, Some(Field::Tools));
}

#[test]
fn thinking_and_output_format_refusals_name_their_field() {
    let error = refusal(Request {
        reasoning: Reasoning {
            thinking: Some(ThinkingConfig {
                mode: ThinkingMode::Enabled,
                budget_tokens: None,
                display: None,
            }),
            ..Reasoning::default()
        },
        ..hello()
    });
    assert_eq!(error.field, Some(Field::Thinking));

    let error = refusal(Request {
        response_format: Some(ResponseFormat::JsonObject),
        ..hello()
    });
    assert_eq!(error.field, Some(Field::ResponseFormat));

    let error = refusal(Request {
        tools: vec![tool(None)],
        tool_choice: Some(ToolChoice::Required),
        reasoning: Reasoning {
            thinking: Some(ThinkingConfig {
                mode: ThinkingMode::Enabled,
                budget_tokens: Some(2048),
                display: None,
            }),
            ..Reasoning::default()
        },
        ..hello()
    });
    assert_eq!(error.param.as_deref(), Some("tool_choice"));
}
