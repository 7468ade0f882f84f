//! Wire -> canonical: validate a client's Chat request, read a supplier's reply.
//!
//! Every rejection of a client request is a 400 `invalid_parameter` whose
//! `param` is the path of the offending field (`messages[2].content`), made
//! here before any routing or network work. Shape errors come from
//! `serde_path_to_error`; value rules (ranges, conflicts, unsupported media
//! and tools) are checked by hand below.

use crate::error::DecodeError;
use crate::wire::request::{
    self as wire, ChatMessage, ChatRequest, ChatRole, MessageContent, ToolChoiceMode,
};
use crate::wire::response::{ChatCompletion, ChatUsage, FinishReason, ResponseMessage};
use router_canonical::parse::{self, IMAGE_MEDIA_TYPES, check_image_url, in_range};
use router_canonical::request::NativeFields;
use router_canonical::{
    ApiError, CacheControl, ContentPart, ImageSource, Message, OutputBlock, PromptCacheMode,
    Protocol, Reasoning, Request, Response, ResponseFormat, Role, Sampling, StopReason,
    ThinkingConfig, ThinkingMode, Tool, ToolChoice, Usage,
};
use serde_json::{Map, Value};

/// Unknown top-level fields that are forwarded to Chat suppliers (CF-03).
/// Everything else unknown is accepted and dropped; `store`, `service_tier`
/// and the like are never forwarded.
pub(crate) const NATIVE_ALLOWLIST: [&str; 6] = [
    "logit_bias",
    "logprobs",
    "top_logprobs",
    "metadata",
    "prediction",
    "verbosity",
];

/// Content-part types that carry media other than images (CF-09).
const MEDIA_PARTS: [&str; 7] = [
    "file",
    "input_file",
    "input_audio",
    "audio",
    "video",
    "video_url",
    "document",
];

// ---------------------------------------------------------------------------
// Client request

pub(crate) fn request(body: &[u8]) -> Result<Request, ApiError> {
    convert_request(parse::request_body(body)?)
}

fn convert_request(wire: ChatRequest) -> Result<Request, ApiError> {
    let ChatRequest {
        model,
        messages,
        tools,
        tool_choice,
        parallel_tool_calls,
        response_format,
        temperature,
        top_p,
        frequency_penalty,
        presence_penalty,
        seed,
        stop,
        max_tokens,
        max_completion_tokens,
        reasoning_effort,
        reasoning,
        thinking,
        n,
        modalities,
        audio,
        stream,
        stream_options: _,
        user,
        mut extra,
    } = wire;
    let routing = router_canonical::RoutingOptions::take_from(&mut extra)?;

    let model = model.ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let messages =
        messages.ok_or_else(|| ApiError::invalid("messages", "`messages` is required"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must contain at least one message",
        ));
    }
    if n.is_some_and(|n| n != 1) {
        return Err(ApiError::invalid(
            "n",
            "`n` must be 1: multiple choices are not supported",
        ));
    }
    if let Some(modalities) = &modalities
        && let Some(other) = modalities.iter().find(|m| *m != "text")
    {
        return Err(ApiError::invalid(
            "modalities",
            format!("output modality `{other}` is not supported: only `text` is"),
        ));
    }
    if audio.is_some() {
        return Err(ApiError::invalid(
            "audio",
            "audio output is not supported through inference endpoints",
        ));
    }

    let sampling = Sampling {
        temperature: in_range("temperature", temperature, 0.0, 2.0)?,
        top_p: in_range("top_p", top_p, 0.0, 1.0)?,
        frequency_penalty: in_range("frequency_penalty", frequency_penalty, -2.0, 2.0)?,
        presence_penalty: in_range("presence_penalty", presence_penalty, -2.0, 2.0)?,
        seed,
        stop: match stop {
            None => Vec::new(),
            Some(wire::Stop::One(s)) => vec![s],
            Some(wire::Stop::Many(all)) => all,
        },
        max_output_tokens: token_limit(max_tokens, max_completion_tokens)?,
    };
    let reasoning = Reasoning {
        effort: effort(reasoning_effort, reasoning.and_then(|r| r.effort))?,
        thinking: thinking.map(thinking_config),
        summary: None,
    };

    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| message(i, m))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = tools
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, t)| tool(i, t))
        .collect::<Result<Vec<_>, _>>()?;

    Ok(Request {
        model,
        messages,
        tools,
        tool_choice: tool_choice.map(convert_tool_choice).transpose()?,
        parallel_tool_calls,
        sampling,
        reasoning,
        response_format: response_format.map(convert_response_format),
        stream: stream.unwrap_or(false),
        end_user: user,
        native: native_fields(extra)?,
        routing,
        inbound: Some(Protocol::Chat),
        native_only: None,
        prompt_cache: PromptCacheMode::Passthrough,
        thinking_signed_by: None,
    })
}

