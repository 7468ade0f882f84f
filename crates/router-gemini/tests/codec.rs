//! The Gemini dialect's refusals (by field), paths, headers, error replies
//! and the usage it will not bill.

#![expect(clippy::unwrap_used, reason = "test helpers")]

use router_canonical::sse::Frame;
use router_canonical::{
    ContentPart, ErrorCode, Field, ImageSource, Message, Request, Role, SupplierCodec,
    SupplierError, SupplierTarget, Tool,
};
use router_gemini::GeminiSupplier;

const SUPPLIER: GeminiSupplier = GeminiSupplier {
    require_usage: true,
};
const TARGET: SupplierTarget<'static> = SupplierTarget::new("gemini-2.5-pro");

fn hello() -> Request {
    Request {
        model: "m".into(),
        messages: vec![Message::text(Role::User, "hi")],
        ..Request::default()
    }
}

fn refusal(request: &Request) -> (ErrorCode, Option<String>) {
    let error = SUPPLIER.encode_request(request, &TARGET).unwrap_err();
    (error.code, error.param)
}

#[test]
fn the_model_and_the_stream_choice_are_in_the_path() {
    assert_eq!(
        SUPPLIER.request_path(&TARGET, false),
        "/models/gemini-2.5-pro:generateContent"
    );
    assert_eq!(
        SUPPLIER.request_path(&TARGET, true),
        "/models/gemini-2.5-pro:streamGenerateContent?alt=sse"
    );
    assert_eq!(
        SUPPLIER.headers(&hello(), Some("AIza-key")),
        vec![("x-goog-api-key", "AIza-key".to_owned())]
    );
    assert!(SUPPLIER.headers(&hello(), None).is_empty());
}

#[test]
fn what_gemini_cannot_carry_is_refused_by_field() {
    let mut url_image = hello();
    url_image.messages[0].content.push(ContentPart::Image {
        source: ImageSource::Url {
            url: "https://example.com/cat.png".into(),
        },
        detail: None,
        cache_control: None,
    });
    assert_eq!(
        refusal(&url_image),
        (
            ErrorCode::UnsupportedConversion,
            Some("messages[0].content[1]".into())
        )
    );

    // Every caller's codec names its own conversation field (`messages`,
    // `input`, `prompt`); the canonical path stays in the message.
    let error = SUPPLIER.encode_request(&url_image, &TARGET).unwrap_err();
    assert_eq!(error.field, Some(Field::Messages));
    assert!(
        error.message.starts_with("messages[0].content[1]: "),
        "{error:?}"
    );
    let shown = error.named_in(|field| match field {
        Field::Messages => "input",
        _ => "other",
    });
    assert_eq!(shown.param.as_deref(), Some("input"));

    let mut late_system = hello();
    late_system
        .messages
        .push(Message::text(Role::System, "be terse"));
    assert_eq!(refusal(&late_system).1.as_deref(), Some("messages[1].role"));

    let mut single_call = hello();
    single_call.tools = vec![Tool {
        name: "f".into(),
        description: None,
        parameters: serde_json::json!({"type": "object"}),
        strict: None,
        cache_control: None,
    }];
    single_call.parallel_tool_calls = Some(false);
    assert_eq!(
        refusal(&single_call).1.as_deref(),
        Some("parallel_tool_calls")
    );

    let mut orphan = hello();
    orphan.messages.push(Message {
        role: Role::Tool,
        content: vec![ContentPart::ToolResult {
            tool_call_id: "call_unknown".into(),
            content: vec![],
            is_error: false,
            cache_control: None,
        }],
        content_was_string: false,
        name: None,
    });
    assert_eq!(
        refusal(&orphan).1.as_deref(),
        Some("messages[1].content[0]")
    );

    let mut stops = hello();
    stops.sampling.stop = (0..6).map(|i| i.to_string()).collect();
    let error = SUPPLIER.encode_request(&stops, &TARGET).unwrap_err();
    assert_eq!(error.field, Some(router_canonical::Field::StopSequences));

    let mut effort = hello();
    effort.reasoning.effort = Some("extreme".into());
    let error = SUPPLIER.encode_request(&effort, &TARGET).unwrap_err();
    assert_eq!(error.field, Some(router_canonical::Field::ReasoningEffort));
}

#[test]
fn a_reply_without_usage_or_with_implausible_usage_is_invalid() {
    let no_usage = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}]}"#;
    assert!(matches!(
        SUPPLIER.decode_response(no_usage),
        Err(SupplierError::InvalidReply(_))
    ));
    let lenient = GeminiSupplier {
        require_usage: false,
    };
    assert_eq!(lenient.decode_response(no_usage).unwrap().text(), "hi");
    let cached_above_prompt = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":3,"candidatesTokenCount":1,"cachedContentTokenCount":9}}"#;
    assert!(matches!(
        SUPPLIER.decode_response(cached_above_prompt),
        Err(SupplierError::InvalidReply(_))
    ));
}

#[test]
fn a_blocked_prompt_and_an_error_reply_are_reported() {
    let blocked = br#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":5,"totalTokenCount":5}}"#;
    let error = SUPPLIER.decode_response(blocked).unwrap_err();
    assert_eq!(error.reported().unwrap().code.as_deref(), Some("SAFETY"));
    let error = SUPPLIER.decode_error(
        429,
        &(),
        br#"{"error":{"code":429,"message":"Resource has been exhausted (e.g. check quota).","status":"RESOURCE_EXHAUSTED"}}"#,
    );
    let failure = error.reported().unwrap();
    assert_eq!(failure.status, Some(429));
    assert_eq!(failure.kind.as_deref(), Some("RESOURCE_EXHAUSTED"));
    let error = SUPPLIER.decode_error(500, &(), b"<html>oops</html>");
    assert_eq!(error.reported().unwrap().status, Some(500));
}

#[test]
fn a_stream_that_ends_before_its_finish_is_not_finished() {
    let mut decoder = SUPPLIER.stream_decoder();
    let events = decoder
        .decode(&Frame {
            event: None,
            data: r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"Hel"}]}}],"usageMetadata":{"promptTokenCount":2}}"#.into(),
        })
        .unwrap();
    assert_eq!(events.len(), 3, "start, block start, delta: {events:?}");
    assert!(!decoder.is_finished());
    let error = decoder
        .decode(&Frame {
            event: None,
            data: r#"{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}"#.into(),
        })
        .unwrap_err();
    assert_eq!(
        error.reported().unwrap().kind.as_deref(),
        Some("UNAVAILABLE")
    );
}
