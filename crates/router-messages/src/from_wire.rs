//! Wire -> canonical: validate a client's Messages request (and count_tokens
//! body and headers), read a supplier's reply.
//!
//! Every rejection of a client request is a 400 `invalid_parameter` whose
//! `param` is the path of the offending field
//! (`messages[2].content[0].source.media_type`) or header, made here before
//! any routing or network work. Shape errors come from `serde_path_to_error`;
//! value rules (ranges, conflicts, unknown members, unsupported blocks and
//! tools) are checked by hand below.
//!
//! Unlike the OpenAI surfaces, Messages rejects every member it does not
//! know (CF-03, D-28), at the top level and inside messages, blocks, tools,
//! `tool_choice` and `thinking`: on a native route an unverified Anthropic
//! field could switch on server features or change billing.

use crate::RequestHeaders;
use crate::error::DecodeError;
use crate::wire::request::{
    self as wire, Content, ContentBlock, InputMessage, MessagesRequest, WireRole,
};
use crate::wire::response::{MessageObject, WireStopReason, WireUsage};
use router_canonical::parse::{self, in_range, join_path};
use router_canonical::request::NativeFields;
use router_canonical::{
    ApiError, CacheControl, ContentPart, ImageSource, Message, OutputBlock, PromptCacheMode,
    Protocol, Reasoning, Request, Response, ResponseFormat, Role, RoutingOptions, Sampling,
    StopReason, ThinkingConfig, ThinkingMode, Tool, ToolChoice, Usage,
};
use serde_json::{Map, Value};

/// The only `anthropic-version` the router speaks (D-03, GP-31).
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Top-level members kept verbatim for native Messages routes (D-23).
pub(crate) const NATIVE_FIELDS: [&str; 3] = ["context_management", "metadata", "output_config"];

/// The canonical `response_format` name of an `output_config.format`
/// (Messages names no schema; OpenAI requires a name).
pub(crate) const OUTPUT_FORMAT_NAME: &str = "output";

/// Image MIME types accepted in base64 sources (D-24).
const IMAGE_MEDIA_TYPES: [&str; 4] = ["image/jpeg", "image/png", "image/gif", "image/webp"];

/// At most this many messages (CF-06), tools and stop sequences (D-16, D-13).
const MAX_MESSAGES: usize = 100_000;
const MAX_TOOLS: usize = 128;
pub(crate) const MAX_STOP_SEQUENCES: usize = 4;
/// The smallest thinking budget (D-19).
const MIN_THINKING_BUDGET: u32 = 1024;

/// Which endpoint a body arrived on: count_tokens takes looser shapes but no
/// media or opaque history (CF-21, CF-04).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Endpoint {
    Messages,
    CountTokens,
}

impl Endpoint {
    fn path(self) -> &'static str {
        match self {
            Endpoint::Messages => "/v1/messages",
            Endpoint::CountTokens => "/v1/messages/count_tokens",
        }
    }
}

// ---------------------------------------------------------------------------
// Client request

pub(crate) fn request(body: &[u8]) -> Result<Request, ApiError> {
    convert_request(parse::request_body(body)?, Endpoint::Messages)
}

pub(crate) fn count_tokens(body: &[u8]) -> Result<Request, ApiError> {
    convert_request(parse::request_body(body)?, Endpoint::CountTokens)
}

/// Reject the first member of `extra` (unknown members of a known object).
fn no_unknown(path: &str, extra: &Map<String, Value>) -> Result<(), ApiError> {
    match extra.keys().next() {
        None => Ok(()),
        Some(key) => {
            let param = join_path(path, key);
            Err(ApiError::invalid(
                param.clone(),
                format!(
                    "unknown field `{param}`: it is not part of the Messages API the router accepts"
                ),
            ))
        }
    }
}

/// The first reason a request can only go to a native Messages route wins.
fn pin(native_only: &mut Option<String>, reason: impl Into<String>) {
    if native_only.is_none() {
        *native_only = Some(reason.into());
    }
}

