//! Reading a Converse reply: the output message, the stop reason, usage.

use crate::error::DecodeError;
use router_canonical::{OutputBlock, Response, StopReason, Usage};
use serde::Deserialize;
use serde_json::{Map, Value};

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct ConverseResponse {
    output: Output,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Debug, Deserialize)]
struct Output {
    message: OutputMessage,
}

#[derive(Debug, Deserialize)]
struct OutputMessage {
    #[serde(default)]
    content: Vec<Map<String, Value>>,
}

/// Converse's token usage.
#[derive(Debug, Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireUsage {
    #[serde(default)]
    pub(crate) input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) output_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    pub(crate) cache_write_input_tokens: Option<u64>,
}

pub(crate) fn decode(body: &[u8], require_usage: bool) -> Result<Response, DecodeError> {
    let reply: ConverseResponse =
        serde_json::from_slice(body).map_err(|e| DecodeError::InvalidJson(e.to_string()))?;
    let usage = usage(reply.usage.as_ref(), require_usage)?;
    let mut output = Vec::new();
    for block in reply.output.message.content {
        output.extend(output_block(block)?);
    }
    let called_tools = output
        .iter()
        .any(|b| matches!(b, OutputBlock::ToolCall { .. }));
    Ok(Response {
        id: String::new(),
        model: String::new(),
        output,
        stop_reason: stop_reason(reply.stop_reason.as_deref(), called_tools),
        stop_sequence: None,
        usage,
        created: 0,
    })
}

fn output_block(block: Map<String, Value>) -> Result<Option<OutputBlock>, DecodeError> {
    let invalid = |what: &str| DecodeError::InvalidJson(format!("a `{what}` block is malformed"));
    let Some((kind, value)) = block.into_iter().next() else {
        return Ok(None);
    };
    Ok(Some(match kind.as_str() {
        "text" => OutputBlock::Text {
            text: value.as_str().ok_or_else(|| invalid("text"))?.to_owned(),
        },
        "toolUse" => OutputBlock::ToolCall {
            id: value["toolUseId"]
                .as_str()
                .ok_or_else(|| invalid("toolUse"))?
                .to_owned(),
            name: value["name"]
                .as_str()
                .ok_or_else(|| invalid("toolUse"))?
                .to_owned(),
            arguments: value
                .get("input")
                .cloned()
                .unwrap_or(Value::Null)
                .to_string(),
        },
        "reasoningContent" => {
            if let Some(redacted) = value.get("redactedContent").and_then(Value::as_str) {
                OutputBlock::RedactedThinking {
                    data: redacted.to_owned(),
                }
            } else {
                let text = &value["reasoningText"];
                OutputBlock::Thinking {
                    text: text["text"].as_str().unwrap_or_default().to_owned(),
                    signature: text["signature"].as_str().map(str::to_owned),
                }
            }
        }
        _ => return Err(DecodeError::UnsupportedBlock { kind }),
    }))
}

/// The canonical stop reason of a Converse `stopReason`.
pub(crate) fn stop_reason(reason: Option<&str>, called_tools: bool) -> StopReason {
    match reason {
        Some("tool_use") => StopReason::ToolUse,
        Some("max_tokens") => StopReason::MaxTokens,
        Some("stop_sequence") => StopReason::StopSequence,
        Some("guardrail_intervened" | "content_filtered") => StopReason::ContentFilter,
        None | Some("end_turn") if called_tools => StopReason::ToolUse,
        None | Some("end_turn") => StopReason::EndTurn,
        Some(other) => StopReason::Other(other.to_owned()),
    }
}

/// Canonical usage: the input includes the cache reads and writes.
pub(crate) fn usage(wire: Option<&WireUsage>, required: bool) -> Result<Usage, DecodeError> {
    let wire = match wire {
        Some(w) if w.input_tokens.is_some() && w.output_tokens.is_some() => *w,
        _ if required => return Err(DecodeError::MissingUsage),
        _ => WireUsage::default(),
    };
    let read = wire.cache_read_input_tokens.unwrap_or(0);
    let write = wire.cache_write_input_tokens.unwrap_or(0);
    let input = wire
        .input_tokens
        .unwrap_or(0)
        .checked_add(read)
        .and_then(|n| n.checked_add(write));
    let usage = Usage {
        input_tokens: input.unwrap_or(u64::MAX),
        output_tokens: wire.output_tokens.unwrap_or(0),
        cache_read_input_tokens: read,
        cache_creation_input_tokens: write,
        reasoning_tokens: 0,
    };
    match input {
        Some(_) if usage.is_consistent() => Ok(usage),
        _ => Err(DecodeError::InvalidUsage { usage }),
    }
}
