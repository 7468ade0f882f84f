//! Canonical -> wire: the body sent to a Chat supplier.
//!
//! What Chat cannot carry is an `unsupported_conversion` error (an upload
//! reference, another protocol's opaque part, a tool call outside an
//! assistant turn), with documented exceptions that drop annotations or
//! preferences rather than meaning: thinking blocks in assistant history
//! (Chat has no field for them, and suppliers ignore them), `is_error` /
//! `cache_control` on a tool result, and a Responses client's
//! `reasoning.summary` ([`Reasoning::summary`](router_canonical::Reasoning::summary)):
//! Chat has no way to ask for a reasoning summary, and Responses clients
//! send `summary: "auto"` on every request, so it is a preference that a
//! Chat route serves without a summary rather than a refusal.

use crate::native::NATIVE_ALLOWLIST;
use crate::wire::request::{
    self as wire, ChatMessage, ChatRequest, ChatRole, FunctionCall, FunctionDefinition,
    FunctionName, ImageUrl, ImageUrlPart, JsonSchemaFormat, MessageContent, NamedToolChoice,
    StreamOptions, TextPart, ToolChoiceMode, ToolDefinition, function_kind,
};
use router_canonical::{
    ApiError, CacheControl, ContentPart, ErrorCode, Field, ImageSource, Message, Protocol, Request,
    ResponseFormat, Role, ThinkingMode, Tool, ToolChoice,
};
use serde_json::{Map, Value};

/// A message or content part a Chat supplier cannot carry, named as the
/// caller's conversation field (`messages`, `input`, `prompt`).
fn unsupported_content(message: impl Into<String>) -> ApiError {
    ApiError::unsupported_conversion(message).with_field(Field::Messages)
}

pub(crate) fn request(req: &Request, upstream_model: &str) -> Result<Vec<u8>, ApiError> {
    let wire = chat_request(req, upstream_model)?;
    serde_json::to_vec(&wire).map_err(|err| {
        ApiError::new(
            ErrorCode::InternalError,
            format!("could not serialize the Chat request: {err}"),
        )
    })
}

pub(crate) fn chat_request(req: &Request, upstream_model: &str) -> Result<ChatRequest, ApiError> {
    let mut messages = Vec::with_capacity(req.messages.len());
    for message in &req.messages {
        push_message(message, &mut messages)?;
    }
    let sampling = &req.sampling;
    Ok(ChatRequest {
        model: Some(upstream_model.to_owned()),
        messages: Some(messages),
        tools: (!req.tools.is_empty()).then(|| req.tools.iter().map(tool).collect()),
        tool_choice: req.tool_choice.as_ref().map(tool_choice),
        parallel_tool_calls: req.parallel_tool_calls,
        response_format: req.response_format.as_ref().map(response_format),
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        frequency_penalty: sampling.frequency_penalty,
        presence_penalty: sampling.presence_penalty,
        seed: sampling.seed,
        stop: (!sampling.stop.is_empty()).then(|| wire::Stop::Seq(sampling.stop.clone())),
        max_tokens: None,
        max_completion_tokens: sampling.max_output_tokens,
        // B-16 / GP-74: explicit effort goes in Chat's own field, verbatim.
        reasoning_effort: req.reasoning.effort.clone(),
        reasoning: None,
        // GP-50: the `thinking` object is forwarded as is.
        thinking: req.reasoning.thinking.as_ref().map(|t| wire::Thinking {
            kind: match t.mode {
                ThinkingMode::Enabled => wire::ThinkingType::Enabled,
                ThinkingMode::Disabled => wire::ThinkingType::Disabled,
                ThinkingMode::Adaptive => wire::ThinkingType::Adaptive,
            },
            budget_tokens: t.budget_tokens,
            display: t.display.clone(),
        }),
        n: None,
        modalities: None,
        audio: None,
        stream: req.stream.then_some(true),
        stream_options: req.stream.then(|| StreamOptions {
            include_usage: Some(true),
            extra: Map::new(),
        }),
        user: req.end_user.clone(),
        extra: native_fields(req),
    })
}

