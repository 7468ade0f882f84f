//! Encoding a canonical request as a Gemini `GenerateContentRequest`.
//!
//! What Gemini cannot carry is an `unsupported_conversion` error naming the
//! field (content by [`Field::Messages`], which each client's codec names
//! in its own terms, with the canonical path `messages[i].content[j]` in
//! `param` and at the start of the message:
//! [`ApiError::unsupported_content`]): an image by URL or unresolved upload (Gemini takes images inline),
//! an image inside a tool result, another protocol's opaque part, a system
//! or developer turn after the conversation started, more than five stop
//! sequences, `parallel_tool_calls: false` (Gemini cannot promise one call),
//! a tool result whose call is not in the history. Documented hints are
//! dropped instead: an image's `detail`, cache markers (Gemini caches
//! implicitly), thinking text in the history (Gemini does not take thought
//! summaries back; a call's thought signature does go back), other
//! protocols' native fields, `strict` on tools and schemas.

use crate::wire::{
    Blob, Content, FunctionCall, FunctionCallingConfig, FunctionDeclaration, FunctionResponse,
    GenerateContentRequest, GenerationConfig, Part, ThinkingConfig, ToolConfig, ToolDeclarations,
};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use router_canonical::{
    ApiError, ContentPart, ErrorCode, Field, ImageSource, Message, Request, ResponseFormat, Role,
    SupplierTarget, ThinkingMode, ToolChoice,
};
use serde_json::{Map, Value};

/// Gemini's limit on `stopSequences`.
const MAX_STOP_SEQUENCES: usize = 5;

/// The thinking budget an OpenAI-style effort stands for (the budgets
/// Google's own OpenAI-compatible endpoint uses).
fn effort_budget(effort: &str) -> Option<u32> {
    match effort {
        "none" => Some(0),
        "minimal" | "low" => Some(1024),
        "medium" => Some(8192),
        "high" | "xhigh" => Some(24576),
        _ => None,
    }
}

pub(crate) fn encode(request: &Request, target: &SupplierTarget<'_>) -> Result<Vec<u8>, ApiError> {
    let body = generate_content_request(request, target)?;
    serde_json::to_vec(&body).map_err(|err| {
        ApiError::new(
            ErrorCode::InternalError,
            format!("could not serialize the Gemini request: {err}"),
        )
    })
}

fn unsupported(param: impl Into<String>, message: impl Into<String>) -> ApiError {
    ApiError::unsupported_conversion(message).with_param(param)
}

/// The model is in the path, and Gemini needs no output cap: `target`
/// adds nothing to the body.
fn generate_content_request(
    request: &Request,
    _target: &SupplierTarget<'_>,
) -> Result<GenerateContentRequest, ApiError> {
    let (system_instruction, contents) = conversation(&request.messages)?;
    if contents.is_empty() {
        return Err(ApiError::unsupported_conversion(
            "a request without user or assistant turns cannot be sent to a Gemini supplier",
        )
        .with_field(Field::Messages));
    }
    let sampling = &request.sampling;
    if sampling.stop.len() > MAX_STOP_SEQUENCES {
        return Err(ApiError::for_field(
            ErrorCode::UnsupportedConversion,
            Field::StopSequences,
            format!("a Gemini supplier takes at most {MAX_STOP_SEQUENCES} stop sequences"),
        ));
    }
    let mut generation_config = GenerationConfig {
        temperature: sampling.temperature,
        top_p: sampling.top_p,
        stop_sequences: sampling.stop.clone(),
        max_output_tokens: sampling.max_output_tokens,
        seed: sampling.seed,
        presence_penalty: sampling.presence_penalty,
        frequency_penalty: sampling.frequency_penalty,
        ..GenerationConfig::default()
    };
    match &request.response_format {
        None | Some(ResponseFormat::Text) => {}
        Some(ResponseFormat::JsonObject) => {
            generation_config.response_mime_type = Some("application/json");
        }
        Some(ResponseFormat::JsonSchema { schema, .. }) => {
            generation_config.response_mime_type = Some("application/json");
            generation_config.response_json_schema = Some(schema.clone());
        }
    }
    generation_config.thinking_config = thinking(request)?;
    let tools = if request.tools.is_empty() {
        Vec::new()
    } else {
        vec![ToolDeclarations {
            function_declarations: request
                .tools
                .iter()
                .map(|tool| FunctionDeclaration {
                    name: tool.name.clone(),
                    description: tool.description.clone(),
                    parameters_json_schema: tool.parameters.clone(),
                })
                .collect(),
        }]
    };
    if request.parallel_tool_calls == Some(false) && !request.tools.is_empty() {
        return Err(unsupported(
            "parallel_tool_calls",
            "a Gemini supplier cannot be limited to one tool call per turn",
        ));
    }
    let tool_config = request.tool_choice.as_ref().map(|choice| {
        let (mode, allowed) = match choice {
            ToolChoice::Auto => ("AUTO", Vec::new()),
            ToolChoice::None => ("NONE", Vec::new()),
            ToolChoice::Required => ("ANY", Vec::new()),
            ToolChoice::Tool { name } => ("ANY", vec![name.clone()]),
        };
        ToolConfig {
            function_calling_config: FunctionCallingConfig {
                mode,
                allowed_function_names: allowed,
            },
        }
    });
    Ok(GenerateContentRequest {
        contents,
        system_instruction,
        tools,
        tool_config,
        generation_config,
    })
}