fn convert_request(wire: MessagesRequest, endpoint: Endpoint) -> Result<Request, ApiError> {
    let MessagesRequest {
        model,
        max_tokens,
        messages,
        system,
        stop_sequences,
        temperature,
        top_p,
        stream,
        tools,
        tool_choice,
        thinking,
        context_management,
        metadata,
        output_config,
        mut extra,
    } = wire;
    let routing = RoutingOptions::take_from(&mut extra)?;
    if let Some(key) = extra.keys().next() {
        return Err(unknown_top_level(key, endpoint));
    }
    if endpoint == Endpoint::CountTokens {
        // count_tokens takes the documented count body (model, messages,
        // system, tools) plus what changes a count: tool_choice, thinking
        // and an optional max_tokens. Generation controls are not part of it.
        for (param, present) in [
            ("stop_sequences", stop_sequences.is_some()),
            ("temperature", temperature.is_some()),
            ("top_p", top_p.is_some()),
            ("stream", stream.is_some()),
            ("context_management", context_management.is_some()),
            ("metadata", metadata.is_some()),
            ("output_config", output_config.is_some()),
        ] {
            if present {
                return Err(unknown_top_level(param, endpoint));
            }
        }
    }

    let model = model.ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let max_tokens = match (max_tokens, endpoint) {
        (Some(0), _) => {
            return Err(ApiError::invalid(
                "max_tokens",
                "`max_tokens` must be an integer of at least 1",
            ));
        }
        (None, Endpoint::Messages) => {
            return Err(ApiError::invalid("max_tokens", "`max_tokens` is required"));
        }
        (max, _) => max,
    };
    let wire_messages =
        messages.ok_or_else(|| ApiError::invalid("messages", "`messages` is required"))?;
    if wire_messages.is_empty() || wire_messages.len() > MAX_MESSAGES {
        return Err(ApiError::invalid(
            "messages",
            format!("`messages` must contain 1 to {MAX_MESSAGES} messages"),
        ));
    }

    let stop = match stop_sequences {
        None => Vec::new(),
        Some(None) => {
            return Err(ApiError::invalid(
                "stop_sequences",
                "`stop_sequences` must be an array of strings, not null",
            ));
        }
        Some(Some(all)) => {
            if all.len() > MAX_STOP_SEQUENCES {
                return Err(ApiError::invalid(
                    "stop_sequences",
                    format!("`stop_sequences` takes at most {MAX_STOP_SEQUENCES} sequences"),
                ));
            }
            if let Some(i) = all.iter().position(String::is_empty) {
                return Err(ApiError::invalid(
                    format!("stop_sequences[{i}]"),
                    "a stop sequence must not be empty",
                ));
            }
            all
        }
    };
    let sampling = Sampling {
        temperature: in_range("temperature", temperature, 0.0, 1.0)?,
        top_p: in_range("top_p", top_p, 0.0, 1.0)?,
        stop,
        max_output_tokens: max_tokens,
        seed: None,
        frequency_penalty: None,
        presence_penalty: None,
    };

    let mut native_only = None;
    let mut messages = Vec::with_capacity(wire_messages.len() + 1);
    if let Some(system) = system
        && let Some(message) = system_message(system, endpoint)?
    {
        messages.push(message);
    }
    for (i, m) in wire_messages.into_iter().enumerate() {
        messages.push(message(i, m, endpoint, &mut native_only)?);
    }

    let tools = match tools {
        None => Vec::new(),
        Some(tools) => {
            if endpoint == Endpoint::Messages && tools.len() > MAX_TOOLS {
                return Err(ApiError::invalid(
                    "tools",
                    format!("`tools` takes at most {MAX_TOOLS} tools"),
                ));
            }
            tools
                .into_iter()
                .enumerate()
                .map(|(i, t)| tool(i, t, endpoint))
                .collect::<Result<Vec<_>, _>>()?
        }
    };
    let (tool_choice, parallel_tool_calls) = match tool_choice {
        None => (None, None),
        Some(choice) => {
            let (choice, parallel) = convert_tool_choice(choice)?;
            (Some(choice), parallel)
        }
    };
    let thinking = thinking
        .map(|t| convert_thinking(t, max_tokens, &mut native_only))
        .transpose()?;
    if let Some(t) = &thinking
        && t.mode != ThinkingMode::Disabled
        && matches!(
            tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool { .. })
        )
    {
        return Err(ApiError::invalid(
            "tool_choice.type",
            "with thinking enabled or adaptive, `tool_choice` must be `auto` or `none`",
        ));
    }

    let mut fields = Map::new();
    if let Some(value) = context_management {
        if !value.is_object() {
            return Err(ApiError::invalid(
                "context_management",
                "`context_management` must be an object",
            ));
        }
        pin(&mut native_only, "context_management");
        fields.insert("context_management".to_owned(), value);
    }
    let mut end_user = None;
    if let Some(value) = metadata {
        end_user = check_metadata(&value)?;
        // An annotation: forwarded to native routes, never pins the request.
        fields.insert("metadata".to_owned(), value);
    }
    let mut effort = None;
    let mut response_format = None;
    if let Some(value) = output_config {
        (effort, response_format) = check_output_config(&value)?;
        pin(&mut native_only, "output_config");
        fields.insert("output_config".to_owned(), value);
    }
    let native = (!fields.is_empty()).then(|| NativeFields {
        protocol: Some(Protocol::Messages),
        fields,
        betas: Vec::new(),
    });

    Ok(Request {
        model,
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
        stream: stream.unwrap_or(false),
        end_user,
        native,
        routing,
        inbound: Some(Protocol::Messages),
        native_only,
        prompt_cache: PromptCacheMode::Passthrough,
        thinking_signed_by: None,
    })
}

