//! Any canonical request built from what Chat can carry survives
//! `encode_request` -> `parse_request` unchanged (but for the model name).
//!
//! The generator produces requests in the normal form `parse_request`
//! yields: a message whose content was a string holds one plain text part
//! (or none, for `null`), tool calls follow an assistant's text, and a tool
//! message holds exactly one tool result.

use proptest::prelude::*;
use router_canonical::request::NativeFields;
use router_canonical::{
    ContentPart, ImageSource, Message, Protocol, Reasoning, Request, Role, Sampling,
    ThinkingConfig, ThinkingMode,
};
use router_chat::{ApiError, ChatClient, ChatSupplier};
use router_wire_testkit::codecs;
use router_wire_testkit::strategy::{
    cache_control, ident, quarter, response_format, string_content, text, text_part, tool,
    tool_choice,
};
use serde_json::{Map, Value, json};

const UPSTREAM: &str = "supplier-model";

fn encode_request(req: &Request, model: &str) -> Result<Vec<u8>, ApiError> {
    codecs::encode(&ChatSupplier::default(), req, model, None)
}

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&ChatClient::default(), &(), body)
}

/// Any part a user turn may hold in array form.
fn user_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        4 => text_part(),
        1 => (ident(), prop::option::of(prop_oneof!["low", "high", "auto"]), cache_control())
            .prop_map(|(path, detail, cache_control)| ContentPart::Image {
                source: ImageSource::Url { url: format!("https://img.example.com/{path}.png") },
                detail,
                cache_control,
            }),
    ]
}

/// Content as the parser produces it: a string (one plain text part) or an array.
fn content(part: BoxedStrategy<ContentPart>) -> impl Strategy<Value = (Vec<ContentPart>, bool)> {
    prop_oneof![
        string_content(),
        prop::collection::vec(part, 0..4).prop_map(|parts| (parts, false)),
    ]
}

fn tool_call() -> impl Strategy<Value = ContentPart> {
    (ident(), ident(), text()).prop_map(|(id, name, arguments)| ContentPart::ToolCall {
        id: format!("call_{id}"),
        name,
        arguments,
    })
}

fn name() -> impl Strategy<Value = Option<String>> {
    prop::option::of(ident())
}

fn message() -> impl Strategy<Value = Message> {
    let plain = (
        prop_oneof![Just(Role::System), Just(Role::Developer), Just(Role::User)],
        content(user_part().boxed()),
        name(),
    )
        .prop_map(|(role, (content, was_string), name)| Message {
            role,
            content,
            content_was_string: was_string,
            name,
        });
    let assistant = (
        prop_oneof![
            // string content, or null (no text)
            prop::option::of(text()).prop_map(|t| (
                t.map(|text| ContentPart::Text {
                    text,
                    cache_control: None
                })
                .into_iter()
                .collect(),
                true
            )),
            // array content: at least one part (an empty array beside tool
            // calls is sent as no content, and reads back as null)
            prop::collection::vec(text_part(), 1..3).prop_map(|parts| (parts, false)),
        ],
        prop::collection::vec(tool_call(), 0..3),
        name(),
    )
        .prop_map(|((mut content, was_string), calls, name)| {
            content.extend(calls);
            Message {
                role: Role::Assistant,
                content,
                content_was_string: was_string,
                name,
            }
        });
    let tool = (
        ident(),
        prop_oneof![
            string_content(),
            Just((Vec::new(), true)),
            prop::collection::vec(text_part(), 0..3).prop_map(|parts| (parts, false)),
        ],
        name(),
    )
        .prop_map(|(id, (content, was_string), name)| Message {
            role: Role::Tool,
            content: vec![ContentPart::ToolResult {
                tool_call_id: format!("call_{id}"),
                content,
                is_error: false,
                cache_control: None,
            }],
            content_was_string: was_string,
            name,
        });
    prop_oneof![3 => plain, 2 => assistant, 1 => tool]
}