/// The vetted Chat passthrough fields, when the request came in over Chat.
fn native_fields(req: &Request) -> Map<String, Value> {
    match &req.native {
        Some(native) if native.protocol == Some(Protocol::Chat) => native
            .fields
            .iter()
            .filter(|(key, _)| NATIVE_ALLOWLIST.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        _ => Map::new(),
    }
}

fn chat_role(role: Role) -> ChatRole {
    match role {
        Role::System => ChatRole::System,
        Role::Developer => ChatRole::Developer,
        Role::User => ChatRole::User,
        Role::Assistant => ChatRole::Assistant,
        Role::Tool => ChatRole::Tool,
        // A role added later speaks as the user.
        _ => ChatRole::User,
    }
}

/// One canonical message becomes one Chat message, preceded by one `tool`
/// message per tool result it holds (Messages puts tool results in a user turn).
fn push_message(message: &Message, out: &mut Vec<ChatMessage>) -> Result<(), ApiError> {
    let mut parts = Vec::new();
    let mut calls = Vec::new();
    let mut tool_results = 0usize;
    let mut dropped_thinking = false;
    for part in &message.content {
        match part {
            ContentPart::ToolResult {
                tool_call_id,
                content,
                ..
            } => {
                tool_results += 1;
                out.push(tool_message(tool_call_id, content, message)?);
            }
            ContentPart::ToolCall {
                id,
                name,
                arguments,
            } => {
                if message.role != Role::Assistant {
                    return Err(unsupported_content(format!(
                        "a tool call in a {} message cannot be sent to a Chat supplier",
                        message.role.as_str()
                    )));
                }
                calls.push(wire::ToolCall {
                    id: id.clone(),
                    kind: function_kind(),
                    function: FunctionCall {
                        name: name.clone(),
                        arguments: arguments.clone(),
                    },
                });
            }
            // Chat has no field for reasoning history; suppliers regenerate it.
            ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. } => {
                dropped_thinking = true;
            }
            other => parts.push(content_part(other)?),
        }
    }
    if message.role == Role::Tool {
        if !parts.is_empty() || !calls.is_empty() || tool_results == 0 {
            return Err(unsupported_content(
                "a tool message without a tool result cannot be sent to a Chat supplier",
            ));
        }
        return Ok(());
    }
    if tool_results > 0 && parts.is_empty() && calls.is_empty() {
        return Ok(());
    }
    let content = if dropped_thinking && parts.is_empty() && calls.is_empty() {
        Some(MessageContent::Text(String::new()))
    } else {
        chat_content(parts, message.content_was_string, !calls.is_empty())
    };
    out.push(ChatMessage {
        content,
        name: message.name.clone(),
        tool_calls: (!calls.is_empty()).then_some(calls),
        ..ChatMessage::new(chat_role(message.role))
    });
    Ok(())
}

fn tool_message(
    tool_call_id: &str,
    content: &[ContentPart],
    message: &Message,
) -> Result<ChatMessage, ApiError> {
    let parts = content
        .iter()
        .map(content_part)
        .collect::<Result<Vec<_>, _>>()?;
    // A Chat tool message keeps the shape it came in; a tool result from
    // another protocol is sent as a string when it is one plain text.
    let prefer_string = message.content_was_string || message.role != Role::Tool;
    Ok(ChatMessage {
        content: chat_content(parts, prefer_string, false),
        name: (message.role == Role::Tool)
            .then(|| message.name.clone())
            .flatten(),
        tool_call_id: Some(tool_call_id.to_owned()),
        ..ChatMessage::new(ChatRole::Tool)
    })
}