fn unknown_top_level(key: &str, endpoint: Endpoint) -> ApiError {
    let why = match key {
        "mcp_servers" => "MCP servers are not supported through the router".to_owned(),
        "container" => "container execution is not supported through the router".to_owned(),
        _ => format!("it is not accepted by {}", endpoint.path()),
    };
    ApiError::invalid(key, format!("unknown field `{key}`: {why}"))
}

/// `system`: a non-empty string or text blocks (D-12); count_tokens also
/// takes an empty string, which counts nothing (CF-21).
fn system_message(system: Content, endpoint: Endpoint) -> Result<Option<Message>, ApiError> {
    match system {
        Content::Text(text) if text.is_empty() => match endpoint {
            Endpoint::Messages => Err(ApiError::invalid(
                "system",
                "`system` must be a non-empty string or an array of text blocks",
            )),
            Endpoint::CountTokens => Ok(None),
        },
        Content::Text(text) => Ok(Some(Message::text(Role::System, text))),
        // No blocks, no instruction.
        Content::Blocks(blocks) if blocks.is_empty() => Ok(None),
        Content::Blocks(blocks) => {
            let content = blocks
                .into_iter()
                .enumerate()
                .map(|(j, block)| {
                    let path = format!("system[{j}]");
                    match block {
                        ContentBlock::Text(b) => text_part(&path, b),
                        other => Err(ApiError::invalid(
                            format!("{path}.type"),
                            format!(
                                "`system` takes text blocks only, not `{}` blocks",
                                other.kind()
                            ),
                        )),
                    }
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(Some(Message {
                role: Role::System,
                content,
                content_was_string: false,
                name: None,
            }))
        }
    }
}

fn message(
    i: usize,
    m: InputMessage,
    endpoint: Endpoint,
    native_only: &mut Option<String>,
) -> Result<Message, ApiError> {
    let base = format!("messages[{i}]");
    let InputMessage {
        role,
        content,
        extra,
    } = m;
    no_unknown(&base, &extra)?;
    let role = match role {
        WireRole::User => Role::User,
        WireRole::Assistant => Role::Assistant,
        WireRole::System => {
            // Only a native route carries a system turn in place (CF-05).
            pin(native_only, format!("{base}.role"));
            Role::System
        }
    };
    let (content, content_was_string) = match content {
        Content::Text(text) => (
            vec![ContentPart::Text {
                text,
                cache_control: None,
            }],
            true,
        ),
        Content::Blocks(blocks) => (
            blocks
                .into_iter()
                .enumerate()
                .map(|(j, b)| {
                    block(
                        &format!("{base}.content[{j}]"),
                        role,
                        b,
                        endpoint,
                        native_only,
                    )
                })
                .collect::<Result<Vec<_>, _>>()?,
            false,
        ),
    };
    Ok(Message {
        role,
        content,
        content_was_string,
        name: None,
    })
}

fn not_allowed(path: &str, kind: &str, role: Role) -> ApiError {
    ApiError::invalid(
        format!("{path}.type"),
        format!(
            "`{kind}` blocks are not allowed in {} messages",
            role.as_str()
        ),
    )
}

fn not_counted(path: &str, kind: &str) -> ApiError {
    ApiError::invalid(
        format!("{path}.type"),
        format!("count_tokens cannot estimate `{kind}` blocks: it counts text only"),
    )
}

/// One block of a message. User turns take text, image and tool_result;
/// assistant turns text, thinking, redacted_thinking and tool_use (D-24,
/// D-25); a system turn takes text.
fn block(
    path: &str,
    role: Role,
    block: ContentBlock,
    endpoint: Endpoint,
    native_only: &mut Option<String>,
) -> Result<ContentPart, ApiError> {
    let kind = block.kind().to_owned();
    let allowed = match role {
        Role::Assistant => matches!(
            block,
            ContentBlock::Text(_)
                | ContentBlock::Thinking(_)
                | ContentBlock::RedactedThinking(_)
                | ContentBlock::ToolUse(_)
        ),
        Role::User => matches!(
            block,
            ContentBlock::Text(_) | ContentBlock::Image(_) | ContentBlock::ToolResult(_)
        ),
        _ => matches!(block, ContentBlock::Text(_)),
    };
    if !allowed && !matches!(block, ContentBlock::Unknown(_)) {
        return Err(not_allowed(path, &kind, role));
    }
    match block {
        ContentBlock::Text(b) => text_part(path, b),
        ContentBlock::Image(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            image_part(path, b)
        }
        ContentBlock::ToolUse(b) => {
            let wire::ToolUseBlock {
                id,
                name,
                input,
                cache_control,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            if !input.is_object() {
                return Err(ApiError::invalid(
                    format!("{path}.input"),
                    "`input` of a tool_use block must be an object",
                ));
            }
            // The canonical tool call has no marker: a cache_control on a
            // tool_use block is checked, then not carried (see the crate docs).
            check_cache_control(path, cache_control)?;
            Ok(ContentPart::ToolCall {
                id,
                name,
                arguments: input.to_string(),
            })
        }
        ContentBlock::ToolResult(b) => {
            let wire::ToolResultBlock {
                tool_use_id,
                content,
                is_error,
                cache_control,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            let content = match content {
                None => Vec::new(),
                Some(Content::Text(text)) => vec![ContentPart::Text {
                    text,
                    cache_control: None,
                }],
                Some(Content::Blocks(blocks)) => blocks
                    .into_iter()
                    .enumerate()
                    .map(|(k, inner)| {
                        let inner_path = format!("{path}.content[{k}]");
                        match inner {
                            ContentBlock::Text(t) => text_part(&inner_path, t),
                            ContentBlock::Image(image) => {
                                if endpoint == Endpoint::CountTokens {
                                    return Err(not_counted(&inner_path, "image"));
                                }
                                // Chat has no image tool results (D-26).
                                pin(native_only, inner_path.clone());
                                image_part(&inner_path, image)
                            }
                            other => Err(ApiError::invalid(
                                format!("{inner_path}.type"),
                                format!(
                                    "a tool_result takes text and image blocks only, not `{}`",
                                    other.kind()
                                ),
                            )),
                        }
                    })
                    .collect::<Result<Vec<_>, _>>()?,
            };
            Ok(ContentPart::ToolResult {
                tool_call_id: tool_use_id,
                content,
                is_error: is_error.unwrap_or(false),
                cache_control: check_cache_control(path, cache_control)?,
            })
        }
        ContentBlock::Thinking(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            let wire::ThinkingBlock {
                thinking,
                signature,
                extra,
            } = b;
            no_unknown(path, &extra)?;
            let signature = signature.ok_or_else(|| {
                ApiError::invalid(
                    format!("{path}.signature"),
                    "a thinking block in the history needs the `signature` it was returned with",
                )
            })?;
            Ok(ContentPart::Thinking {
                text: thinking,
                signature: Some(signature),
            })
        }
        ContentBlock::RedactedThinking(b) => {
            if endpoint == Endpoint::CountTokens {
                return Err(not_counted(path, &kind));
            }
            no_unknown(path, &b.extra)?;
            Ok(ContentPart::RedactedThinking { data: b.data })
        }
        ContentBlock::Unknown(_) => Err(ApiError::invalid(
            format!("{path}.type"),
            match kind.as_str() {
                "document" => {
                    "document blocks are not supported: inference accepts text and image input only"
                        .to_owned()
                }
                "server_tool_use" | "mcp_tool_use" | "mcp_tool_result" | "container_upload" => {
                    format!(
                        "`{kind}` blocks are not supported: server tools, MCP and containers are not available through the router"
                    )
                }
                k if k.ends_with("_tool_result") => format!(
                    "`{kind}` blocks are not supported: server tools are not available through the router"
                ),
                _ => format!("unknown content block type `{kind}`"),
            },
        )),
    }
}

fn text_part(path: &str, b: wire::TextBlock) -> Result<ContentPart, ApiError> {
    let wire::TextBlock {
        text,
        cache_control,
        citations,
        extra,
    } = b;
    no_unknown(path, &extra)?;
    match citations {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) if items.is_empty() => {}
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{path}.citations"),
                "citations are not supported: only `[]` or null is accepted",
            ));
        }
    }
    Ok(ContentPart::Text {
        text,
        cache_control: check_cache_control(path, cache_control)?,
    })
}

