//! Canonical -> wire: the request body for a Responses supplier.
//!
//! * `store: false`, always; `stream: true` only when streaming.
//! * A first [`Role::System`] message of one plain string becomes
//!   `instructions` (the parser's mapping, so it round-trips); every other
//!   message becomes input items in part order. Runs of text (and image) parts
//!   are one message item -- a string when the message came as one; an
//!   assistant's text is `output_text`, everyone else's `input_text`. Tool
//!   calls are `function_call` items, tool results `function_call_output`
//!   items (a Messages user turn's tool results come out in place).
//! * Thinking parts are replayed as `reasoning` items (the signature as
//!   `encrypted_content`) only when their signature is a Responses
//!   supplier's: the request came in over Responses, or the target's
//!   [`SupplierTarget::thinking_signed_by`] says so. Thinking from other
//!   protocols (an Anthropic signature, or none) cannot be replayed to a
//!   Responses model and is left out, as the Chat encoder leaves all
//!   reasoning history out: the model regenerates its reasoning, and the
//!   answer does not depend on the earlier turns' hidden reasoning. Redacted
//!   thinking is Anthropic-only and left out likewise.
//! * Prompt-cache markers travel only on a native pass-through (inbound
//!   Responses); on a conversion they are dropped as annotations.
//! * A tool without `strict` keeps the non-strict meaning of the protocol it
//!   came from: the Responses API reads an absent `strict` as `true`, so a
//!   converted tool is sent `strict: false` explicitly.
//! * Explicit reasoning effort goes in `reasoning.effort`, never synthesized; `reasoning.summary` beside it.
//! * What Responses cannot say is an `unsupported_conversion`, never a silent
//!   drop of behaviour: stop sequences, non-zero frequency or presence
//!   penalties, enabled or adaptive `thinking`, an unresolved upload, another
//!   protocol's opaque part, an image in an assistant message, a
//!   `json_schema` format without a schema. Two things are dropped by
//!   design: `seed` (best-effort determinism only, which Responses does not
//!   offer) and a tool result's `is_error` flag and participant `name`s
//!   (no Responses field; the Chat encoder drops them too).

use crate::convert::{
    NATIVE_ALLOWLIST, TOOL_NAMESPACES, ToolNamespaces, VERBOSITY, reasoning_item,
};
use crate::wire::request::{
    self as wire, FunctionCallItem, FunctionCallOutputItem, InputImagePart, InputItem,
    JsonSchemaFormat, MessageContent, MessageItem, MessageRole, NamedToolChoice, ReasoningParam,
    ResponsesRequest, TextFormat, TextParam, TextPart, ToolChoiceMode, ToolDefinition,
};
use router_canonical::{
    ApiError, CacheControl, ContentPart, ErrorCode, Field, ImageSource, Message, Protocol, Request,
    ResponseFormat, Role, SupplierTarget, ThinkingMode, Tool, ToolChoice,
};
use serde_json::{Map, Value};

pub(crate) fn request(req: &Request, target: &SupplierTarget<'_>) -> Result<Vec<u8>, ApiError> {
    let wire = responses_request(req, target)?;
    serde_json::to_vec(&wire).map_err(|err| {
        ApiError::new(
            ErrorCode::InternalError,
            format!("could not serialize the Responses request: {err}"),
        )
    })
}

