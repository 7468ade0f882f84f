//! Validating a client's Messages request (and count_tokens body) into the
//! canonical model.
//!
//! Every rejection of a client request is a 400 `invalid_parameter` whose
//! `param` is the path of the offending field
//! (`messages[2].content[0].source.media_type`), made here before any
//! routing or network work. Shape errors come from `serde_path_to_error`;
//! value rules (ranges, conflicts, unknown members, unsupported blocks and
//! tools) are checked by hand below.
//!
//! Unlike the OpenAI surfaces, Messages rejects every member it does not
//! know, at the top level and inside messages, blocks, tools,
//! `tool_choice` and `thinking`: on a native route an unverified Anthropic
//! field could switch on server features or change billing.

use super::content::{block, check_cache_control, text_part};
use crate::convert::{MAX_STOP_SEQUENCES, NATIVE_TOOL_MEMBERS};
use crate::wire::request::{
    self as wire, Content, ContentBlock, InputMessage, MessagesRequest, WireRole,
};
use router_canonical::BodyExtensions;
use router_canonical::parse::{self, in_range, join_path};
use router_canonical::request::NativeFields;
use router_canonical::{
    ApiError, ContentPart, Message, Protocol, Reasoning, Request, ResponseFormat, Role, Sampling,
    ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
use serde_json::{Map, Value};

/// The canonical `response_format` name of an `output_config.format`
/// (Messages names no schema; OpenAI requires a name).
const OUTPUT_FORMAT_NAME: &str = "output";

/// At most this many messages and tools; the stop sequence
/// limit is shared with the supplier encoder.
const MAX_MESSAGES: usize = 100_000;
const MAX_TOOLS: usize = 128;
/// The smallest thinking budget.
const MIN_THINKING_BUDGET: u32 = 1024;

/// Which endpoint a body arrived on: count_tokens takes looser shapes but no
/// media or opaque history.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Endpoint {
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

pub(crate) fn request(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<Request, ApiError> {
    convert_request(parse::request_body(body)?, Endpoint::Messages, extensions)
}

pub(crate) fn count_tokens(
    body: &[u8],
    extensions: &mut dyn BodyExtensions,
) -> Result<Request, ApiError> {
    convert_request(
        parse::request_body(body)?,
        Endpoint::CountTokens,
        extensions,
    )
}

/// Reject the first member of `extra` (unknown members of a known object).
pub(super) fn no_unknown(path: &str, extra: &Map<String, Value>) -> Result<(), ApiError> {
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
pub(super) fn pin(native_only: &mut Option<String>, reason: impl Into<String>) {
    if native_only.is_none() {
        *native_only = Some(reason.into());
    }
}

fn convert_request(
    wire: MessagesRequest,
    endpoint: Endpoint,
    extensions: &mut dyn BodyExtensions,
) -> Result<Request, ApiError> {
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
    // A gateway's own members first; any other unknown member is refused.
    extensions.take(&mut extra)?;
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
        choices: None,
        best_of: None,
    };

    let mut native_only = None;
    let mut messages = Vec::with_capacity(wire_messages.len() + 1);
    if let Some(system) = system
        && let Some(message) = system_message(system, endpoint)?
    {
        messages.push(message);
    }
    for (i, m) in wire_messages.into_iter().enumerate() {
        messages.push(message(i, m, endpoint, &mut native_only, &*extensions)?);
    }

    let mut tool_members = Map::new();
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
                .map(|(i, t)| tool(i, t, endpoint, &mut tool_members, &mut native_only))
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
    if !tool_members.is_empty() {
        fields.insert(NATIVE_TOOL_MEMBERS.to_owned(), Value::Object(tool_members));
    }
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
        inbound: Some(Protocol::Messages),
        native_only,
    })
}

fn unknown_top_level(key: &str, endpoint: Endpoint) -> ApiError {
    let why = match key {
        "mcp_servers" => "MCP servers are not supported: only client tools are".to_owned(),
        "container" => "container execution is not supported".to_owned(),
        _ => format!("it is not accepted by {}", endpoint.path()),
    };
    ApiError::invalid(key, format!("unknown field `{key}`: {why}"))
}

/// `system`: a non-empty string or text blocks; count_tokens also
/// takes an empty string, which counts nothing.
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
        Content::Seq(blocks) if blocks.is_empty() => Ok(None),
        Content::Seq(blocks) => {
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
    extensions: &dyn BodyExtensions,
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
        Content::Seq(blocks) => (
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
                        extensions,
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

/// A client tool with an object `input_schema`; typed hosted and
/// server tools are rejected. count_tokens takes any tool object and
/// counts its name, description and schema.
///
/// The members only Messages knows go to `members` (by tool name), for a
/// native route: `eager_input_streaming` and `defer_loading` change only how
/// the reply is streamed or the tool loaded, so a converted route drops
/// them; `input_examples` change what the model sees, so they pin the
/// request to a native route.
fn tool(
    i: usize,
    t: wire::ToolDefinition,
    endpoint: Endpoint,
    members: &mut Map<String, Value>,
    native_only: &mut Option<String>,
) -> Result<Tool, ApiError> {
    let base = format!("tools[{i}]");
    let wire::ToolDefinition {
        kind,
        name,
        description,
        input_schema,
        cache_control,
        strict,
        eager_input_streaming,
        defer_loading,
        input_examples,
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
                "tools of type `{kind}` are not supported: only client tools are (no hosted or server tools)"
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
    let mut native = Map::new();
    if let Some(eager) = eager_input_streaming {
        native.insert("eager_input_streaming".to_owned(), Value::Bool(eager));
    }
    if let Some(defer) = defer_loading {
        native.insert("defer_loading".to_owned(), Value::Bool(defer));
    }
    if let Some(examples) = input_examples {
        if let Some(j) = examples.iter().position(|e| !e.is_object()) {
            return Err(ApiError::invalid(
                format!("{base}.input_examples[{j}]"),
                "an input example must be an object of the tool's input",
            ));
        }
        pin(native_only, format!("{base}.input_examples"));
        native.insert("input_examples".to_owned(), Value::Array(examples));
    }
    if !native.is_empty() {
        members.insert(name.clone(), Value::Object(native));
    }
    Ok(Tool {
        name,
        description,
        parameters,
        strict,
        cache_control: check_cache_control(&base, cache_control)?,
    })
}

/// `tool_choice` and what `disable_parallel_tool_use` says about parallel calls.
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

/// `thinking`.
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

/// `output_config`: `effort` (a free string) and `format` (a JSON
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
