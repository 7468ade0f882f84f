//! Any canonical request built from what Messages can carry survives
//! `encode_request` -> `parse_request` unchanged (but for what the router
//! never sends a supplier, see [`normalise`]), and every converted request
//! is either refused as `unsupported_conversion` or encodes to a body the
//! Messages validator accepts.
//!
//! The native generator produces requests in the normal form
//! `parse_request` yields: `inbound: Messages`; a `max_output_tokens`
//! (Messages requires one); a string content is one plain text part; at
//! most one leading system message (the `system` field) and later system
//! turns only after a user or assistant turn; thinking blocks with their
//! signature; tool arguments that are compact JSON objects; no uploads
//! (the server resolves those before encoding); effort and a JSON schema
//! only alongside the verbatim `output_config` they came in, and an end
//! user only alongside its `metadata`. `native_only` is derived by
//! [`expected_native_only`], an oracle written from GP-53, D-26 and CF-05.

use proptest::prelude::*;
use router_canonical::request::NativeFields;
use router_canonical::{
    ContentPart, ErrorCode, ImageSource, Message, Protocol, Reasoning, Request, ResponseFormat,
    Role, Sampling, ThinkingConfig, ThinkingMode, ToolChoice,
};
use router_messages::{ApiError, MessagesClient, MessagesSupplier, SupplierCodec, SupplierTarget};
use router_wire_testkit::codecs::{self, FixedHeaders};
use router_wire_testkit::strategy::{cache_control, ident, quarter, text, text_part, tool};
use serde_json::{Map, Value, json};

const UPSTREAM: &str = "supplier-model";
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A JSON body with the supported `anthropic-version`.
const JSON: FixedHeaders = FixedHeaders(&[
    ("content-type", "application/json"),
    ("anthropic-version", "2023-06-01"),
]);

fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    codecs::parse(&MessagesClient, &JSON, body)
}

fn encode_request(
    req: &Request,
    model: &str,
    default_max_tokens: u32,
) -> Result<Vec<u8>, ApiError> {
    codecs::encode(
        &MessagesSupplier::default(),
        req,
        model,
        Some(default_max_tokens),
    )
}

fn non_empty_text() -> impl Strategy<Value = String> {
    "\\PC{1,24}"
}

fn image_part() -> impl Strategy<Value = ContentPart> {
    (
        prop_oneof![
            (
                prop_oneof!["image/jpeg", "image/png", "image/gif", "image/webp"],
                "[A-Za-z0-9+/]{4,16}"
            )
                .prop_map(|(media_type, data)| ImageSource::Base64 { media_type, data }),
            ident().prop_map(|p| ImageSource::Url {
                url: format!("https://img.example.com/{p}.png")
            }),
        ],
        cache_control(),
    )
        .prop_map(|(source, cache_control)| ContentPart::Image {
            source,
            detail: None,
            cache_control,
        })
}

fn tool_result() -> impl Strategy<Value = ContentPart> {
    (
        ident(),
        prop::collection::vec(prop_oneof![3 => text_part(), 1 => image_part()], 0..3),
        any::<bool>(),
        cache_control(),
    )
        .prop_map(
            |(id, content, is_error, cache_control)| ContentPart::ToolResult {
                tool_call_id: format!("toolu_{id}"),
                content,
                is_error,
                cache_control,
            },
        )
}

fn json_object() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(
        ident(),
        prop_oneof![
            any::<i32>().prop_map(Value::from),
            text().prop_map(Value::from),
            any::<bool>().prop_map(Value::from),
        ],
        0..3,
    )
    .prop_map(|m| Value::Object(m.into_iter().collect()))
}

