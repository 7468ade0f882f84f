//! Read a Chat supplier's complete reply into the canonical response.

use super::error::DecodeError;
use crate::wire::request::{self as wire, MessageContent};
use crate::wire::response::{ChatCompletion, ChatUsage, FinishReason, ResponseMessage};
use router_canonical::parse::InvalidJson;
use router_canonical::{OutputBlock, Response, StopReason, Usage};

/// A reply without usage is [`DecodeError::MissingUsage`] when
/// `require_usage`, else it reads as zero usage.
pub(crate) fn response(body: &[u8], require_usage: bool) -> Result<Response, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: ChatCompletion =
        serde_path_to_error::deserialize(&mut de).map_err(InvalidJson::from)?;
    de.end().map_err(|err| InvalidJson {
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
        error,
    } = wire;
    if let Some(error) = error
        && choices.is_empty()
    {
        return Err(DecodeError::SupplierError {
            kind: error.kind,
            code: error.code.map(|c| match c {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            }),
            message: error.message,
        });
    }
    let choice = choices
        .into_iter()
        .min_by_key(|c| c.index)
        .ok_or(DecodeError::MissingChoice)?;
    let usage = match wire_usage.as_ref() {
        Some(wire_usage) => usage(wire_usage)?,
        None if require_usage => return Err(DecodeError::MissingUsage),
        None => Usage::default(),
    };
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
        Some(MessageContent::Seq(parts)) => {
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