fn token_limit(
    max_tokens: Option<u32>,
    max_completion: Option<u32>,
) -> Result<Option<u32>, ApiError> {
    for (param, value) in [
        ("max_tokens", max_tokens),
        ("max_completion_tokens", max_completion),
    ] {
        if value == Some(0) {
            return Err(ApiError::invalid(
                param,
                format!("`{param}` must be an integer of at least 1"),
            ));
        }
    }
    match (max_tokens, max_completion) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid(
            "max_tokens",
            format!(
                "`max_tokens` ({a}) and `max_completion_tokens` ({b}) differ; send one, or the same value in both"
            ),
        )),
        (a, b) => Ok(b.or(a)),
    }
}

/// `reasoning_effort` and `reasoning.effort` are one setting (B-13); kept
/// verbatim, never defaulted or clamped (B-15).
fn effort(top: Option<String>, nested: Option<String>) -> Result<Option<String>, ApiError> {
    match (top, nested) {
        (Some(a), Some(b)) if a != b => Err(ApiError::invalid(
            "reasoning_effort",
            format!(
                "`reasoning_effort` (\"{a}\") and `reasoning.effort` (\"{b}\") differ; send one, or the same value in both"
            ),
        )),
        (a, b) => Ok(a.or(b)),
    }
}

fn thinking_config(t: wire::Thinking) -> ThinkingConfig {
    ThinkingConfig {
        mode: match t.kind {
            wire::ThinkingType::Enabled => ThinkingMode::Enabled,
            wire::ThinkingType::Disabled => ThinkingMode::Disabled,
            wire::ThinkingType::Adaptive => ThinkingMode::Adaptive,
        },
        budget_tokens: t.budget_tokens,
        display: t.display,
    }
}

fn role(role: ChatRole) -> Role {
    match role {
        ChatRole::System => Role::System,
        ChatRole::Developer => Role::Developer,
        ChatRole::User => Role::User,
        ChatRole::Assistant => Role::Assistant,
        ChatRole::Tool => Role::Tool,
    }
}

fn message(i: usize, m: ChatMessage) -> Result<Message, ApiError> {
    let base = format!("messages[{i}]");
    let ChatMessage {
        role: chat_role,
        content,
        name,
        tool_call_id,
        tool_calls,
        extra: _,
    } = m;
    let content_was_string = !matches!(content, Some(MessageContent::Parts(_)));
    let mut parts = match content {
        None => Vec::new(),
        Some(MessageContent::Text(text)) => vec![ContentPart::Text {
            text,
            cache_control: None,
        }],
        Some(MessageContent::Parts(parts)) => parts
            .into_iter()
            .enumerate()
            .map(|(j, p)| content_part(&format!("{base}.content[{j}]"), p))
            .collect::<Result<Vec<_>, _>>()?,
    };
    if tool_calls.is_some() && chat_role != ChatRole::Assistant {
        return Err(ApiError::invalid(
            format!("{base}.tool_calls"),
            "only assistant messages may carry `tool_calls`",
        ));
    }
    match chat_role {
        ChatRole::Tool => {
            let tool_call_id = tool_call_id.ok_or_else(|| {
                ApiError::invalid(
                    format!("{base}.tool_call_id"),
                    "a tool message needs the `tool_call_id` it answers",
                )
            })?;
            parts = vec![ContentPart::ToolResult {
                tool_call_id,
                content: parts,
                is_error: false,
                cache_control: None,
            }];
        }
        ChatRole::Assistant => {
            for (k, call) in tool_calls.into_iter().flatten().enumerate() {
                if call.kind != "function" {
                    return Err(ApiError::invalid(
                        format!("{base}.tool_calls[{k}].type"),
                        format!(
                            "tool calls of type `{}` are not supported: only `function`",
                            call.kind
                        ),
                    ));
                }
                parts.push(ContentPart::ToolCall {
                    id: call.id,
                    name: call.function.name,
                    arguments: call.function.arguments,
                });
            }
        }
        ChatRole::System | ChatRole::Developer | ChatRole::User => {}
    }
    Ok(Message {
        role: role(chat_role),
        content: parts,
        content_was_string,
        name,
    })
}

