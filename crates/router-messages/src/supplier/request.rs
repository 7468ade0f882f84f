//! Encoding a canonical request as the body sent to a Messages supplier.
//!
//! What Messages cannot carry is an `unsupported_conversion` error (an
//! unresolved upload, another protocol's opaque part, a one-hour cache marker
//! from another protocol, tool arguments that are not a JSON object,
//! a temperature above 1, penalties, `json_object` output), with documented
//! exceptions that drop hints rather than meaning:
//!
//! * an image's `detail` (Anthropic sizes images itself);
//! * `seed` (best effort on OpenAI, absent on Messages);
//! * `reasoning.summary` (Messages returns summarized thinking by default);
//! * thinking blocks without a signature in a converted history (Messages
//!   refuses unsigned thinking; the model reasons afresh);
//! * the name of a JSON schema, and `strict: false` (Messages always
//!   enforces the schema, which satisfies a non-strict request too).

use crate::convert::{MAX_STOP_SEQUENCES, NATIVE_FIELDS, NATIVE_TOOL_MEMBERS, tool_input};
use crate::wire::request::{
    self as wire, Content, ContentBlock, ImageBlock, InputMessage, MessagesRequest,
    RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolDefinition, ToolResultBlock, ToolUseBlock,
    WireRole,
};
use router_canonical::{
    ApiError, CacheControl, ContentPart, ErrorCode, Field, ImageSource, Message, Protocol, Request,
    ResponseFormat, Role, SupplierTarget, ThinkingMode, Tool, ToolChoice,
};
use serde_json::{Map, Value};

pub(crate) fn request(req: &Request, target: &SupplierTarget<'_>) -> Result<Vec<u8>, ApiError> {
    let wire = messages_request(req, target)?;
    serde_json::to_vec(&wire).map_err(|err| {
        ApiError::new(
            ErrorCode::InternalError,
            format!("could not serialize the Messages request: {err}"),
        )
    })
}

fn messages_request(
    req: &Request,
    target: &SupplierTarget<'_>,
) -> Result<MessagesRequest, ApiError> {
    let native_request = req.inbound == Some(Protocol::Messages);
    if !native_request {
        no_one_hour_markers(req)?;
    }
    let (system, messages) = conversation(req, native_request)?;
    if messages.is_empty() {
        return Err(ApiError::unsupported_conversion(
            "a request without user or assistant turns cannot be sent to a Messages supplier",
        )
        .with_field(Field::Messages));
    }
    let sampling = &req.sampling;
    if sampling.stop.len() > MAX_STOP_SEQUENCES || sampling.stop.iter().any(String::is_empty) {
        return Err(ApiError::unsupported_conversion(format!(
            "a Messages supplier takes at most {MAX_STOP_SEQUENCES} non-empty stop sequences"
        ))
        .with_field(Field::StopSequences));
    }
    if let Some(t) = sampling.temperature
        && t > 1.0
    {
        return Err(ApiError::unsupported_conversion(format!(
            "temperature {t} cannot be sent to a Messages supplier, which accepts 0 to 1"
        ))
        .with_field(Field::Temperature));
    }
    for (name, value) in [
        ("frequency_penalty", sampling.frequency_penalty),
        ("presence_penalty", sampling.presence_penalty),
    ] {
        if value.is_some_and(|v| v != 0.0) {
            return Err(ApiError::unsupported_conversion(format!(
                "`{name}` cannot be sent to a Messages supplier"
            ))
            .with_param(name));
        }
    }
    // Messages requires a limit: the client's, else the target's default.
    let max_tokens = sampling
        .max_output_tokens
        .or(target.default_max_output_tokens)
        .ok_or_else(|| {
            ApiError::unsupported_conversion(
                "a Messages supplier requires `max_tokens`: the request sets no output limit and the target gives no default",
            )
            .with_field(Field::MaxOutputTokens)
        })?;
    let mut wire = MessagesRequest {
        model: Some(target.model.to_owned()),
        max_tokens: Some(max_tokens),
        messages: Some(messages),
        system,
        stop_sequences: (!sampling.stop.is_empty()).then(|| Some(sampling.stop.clone())),
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        stream: Some(req.stream),
        tools: (!req.tools.is_empty()).then(|| {
            let members = native_tool_members(req);
            req.tools
                .iter()
                .map(|t| tool(t, members.and_then(|m| m.get(&t.name))))
                .collect()
        }),
        tool_choice: tool_choice(req, native_request),
        thinking: thinking(req, native_request)?,
        context_management: None,
        metadata: None,
        output_config: None,
        extra: Map::new(),
    };
    let native = native_fields(req);
    wire.context_management = native.get("context_management").cloned();
    wire.metadata = metadata(req, native.get("metadata"));
    wire.output_config = output_config(req, native.get("output_config"))?;
    if target.prompt_cache_marker {
        add_cache_marker(&mut wire);
    }
    Ok(wire)
}