pub(crate) fn responses_request(
    req: &Request,
    target: &SupplierTarget<'_>,
) -> Result<ResponsesRequest, ApiError> {
    let upstream_model = target.model;
    check_convertible(req)?;
    let native = req.inbound == Some(Protocol::Responses);
    let replay_thinking = target.thinking_signer(req) == Some(Protocol::Responses);
    let mut messages = req.messages.as_slice();
    let mut instructions = None;
    // `input` may not be empty, so a lone system message stays an item.
    if let Some((first, rest)) = messages.split_first()
        && !rest.is_empty()
        && let Some(text) = instructions_text(first)
    {
        instructions = Some(text.to_owned());
        messages = rest;
    }
    let native_fields = native_fields(req);
    // A client's namespace tools go to a Responses route grouped as sent,
    // and its calls of them by their own names (issue 29).
    let groups = native_fields.get(TOOL_NAMESPACES).filter(|_| native);
    let namespaces = groups.map(ToolNamespaces::from_native).unwrap_or_default();
    let mut items = Vec::new();
    for message in messages {
        push_items(message, native, replay_thinking, &mut items)?;
    }
    for item in &mut items {
        if let InputItem::FunctionCall(call) = item
            && let Some((namespace, name)) = namespaces.resolve(&call.name)
        {
            call.namespace = Some(namespace.to_owned());
            call.name = name.to_owned();
        }
    }
    let sampling = &req.sampling;
    let reasoning = &req.reasoning;
    let verbosity = native_fields
        .get(VERBOSITY)
        .and_then(Value::as_str)
        .map(str::to_owned);
    let format = req.response_format.as_ref().map(text_format).transpose()?;
    Ok(ResponsesRequest {
        model: Some(upstream_model.to_owned()),
        input: Some(wire::Input::Seq(items)),
        instructions,
        // CF-07: the gateway is stateless towards suppliers too.
        store: Some(false),
        max_output_tokens: sampling.max_output_tokens,
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        tools: (!req.tools.is_empty()).then(|| tools(req, native, groups, &namespaces)),
        tool_choice: req.tool_choice.as_ref().map(tool_choice),
        parallel_tool_calls: req.parallel_tool_calls,
        // C-08, GP-74: explicit effort only, verbatim, in the nested object.
        reasoning: (reasoning.effort.is_some() || reasoning.summary.is_some()).then(|| {
            ReasoningParam {
                effort: reasoning.effort.clone(),
                summary: reasoning.summary.clone(),
                generate_summary: None,
            }
        }),
        reasoning_effort: None,
        text: (format.is_some() || verbosity.is_some()).then_some(TextParam { format, verbosity }),
        stream: req.stream.then_some(true),
        user: req.end_user.clone(),
        safety_identifier: None,
        previous_response_id: None,
        conversation: None,
        background: None,
        prompt: None,
        extra: {
            let mut extra: Map<String, Value> = native_fields
                .into_iter()
                .filter(|(key, _)| NATIVE_ALLOWLIST.contains(&key.as_str()))
                .collect();
            // A Messages client sends thinking back with its signature; a
            // stateless Responses supplier can only take reasoning back as
            // `encrypted_content`, which it sends only when asked.
            if req.inbound == Some(Protocol::Messages) && reasoning.effort.is_some() {
                extra.insert(
                    "include".to_owned(),
                    Value::Array(vec![Value::from(ENCRYPTED_REASONING)]),
                );
            }
            extra
        },
    })
}

/// The `include` value that asks for reasoning state to replay.
const ENCRYPTED_REASONING: &str = "reasoning.encrypted_content";

/// A message or content part a Responses supplier cannot carry, named as
/// the caller's conversation field (`messages`, `input`, `prompt`).
fn unsupported_content(message: impl Into<String>) -> ApiError {
    ApiError::unsupported_conversion(message).with_field(Field::Messages)
}

/// What a Responses supplier cannot be asked, refused rather than dropped.
fn check_convertible(req: &Request) -> Result<(), ApiError> {
    let sampling = &req.sampling;
    if !sampling.stop.is_empty() {
        return Err(ApiError::unsupported_conversion(
            "stop sequences cannot be sent to a Responses supplier: the protocol has none",
        )
        .with_field(Field::StopSequences));
    }
    for (param, value) in [
        ("frequency_penalty", sampling.frequency_penalty),
        ("presence_penalty", sampling.presence_penalty),
    ] {
        if value.is_some_and(|v| v != 0.0) {
            return Err(ApiError::unsupported_conversion(format!(
                "`{param}` cannot be sent to a Responses supplier: the protocol has no such setting"
            ))
            .with_param(param));
        }
    }
    if let Some(thinking) = &req.reasoning.thinking
        && thinking.mode != ThinkingMode::Disabled
    {
        return Err(ApiError::unsupported_conversion(
            "a `thinking` configuration cannot be sent to a Responses supplier, which takes a reasoning effort only: leave `thinking` out, or choose a model with a Messages or Chat route that supports thinking",
        )
        .with_param("thinking"));
    }
    Ok(())
}