fn cache_control(c: wire::CacheControl) -> CacheControl {
    CacheControl {
        kind: c.kind,
        ttl: c.ttl,
    }
}

fn content_part(path: &str, part: wire::ContentPart) -> Result<ContentPart, ApiError> {
    Ok(match part {
        wire::ContentPart::Text(p) => ContentPart::Text {
            text: p.text,
            cache_control: p.cache_control.map(cache_control),
        },
        wire::ContentPart::ImageUrl(p) => {
            check_image_url(&format!("{path}.image_url.url"), &p.image_url.url)?;
            ContentPart::Image {
                source: ImageSource::Url {
                    url: p.image_url.url,
                },
                detail: p.image_url.detail,
                cache_control: p.cache_control.map(cache_control),
            }
        }
        wire::ContentPart::InputImage(p) => {
            let source = match (p.image_url, p.file_id) {
                (Some(url), None) => {
                    check_image_url(&format!("{path}.image_url"), &url.url)?;
                    ImageSource::Url { url: url.url }
                }
                (None, Some(file_id)) => ImageSource::Upload { file_id },
                (Some(_), Some(_)) => {
                    return Err(ApiError::invalid(
                        path,
                        "an input_image part takes `image_url` or `file_id`, not both",
                    ));
                }
                (None, None) => {
                    return Err(ApiError::invalid(
                        format!("{path}.image_url"),
                        "an input_image part needs `image_url` or `file_id`",
                    ));
                }
            };
            ContentPart::Image {
                source,
                detail: p.detail,
                cache_control: p.cache_control.map(cache_control),
            }
        }
        wire::ContentPart::Image(p) => {
            let source = match p.source {
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
                    check_image_url(&format!("{path}.source.url"), &url)?;
                    ImageSource::Url { url }
                }
                wire::ImageSource::File { file_id } => ImageSource::Upload { file_id },
            };
            ContentPart::Image {
                source,
                detail: None,
                cache_control: p.cache_control.map(cache_control),
            }
        }
        wire::ContentPart::Unknown(value) => {
            let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
            if MEDIA_PARTS.contains(&kind) {
                return Err(ApiError::invalid(
                    format!("{path}.type"),
                    format!(
                        "content parts of type `{kind}` are not supported: inference accepts text and image input only"
                    ),
                ));
            }
            ContentPart::Opaque {
                protocol: Protocol::Chat,
                value,
            }
        }
    })
}

/// Image URLs are `https:`, `http:`, or a base64 `data:` URL of one of the
/// four image types (GP-02).
fn tool(i: usize, t: wire::ToolDefinition) -> Result<Tool, ApiError> {
    if t.kind != "function" {
        return Err(ApiError::invalid(
            format!("tools[{i}].type"),
            format!(
                "tools of type `{}` are not supported: only client `function` tools",
                t.kind
            ),
        ));
    }
    let function = t.function.ok_or_else(|| {
        ApiError::invalid(
            format!("tools[{i}].function"),
            "a function tool needs `function` with a `name`",
        )
    })?;
    let parameters = match function.parameters {
        None => empty_object_schema(),
        Some(Value::Object(schema)) => Value::Object(schema),
        Some(_) => {
            return Err(ApiError::invalid(
                format!("tools[{i}].function.parameters"),
                "`parameters` must be a JSON Schema object",
            ));
        }
    };
    Ok(Tool {
        name: function.name,
        description: function.description,
        parameters,
        strict: function.strict,
        cache_control: t.cache_control.map(cache_control),
    })
}