/// `thinkingConfig` from the canonical reasoning settings: a thinking
/// budget goes as `thinkingBudget` (with the thoughts included), disabled
/// thinking as a zero budget, an effort as the budget it stands for; a
/// requested summary includes the thoughts.
fn thinking(request: &Request) -> Result<Option<ThinkingConfig>, ApiError> {
    let reasoning = &request.reasoning;
    let mut config = ThinkingConfig {
        include_thoughts: reasoning.summary.as_ref().map(|_| true),
        thinking_budget: None,
    };
    if let Some(thinking) = &reasoning.thinking {
        match thinking.mode {
            ThinkingMode::Disabled => config.thinking_budget = Some(0),
            ThinkingMode::Enabled => {
                config.include_thoughts = Some(true);
                config.thinking_budget = thinking.budget_tokens;
            }
            // The model decides how much to think: no budget (Gemini's
            // dynamic thinking).
            ThinkingMode::Adaptive => config.include_thoughts = Some(true),
        }
    } else if let Some(effort) = &reasoning.effort {
        config.thinking_budget = Some(effort_budget(effort).ok_or_else(|| {
            ApiError::for_field(
                ErrorCode::UnsupportedConversion,
                Field::ReasoningEffort,
                format!("reasoning effort `{effort}` has no Gemini thinking budget"),
            )
        })?);
    }
    Ok((config.include_thoughts.is_some() || config.thinking_budget.is_some()).then_some(config))
}

/// The system instruction (the leading system and developer turns) and the
/// contents, consecutive turns of one role merged (parallel function
/// responses go back in one content, as Gemini asks).
fn conversation(messages: &[Message]) -> Result<(Option<Content>, Vec<Content>), ApiError> {
    let mut system = Vec::new();
    let mut contents: Vec<Content> = Vec::new();
    for (i, message) in messages.iter().enumerate() {
        let role = match message.role {
            Role::System | Role::Developer => {
                if !contents.is_empty() {
                    return Err(ApiError::unsupported_content(
                        format!("messages[{i}].role"),
                        "a Gemini supplier takes system instructions only before the conversation",
                    ));
                }
                for (j, part) in message.content.iter().enumerate() {
                    match part {
                        ContentPart::Text { text, .. } => system.push(Part {
                            text: Some(text.clone()),
                            ..Part::default()
                        }),
                        _ => {
                            return Err(ApiError::unsupported_content(
                                format!("messages[{i}].content[{j}]"),
                                "a Gemini system instruction holds text only",
                            ));
                        }
                    }
                }
                continue;
            }
            Role::User | Role::Tool => "user",
            Role::Assistant => "model",
            _ => {
                return Err(ApiError::unsupported_content(
                    format!("messages[{i}].role"),
                    "this role cannot be sent to a Gemini supplier",
                ));
            }
        };
        let mut parts = Vec::new();
        for (j, part) in message.content.iter().enumerate() {
            if let Some(part) = encode_part(messages, i, j, part)? {
                parts.push(part);
            }
        }
        if parts.is_empty() {
            continue;
        }
        match contents.last_mut() {
            Some(last) if last.role.as_deref() == Some(role) => last.parts.extend(parts),
            _ => contents.push(Content {
                role: Some(role.to_owned()),
                parts,
            }),
        }
    }
    let system = (!system.is_empty()).then_some(Content {
        role: None,
        parts: system,
    });
    Ok((system, contents))
}