/// The vetted Responses passthrough fields, when the request came in over Responses.
fn native_fields(req: &Request) -> Map<String, Value> {
    match &req.native {
        Some(native) if native.protocol == Some(Protocol::Responses) => native.fields.clone(),
        _ => Map::new(),
    }
}

/// The text of a message that is sent as `instructions`: a system message
/// whose content was one plain string.
fn instructions_text(message: &Message) -> Option<&str> {
    match message.content.as_slice() {
        [
            ContentPart::Text {
                text,
                cache_control: None,
            },
        ] if message.role == Role::System && message.content_was_string => Some(text),
        _ => None,
    }
}

fn message_role(role: Role) -> Option<MessageRole> {
    match role {
        Role::System => Some(MessageRole::System),
        Role::Developer => Some(MessageRole::Developer),
        Role::User => Some(MessageRole::User),
        Role::Assistant => Some(MessageRole::Assistant),
        Role::Tool => None,
        // A role added later speaks as the user.
        _ => Some(MessageRole::User),
    }
}

/// One canonical message becomes input items, in part order.
fn push_items(
    message: &Message,
    native: bool,
    replay_thinking: bool,
    out: &mut Vec<InputItem>,
) -> Result<(), ApiError> {
    let Some(role) = message_role(message.role) else {
        return tool_message_items(message, native, out);
    };
    let assistant = role == MessageRole::Assistant;
    let mut run: Vec<wire::ContentPart> = Vec::new();
    let flush = |run: &mut Vec<wire::ContentPart>, out: &mut Vec<InputItem>| {
        if !run.is_empty() {
            out.push(message_item(
                role,
                std::mem::take(run),
                message.content_was_string,
            ));
        }
    };
    for part in &message.content {
        match part {
            ContentPart::Text {
                text,
                cache_control,
            } => {
                let part = TextPart {
                    text: text.clone(),
                    cache_control: marker(cache_control.as_ref(), native),
                };
                run.push(if assistant {
                    wire::ContentPart::OutputText(part)
                } else {
                    wire::ContentPart::InputText(part)
                });
            }
            ContentPart::Image { .. } if assistant => {
                return Err(unsupported_content(
                    "an image in an assistant message cannot be sent to a Responses supplier",
                ));
            }
            ContentPart::Image { .. } => run.push(image(part, native)?),
            ContentPart::Opaque {
                protocol: Protocol::Responses,
                value,
            } => run.push(wire::ContentPart::Unknown(value.clone())),
            ContentPart::Opaque { protocol, .. } => {
                return Err(unsupported_content(format!(
                    "a content part of the {protocol} protocol cannot be sent to a Responses supplier"
                )));
            }
            ContentPart::ToolCall {
                id,
                name,
                arguments,
            } => {
                if !assistant {
                    return Err(unsupported_content(format!(
                        "a tool call in a {} message cannot be sent to a Responses supplier",
                        message.role.as_str()
                    )));
                }
                flush(&mut run, out);
                out.push(InputItem::FunctionCall(FunctionCallItem {
                    call_id: id.clone(),
                    name: name.clone(),
                    namespace: None,
                    arguments: arguments.clone(),
                    id: None,
                    status: None,
                }));
            }
            ContentPart::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                if assistant {
                    return Err(unsupported_content(
                        "a tool result in an assistant message cannot be sent to a Responses supplier",
                    ));
                }
                flush(&mut run, out);
                // Outside a Chat-style tool message, one plain text reads best as a string.
                out.push(tool_output(tool_call_id, content, true, native)?);
            }
            ContentPart::Thinking { text, signature } => {
                // See the module docs: only a Responses signature can be replayed.
                if replay_thinking && assistant {
                    flush(&mut run, out);
                    out.push(InputItem::Reasoning(reasoning_item(
                        None,
                        text,
                        signature.as_ref(),
                    )));
                }
            }
            ContentPart::RedactedThinking { .. } => {}
            _ => {
                return Err(unsupported_content(
                    "this content part cannot be sent to a Responses supplier",
                ));
            }
        }
    }
    if message.content.is_empty() {
        // An empty message still takes its turn.
        out.push(message_item(role, Vec::new(), message.content_was_string));
    }
    flush(&mut run, out);
    Ok(())
}