/// The vetted native members, when the request came in over Messages.
fn native_fields(req: &Request) -> Map<String, Value> {
    match &req.native {
        Some(native) if native.protocol == Some(Protocol::Messages) => native
            .fields
            .iter()
            .filter(|(key, _)| NATIVE_FIELDS.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value.clone()))
            .collect(),
        _ => Map::new(),
    }
}

/// A converted request keeps five-minute markers; a one-hour marker
/// is a promise the conversion cannot keep.
fn no_one_hour_markers(req: &Request) -> Result<(), ApiError> {
    fn one_hour(cc: Option<&CacheControl>) -> bool {
        cc.is_some_and(|cc| cc.ttl.as_deref() == Some("1h"))
    }
    fn part_has(part: &ContentPart) -> bool {
        match part {
            ContentPart::Text { cache_control, .. } | ContentPart::Image { cache_control, .. } => {
                one_hour(cache_control.as_ref())
            }
            ContentPart::ToolResult {
                content,
                cache_control,
                ..
            } => one_hour(cache_control.as_ref()) || content.iter().any(part_has),
            _ => false,
        }
    }
    let field = if req.messages.iter().any(|m| m.content.iter().any(part_has)) {
        Field::Messages
    } else if req.tools.iter().any(|t| one_hour(t.cache_control.as_ref())) {
        Field::Tools
    } else {
        return Ok(());
    };
    Err(ApiError::unsupported_conversion(
        "a one-hour cache_control marker cannot be converted to a Messages request; use the five-minute default",
    )
    .with_field(field))
}

fn is_system(role: Role) -> bool {
    matches!(role, Role::System | Role::Developer)
}

/// The top-level `system` and the `messages`.
///
/// System and developer messages of a converted request all become the
/// top-level `system`, in order. A request that came in over Messages has at
/// most one leading system message from its `system` field; a later system
/// message was a `system` turn in `messages` and stays in place.
/// (A `system` turn that came first, without a `system` field, is sent as
/// the `system` field: the same instruction at the same place.)
fn conversation(
    req: &Request,
    native_request: bool,
) -> Result<(Option<Content>, Vec<InputMessage>), ApiError> {
    let mut system_messages: Vec<&Message> = Vec::new();
    let mut messages: Vec<InputMessage> = Vec::with_capacity(req.messages.len());
    // Whether the last wire message is a user turn built from tool results,
    // so consecutive tool results share one user turn as Messages requires.
    let mut open_tool_turn = false;
    for (index, message) in req.messages.iter().enumerate() {
        if is_system(message.role) && (!native_request || index == 0) {
            system_messages.push(message);
            continue;
        }
        if message.role == Role::Tool {
            let blocks = tool_turn(message)?;
            match messages.last_mut() {
                Some(InputMessage {
                    content: Content::Seq(previous),
                    ..
                }) if open_tool_turn => previous.extend(blocks),
                _ => messages.push(InputMessage::new(WireRole::User, Content::Seq(blocks))),
            }
            open_tool_turn = true;
            continue;
        }
        open_tool_turn = false;
        let role = match message.role {
            Role::User => WireRole::User,
            Role::Assistant => WireRole::Assistant,
            Role::System | Role::Developer | Role::Tool => WireRole::System,
            // A role added later speaks as the user.
            _ => WireRole::User,
        };
        let blocks = message
            .content
            .iter()
            .map(|part| block(part, message.role))
            .collect::<Result<Vec<_>, _>>()?
            .into_iter()
            .flatten()
            .collect::<Vec<_>>();
        if blocks.is_empty() && !native_request {
            // Messages refuses empty turns; a converted one said nothing.
            continue;
        }
        messages.push(InputMessage::new(
            role,
            content(blocks, message.content_was_string),
        ));
    }
    Ok((system(&system_messages, native_request)?, messages))
}