/// A string when the message came as one (and is one plain text), else parts.
/// Empty content is omitted when it was `null` or tool calls carry the turn.
fn chat_content(
    parts: Vec<wire::ContentPart>,
    prefer_string: bool,
    has_tool_calls: bool,
) -> Option<MessageContent> {
    if parts.is_empty() {
        return (!prefer_string && !has_tool_calls).then(|| MessageContent::Seq(parts));
    }
    if prefer_string
        && let [
            wire::ContentPart::Text(TextPart {
                text,
                cache_control: None,
            }),
        ] = parts.as_slice()
    {
        return Some(MessageContent::Text(text.clone()));
    }
    Some(MessageContent::Seq(parts))
}

fn cache_control(c: &CacheControl) -> wire::CacheControl {
    wire::CacheControl {
        kind: c.kind.clone(),
        ttl: c.ttl.clone(),
    }
}

fn content_part(part: &ContentPart) -> Result<wire::ContentPart, ApiError> {
    match part {
        ContentPart::Text {
            text,
            cache_control: cc,
        } => Ok(wire::ContentPart::Text(TextPart {
            text: text.clone(),
            cache_control: cc.as_ref().map(cache_control),
        })),
        ContentPart::Image {
            source,
            detail,
            cache_control: cc,
        } => {
            let url = match source {
                ImageSource::Url { url } => url.clone(),
                ImageSource::Base64 { media_type, data } => {
                    format!("data:{media_type};base64,{data}")
                }
                ImageSource::Upload { .. } => {
                    return Err(unsupported_content(
                        "an uploaded image must be resolved to its bytes before it is sent to a Chat supplier",
                    ));
                }
            };
            Ok(wire::ContentPart::ImageUrl(ImageUrlPart {
                image_url: ImageUrl {
                    url,
                    detail: detail.clone(),
                },
                cache_control: cc.as_ref().map(cache_control),
            }))
        }
        ContentPart::Opaque {
            protocol: Protocol::Chat,
            value,
        } => Ok(wire::ContentPart::Unknown(value.clone())),
        ContentPart::Opaque { protocol, .. } => Err(unsupported_content(format!(
            "a content part of the {protocol} protocol cannot be sent to a Chat supplier"
        ))),
        ContentPart::ToolCall { .. }
        | ContentPart::ToolResult { .. }
        | ContentPart::Thinking { .. }
        | ContentPart::RedactedThinking { .. } => Err(unsupported_content(
            "a tool result may hold only text and images when sent to a Chat supplier",
        )),
        _ => Err(unsupported_content(
            "this content part cannot be sent to a Chat supplier",
        )),
    }
}

fn tool(t: &Tool) -> ToolDefinition {
    ToolDefinition {
        kind: function_kind(),
        function: Some(FunctionDefinition {
            name: t.name.clone(),
            description: t.description.clone(),
            parameters: Some(t.parameters.clone()),
            strict: t.strict,
        }),
        cache_control: t.cache_control.as_ref().map(cache_control),
        extra: Map::new(),
    }
}

fn tool_choice(choice: &ToolChoice) -> wire::ToolChoice {
    match choice {
        ToolChoice::Auto => wire::ToolChoice::Mode(ToolChoiceMode::Auto),
        ToolChoice::None => wire::ToolChoice::Mode(ToolChoiceMode::None),
        ToolChoice::Required => wire::ToolChoice::Mode(ToolChoiceMode::Required),
        ToolChoice::Tool { name } => wire::ToolChoice::Named(NamedToolChoice {
            kind: function_kind(),
            function: Some(FunctionName { name: name.clone() }),
        }),
    }
}

fn response_format(format: &ResponseFormat) -> wire::ResponseFormat {
    match format {
        ResponseFormat::Text => wire::ResponseFormat::Text,
        ResponseFormat::JsonObject => wire::ResponseFormat::JsonObject,
        ResponseFormat::JsonSchema {
            name,
            schema,
            strict,
            description,
        } => wire::ResponseFormat::JsonSchema {
            json_schema: JsonSchemaFormat {
                name: name.clone(),
                description: description.clone(),
                schema: (!schema.is_null()).then(|| schema.clone()),
                strict: *strict,
            },
        },
    }
}
