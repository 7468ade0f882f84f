//! Reading a Messages supplier's complete (non-streaming) reply into the
//! canonical model.

use super::error::DecodeError;
use crate::wire::event::ErrorObject;
use crate::wire::request::ContentBlock;
use crate::wire::response::{MessageObject, WireStopReason, WireUsage};
use router_canonical::parse::InvalidJson;
use router_canonical::{OutputBlock, Response, StopReason, Usage};
use serde::Deserialize;

/// Read a complete reply. Without `usage` it is invalid when
/// `require_usage`, else its usage is zero.
pub(crate) fn response(body: &[u8], require_usage: bool) -> Result<Response, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: MessageObject =
        serde_path_to_error::deserialize(&mut de).map_err(InvalidJson::from)?;
    de.end().map_err(|err| InvalidJson {
        path: ".".to_owned(),
        message: err.to_string(),
    })?;
    let MessageObject {
        id,
        kind,
        role: _,
        model,
        content,
        stop_reason,
        stop_sequence,
        usage: wire_usage,
    } = wire;
    if kind == "error" {
        let ErrorObject { kind, message, .. } = error_object(body);
        return Err(DecodeError::ErrorReply { kind, message });
    }
    let usage = match wire_usage {
        Some(wire_usage) => usage(&wire_usage, require_usage)?,
        None if require_usage => return Err(DecodeError::MissingUsage),
        None => Usage::default(),
    };
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
/// features the router rejects and are dropped with other unknown members; a block type the canonical model cannot represent is
/// [`DecodeError::UnknownContent`], an unsupported reply.
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

/// The `error` member of an error body (`{"type": "error", "error": {...}}`),
/// leniently: a body in another shape gives an empty object.
pub(crate) fn error_object(body: &[u8]) -> ErrorObject {
    #[derive(Deserialize)]
    struct ErrorBody {
        #[serde(default)]
        error: ErrorObject,
    }
    serde_json::from_slice::<ErrorBody>(body)
        .map(|body| body.error)
        .unwrap_or_default()
}

/// Canonical usage from a Messages usage. Anthropic's `input_tokens`
/// excludes cache reads and writes; the canonical count includes them.
/// Implausible or overflowing numbers are an invalid reply. A missing input
/// or output count is an invalid reply when `required`, else zero.
pub(crate) fn usage(wire: &WireUsage, required: bool) -> Result<Usage, DecodeError> {
    let (input, output) = match (wire.input_tokens, wire.output_tokens) {
        (Some(input), Some(output)) => (input, output),
        _ if required => return Err(DecodeError::MissingUsage),
        (input, output) => (input.unwrap_or(0), output.unwrap_or(0)),
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