/// `{"type": "object", "properties": {}}`: the schema of a tool without `parameters`.
fn empty_object_schema() -> Value {
    let mut schema = Map::new();
    schema.insert("type".to_owned(), Value::String("object".to_owned()));
    schema.insert("properties".to_owned(), Value::Object(Map::new()));
    Value::Object(schema)
}

fn convert_tool_choice(choice: wire::ToolChoice) -> Result<ToolChoice, ApiError> {
    match choice {
        wire::ToolChoice::Mode(ToolChoiceMode::Auto) => Ok(ToolChoice::Auto),
        wire::ToolChoice::Mode(ToolChoiceMode::None) => Ok(ToolChoice::None),
        wire::ToolChoice::Mode(ToolChoiceMode::Required) => Ok(ToolChoice::Required),
        wire::ToolChoice::Named(named) => {
            if named.kind != "function" {
                return Err(ApiError::invalid(
                    "tool_choice.type",
                    format!(
                        "tool_choice of type `{}` is not supported: use `function`",
                        named.kind
                    ),
                ));
            }
            let function = named.function.ok_or_else(|| {
                ApiError::invalid(
                    "tool_choice.function",
                    "a function tool_choice needs `function.name`",
                )
            })?;
            Ok(ToolChoice::Tool {
                name: function.name,
            })
        }
    }
}

fn convert_response_format(format: wire::ResponseFormat) -> ResponseFormat {
    match format {
        wire::ResponseFormat::Text => ResponseFormat::Text,
        wire::ResponseFormat::JsonObject => ResponseFormat::JsonObject,
        wire::ResponseFormat::JsonSchema { json_schema } => ResponseFormat::JsonSchema {
            name: json_schema.name,
            // OpenAI makes `schema` optional; `Null` stands for its absence
            // and is omitted again by the encoder.
            schema: json_schema.schema.unwrap_or(Value::Null),
            strict: json_schema.strict,
            description: json_schema.description,
        },
    }
}

/// Keep the vetted passthrough fields; drop every other unknown field.
fn native_fields(extra: Map<String, Value>) -> Result<Option<NativeFields>, ApiError> {
    let mut fields = Map::new();
    for (key, value) in extra {
        if value.is_null() || !NATIVE_ALLOWLIST.contains(&key.as_str()) {
            continue;
        }
        let (ok, expected) = match key.as_str() {
            "logit_bias" | "metadata" | "prediction" => (value.is_object(), "an object"),
            "logprobs" => (value.is_boolean(), "a boolean"),
            "top_logprobs" => (value.is_u64(), "a non-negative integer"),
            _ => (value.is_string(), "a string"),
        };
        if !ok {
            return Err(ApiError::invalid(
                key.clone(),
                format!("`{key}` must be {expected}"),
            ));
        }
        fields.insert(key, value);
    }
    Ok((!fields.is_empty()).then_some(NativeFields {
        betas: Vec::new(),
        protocol: Some(Protocol::Chat),
        fields,
    }))
}

// ---------------------------------------------------------------------------
// Supplier reply