fn image_part(path: &str, b: wire::ImageBlock) -> Result<ContentPart, ApiError> {
    let wire::ImageBlock {
        source,
        cache_control,
        extra,
    } = b;
    no_unknown(path, &extra)?;
    let source = match source {
        wire::ImageSource::Base64 { media_type, data } => {
            if !IMAGE_MEDIA_TYPES.contains(&media_type.as_str()) {
                return Err(ApiError::invalid(
                    format!("{path}.source.media_type"),
                    format!(
                        "image media type `{media_type}` is not supported: use image/jpeg, image/png, image/gif or image/webp"
                    ),
                ));
            }
            ImageSource::Base64 { media_type, data }
        }
        wire::ImageSource::Url { url } => {
            let lower = url.get(..8).unwrap_or("").to_ascii_lowercase();
            if !(lower.starts_with("https://") || lower.starts_with("http://")) {
                return Err(ApiError::invalid(
                    format!("{path}.source.url"),
                    "an image URL must be https: or http:",
                ));
            }
            ImageSource::Url { url }
        }
        wire::ImageSource::File { file_id } => ImageSource::Upload { file_id },
    };
    Ok(ContentPart::Image {
        source,
        detail: None,
        cache_control: check_cache_control(path, cache_control)?,
    })
}

/// `{type: "ephemeral", ttl?: "5m" | "1h"}`.
fn check_cache_control(
    path: &str,
    cache_control: Option<wire::CacheControl>,
) -> Result<Option<CacheControl>, ApiError> {
    let Some(wire::CacheControl { kind, ttl }) = cache_control else {
        return Ok(None);
    };
    if kind != "ephemeral" {
        return Err(ApiError::invalid(
            format!("{path}.cache_control.type"),
            format!("cache_control type `{kind}` is not supported: use `ephemeral`"),
        ));
    }
    if let Some(ttl) = &ttl
        && ttl != "5m"
        && ttl != "1h"
    {
        return Err(ApiError::invalid(
            format!("{path}.cache_control.ttl"),
            format!("cache_control ttl `{ttl}` is not supported: use `5m` or `1h`"),
        ));
    }
    Ok(Some(CacheControl { kind, ttl }))
}