fn assistant_part() -> impl Strategy<Value = ContentPart> {
    prop_oneof![
        3 => text_part(),
        1 => (text(), "[A-Za-z0-9+/]{8,24}").prop_map(|(text, signature)| ContentPart::Thinking {
            text,
            signature: Some(signature),
        }),
        1 => "[A-Za-z0-9+/]{8,24}".prop_map(|data| ContentPart::RedactedThinking { data }),
        2 => (ident(), ident(), json_object()).prop_map(|(id, name, input)| ContentPart::ToolCall {
            id: format!("toolu_{id}"),
            name,
            arguments: input.to_string(),
        }),
    ]
}

/// Content as the parser produces it: a string (one plain text part) or blocks.
fn content(part: BoxedStrategy<ContentPart>) -> impl Strategy<Value = (Vec<ContentPart>, bool)> {
    prop_oneof![
        text().prop_map(|t| (
            vec![ContentPart::Text {
                text: t,
                cache_control: None
            }],
            true
        )),
        prop::collection::vec(part, 0..4).prop_map(|parts| (parts, false)),
    ]
}

fn message(role: Role) -> BoxedStrategy<Message> {
    let part = match role {
        Role::User => prop_oneof![3 => text_part(), 1 => image_part(), 2 => tool_result()].boxed(),
        Role::Assistant => assistant_part().boxed(),
        _ => text_part().boxed(),
    };
    content(part)
        .prop_map(move |(content, content_was_string)| Message {
            role,
            content,
            content_was_string,
            name: None,
        })
        .boxed()
}

/// The `system` field: a non-empty string, or text blocks.
fn system_field() -> impl Strategy<Value = Message> {
    prop_oneof![
        non_empty_text().prop_map(|t| Message::text(Role::System, t)),
        prop::collection::vec(text_part(), 1..3).prop_map(|content| Message {
            role: Role::System,
            content,
            content_was_string: false,
            name: None,
        }),
    ]
}

fn conversation() -> impl Strategy<Value = Vec<Message>> {
    (
        prop::option::of(system_field()),
        prop_oneof![message(Role::User), message(Role::Assistant)],
        prop::collection::vec(
            prop_oneof![
                4 => message(Role::User),
                4 => message(Role::Assistant),
                1 => message(Role::System),
            ],
            0..5,
        ),
    )
        .prop_map(|(system, first, rest)| {
            system
                .into_iter()
                .chain(std::iter::once(first))
                .chain(rest)
                .collect()
        })
}

/// A tool choice with what `disable_parallel_tool_use` can say beside it.
fn tool_choice() -> impl Strategy<Value = (Option<ToolChoice>, Option<bool>)> {
    prop_oneof![
        Just((None, None)),
        Just((Some(ToolChoice::None), None)),
        (
            prop_oneof![
                Just(ToolChoice::Auto),
                Just(ToolChoice::Required),
                ident().prop_map(|name| ToolChoice::Tool { name }),
            ],
            prop::option::of(any::<bool>())
        )
            .prop_map(|(c, p)| (Some(c), p)),
    ]
}

fn thinking(max_tokens: u32) -> impl Strategy<Value = Option<ThinkingConfig>> {
    let display = || prop::option::of(prop_oneof!["summarized", "omitted"]);
    prop_oneof![
        Just(None),
        Just(Some(ThinkingConfig {
            mode: ThinkingMode::Disabled,
            budget_tokens: None,
            display: None
        })),
        (1024..max_tokens, display()).prop_map(|(budget, display)| Some(ThinkingConfig {
            mode: ThinkingMode::Enabled,
            budget_tokens: Some(budget),
            display,
        })),
        display().prop_map(|display| Some(ThinkingConfig {
            mode: ThinkingMode::Adaptive,
            budget_tokens: None,
            display,
        })),
    ]
}

/// Effort, output schema, context management and end user, with the
/// verbatim native members they travel in.
fn native() -> impl Strategy<
    Value = (
        Option<String>,
        Option<ResponseFormat>,
        Option<String>,
        Option<NativeFields>,
    ),