pub(crate) fn response(body: &[u8]) -> Result<Response, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: ChatCompletion =
        serde_path_to_error::deserialize(&mut de).map_err(DecodeError::json)?;
    de.end().map_err(|err| DecodeError::InvalidJson {
        path: ".".to_owned(),
        message: err.to_string(),
    })?;
    let ChatCompletion {
        id,
        object: _,
        created,
        model,
        choices,
        usage: wire_usage,
    } = wire;
    let choice = choices
        .into_iter()
        .min_by_key(|c| c.index)
        .ok_or(DecodeError::MissingChoice)?;
    let usage = usage(wire_usage.as_ref().ok_or(DecodeError::MissingUsage)?)?;
    let output = output(choice.message)?;
    let called_tools = output
        .iter()
        .any(|b| matches!(b, OutputBlock::ToolCall { .. }));
    Ok(Response {
        id,
        model,
        output,
        stop_reason: stop_reason(choice.finish_reason.as_ref(), called_tools),
        // Chat does not say which stop sequence matched (if any).
        stop_sequence: None,
        usage,
        created,
    })
}

/// Reasoning first, then text, refusal and tool calls (the order a
/// streaming supplier produces them in).
fn output(message: ResponseMessage) -> Result<Vec<OutputBlock>, DecodeError> {
    let ResponseMessage {
        role: _,
        content,
        refusal,
        tool_calls,
        reasoning_content,
        reasoning,
    } = message;
    let mut out = Vec::new();
    if let Some(text) = reasoning_content.or(reasoning).filter(|t| !t.is_empty()) {
        out.push(OutputBlock::Thinking {
            text,
            signature: None,
        });
    }
    let text = match content {
        None => None,
        Some(MessageContent::Text(text)) => Some(text),
        Some(MessageContent::Parts(parts)) => {
            let mut text = String::new();
            for (j, part) in parts.into_iter().enumerate() {
                match part {
                    wire::ContentPart::Text(p) => text.push_str(&p.text),
                    other => {
                        return Err(DecodeError::UnknownContent {
                            path: format!("choices[0].message.content[{j}]"),
                            kind: other.kind().to_owned(),
                        });
                    }
                }
            }
            Some(text)
        }
    };
    let tool_calls = tool_calls.unwrap_or_default();
    if let Some(text) = text
        && (!text.is_empty() || (tool_calls.is_empty() && refusal.is_none()))
    {
        out.push(OutputBlock::Text { text });
    }
    if let Some(text) = refusal {
        out.push(OutputBlock::Refusal { text });
    }
    for call in tool_calls {
        if call.kind != "function" {
            return Err(DecodeError::UnknownToolCallType { kind: call.kind });
        }
        out.push(OutputBlock::ToolCall {
            id: call.id,
            name: call.function.name,
            arguments: call.function.arguments,
        });
    }
    Ok(out)
}

/// Canonical usage from Chat usage; implausible numbers are an invalid reply.
pub(crate) fn usage(wire: &ChatUsage) -> Result<Usage, DecodeError> {
    let usage = Usage {
        input_tokens: wire.prompt_tokens,
        output_tokens: wire.completion_tokens,
        cache_read_input_tokens: wire
            .prompt_tokens_details
            .as_ref()
            .and_then(|d| d.cached_tokens)
            .unwrap_or(0),
        cache_creation_input_tokens: 0,
        reasoning_tokens: wire
            .completion_tokens_details
            .as_ref()
            .and_then(|d| d.reasoning_tokens)
            .unwrap_or(0),
    };
    if usage.is_consistent() {
        Ok(usage)
    } else {
        Err(DecodeError::InvalidUsage { usage })
    }
}

/// A stop sequence ends a Chat completion with `stop` too, and Chat does not
/// say which one matched, so it reads as `EndTurn`.
pub(crate) fn stop_reason(finish: Option<&FinishReason>, called_tools: bool) -> StopReason {
    match finish {
        Some(FinishReason::Stop) => StopReason::EndTurn,
        Some(FinishReason::Length) => StopReason::MaxTokens,
        Some(FinishReason::ToolCalls | FinishReason::FunctionCall) => StopReason::ToolUse,
        Some(FinishReason::ContentFilter) => StopReason::ContentFilter,
        Some(FinishReason::Other(other)) => StopReason::Other(other.clone()),
        None if called_tools => StopReason::ToolUse,
        None => StopReason::EndTurn,
    }
}