fn encode_part(
    messages: &[Message],
    i: usize,
    j: usize,
    part: &ContentPart,
) -> Result<Option<Part>, ApiError> {
    let param = || format!("messages[{i}].content[{j}]");
    Ok(Some(match part {
        ContentPart::Text { text, .. } => Part {
            text: Some(text.clone()),
            ..Part::default()
        },
        ContentPart::Image { source, .. } => Part {
            inline_data: Some(inline_image(source, &param())?),
            ..Part::default()
        },
        ContentPart::ToolCall {
            id,
            name,
            arguments,
        } => {
            if messages[i].role != Role::Assistant {
                return Err(ApiError::unsupported_content(
                    param(),
                    "a tool call outside an assistant turn cannot be sent to a Gemini supplier",
                ));
            }
            let args: Value = serde_json::from_str(arguments).map_err(|_| {
                ApiError::unsupported_content(
                    param(),
                    "tool call arguments that are not JSON cannot be sent to a Gemini supplier",
                )
            })?;
            if !args.is_object() {
                return Err(ApiError::unsupported_content(
                    param(),
                    "a Gemini function call's arguments are an object",
                ));
            }
            Part {
                function_call: Some(FunctionCall {
                    id: None,
                    name: name.clone(),
                    args: Some(args),
                }),
                thought_signature: signature_of_call(id),
                ..Part::default()
            }
        }
        ContentPart::ToolResult {
            tool_call_id,
            content,
            is_error,
            ..
        } => {
            let name = called_function(messages, i, tool_call_id).ok_or_else(|| {
                ApiError::unsupported_content(param(),
                    format!(
                        "the tool result for `{tool_call_id}` answers no call in the history; a Gemini supplier needs the function's name"
                    ),
                )
            })?;
            let mut text = String::new();
            for part in content {
                match part {
                    ContentPart::Text { text: t, .. } => text.push_str(t),
                    _ => {
                        return Err(ApiError::unsupported_content(
                            param(),
                            "a Gemini function response holds text only",
                        ));
                    }
                }
            }
            let mut response = Map::new();
            response.insert(
                if *is_error { "error" } else { "output" }.to_owned(),
                Value::String(text),
            );
            Part {
                function_response: Some(FunctionResponse {
                    name,
                    response: Value::Object(response),
                }),
                ..Part::default()
            }
        }
        // Gemini takes no thought text back; the model thinks afresh.
        ContentPart::Thinking { .. } | ContentPart::RedactedThinking { .. } => return Ok(None),
        ContentPart::Opaque { protocol, .. } => {
            return Err(ApiError::unsupported_content(
                param(),
                format!("a {protocol} part cannot be sent to a Gemini supplier"),
            ));
        }
        _ => {
            return Err(ApiError::unsupported_content(
                param(),
                "this content part cannot be sent to a Gemini supplier",
            ));
        }
    }))
}

fn inline_image(source: &ImageSource, param: &str) -> Result<Blob, ApiError> {
    match source {
        ImageSource::Base64 { media_type, data } => Ok(Blob {
            mime_type: media_type.clone(),
            data: data.clone(),
        }),
        ImageSource::Url { url } => {
            // A data URL is inline data under another name.
            if let Some(rest) = url.strip_prefix("data:")
                && let Some((media_type, data)) = rest.split_once(";base64,")
            {
                return Ok(Blob {
                    mime_type: media_type.to_owned(),
                    data: data.to_owned(),
                });
            }
            Err(ApiError::unsupported_content(
                param,
                "a Gemini supplier takes images inline (base64), not by URL",
            ))
        }
        ImageSource::Upload { .. } => Err(ApiError::unsupported_content(
            param,
            "an unresolved upload cannot be sent to a Gemini supplier",
        )),
    }
}

/// The function a tool result answers: the call with its ID in the nearest
/// assistant turn before message `i`.
fn called_function(messages: &[Message], i: usize, tool_call_id: &str) -> Option<String> {
    messages[..i].iter().rev().find_map(|message| {
        message.content.iter().find_map(|part| match part {
            ContentPart::ToolCall { id, name, .. } if id == tool_call_id => Some(name.clone()),
            _ => None,
        })
    })
}

/// The prefix of the tool-call IDs this codec makes.
pub(crate) const CALL_ID_PREFIX: &str = "gem_";

/// The ID of the `n`th function call of a reply, carrying its thought
/// signature (base64url of the signature's own base64 text) when it has one.
pub(crate) fn call_id(n: usize, signature: Option<&str>) -> String {
    match signature {
        Some(signature) => format!(
            "{CALL_ID_PREFIX}{n}_{}",
            URL_SAFE_NO_PAD.encode(signature.as_bytes())
        ),
        None => format!("{CALL_ID_PREFIX}{n}"),
    }
}

/// The thought signature a call ID made by [`call_id`] carries.
fn signature_of_call(id: &str) -> Option<String> {
    let rest = id.strip_prefix(CALL_ID_PREFIX)?;
    let (_, encoded) = rest.split_once('_')?;
    let bytes = URL_SAFE_NO_PAD.decode(encoded).ok()?;
    String::from_utf8(bytes).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_id_carries_its_signature_back() {
        let id = call_id(2, Some("CiQB0e2Kb+/sig=="));
        assert!(id.starts_with("gem_2_"));
        assert!(
            id.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "{id}"
        );
        assert_eq!(signature_of_call(&id).as_deref(), Some("CiQB0e2Kb+/sig=="));
        assert_eq!(signature_of_call(&call_id(0, None)), None);
        assert_eq!(signature_of_call("call_abc"), None);
    }
}