> {
    (
        prop::option::of(prop_oneof!["low", "medium", "high", "max"]),
        prop::option::of(ident()),
        any::<bool>(),
        prop::option::of(prop::option::of(text())),
    )
        .prop_map(|(effort, schema_field, context, metadata)| {
            let mut fields = Map::new();
            let format = schema_field.map(|field| ResponseFormat::JsonSchema {
                name: "output".to_owned(),
                schema: json!({"type": "object", "properties": {field: {"type": "integer"}}}),
                strict: None,
                description: None,
            });
            let mut output_config = Map::new();
            if let Some(effort) = &effort {
                output_config.insert("effort".into(), Value::from(effort.clone()));
            }
            if let Some(ResponseFormat::JsonSchema { schema, .. }) = &format {
                output_config.insert(
                    "format".into(),
                    json!({"type": "json_schema", "schema": schema}),
                );
            }
            if context {
                fields.insert(
                    "context_management".into(),
                    json!({"edits": [{"type": "clear_tool_uses_20250919"}]}),
                );
            }
            let mut end_user = None;
            if let Some(user) = metadata {
                end_user = user.clone();
                fields.insert(
                    "metadata".into(),
                    match user {
                        Some(user) => json!({"user_id": user}),
                        None => json!({}),
                    },
                );
            }
            if !output_config.is_empty() {
                fields.insert("output_config".into(), Value::Object(output_config));
            }
            let native = (!fields.is_empty()).then_some(NativeFields {
                protocol: Some(Protocol::Messages),
                fields,
                betas: Vec::new(),
            });
            (effort, format, end_user, native)
        })
}

fn sampling(max_tokens: u32) -> impl Strategy<Value = Sampling> {
    (
        prop::option::of(quarter(0, 4)),
        prop::option::of(quarter(0, 4)),
        prop::collection::vec(non_empty_text(), 0..=4),
    )
        .prop_map(move |(temperature, top_p, stop)| Sampling {
            temperature,
            top_p,
            stop,
            max_output_tokens: Some(max_tokens),
            seed: None,
            frequency_penalty: None,
            presence_penalty: None,
            choices: None,
            best_of: None,
        })
}

fn native_request() -> impl Strategy<Value = Request> {
    (1025u32..200_000).prop_flat_map(|max_tokens| {
        (
            conversation(),
            prop::collection::vec(tool(), 0..3),
            tool_choice(),
            sampling(max_tokens),
            thinking(max_tokens),
            native(),
            any::<bool>(),
        )
            .prop_map(
                |(
                    messages,
                    tools,
                    (mut tool_choice, parallel_tool_calls),
                    sampling,
                    thinking,
                    (effort, response_format, end_user, native),
                    stream,
                )| {
                    // D-21: thinking allows only auto or none tool choice.
                    if thinking
                        .as_ref()
                        .is_some_and(|t| t.mode != ThinkingMode::Disabled)
                        && matches!(
                            tool_choice,
                            Some(ToolChoice::Required | ToolChoice::Tool { .. })
                        )
                    {
                        tool_choice = Some(ToolChoice::Auto);
                    }
                    let mut request = Request {
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
                        inbound: Some(Protocol::Messages),
                        native_only: None,
                    };
                    request.native_only = expected_native_only(&request);
                    request
                },
            )
    })
}

/// The oracle for `native_only`: the first native-only feature in the order
/// the parser reads the body (messages, then thinking, context_management,
/// output_config).
fn expected_native_only(req: &Request) -> Option<String> {
    let offset = usize::from(req.messages.first().is_some_and(|m| m.role == Role::System));
    for (i, message) in req.messages.iter().enumerate().skip(offset) {
        let wire = i - offset;
        if message.role == Role::System {
            return Some(format!("messages[{wire}].role"));
        }
        if message.content_was_string {
            continue;
        }
        for (j, part) in message.content.iter().enumerate() {
            if let ContentPart::ToolResult { content, .. } = part
                && let Some(k) = content
                    .iter()
                    .position(|p| matches!(p, ContentPart::Image { .. }))
            {
                return Some(format!("messages[{wire}].content[{j}].content[{k}]"));
            }
        }
    }
    if let Some(t) = &req.reasoning.thinking {
        if t.mode == ThinkingMode::Adaptive {
            return Some("thinking.type".to_owned());
        }
        if t.display.is_some() {
            return Some("thinking.display".to_owned());
        }
    }
    let fields = req.native.as_ref().map(|n| &n.fields);
    for key in ["context_management", "output_config"] {
        if fields.is_some_and(|f| f.contains_key(key)) {
            return Some(key.to_owned());
        }
    }
    None
}