/// A client tool with an object `input_schema` (D-16); typed hosted and
/// server tools are rejected (D-17). count_tokens takes any tool object and
/// counts its name, description and schema (CF-21).
fn tool(i: usize, t: wire::ToolDefinition, endpoint: Endpoint) -> Result<Tool, ApiError> {
    let base = format!("tools[{i}]");
    let wire::ToolDefinition {
        kind,
        name,
        description,
        input_schema,
        cache_control,
        strict,
        extra,
    } = t;
    if endpoint == Endpoint::CountTokens {
        return Ok(Tool {
            name: name.or(kind).unwrap_or_default(),
            description,
            parameters: input_schema.unwrap_or_else(|| Value::Object(extra)),
            strict,
            cache_control: None,
        });
    }
    if let Some(kind) = kind.filter(|k| k != "custom") {
        return Err(ApiError::invalid(
            format!("{base}.type"),
            format!(
                "tools of type `{kind}` are not supported: hosted and server tools are not available through the router, only client tools"
            ),
        ));
    }
    no_unknown(&base, &extra)?;
    let name =
        name.ok_or_else(|| ApiError::invalid(format!("{base}.name"), "a tool needs a `name`"))?;
    let parameters = match input_schema {
        Some(Value::Object(schema)) => Value::Object(schema),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("{base}.input_schema"),
                "`input_schema` must be a JSON Schema object",
            ));
        }
        None => {
            return Err(ApiError::invalid(
                format!("{base}.input_schema"),
                "a client tool needs an `input_schema` object",
            ));
        }
    };
    Ok(Tool {
        name,
        description,
        parameters,
        strict,
        cache_control: check_cache_control(&base, cache_control)?,
    })
}

