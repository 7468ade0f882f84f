//! Any canonical request built from what Responses can carry survives
//! `encode_request` -> `parse_request` unchanged (but for the model name).
//!
//! The generator produces requests in the normal form `parse_request`
//! yields (see `from_wire.rs`):
//! * a message whose content was a string holds one plain text part;
//! * an assistant message is one turn: no two assistant messages are
//!   adjacent; with string content each run of text is one plain text part,
//!   with array content it has at least one run of text (or no parts);
//! * a tool message holds exactly one tool result;
//! * the request came in over Responses, so prompt-cache markers and
//!   reasoning items travel as they are.
//!
//! Refusal parts (which also set `native_only`) are covered by the unit
//! tests in `supplier_replies.rs`.

use proptest::prelude::*;
use router_canonical::request::NativeFields;
use router_canonical::{
    ContentPart, ImageSource, Message, Protocol, Reasoning, Request, Role, Sampling,
};
use router_responses::{ApiError, ResponsesClient, ResponsesSupplier};
use router_wire_testkit::codecs;
use router_wire_testkit::strategy::{
    cache_control, ident, quarter, response_format, string_content, text, text_part, tool,
    tool_choice,
};
use serde_json::{Map, Value, json};

const UPSTREAM: &str = "supplier-model";

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&ResponsesClient, &(), body)
}

fn encode_request(request: &Request, model: &str) -> Result<Vec<u8>, ApiError> {
    codecs::encode(&ResponsesSupplier::default(), request, model, None)
}

fn plain_text(text: String) -> ContentPart {
    ContentPart::Text {
        text,
        cache_control: None,
    }
}

fn image_part() -> impl Strategy<Value = ContentPart> {
    (
        ident(),
        prop::option::of(prop_oneof!["low", "high", "auto"]),
        cache_control(),
    )
        .prop_map(|(path, detail, cache_control)| ContentPart::Image {
            source: ImageSource::Url {
                url: format!("https://img.example.com/{path}.png"),
            },
            detail,
            cache_control,
        })
}

/// Any part a user, system or developer message or a tool result may hold.
fn input_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![3 => text_part(), 1 => image_part()]
}

/// Content as the parser produces it: a string (one plain text part) or an array.
fn content() -> impl Strategy<Value = (Vec<ContentPart>, bool)> {
    prop_oneof![
        string_content(),
        prop::collection::vec(input_part(), 0..4).prop_map(|parts| (parts, false)),
    ]
}

fn plain_message() -> impl Strategy<Value = Message> {
    (
        prop_oneof![Just(Role::System), Just(Role::Developer), Just(Role::User)],
        content(),
    )
        .prop_map(|(role, (content, was_string))| Message {
            role,
            content,
            content_was_string: was_string,
            name: None,
        })
}

/// One element of an assistant turn, before the turn's shape is fixed.
#[derive(Debug, Clone)]
enum TurnPart {
    Text(ContentPart),
    Call(ContentPart),
    Thinking(ContentPart),
}

fn turn_part() -> impl Strategy<Value = TurnPart> {
    prop_oneof![
        3 => text_part().prop_map(TurnPart::Text),
        2 => (ident(), ident(), text()).prop_map(|(id, name, arguments)| {
            TurnPart::Call(ContentPart::ToolCall { id: format!("call_{id}"), name, arguments })
        }),
        1 => (text(), prop::option::of("[A-Za-z0-9+/=]{1,40}"))
            .prop_map(|(text, signature)| TurnPart::Thinking(ContentPart::Thinking { text, signature })),
    ]
}

fn assistant_message() -> impl Strategy<Value = Message> {
    (prop::collection::vec(turn_part(), 0..6), any::<bool>()).prop_map(|(parts, was_string)| {
        let mut content = Vec::new();
        let mut in_text_run = false;
        for part in parts {
            match part {
                TurnPart::Text(ContentPart::Text {
                    text,
                    cache_control,
                }) => {
                    // String content: one plain text per run of text.
                    if was_string {
                        if !in_text_run {
                            content.push(plain_text(text));
                        }
                    } else {
                        content.push(ContentPart::Text {
                            text,
                            cache_control,
                        });
                    }
                    in_text_run = true;
                }
                TurnPart::Text(other) | TurnPart::Call(other) | TurnPart::Thinking(other) => {
                    content.push(other);
                    in_text_run = false;
                }
            }
        }
        // Array content needs a message item to say so.
        let has_text = content
            .iter()
            .any(|p| matches!(p, ContentPart::Text { .. }));
        if !was_string && !has_text && !content.is_empty() {
            content.push(plain_text("and so".to_owned()));
        }
        Message {
            role: Role::Assistant,
            // An empty turn is an empty array (a string would read back as one empty text).
            content_was_string: was_string && !content.is_empty(),
            content,
            name: None,
        }
    })
}

fn tool_message() -> impl Strategy<Value = Message> {
    (
        ident(),
        prop_oneof![
            string_content(),
            prop::collection::vec(input_part(), 0..3).prop_map(|parts| (parts, false)),
        ],
    )
        .prop_map(|(id, (content, was_string))| Message {
            role: Role::Tool,
            content: vec![ContentPart::ToolResult {
                tool_call_id: format!("call_{id}"),
                content,
                is_error: false,
                cache_control: None,
            }],
            content_was_string: was_string,
            name: None,
        })
}