fn thinking() -> impl Strategy<Value = ThinkingConfig> {
    (
        prop_oneof![
            Just(ThinkingMode::Enabled),
            Just(ThinkingMode::Disabled),
            Just(ThinkingMode::Adaptive)
        ],
        prop::option::of(1024u32..100_000),
        prop::option::of(Just("summarized".to_owned())),
    )
        .prop_map(|(mode, budget_tokens, display)| ThinkingConfig {
            mode,
            budget_tokens,
            display,
        })
}

fn sampling() -> impl Strategy<Value = Sampling> {
    (
        prop::option::of(quarter(0, 8)),
        prop::option::of(quarter(0, 4)),
        prop::collection::vec(text(), 0..4),
        prop::option::of(1u32..=u32::MAX),
        prop::option::of(any::<i64>()),
        prop::option::of(quarter(-8, 8)),
        prop::option::of(quarter(-8, 8)),
    )
        .prop_map(
            |(
                temperature,
                top_p,
                stop,
                max_output_tokens,
                seed,
                frequency_penalty,
                presence_penalty,
            )| {
                Sampling {
                    temperature,
                    top_p,
                    stop,
                    max_output_tokens,
                    seed,
                    frequency_penalty,
                    presence_penalty,
                    choices: None,
                    best_of: None,
                }
            },
        )
}

fn native() -> impl Strategy<Value = Option<NativeFields>> {
    (
        prop::option::of(prop_oneof!["low", "medium", "high"]),
        prop::option::of(any::<bool>()),
        prop::option::of(0u8..=20),
        prop::option::of((1u32..100_000, -100i32..=100)),
    )
        .prop_map(|(verbosity, logprobs, top_logprobs, bias)| {
            let mut fields = Map::new();
            if let Some(v) = verbosity {
                fields.insert("verbosity".into(), Value::from(v));
            }
            if let Some(v) = logprobs {
                fields.insert("logprobs".into(), Value::from(v));
            }
            if let Some(v) = top_logprobs {
                fields.insert("top_logprobs".into(), Value::from(v));
            }
            if let Some((token, bias)) = bias {
                fields.insert("logit_bias".into(), json!({token.to_string(): bias}));
            }
            (!fields.is_empty()).then_some(NativeFields {
                betas: Vec::new(),
                protocol: Some(Protocol::Chat),
                fields,
            })
        })
}

fn request() -> impl Strategy<Value = Request> {
    (
        prop::collection::vec(message(), 1..6),
        prop::collection::vec(tool(), 0..3),
        prop::option::of(tool_choice()),
        prop::option::of(any::<bool>()),
        sampling(),
        (
            prop::option::of("[a-z]{1,10}"),
            prop::option::of(thinking()),
        ),
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
                (effort, thinking),
                response_format,
                stream,
                end_user,
                native,
            )| {
                // The parser pins a request asking for log probabilities to Chat.
                let fields = native.as_ref().map(|n| &n.fields);
                let native_only = match fields {
                    Some(f) if f.get("logprobs") == Some(&serde_json::Value::Bool(true)) => {
                        Some("logprobs".to_owned())
                    }
                    Some(f)
                        if f.get("top_logprobs")
                            .and_then(|v| v.as_u64())
                            .is_some_and(|n| n > 0) =>
                    {
                        Some("top_logprobs".to_owned())
                    }
                    _ => None,
                };
                Request {
                    model: UPSTREAM.to_owned(),
                    messages,
                    tools,
                    tool_choice,
                    parallel_tool_calls,
                    sampling,
                    reasoning: Reasoning {
                        effort,
                        thinking,
                        summary: None,
                    },
                    response_format,
                    stream,
                    end_user,
                    native,
                    inbound: Some(Protocol::Chat),
                    native_only,
                }
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn chat_requests_survive_encode_then_parse(req in request()) {
        let body = encode_request(&req, UPSTREAM).unwrap();
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
}