/// `tool_choice` and what `disable_parallel_tool_use` says about parallel calls (D-18).
fn convert_tool_choice(choice: wire::ToolChoice) -> Result<(ToolChoice, Option<bool>), ApiError> {
    let wire::ToolChoice {
        kind,
        name,
        disable_parallel_tool_use,
        extra,
    } = choice;
    no_unknown("tool_choice", &extra)?;
    let choice = match kind.as_str() {
        "auto" => ToolChoice::Auto,
        "any" => ToolChoice::Required,
        "none" => ToolChoice::None,
        "tool" => ToolChoice::Tool {
            name: name.clone().ok_or_else(|| {
                ApiError::invalid(
                    "tool_choice.name",
                    "a `tool` tool_choice needs the `name` of the tool",
                )
            })?,
        },
        other => {
            return Err(ApiError::invalid(
                "tool_choice.type",
                format!("unknown tool_choice type `{other}`: use auto, any, none or tool"),
            ));
        }
    };
    if name.is_some() && !matches!(choice, ToolChoice::Tool { .. }) {
        return Err(ApiError::invalid(
            "tool_choice.name",
            "`name` is only accepted with tool_choice type `tool`",
        ));
    }
    if disable_parallel_tool_use.is_some() && choice == ToolChoice::None {
        return Err(ApiError::invalid(
            "tool_choice.disable_parallel_tool_use",
            "`disable_parallel_tool_use` is accepted with tool_choice auto, any and tool only",
        ));
    }
    Ok((choice, disable_parallel_tool_use.map(|disable| !disable)))
}

/// `thinking` (D-19, D-20, D-22).
fn convert_thinking(
    t: wire::Thinking,
    max_tokens: Option<u32>,
    native_only: &mut Option<String>,
) -> Result<ThinkingConfig, ApiError> {
    let wire::Thinking {
        kind,
        budget_tokens,
        display,
        extra,
    } = t;
    no_unknown("thinking", &extra)?;
    let mode = match kind.as_str() {
        "disabled" => ThinkingMode::Disabled,
        "enabled" => ThinkingMode::Enabled,
        "adaptive" => ThinkingMode::Adaptive,
        other => {
            return Err(ApiError::invalid(
                "thinking.type",
                format!("unknown thinking type `{other}`: use disabled, enabled or adaptive"),
            ));
        }
    };
    match (&mode, budget_tokens) {
        (ThinkingMode::Enabled, None) => {
            return Err(ApiError::invalid(
                "thinking.budget_tokens",
                "enabled thinking needs `budget_tokens`",
            ));
        }
        (ThinkingMode::Enabled, Some(budget)) => {
            if budget < MIN_THINKING_BUDGET {
                return Err(ApiError::invalid(
                    "thinking.budget_tokens",
                    format!("`budget_tokens` must be at least {MIN_THINKING_BUDGET}"),
                ));
            }
            if let Some(max) = max_tokens
                && budget >= max
            {
                return Err(ApiError::invalid(
                    "thinking.budget_tokens",
                    format!("`budget_tokens` ({budget}) must be less than `max_tokens` ({max})"),
                ));
            }
        }
        (_, Some(_)) => {
            return Err(ApiError::invalid(
                "thinking.budget_tokens",
                "`budget_tokens` is only accepted with enabled thinking",
            ));
        }
        (_, None) => {}
    }
    if mode == ThinkingMode::Adaptive {
        pin(native_only, "thinking.type");
    }
    if let Some(display) = &display {
        if display != "summarized" && display != "omitted" {
            return Err(ApiError::invalid(
                "thinking.display",
                format!("thinking display `{display}` is not supported: use summarized or omitted"),
            ));
        }
        pin(native_only, "thinking.display");
    }
    Ok(ThinkingConfig {
        mode,
        budget_tokens,
        display,
    })
}

