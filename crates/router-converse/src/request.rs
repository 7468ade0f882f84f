//! Encoding a canonical request as a Converse body.
//!
//! What Converse cannot carry is an `unsupported_conversion` error naming
//! the field (content by [`Field::Messages`], which each client's codec
//! names in its own terms, with the canonical path `messages[i].content[j]`
//! in `param` and at the start of the message:
//! [`ApiError::unsupported_content`]): an image by URL or unresolved upload, or not PNG, JPEG, GIF or
//! WebP; an image in a tool result; penalties; a JSON output format;
//! `tool_choice: none` and `parallel_tool_calls: false` (Converse has
//! neither); a reasoning effort (Converse has no portable field: a thinking
//! budget goes to the model as `additionalModelRequestFields.thinking`, as
//! Claude reads it); a system or developer turn after the conversation
//! started; another protocol's opaque part. Documented hints are dropped:
//! an image's `detail`, `seed`, cache markers, unsigned thinking in the
//! history.

use router_canonical::{
    ApiError, ContentPart, ErrorCode, Field, ImageSource, Message, Request, ResponseFormat, Role,
    SupplierTarget, ThinkingMode, ToolChoice,
};
use serde_json::{Map, Value, json};

fn unsupported(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::unsupported_conversion(message).with_param(param)
}

fn for_field(field: Field, message: impl Into<String>) -> ApiError {
    ApiError::for_field(ErrorCode::UnsupportedConversion, field, message)
}

pub(crate) fn encode(request: &Request, _target: &SupplierTarget<'_>) -> Result<Vec<u8>, ApiError> {
    let body = converse_request(request)?;
    serde_json::to_vec(&body).map_err(|err| {
        ApiError::new(
            ErrorCode::InternalError,
            format!("could not serialize the Converse request: {err}"),
        )
    })
}

fn converse_request(request: &Request) -> Result<Value, ApiError> {
    let sampling = &request.sampling;
    if [sampling.frequency_penalty, sampling.presence_penalty]
        .into_iter()
        .flatten()
        .any(|p| p != 0.0)
    {
        return Err(for_field(
            Field::Penalties,
            "a Converse supplier takes no frequency or presence penalty",
        ));
    }
    if matches!(
        request.response_format,
        Some(ResponseFormat::JsonObject | ResponseFormat::JsonSchema { .. })
    ) {
        return Err(for_field(
            Field::ResponseFormat,
            "a Converse supplier has no JSON output format",
        ));
    }
    if request.reasoning.effort.is_some() {
        return Err(for_field(
            Field::ReasoningEffort,
            "a Converse supplier takes a thinking budget, not a reasoning effort",
        ));
    }
    let (system, messages) = conversation(&request.messages)?;
    if messages.is_empty() {
        return Err(ApiError::unsupported_conversion(
            "a request without user or assistant turns cannot be sent to a Converse supplier",
        )
        .with_field(Field::Messages));
    }
    let mut body = Map::new();
    body.insert("messages".into(), Value::Array(messages));
    if !system.is_empty() {
        body.insert("system".into(), Value::Array(system));
    }
    let mut inference = Map::new();
    if let Some(max) = sampling.max_output_tokens {
        inference.insert("maxTokens".into(), json!(max));
    }
    if let Some(t) = sampling.temperature {
        inference.insert("temperature".into(), json!(t));
    }
    if let Some(p) = sampling.top_p {
        inference.insert("topP".into(), json!(p));
    }
    if !sampling.stop.is_empty() {
        inference.insert("stopSequences".into(), json!(sampling.stop));
    }
    if !inference.is_empty() {
        body.insert("inferenceConfig".into(), Value::Object(inference));
    }
    if !request.tools.is_empty() {
        if request.parallel_tool_calls == Some(false) {
            return Err(unsupported(
                "parallel_tool_calls",
                "a Converse supplier cannot be limited to one tool call per turn",
            ));
        }
        let tools: Vec<Value> = request
            .tools
            .iter()
            .map(|tool| {
                let mut spec = json!({"name": tool.name, "inputSchema": {"json": tool.parameters}});
                if let Some(description) = &tool.description {
                    spec["description"] = json!(description);
                }
                json!({"toolSpec": spec})
            })
            .collect();
        let mut config = json!({"tools": tools});
        match &request.tool_choice {
            None | Some(ToolChoice::Auto) => {}
            Some(ToolChoice::Required) => config["toolChoice"] = json!({"any": {}}),
            Some(ToolChoice::Tool { name }) => {
                config["toolChoice"] = json!({"tool": {"name": name}});
            }
            Some(ToolChoice::None) => {
                return Err(unsupported(
                    "tool_choice",
                    "a Converse supplier cannot be told not to call its tools",
                ));
            }
        }
        body.insert("toolConfig".into(), config);
    }
    if let Some(thinking) = &request.reasoning.thinking {
        let value = match thinking.mode {
            ThinkingMode::Enabled => {
                json!({"type": "enabled", "budget_tokens": thinking.budget_tokens})
            }
            ThinkingMode::Disabled => json!({"type": "disabled"}),
            ThinkingMode::Adaptive => {
                return Err(for_field(
                    Field::Thinking,
                    "a Converse supplier takes a thinking budget, not adaptive thinking",
                ));
            }
        };
        body.insert(
            "additionalModelRequestFields".into(),
            json!({"thinking": value}),
        );
    }
    Ok(Value::Object(body))
}