/// A Chat-style tool message: its tool results, nothing else.
fn tool_message_items(
    message: &Message,
    native: bool,
    out: &mut Vec<InputItem>,
) -> Result<(), ApiError> {
    let mut results = 0usize;
    for part in &message.content {
        let ContentPart::ToolResult {
            tool_call_id,
            content,
            ..
        } = part
        else {
            return Err(unsupported_content(
                "a tool message may hold only tool results when sent to a Responses supplier",
            ));
        };
        results += 1;
        out.push(tool_output(
            tool_call_id,
            content,
            message.content_was_string,
            native,
        )?);
    }
    if results == 0 {
        return Err(unsupported_content(
            "a tool message without a tool result cannot be sent to a Responses supplier",
        ));
    }
    Ok(())
}

fn message_item(
    role: MessageRole,
    parts: Vec<wire::ContentPart>,
    prefer_string: bool,
) -> InputItem {
    InputItem::Message(MessageItem {
        role,
        content: content(parts, prefer_string),
        id: None,
        status: None,
    })
}

/// A string when preferred and the parts are one plain text, else the parts.
fn content(parts: Vec<wire::ContentPart>, prefer_string: bool) -> MessageContent {
    if prefer_string {
        match parts.as_slice() {
            [] => return MessageContent::Text(String::new()),
            [
                wire::ContentPart::InputText(TextPart {
                    text,
                    cache_control: None,
                })
                | wire::ContentPart::OutputText(TextPart {
                    text,
                    cache_control: None,
                }),
            ] => return MessageContent::Text(text.clone()),
            _ => {}
        }
    }
    MessageContent::Seq(parts)
}

fn tool_output(
    tool_call_id: &str,
    content_parts: &[ContentPart],
    prefer_string: bool,
    native: bool,
) -> Result<InputItem, ApiError> {
    let mut parts = Vec::with_capacity(content_parts.len());
    for part in content_parts {
        parts.push(match part {
            ContentPart::Text {
                text,
                cache_control,
            } => wire::ContentPart::InputText(TextPart {
                text: text.clone(),
                cache_control: marker(cache_control.as_ref(), native),
            }),
            ContentPart::Image { .. } => image(part, native)?,
            _ => {
                return Err(unsupported_content(
                    "a tool result may hold only text and images when sent to a Responses supplier",
                ));
            }
        });
    }
    Ok(InputItem::FunctionCallOutput(FunctionCallOutputItem {
        call_id: tool_call_id.to_owned(),
        output: content(parts, prefer_string),
        id: None,
        status: None,
    }))
}

/// A prompt-cache marker travels on a native pass-through only.
fn marker(c: Option<&CacheControl>, native: bool) -> Option<wire::CacheControl> {
    c.filter(|_| native).map(|c| wire::CacheControl {
        kind: c.kind.clone(),
        ttl: c.ttl.clone(),
    })
}