/// `metadata`: an object whose only member is `user_id` (a string or null).
fn check_metadata(value: &Value) -> Result<Option<String>, ApiError> {
    let Value::Object(map) = value else {
        return Err(ApiError::invalid(
            "metadata",
            "`metadata` must be an object",
        ));
    };
    let mut user_id = None;
    for (key, member) in map {
        match (key.as_str(), member) {
            ("user_id", Value::String(id)) => user_id = Some(id.clone()),
            ("user_id", Value::Null) => {}
            ("user_id", _) => {
                return Err(ApiError::invalid(
                    "metadata.user_id",
                    "`metadata.user_id` must be a string",
                ));
            }
            (other, _) => {
                return Err(ApiError::invalid(
                    format!("metadata.{other}"),
                    format!("unknown field `metadata.{other}`: `metadata` takes `user_id` only"),
                ));
            }
        }
    }
    Ok(user_id)
}

/// `output_config`: `effort` (a free string, B-15) and `format` (a JSON
/// schema) are read into the canonical request; the whole object is also
/// kept verbatim for native routes.
fn check_output_config(
    value: &Value,
) -> Result<(Option<String>, Option<ResponseFormat>), ApiError> {
    let Value::Object(map) = value else {
        return Err(ApiError::invalid(
            "output_config",
            "`output_config` must be an object",
        ));
    };
    let effort = match map.get("effort") {
        None | Some(Value::Null) => None,
        Some(Value::String(effort)) => Some(effort.clone()),
        Some(_) => {
            return Err(ApiError::invalid(
                "output_config.effort",
                "`output_config.effort` must be a string",
            ));
        }
    };
    let format = match map.get("format") {
        None | Some(Value::Null) => None,
        Some(Value::Object(format)) => {
            if format.get("type").and_then(Value::as_str) != Some("json_schema") {
                return Err(ApiError::invalid(
                    "output_config.format.type",
                    "`output_config.format.type` must be `json_schema`",
                ));
            }
            let Some(schema @ Value::Object(_)) = format.get("schema") else {
                return Err(ApiError::invalid(
                    "output_config.format.schema",
                    "`output_config.format.schema` must be a JSON Schema object",
                ));
            };
            Some(ResponseFormat::JsonSchema {
                name: OUTPUT_FORMAT_NAME.to_owned(),
                schema: schema.clone(),
                strict: None,
                description: None,
            })
        }
        Some(_) => {
            return Err(ApiError::invalid(
                "output_config.format",
                "`output_config.format` must be an object",
            ));
        }
    };
    Ok((effort, format))
}

// ---------------------------------------------------------------------------
// Headers

/// Check the version and browser headers; the beta identifiers, split on
/// commas, trimmed, empties dropped (GP-32).
pub(crate) fn check_headers(headers: &RequestHeaders<'_>) -> Result<Vec<String>, ApiError> {
    match headers.version.map(str::trim) {
        None => {
            return Err(ApiError::invalid(
                "anthropic-version",
                format!("the `anthropic-version` header is required (use {ANTHROPIC_VERSION})"),
            ));
        }
        Some(v) if v != ANTHROPIC_VERSION => {
            return Err(ApiError::invalid(
                "anthropic-version",
                format!("`anthropic-version` `{v}` is not supported: use {ANTHROPIC_VERSION}"),
            ));
        }
        Some(_) => {}
    }
    if let Some(v) = headers.direct_browser_access
        && v.trim() != "true"
    {
        return Err(ApiError::invalid(
            "anthropic-dangerous-direct-browser-access",
            "`anthropic-dangerous-direct-browser-access` must be `true` when present",
        ));
    }
    Ok(headers
        .beta
        .into_iter()
        .flat_map(|b| b.split(','))
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned)
        .collect())
}

pub(crate) fn apply_headers(
    request: &mut Request,
    headers: &RequestHeaders<'_>,
) -> Result<(), ApiError> {
    let betas = check_headers(headers)?;
    if betas.is_empty() {
        return Ok(());
    }
    let native = request.native.get_or_insert_with(|| NativeFields {
        protocol: Some(Protocol::Messages),
        fields: Map::new(),
        betas: Vec::new(),
    });
    native.betas = betas;
    // Whether each identifier is allowed is the chosen route's decision (D-04);
    // no converted route can honour any of them.
    pin(&mut request.native_only, "anthropic-beta");
    Ok(())
}