/// A string when the message came as one (and is one plain text), else blocks.
fn content(blocks: Vec<ContentBlock>, prefer_string: bool) -> Content {
    if prefer_string
        && let [
            ContentBlock::Text(TextBlock {
                text,
                cache_control: None,
                ..
            }),
        ] = blocks.as_slice()
    {
        return Content::Text(text.clone());
    }
    Content::Seq(blocks)
}

fn system(messages: &[&Message], native_request: bool) -> Result<Option<Content>, ApiError> {
    let mut blocks = Vec::new();
    for message in messages {
        for part in &message.content {
            match part {
                ContentPart::Text {
                    text,
                    cache_control,
                } => {
                    // A converted empty instruction says nothing, and
                    // Messages refuses it; a native one is the client's.
                    if text.is_empty() && cache_control.is_none() && !native_request {
                        continue;
                    }
                    blocks.push(ContentBlock::Text(TextBlock {
                        text: text.clone(),
                        cache_control: cache_control.as_ref().map(wire_cache_control),
                        citations: None,
                        extra: Map::new(),
                    }));
                }
                _ => {
                    return Err(ApiError::unsupported_conversion(format!(
                        "a {} message may hold only text when sent to a Messages supplier",
                        message.role.as_str()
                    ))
                    .with_field(Field::Messages));
                }
            }
        }
    }
    if blocks.is_empty() {
        return Ok(None);
    }
    let single_string = matches!(messages, [only] if only.content_was_string);
    Ok(Some(content(blocks, single_string)))
}

/// A tool message's results, as the blocks of a user turn.
fn tool_turn(message: &Message) -> Result<Vec<ContentBlock>, ApiError> {
    message
        .content
        .iter()
        .map(|part| match part {
            ContentPart::ToolResult { .. } => block(part, Role::User)?.ok_or_else(|| {
                ApiError::unsupported_conversion("a tool result could not be converted")
                    .with_field(Field::Messages)
            }),
            _ => Err(ApiError::unsupported_conversion(
                "a tool message may hold only tool results when sent to a Messages supplier",
            )
            .with_field(Field::Messages)),
        })
        .collect()
}

fn wire_cache_control(c: &CacheControl) -> wire::CacheControl {
    wire::CacheControl {
        kind: c.kind.clone(),
        ttl: c.ttl.clone(),
    }
}