fn image(part: &ContentPart, native: bool) -> Result<wire::ContentPart, ApiError> {
    let ContentPart::Image {
        source,
        detail,
        cache_control,
    } = part
    else {
        return Err(ApiError::new(
            ErrorCode::InternalError,
            "expected an image part",
        ));
    };
    let image_url = match source {
        ImageSource::Url { url } => url.clone(),
        ImageSource::Base64 { media_type, data } => format!("data:{media_type};base64,{data}"),
        ImageSource::Upload { .. } => {
            return Err(unsupported_content(
                "an uploaded image must be resolved to its bytes before it is sent to a Responses supplier",
            ));
        }
    };
    Ok(wire::ContentPart::InputImage(InputImagePart {
        image_url: Some(image_url),
        file_id: None,
        detail: detail.clone(),
        cache_control: marker(cache_control.as_ref(), native),
    }))
}

/// The request's tools; on a native route the functions of a client's
/// `namespace` tools are grouped again, each group where its first
/// function stands, with the functions' own names.
fn tools(
    req: &Request,
    native: bool,
    groups: Option<&Value>,
    namespaces: &ToolNamespaces,
) -> Vec<ToolDefinition> {
    let mut out = Vec::with_capacity(req.tools.len());
    let mut emitted = std::collections::BTreeSet::new();
    for t in &req.tools {
        let Some((namespace, _)) = namespaces.resolve(&t.name) else {
            out.push(tool(t, native));
            continue;
        };
        if !emitted.insert(namespace.to_owned()) {
            continue;
        }
        let group = groups
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .find(|g| g.get("name").and_then(Value::as_str) == Some(namespace));
        let members = req
            .tools
            .iter()
            .filter_map(|member| {
                let (ns, name) = namespaces.resolve(&member.name)?;
                (ns == namespace).then(|| {
                    let mut function = tool(member, native);
                    function.name = Some(name.to_owned());
                    function
                })
            })
            .collect();
        out.push(ToolDefinition {
            kind: "namespace".to_owned(),
            name: Some(namespace.to_owned()),
            description: group
                .and_then(|g| g.get("description"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            parameters: None,
            strict: None,
            cache_control: None,
            tools: Some(members),
        });
    }
    out
}

fn tool(t: &Tool, native: bool) -> ToolDefinition {
    ToolDefinition {
        kind: "function".to_owned(),
        name: Some(t.name.clone()),
        description: t.description.clone(),
        parameters: Some(t.parameters.clone()),
        // Absent means strict on Responses; keep a converted tool non-strict.
        strict: if native {
            t.strict
        } else {
            Some(t.strict.unwrap_or(false))
        },
        cache_control: marker(t.cache_control.as_ref(), native),
        tools: None,
    }
}

fn tool_choice(choice: &ToolChoice) -> wire::ToolChoice {
    match choice {
        ToolChoice::Auto => wire::ToolChoice::Mode(ToolChoiceMode::Auto),
        ToolChoice::None => wire::ToolChoice::Mode(ToolChoiceMode::None),
        ToolChoice::Required => wire::ToolChoice::Mode(ToolChoiceMode::Required),
        ToolChoice::Tool { name } => wire::ToolChoice::Named(NamedToolChoice {
            kind: "function".to_owned(),
            name: Some(name.clone()),
        }),
    }
}

fn text_format(format: &ResponseFormat) -> Result<TextFormat, ApiError> {
    Ok(match format {
        ResponseFormat::Text => TextFormat::Text,
        ResponseFormat::JsonObject => TextFormat::JsonObject,
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
            description,
        } => {
            if schema.is_null() {
                return Err(ApiError::unsupported_conversion(
                    "a json_schema response format without a schema cannot be sent to a Responses supplier",
                )
                .with_field(Field::ResponseFormat));
            }
            TextFormat::JsonSchema(JsonSchemaFormat {
                name: name.clone(),
                schema: schema.clone(),
                description: description.clone(),
                strict: *strict,
            })
        }
    })
}