/// What Messages cannot carry back, made equal on both sides:
/// * the model (replaced by the route's `upstream_model`);
/// * parallel tool use without a tool choice: `disable_parallel_tool_use`
///   lives inside `tool_choice`, so `false` travels as `{type: auto}` and
///   `true` (the default) is not sent; beside `none` it cannot be said.
fn normalise(mut req: Request) -> Request {
    req.model = UPSTREAM.to_owned();
    match (&req.tool_choice, req.parallel_tool_calls) {
        (None, Some(false)) if !req.tools.is_empty() => req.tool_choice = Some(ToolChoice::Auto),
        (None, _) | (Some(ToolChoice::None), _) => req.parallel_tool_calls = None,
        _ => {}
    }
    req
}

/// A request as another protocol (Chat) hands it over: system and developer
/// messages anywhere, tool messages, data URLs, arbitrary tool arguments,
/// one-hour markers, a temperature up to 2.
/// A converted request, and whether its target adds an automatic
/// prompt-cache marker.
fn converted_request() -> impl Strategy<Value = (Request, bool)> {
    let part = prop_oneof![
        12 => text_part(),
        3 => image_part(),
        3 => ident().prop_map(|p| ContentPart::Image {
            source: ImageSource::Url { url: format!("data:image/png;base64,{p}") },
            detail: Some("low".to_owned()),
            cache_control: None,
        }),
        1 => ident().prop_map(|file_id| ContentPart::Image {
            source: ImageSource::Upload { file_id, param: String::new() },
            detail: None,
            cache_control: None,
        }),
    ];
    let plain = (
        prop_oneof![Just(Role::System), Just(Role::Developer), Just(Role::User)],
        content(part.boxed()),
    )
        .prop_map(|(role, (content, content_was_string))| Message {
            role,
            content,
            content_was_string,
            name: None,
        });
    let assistant = (
        prop::option::of(text()),
        prop::collection::vec(
            (ident(), ident(), prop_oneof![8 => json_object().prop_map(|v| v.to_string()), 1 => Just(String::new()), 1 => text()]),
            0..3,
        ),
    )
        .prop_map(|(text, calls)| Message {
            role: Role::Assistant,
            content: text
                .map(|text| ContentPart::Text {
                    text,
                    cache_control: None,
                })
                .into_iter()
                .chain(calls.into_iter().map(|(id, name, arguments)| ContentPart::ToolCall {
                    id: format!("call_{id}"),
                    name,
                    arguments,
                }))
                .collect(),
            content_was_string: true,
            name: None,
        });
    let tool_message =
        (ident(), prop::collection::vec(text_part(), 0..2)).prop_map(|(id, content)| Message {
            role: Role::Tool,
            content: vec![ContentPart::ToolResult {
                tool_call_id: format!("call_{id}"),
                content,
                is_error: false,
                cache_control: None,
            }],
            content_was_string: true,
            name: None,
        });
    (
        prop::collection::vec(
            prop_oneof![3 => plain, 2 => assistant, 1 => tool_message],
            1..7,
        ),
        prop::collection::vec(tool(), 0..3),
        tool_choice(),
        prop::option::of(prop_oneof![8 => quarter(0, 4), 1 => quarter(5, 8)]),
        prop_oneof![
            9 => prop::collection::vec(non_empty_text(), 0..=4),
            1 => prop::collection::vec(text(), 0..6),
        ],
        prop::option::of(prop_oneof!["low", "high"]),
        prop::option::of(prop_oneof![
            3 => Just(ResponseFormat::Text),
            1 => Just(ResponseFormat::JsonObject),
            3 => ident().prop_map(|name| ResponseFormat::JsonSchema {
                name,
                schema: json!({"type": "object"}),
                strict: Some(true),
                description: None,
            }),
        ]),
        prop_oneof![3 => Just(None), 1 => (0u32..3000).prop_map(Some)],
        any::<bool>(),
    )
        .prop_map(
            |(
                messages,
                tools,
                (tool_choice, parallel_tool_calls),
                temperature,
                stop,
                effort,
                response_format,
                budget,
                prompt_cache_marker,
            )| {
                (
                    Request {
                        model: "acme/model".to_owned(),
                        messages,
                        tools,
                        tool_choice,
                        parallel_tool_calls,
                        sampling: Sampling {
                            temperature,
                            stop,
                            seed: Some(7),
                            ..Sampling::default()
                        },
                        reasoning: Reasoning {
                            effort,
                            thinking: budget.map(|b| ThinkingConfig {
                                mode: ThinkingMode::Enabled,
                                budget_tokens: Some(1024 + b),
                                display: None,
                            }),
                            summary: None,
                        },
                        response_format,
                        stream: false,
                        end_user: None,
                        native: None,
                        inbound: Some(Protocol::Chat),
                        native_only: None,
                    },
                    prompt_cache_marker,
                )
            },
        )
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn messages_requests_survive_encode_then_parse(req in native_request()) {
        let body = encode_request(&req, UPSTREAM, DEFAULT_MAX_TOKENS).map_err(|err| {
            TestCaseError::fail(format!("encode failed: {err:?}"))
        })?;
        let parsed = parse_request(&body).map_err(|err| {
            TestCaseError::fail(format!("{err:?}\n{}", String::from_utf8_lossy(&body)))
        })?;
        prop_assert_eq!(normalise(parsed), normalise(req));
    }

    /// A converted request is refused as `unsupported_conversion`, or its
    /// body passes the Messages validator: the encoder never produces what
    /// a Messages supplier would reject for shape.
    #[test]
    fn converted_requests_encode_to_valid_messages_bodies((req, marker) in converted_request()) {
        let target = SupplierTarget::new(UPSTREAM)
            .with_default_max_output_tokens(Some(DEFAULT_MAX_TOKENS))
            .with_prompt_cache_marker(marker);
        match MessagesSupplier::default().encode_request(&req, &target) {
            Err(err) => prop_assert_eq!(err.code, ErrorCode::UnsupportedConversion, "{:?}", err),
            Ok(body) => {
                let parsed = parse_request(&body).map_err(|err| {
                    TestCaseError::fail(format!("{err:?}\n{}", String::from_utf8_lossy(&body)))
                })?;
                prop_assert_eq!(parsed.reasoning.effort, req.reasoning.effort);
                prop_assert!(parsed.sampling.temperature.is_none_or(|t| t <= 1.0));
                prop_assert_eq!(parsed.messages.iter().filter(|m| m.role == Role::System).count(),
                    usize::from(req.messages.iter().any(|m| matches!(m.role, Role::System | Role::Developer)
                        && m.content.iter().any(|p| !matches!(p, ContentPart::Text { text, cache_control: None } if text.is_empty())))),
                    "converted system messages become the one system field");
            }
        }
    }

    /// Whatever bytes arrive, parsing answers (a request or a 400), never panics.
    #[test]
    fn parse_never_panics(body in prop::collection::vec(any::<u8>(), 0..256)) {
        let _ = parse_request(&body);
        let _ = MessagesClient.parse_count_tokens_body(&body);
        let _ = MessagesSupplier::new().with_require_usage(true).decode_response(&body);
        let _ = MessagesSupplier::default().decode_response(&body);
        let _ = MessagesSupplier::default().decode_error(500, &(), &body);
    }
}