/// A conversation in normal form: no two assistant turns adjacent.
fn messages() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec(
        prop_oneof![3 => plain_message(), 2 => assistant_message(), 1 => tool_message()],
        1..7,
    )
    .prop_map(|messages| {
        let mut out: Vec<Message> = Vec::with_capacity(messages.len());
        for message in messages {
            let follows_assistant = out.last().is_some_and(|m| m.role == Role::Assistant);
            if !(follows_assistant && message.role == Role::Assistant) {
                out.push(message);
            }
        }
        out
    })
}

fn sampling() -> impl Strategy<Value = Sampling> {
    (
        prop::option::of(quarter(0, 8)),
        prop::option::of(quarter(0, 4)),
        prop::option::of(1u32..=u32::MAX),
    )
        .prop_map(|(temperature, top_p, max_output_tokens)| Sampling {
            temperature,
            top_p,
            max_output_tokens,
            ..Sampling::default()
        })
}

fn reasoning() -> impl Strategy<Value = Reasoning> {
    (
        prop::option::of("[a-z]{1,10}"),
        prop::option::of(prop_oneof!["auto", "concise", "detailed"]),
    )
        .prop_map(|(effort, summary)| Reasoning {
            effort,
            thinking: None,
            summary,
        })
}

fn native() -> impl Strategy<Value = Option<NativeFields>> {
    (
        prop::option::of((ident(), text())),
        prop::option::of(prop_oneof!["auto", "disabled"]),
        prop::option::of(prop::collection::vec(
            prop_oneof![
                "reasoning.encrypted_content",
                "message.output_text.logprobs"
            ],
            0..3,
        )),
        prop::option::of(0u8..=20),
        prop::option::of(ident()),
        prop::option::of(prop_oneof!["low", "medium", "high"]),
    )
        .prop_map(
            |(metadata, truncation, include, top_logprobs, cache_key, verbosity)| {
                let mut fields = Map::new();
                if let Some((k, v)) = metadata {
                    fields.insert("metadata".into(), json!({k: v}));
                }
                if let Some(v) = truncation {
                    fields.insert("truncation".into(), Value::from(v));
                }
                if let Some(v) = include {
                    fields.insert("include".into(), Value::from(v));
                }
                if let Some(v) = top_logprobs {
                    fields.insert("top_logprobs".into(), Value::from(v));
                }
                if let Some(v) = cache_key {
                    fields.insert("prompt_cache_key".into(), Value::from(v));
                }
                if let Some(v) = verbosity {
                    fields.insert("verbosity".into(), Value::from(v));
                }
                (!fields.is_empty()).then_some(NativeFields {
                    protocol: Some(Protocol::Responses),
                    fields,
                    betas: Vec::new(),
                })
            },
        )
}

fn request() -> impl Strategy<Value = Request> {
    (
        messages(),
        // Two tools of one name are refused (a namespace's functions are
        // flattened to `namespace__name`, so names must stay distinct).
        prop::collection::vec(tool(), 0..3).prop_filter("distinct tool names", |tools| {
            let names: std::collections::HashSet<&str> =
                tools.iter().map(|t| t.name.as_str()).collect();
            names.len() == tools.len()
        }),
        prop::option::of(tool_choice()),
        prop::option::of(any::<bool>()),
        sampling(),
        reasoning(),
        prop::option::of(response_format()),
        any::<bool>(),
        prop::option::of(text()),
        native(),
    )
        .prop_map(
            |(
                messages,
                tools,
                tool_choice,
                parallel_tool_calls,
                sampling,
                reasoning,
                response_format,
                stream,
                end_user,
                native,
            )| Request {
                model: UPSTREAM.to_owned(),
                messages,
                tools,
                tool_choice,
                parallel_tool_calls,
                sampling,
                reasoning,
                response_format,
                stream,
                end_user,
                native,
                inbound: Some(Protocol::Responses),
                native_only: None,
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn responses_requests_survive_encode_then_parse(req in request()) {
        let body = encode_request(&req, UPSTREAM).unwrap();
        let wire: Value = serde_json::from_slice(&body).unwrap();
        prop_assert_eq!(&wire["store"], &Value::Bool(false));
        prop_assert!(wire.get("reasoning_effort").is_none());
        let parsed = parse_request(&body).map_err(|err| {
            TestCaseError::fail(format!("{err:?}\n{}", String::from_utf8_lossy(&body)))
        })?;
        prop_assert_eq!(parsed, req);
    }

    /// Whatever bytes arrive, parsing answers (a request or a 400), never panics.
    #[test]
    fn parse_never_panics(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_request(&body);
    }

    /// Structurally plausible JSON never panics the parser either.
    #[test]
    fn parse_never_panics_on_json(input in prop::collection::vec(
        prop_oneof![
            Just(json!({"role": "user", "content": "x"})),
            Just(json!({"type": "function_call"})),
            Just(json!({"type": "reasoning", "summary": [{"text": 1}]})),
            Just(json!({"role": "assistant", "content": [{"type": "refusal", "refusal": "r"}]})),
            Just(json!({"id": "x"})),
            Just(json!(null)),
            Just(json!([])),
        ],
        0..4,
    )) {
        let body = json!({"model": "m", "input": input});
        let _ = parse_request(&serde_json::to_vec(&body).unwrap());
    }
}