/// One canonical part as a block of a `role` turn; `None` for a part that is
/// documented to be dropped (an unsigned thinking block).
fn block(part: &ContentPart, role: Role) -> Result<Option<ContentBlock>, ApiError> {
    let block = match part {
        ContentPart::Text {
            text,
            cache_control,
        } => ContentBlock::Text(TextBlock {
            text: text.clone(),
            cache_control: cache_control.as_ref().map(wire_cache_control),
            citations: None,
            extra: Map::new(),
        }),
        ContentPart::Image {
            source,
            detail: _,
            cache_control,
        } => ContentBlock::Image(ImageBlock {
            source: image_source(source)?,
            cache_control: cache_control.as_ref().map(wire_cache_control),
            extra: Map::new(),
        }),
        ContentPart::ToolCall {
            id,
            name,
            arguments,
        } => {
            if role != Role::Assistant {
                return Err(ApiError::unsupported_conversion(format!(
                    "a tool call in a {} message cannot be sent to a Messages supplier",
                    role.as_str()
                ))
                .with_field(Field::Messages));
            }
            ContentBlock::ToolUse(ToolUseBlock {
                id: id.clone(),
                name: name.clone(),
                input: tool_input(arguments).ok_or_else(|| {
                    ApiError::unsupported_conversion(format!(
                        "the arguments of tool call `{id}` are not a JSON object, which Messages requires"
                    )).with_field(Field::Messages)
                })?,
                cache_control: None,
                extra: Map::new(),
            })
        }
        ContentPart::ToolResult {
            tool_call_id,
            content: parts,
            is_error,
            cache_control,
        } => {
            if !matches!(role, Role::User | Role::Tool) {
                return Err(ApiError::unsupported_conversion(format!(
                    "a tool result in a {} message cannot be sent to a Messages supplier",
                    role.as_str()
                ))
                .with_field(Field::Messages));
            }
            let mut inner = Vec::with_capacity(parts.len());
            for part in parts {
                match part {
                    ContentPart::Text { .. } | ContentPart::Image { .. } => {
                        inner.extend(block(part, Role::User)?);
                    }
                    _ => {
                        return Err(ApiError::unsupported_conversion(
                            "a tool result may hold only text and images when sent to a Messages supplier",
                        ).with_field(Field::Messages));
                    }
                }
            }
            ContentBlock::ToolResult(ToolResultBlock {
                tool_use_id: tool_call_id.clone(),
                // One plain text is sent as a string (the two are equivalent).
                content: (!inner.is_empty()).then(|| content(inner, true)),
                is_error: is_error.then_some(true),
                cache_control: cache_control.as_ref().map(wire_cache_control),
                extra: Map::new(),
            })
        }
        ContentPart::Thinking { text, signature } => match signature {
            Some(signature) => ContentBlock::Thinking(ThinkingBlock {
                thinking: text.clone(),
                signature: Some(signature.clone()),
                extra: Map::new(),
            }),
            None => return Ok(None),
        },
        ContentPart::RedactedThinking { data } => {
            ContentBlock::RedactedThinking(RedactedThinkingBlock {
                data: data.clone(),
                extra: Map::new(),
            })
        }
        ContentPart::Opaque {
            protocol: Protocol::Messages,
            value,
        } => ContentBlock::Unknown(value.clone()),
        ContentPart::Opaque { protocol, .. } => {
            return Err(ApiError::unsupported_conversion(format!(
                "a content part of the {protocol} protocol cannot be sent to a Messages supplier"
            ))
            .with_field(Field::Messages));
        }
        _ => {
            return Err(ApiError::unsupported_conversion(
                "this content part cannot be sent to a Messages supplier",
            )
            .with_field(Field::Messages));
        }
    };
    Ok(Some(block))
}

fn image_source(source: &ImageSource) -> Result<wire::ImageSource, ApiError> {
    match source {
        ImageSource::Url { url } => {
            if let Some((media_type, data)) = data_url(url) {
                Ok(wire::ImageSource::Base64 { media_type, data })
            } else {
                Ok(wire::ImageSource::Url { url: url.clone() })
            }
        }
        ImageSource::Base64 { media_type, data } => Ok(wire::ImageSource::Base64 {
            media_type: media_type.clone(),
            data: data.clone(),
        }),
        ImageSource::Upload { .. } => Err(ApiError::unsupported_conversion(
            "an uploaded image must be resolved to its bytes before it is sent to a Messages supplier",
        ).with_field(Field::Messages)),
    }
}