// ---------------------------------------------------------------------------
// Supplier reply

pub(crate) fn response(body: &[u8]) -> Result<Response, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: MessageObject =
        serde_path_to_error::deserialize(&mut de).map_err(DecodeError::json)?;
    de.end().map_err(|err| DecodeError::InvalidJson {
        path: ".".to_owned(),
        message: err.to_string(),
    })?;
    let MessageObject {
        id,
        kind: _,
        role: _,
        model,
        content,
        stop_reason,
        stop_sequence,
        usage: wire_usage,
    } = wire;
    let usage = usage(&wire_usage.ok_or(DecodeError::MissingUsage)?)?;
    let output = content
        .into_iter()
        .enumerate()
        .map(|(j, b)| output_block(&format!("content[{j}]"), b))
        .collect::<Result<Vec<_>, _>>()?;
    let called_tools = output
        .iter()
        .any(|b| matches!(b, OutputBlock::ToolCall { .. }));
    Ok(Response {
        id,
        model,
        output,
        stop_reason: stop_reason_of(stop_reason.as_ref(), called_tools),
        stop_sequence,
        usage,
        // A message object has no creation time; the server stamps its own.
        created: 0,
    })
}

/// One block of a supplier's output. Citations on text are annotations of
/// features the router rejects and are dropped with other unknown members
/// (D-30); a block type the router cannot represent is an invalid reply (CF-08).
pub(crate) fn output_block(path: &str, block: ContentBlock) -> Result<OutputBlock, DecodeError> {
    Ok(match block {
        ContentBlock::Text(b) => OutputBlock::Text { text: b.text },
        ContentBlock::Thinking(b) => OutputBlock::Thinking {
            text: b.thinking,
            signature: b.signature,
        },
        ContentBlock::RedactedThinking(b) => OutputBlock::RedactedThinking { data: b.data },
        ContentBlock::ToolUse(b) => OutputBlock::ToolCall {
            id: b.id,
            name: b.name,
            arguments: b.input.to_string(),
        },
        other => {
            return Err(DecodeError::UnknownContent {
                path: path.to_owned(),
                kind: other.kind().to_owned(),
            });
        }
    })
}

/// Canonical usage from a complete Messages usage. Anthropic's
/// `input_tokens` excludes cache reads and writes; the canonical count
/// includes them. Implausible or overflowing numbers are an invalid reply.
pub(crate) fn usage(wire: &WireUsage) -> Result<Usage, DecodeError> {
    let (Some(input), Some(output)) = (wire.input_tokens, wire.output_tokens) else {
        return Err(DecodeError::MissingUsage);
    };
    let cache_read = wire.cache_read_input_tokens.unwrap_or(0);
    let cache_creation = wire.cache_creation_input_tokens.unwrap_or(0);
    let mut usage = Usage {
        input_tokens: 0,
        output_tokens: output,
        cache_read_input_tokens: cache_read,
        cache_creation_input_tokens: cache_creation,
        reasoning_tokens: wire
            .output_tokens_details
            .as_ref()
            .and_then(|d| d.thinking_tokens)
            .unwrap_or(0),
    };
    match input
        .checked_add(cache_read)
        .and_then(|n| n.checked_add(cache_creation))
    {
        Some(total) => usage.input_tokens = total,
        None => return Err(DecodeError::InvalidUsage { usage }),
    }
    if usage.is_consistent() {
        Ok(usage)
    } else {
        Err(DecodeError::InvalidUsage { usage })
    }
}

pub(crate) fn stop_reason_of(stop: Option<&WireStopReason>, called_tools: bool) -> StopReason {
    match stop {
        Some(WireStopReason::EndTurn) => StopReason::EndTurn,
        Some(WireStopReason::MaxTokens) => StopReason::MaxTokens,
        Some(WireStopReason::StopSequence) => StopReason::StopSequence,
        Some(WireStopReason::ToolUse) => StopReason::ToolUse,
        Some(WireStopReason::PauseTurn) => StopReason::PauseTurn,
        Some(WireStopReason::Refusal) => StopReason::Refusal,
        Some(WireStopReason::Other(other)) => StopReason::Other(other.clone()),
        None if called_tools => StopReason::ToolUse,
        None => StopReason::EndTurn,
    }
}