/// The system blocks (leading system and developer turns) and the messages,
/// consecutive turns of one role merged (Converse alternates roles).
fn conversation(messages: &[Message]) -> Result<(Vec<Value>, Vec<Value>), ApiError> {
    let mut system = Vec::new();
    let mut out: Vec<Value> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = match message.role {
            Role::System | Role::Developer => {
                if !out.is_empty() {
                    return Err(ApiError::unsupported_content(
                        format!("messages[{i}].role"),
                        "a Converse supplier takes system prompts only before the conversation",
                    ));
                }
                for (j, part) in message.content.iter().enumerate() {
                    match part {
                        ContentPart::Text { text, .. } => system.push(json!({"text": text})),
                        _ => {
                            return Err(ApiError::unsupported_content(
                                format!("messages[{i}].content[{j}]"),
                                "a Converse system prompt holds text only",
                            ));
                        }
                    }
                }
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "assistant",
            _ => {
                return Err(ApiError::unsupported_content(
                    format!("messages[{i}].role"),
                    "this role cannot be sent to a Converse supplier",
                ));
            }
        };
        let mut blocks = Vec::new();
        for (j, part) in message.content.iter().enumerate() {
            if let Some(block) = block(message, part, &format!("messages[{i}].content[{j}]"))? {
                blocks.push(block);
            }
        }
        if blocks.is_empty() {
            continue;
        }
        match out.last_mut() {
            Some(last) if last["role"] == role => {
                if let Some(Value::Array(content)) = last.get_mut("content") {
                    content.extend(blocks);
                }
            }
            _ => out.push(json!({"role": role, "content": blocks})),
        }
    }
    Ok((system, out))
}

fn block(message: &Message, part: &ContentPart, param: &str) -> Result<Option<Value>, ApiError> {
    Ok(Some(match part {
        ContentPart::Text { text, .. } => json!({"text": text}),
        ContentPart::Image { source, .. } => image(source, param)?,
        ContentPart::ToolCall {
            id,
            name,
            arguments,
        } => {
            if message.role != Role::Assistant {
                return Err(ApiError::unsupported_content(
                    param,
                    "a tool call outside an assistant turn cannot be sent to a Converse supplier",
                ));
            }
            let input: Value = serde_json::from_str(arguments)
                .ok()
                .filter(Value::is_object)
                .ok_or_else(|| {
                    ApiError::unsupported_content(
                        param,
                        "a Converse tool call's input is a JSON object",
                    )
                })?;
            json!({"toolUse": {"toolUseId": id, "name": name, "input": input}})
        }
        ContentPart::ToolResult {
            tool_call_id,
            content,
            is_error,
            ..
        } => {
            let mut blocks = Vec::new();
            for part in content {
                match part {
                    ContentPart::Text { text, .. } => blocks.push(json!({"text": text})),
                    _ => {
                        return Err(ApiError::unsupported_content(
                            param,
                            "a Converse tool result holds text only here",
                        ));
                    }
                }
            }
            json!({"toolResult": {
                "toolUseId": tool_call_id,
                "content": blocks,
                "status": if *is_error { "error" } else { "success" },
            }})
        }
        ContentPart::Thinking {
            text,
            signature: Some(signature),
        } => json!({"reasoningContent": {"reasoningText": {"text": text, "signature": signature}}}),
        // Unsigned thinking cannot go back; the model reasons afresh.
        ContentPart::Thinking {
            signature: None, ..
        } => return Ok(None),
        ContentPart::RedactedThinking { data } => {
            json!({"reasoningContent": {"redactedContent": data}})
        }
        ContentPart::Opaque { protocol, .. } => {
            return Err(ApiError::unsupported_content(
                param,
                format!("a {protocol} part cannot be sent to a Converse supplier"),
            ));
        }
        _ => {
            return Err(ApiError::unsupported_content(
                param,
                "this content part cannot be sent to a Converse supplier",
            ));
        }
    }))
}

fn image(source: &ImageSource, param: &str) -> Result<Value, ApiError> {
    let (media_type, data) = match source {
        ImageSource::Base64 { media_type, data } => (media_type.as_str(), data.as_str()),
        ImageSource::Url { url } => match url
            .strip_prefix("data:")
            .and_then(|rest| rest.split_once(";base64,"))
        {
            Some(inline) => inline,
            None => {
                return Err(ApiError::unsupported_content(
                    param,
                    "a Converse supplier takes images inline (base64), not by URL",
                ));
            }
        },
        ImageSource::Upload { .. } => {
            return Err(ApiError::unsupported_content(
                param,
                "an unresolved upload cannot be sent to a Converse supplier",
            ));
        }
    };
    let format = match media_type {
        "image/png" => "png",
        "image/jpeg" => "jpeg",
        "image/gif" => "gif",
        "image/webp" => "webp",
        other => {
            return Err(ApiError::unsupported_content(
                param,
                format!("a Converse supplier takes PNG, JPEG, GIF or WebP images, not {other}"),
            ));
        }
    };
    Ok(json!({"image": {"format": format, "source": {"bytes": data}}}))
}