/// `data:<media type>;base64,<data>` split into its media type (lowercased)
/// and data.
fn data_url(url: &str) -> Option<(String, String)> {
    let head = url.get(..5)?;
    if !head.eq_ignore_ascii_case("data:") {
        return None;
    }
    let (media_type, data) = url[5..].split_once(";base64,")?;
    Some((media_type.to_ascii_lowercase(), data.to_owned()))
}

/// The client's Messages-only tool members, by tool name, when the request
/// came in over Messages.
fn native_tool_members(req: &Request) -> Option<&Map<String, Value>> {
    match &req.native {
        Some(native) if native.protocol == Some(Protocol::Messages) => native
            .fields
            .get(NATIVE_TOOL_MEMBERS)
            .and_then(Value::as_object),
        _ => None,
    }
}

fn tool(t: &Tool, native: Option<&Value>) -> ToolDefinition {
    let member = |key: &str| native.and_then(|n| n.get(key));
    ToolDefinition {
        kind: None,
        name: Some(t.name.clone()),
        description: t.description.clone(),
        input_schema: Some(t.parameters.clone()),
        cache_control: t.cache_control.as_ref().map(wire_cache_control),
        strict: t.strict,
        eager_input_streaming: member("eager_input_streaming").and_then(Value::as_bool),
        defer_loading: member("defer_loading").and_then(Value::as_bool),
        input_examples: member("input_examples").and_then(Value::as_array).cloned(),
        extra: Map::new(),
    }
}

/// `tool_choice`, carrying `parallel_tool_calls: false` as
/// `disable_parallel_tool_use: true` (on `auto` when no choice was given).
fn tool_choice(req: &Request, native_request: bool) -> Option<wire::ToolChoice> {
    let disable = req.parallel_tool_calls.map(|parallel| !parallel);
    let (kind, name) = match &req.tool_choice {
        // A converted choice without tools has nothing to choose from.
        Some(_) if req.tools.is_empty() && !native_request => return None,
        Some(ToolChoice::Auto) => ("auto", None),
        Some(ToolChoice::Required) => ("any", None),
        Some(ToolChoice::Tool { name }) => ("tool", Some(name.clone())),
        Some(ToolChoice::None) => {
            return Some(wire::ToolChoice {
                kind: "none".to_owned(),
                name: None,
                disable_parallel_tool_use: None,
                extra: Map::new(),
            });
        }
        None if disable == Some(true) && !req.tools.is_empty() => ("auto", None),
        None => return None,
    };
    Some(wire::ToolChoice {
        kind: kind.to_owned(),
        name,
        disable_parallel_tool_use: disable,
        extra: Map::new(),
    })
}

fn thinking(req: &Request, native_request: bool) -> Result<Option<wire::Thinking>, ApiError> {
    let Some(t) = &req.reasoning.thinking else {
        return Ok(None);
    };
    let kind = match t.mode {
        ThinkingMode::Disabled => "disabled",
        ThinkingMode::Enabled => "enabled",
        ThinkingMode::Adaptive => "adaptive",
    };
    if t.mode != ThinkingMode::Disabled
        && matches!(
            req.tool_choice,
            Some(ToolChoice::Required | ToolChoice::Tool { .. })
        )
    {
        return Err(ApiError::unsupported_conversion(
            "a Messages supplier cannot force tool use while thinking",
        )
        .with_param("tool_choice"));
    }
    if t.mode == ThinkingMode::Enabled && t.budget_tokens.is_none() {
        return Err(ApiError::unsupported_conversion(
            "enabled thinking needs `budget_tokens` on a Messages supplier",
        )
        .with_field(Field::Thinking));
    }
    Ok(Some(wire::Thinking {
        kind: kind.to_owned(),
        // Messages takes a budget with enabled thinking only.
        budget_tokens: t
            .budget_tokens
            .filter(|_| native_request || t.mode == ThinkingMode::Enabled),
        display: t.display.clone(),
        extra: Map::new(),
    }))
}

