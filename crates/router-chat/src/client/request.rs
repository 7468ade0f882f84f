//! Validate a client's Chat request into the canonical model.
//!
//! Every rejection of a client request is a 400 `invalid_parameter` whose
//! `param` is the path of the offending field (`messages[2].content`), made
//! here before any routing or network work. Shape errors come from
//! `serde_path_to_error`; value rules (ranges, conflicts, unsupported media
//! and tools) are checked by hand below.

use super::ChatExtra;
use crate::native::NATIVE_ALLOWLIST;
use crate::wire::request::{
    self as wire, ChatMessage, ChatRequest, ChatRole, MessageContent, ToolChoiceMode,
};
use router_canonical::BodyExtensions;
use router_canonical::parse::{self, OpenAiSampling, check_image_url, function_tool_choice};
use router_canonical::request::NativeFields;
use router_canonical::{
    ApiError, CacheControl, ContentPart, ImageSource, Message, Protocol, Reasoning, Request,
    ResponseFormat, Role, Sampling, ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
use serde_json::{Map, Value};

/// Content-part types that carry media other than images.
const MEDIA_PARTS: [&str; 7] = [
    "file",
    "input_file",
    "input_audio",
    "audio",
    "video",
    "video_url",
    "document",
];

pub(crate) fn request(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<(Request, ChatExtra), ApiError> {
    let wire: ChatRequest = parse::request_body(body)?;
    let extra = ChatExtra {
        include_usage: wire
            .stream_options
            .as_ref()
            .and_then(|options| options.include_usage)
            .unwrap_or(false),
    };
    Ok((convert_request(wire, extensions)?, extra))
}

fn convert_request(
    wire: ChatRequest,
    extensions: &mut dyn BodyExtensions,
) -> Result<Request, ApiError> {
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
    // A gateway's own members first; the rest are judged as Chat's.
    extensions.take(&mut extra)?;

    let model = model.ok_or_else(|| ApiError::invalid("model", "`model` is required"))?;
    let messages =
        messages.ok_or_else(|| ApiError::invalid("messages", "`messages` is required"))?;
    if messages.is_empty() {
        return Err(ApiError::invalid(
            "messages",
            "`messages` must contain at least one message",
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
            "audio output is not supported: only text output is",
        ));
    }

    let ranges = OpenAiSampling {
        temperature,
        top_p,
        frequency_penalty,
        presence_penalty,
    }
    .checked()?;
    let sampling = Sampling {
        seed,
        stop: match stop {
            None => Vec::new(),
            Some(wire::Stop::Text(s)) => vec![s],
            Some(wire::Stop::Seq(all)) => all,
        },
        max_output_tokens: token_limit(max_tokens, max_completion_tokens)?,
        choices: n,
        ..ranges
    };
    let reasoning = Reasoning {
        effort: effort(reasoning_effort, reasoning.and_then(|r| r.effort))?,
        thinking: thinking.map(thinking_config),
        summary: None,
    };

    let messages = messages
        .into_iter()
        .enumerate()
        .map(|(i, m)| message(i, m, &*extensions))
        .collect::<Result<Vec<_>, _>>()?;
    let tools = tools
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(i, t)| tool(i, t))
        .collect::<Result<Vec<_>, _>>()?;

    let mut request = Request {
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
        native_only: None,
        inbound: Some(Protocol::Chat),
    };
    request.native_only = logprobs_asked(&request.native);
    Ok(request)
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

/// `reasoning_effort` and `reasoning.effort` are one setting; kept
/// verbatim, never defaulted or clamped.
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

fn message(i: usize, m: ChatMessage, extensions: &dyn BodyExtensions) -> Result<Message, ApiError> {
    let base = format!("messages[{i}]");
    let ChatMessage {
        role: chat_role,
        content,
        name,
        tool_call_id,
        tool_calls,
        extra: _,
    } = m;
    let content_was_string = !matches!(content, Some(MessageContent::Seq(_)));
    let mut parts = match content {
        None => Vec::new(),
        Some(MessageContent::Text(text)) => vec![ContentPart::Text {
            text,
            cache_control: None,
        }],
        Some(MessageContent::Seq(parts)) => parts
            .into_iter()
            .enumerate()
            .map(|(j, p)| content_part(&format!("{base}.content[{j}]"), chat_role, p, extensions))
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

fn content_part(
    path: &str,
    chat_role: ChatRole,
    part: wire::ContentPart,
    extensions: &dyn BodyExtensions,
) -> Result<ContentPart, ApiError> {
    Ok(match part {
        wire::ContentPart::Text(p) => ContentPart::Text {
            text: p.text,
            cache_control: p.cache_control.map(cache_control),
        },
        wire::ContentPart::ImageUrl(p) => {
            check_image_url(
                &format!("{path}.image_url.url"),
                &p.image_url.url,
                extensions,
            )?;
            ContentPart::Image {
                source: ImageSource::Url {
                    url: p.image_url.url,
                },
                detail: p.image_url.detail,
                cache_control: p.cache_control.map(cache_control),
            }
        }
        wire::ContentPart::InputImage(p) => {
            let url = p.image_url.map(|image_url| image_url.url);
            let source = parse::input_image_source(path, url, p.file_id, extensions)?;
            ContentPart::Image {
                source,
                detail: p.detail,
                cache_control: p.cache_control.map(cache_control),
            }
        }
        wire::ContentPart::Image(p) => {
            let source = match p.source {
                wire::ImageSource::Base64 { media_type, data } => {
                    parse::base64_image(path, media_type, data)?
                }
                wire::ImageSource::Url { url } => {
                    check_image_url(&format!("{path}.source.url"), &url, extensions)?;
                    ImageSource::Url { url }
                }
                wire::ImageSource::File { file_id } => ImageSource::Upload {
                    file_id,
                    param: format!("{path}.source.file_id"),
                },
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
            // OpenAI's assistant messages may replay a `refusal` part: kept
            // whole for Chat routes (other protocols refuse it, naming
            // `messages`). Any other type is no Chat part: refused here, so
            // a translation never meets it first at encode time.
            if kind == "refusal" && chat_role == ChatRole::Assistant {
                return Ok(ContentPart::Opaque {
                    protocol: Protocol::Chat,
                    value,
                });
            }
            return Err(ApiError::invalid(
                format!("{path}.type"),
                format!(
                    "`{kind}` is not a content part type: use `text` or `image_url` (`refusal` in assistant messages)"
                ),
            ));
        }
    })
}

/// Image URLs are `https:`, `http:`, or a base64 `data:` URL of one of the
/// four image types.
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
            function_tool_choice(&named.kind, named.function.map(|f| f.name), || {
                ApiError::invalid(
                    "tool_choice.function",
                    "a function tool_choice needs `function.name`",
                )
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

/// `logprobs: true` (or a `top_logprobs`) asks for what only a Chat supplier
/// returns: the request keeps to Chat routes, and any other supplier refuses
/// it naming the field rather than answering `logprobs: null`.
fn logprobs_asked(native: &Option<NativeFields>) -> Option<String> {
    let fields = &native.as_ref()?.fields;
    if fields.get("logprobs").and_then(Value::as_bool) == Some(true) {
        Some("logprobs".to_owned())
    } else if fields
        .get("top_logprobs")
        .and_then(Value::as_u64)
        .is_some_and(|n| n > 0)
    {
        Some("top_logprobs".to_owned())
    } else {
        None
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