/// The client's `metadata` (native requests), with `user_id` the end user.
fn metadata(req: &Request, native: Option<&Value>) -> Option<Value> {
    let (mut metadata, given) = match native {
        Some(Value::Object(map)) => (map.clone(), true),
        _ => (Map::new(), false),
    };
    if let Some(user) = &req.end_user {
        metadata.insert("user_id".to_owned(), Value::String(user.clone()));
    }
    (given || !metadata.is_empty()).then_some(Value::Object(metadata))
}

/// The client's `output_config` (native requests), with the explicit effort
/// (never synthesized) and the JSON schema of `response_format`.
fn output_config(req: &Request, native: Option<&Value>) -> Result<Option<Value>, ApiError> {
    let mut config = match native {
        Some(Value::Object(map)) => map.clone(),
        _ => Map::new(),
    };
    if let Some(effort) = &req.reasoning.effort {
        config.insert("effort".to_owned(), Value::String(effort.clone()));
    }
    match &req.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => {
            return Err(ApiError::unsupported_conversion(
                "`json_object` output has no Messages equivalent; use a JSON schema",
            )
            .with_field(Field::ResponseFormat));
        }
        // Messages names no schema: the name is a label only.
        Some(ResponseFormat::JsonSchema {
            name: _,
            schema,
            strict: _,
            description,
        }) => {
            if description.is_some() {
                return Err(ApiError::unsupported_conversion(
                    "a JSON schema `description` has no Messages field",
                )
                .with_field(Field::ResponseFormat));
            }
            if !schema.is_object() {
                return Err(ApiError::unsupported_conversion(
                    "a JSON schema output format needs a `schema` object on a Messages supplier",
                )
                .with_field(Field::ResponseFormat));
            }
            let mut format = Map::new();
            format.insert("type".to_owned(), Value::String("json_schema".to_owned()));
            format.insert("schema".to_owned(), schema.clone());
            config.insert("format".to_owned(), Value::Object(format));
        }
    }
    Ok((!config.is_empty()).then_some(Value::Object(config)))
}

/// `SupplierTarget::prompt_cache_marker`: when the request carries no
/// marker at all, mark the last block of the last message that can take one with the
/// five-minute default.
fn add_cache_marker(wire: &mut MessagesRequest) {
    fn block_marked(block: &ContentBlock) -> bool {
        match block {
            ContentBlock::Text(b) => b.cache_control.is_some(),
            ContentBlock::Image(b) => b.cache_control.is_some(),
            ContentBlock::ToolUse(b) => b.cache_control.is_some(),
            ContentBlock::ToolResult(b) => {
                b.cache_control.is_some() || b.content.as_ref().is_some_and(content_marked)
            }
            _ => false,
        }
    }
    fn content_marked(content: &Content) -> bool {
        matches!(content, Content::Seq(blocks) if blocks.iter().any(block_marked))
    }
    let marked = wire.system.as_ref().is_some_and(content_marked)
        || wire
            .messages
            .iter()
            .flatten()
            .any(|m| content_marked(&m.content))
        || wire
            .tools
            .iter()
            .flatten()
            .any(|t| t.cache_control.is_some());
    if marked {
        return;
    }
    let Some(last) = wire.messages.as_mut().and_then(|m| m.last_mut()) else {
        return;
    };
    if let Content::Text(text) = &last.content {
        last.content = Content::Seq(vec![ContentBlock::text(text.clone())]);
    }
    let Content::Seq(blocks) = &mut last.content else {
        return;
    };
    let marker = Some(wire::CacheControl {
        kind: "ephemeral".to_owned(),
        ttl: None,
    });
    // Thinking blocks cannot carry a marker; the one before them can.
    for block in blocks.iter_mut().rev() {
        let slot = match block {
            ContentBlock::Text(b) => &mut b.cache_control,
            ContentBlock::Image(b) => &mut b.cache_control,
            ContentBlock::ToolUse(b) => &mut b.cache_control,
            ContentBlock::ToolResult(b) => &mut b.cache_control,
            _ => continue,
        };
        *slot = marker;
        return;
    }
}
