//! Wire -> canonical: a Responses supplier's complete (non-streaming) reply.

use super::error::DecodeError;
use crate::convert::thinking;
use crate::wire::response::{
    IncompleteDetails, OutputContent, OutputItem, ResponseObject, ResponseUsage,
};
use router_canonical::parse::InvalidJson;
use router_canonical::{OutputBlock, Response, StopReason, Usage};
use serde_json::Value;

/// Read a complete reply; without usage it is invalid when `require_usage`,
/// else its usage is zero.
pub(crate) fn response(body: &[u8], require_usage: bool) -> Result<Response, DecodeError> {
    let mut de = serde_json::Deserializer::from_slice(body);
    let wire: ResponseObject =
        serde_path_to_error::deserialize(&mut de).map_err(InvalidJson::from)?;
    de.end().map_err(|err| DecodeError::at_root(&err))?;
    check_status(&wire)?;
    let usage = match &wire.usage {
        Some(wire_usage) => usage(wire_usage)?,
        None if require_usage => return Err(DecodeError::MissingUsage),
        None => Usage::default(),
    };
    let mut output = Vec::with_capacity(wire.output.len());
    for (i, item) in wire.output.into_iter().enumerate() {
        output_item(&format!("output[{i}]"), item, &mut output)?;
    }
    let called_tools = output
        .iter()
        .any(|b| matches!(b, OutputBlock::ToolCall { .. }));
    Ok(Response {
        id: wire.id,
        model: wire.model,
        output,
        stop_reason: stop_reason(
            wire.status.as_deref(),
            wire.incomplete_details.as_ref(),
            called_tools,
        ),
        // Responses has no stop sequences.
        stop_sequence: None,
        usage,
        created: unix_seconds(&wire.created_at),
    })
}

/// A finished reply is `completed` or `incomplete` (or says nothing);
/// `failed` is the supplier's error, anything else is not a final reply.
pub(crate) fn check_status(wire: &ResponseObject) -> Result<(), DecodeError> {
    match wire.status.as_deref() {
        None | Some("completed" | "incomplete") => Ok(()),
        Some("failed") => Err(supplier_failure(wire)),
        Some(other) => Err(DecodeError::UnexpectedStatus {
            status: other.to_owned(),
        }),
    }
}

/// The supplier's failure, from a failed response's `error`.
pub(crate) fn supplier_failure(wire: &ResponseObject) -> DecodeError {
    DecodeError::SupplierError {
        kind: None,
        code: wire.error.as_ref().and_then(|e| e.code.clone()),
        message: wire.error.as_ref().map(|e| e.message.clone()),
    }
}

pub(crate) fn unix_seconds(n: &serde_json::Number) -> i64 {
    match n.as_i64() {
        Some(s) => s,
        // Whole seconds; `as` saturates, and the value is informational.
        None => n.as_f64().map_or(0, |f| f as i64),
    }
}

/// The canonical blocks of one output item, appended in order.
pub(crate) fn output_item(
    path: &str,
    item: OutputItem,
    out: &mut Vec<OutputBlock>,
) -> Result<(), DecodeError> {
    match item {
        OutputItem::Message(message) => {
            for (j, part) in message.content.into_iter().enumerate() {
                out.push(match part {
                    OutputContent::OutputText(p) => OutputBlock::Text { text: p.text },
                    OutputContent::Refusal(p) => OutputBlock::Refusal { text: p.refusal },
                    OutputContent::Unknown(value) => {
                        return Err(DecodeError::UnknownContent {
                            path: format!("{path}.content[{j}]"),
                            kind: value
                                .get("type")
                                .and_then(Value::as_str)
                                .unwrap_or("")
                                .to_owned(),
                        });
                    }
                });
            }
        }
        OutputItem::FunctionCall(call) => out.push(OutputBlock::ToolCall {
            id: call.call_id,
            name: super::stream::called_name(call.name, call.namespace),
            arguments: call.arguments,
        }),
        OutputItem::Reasoning(item) => {
            let (text, signature) = thinking(item);
            // Nothing to show and nothing to replay: no block.
            if !text.is_empty() || signature.is_some() {
                out.push(OutputBlock::Thinking { text, signature });
            }
        }
        OutputItem::Unknown(value) => {
            return Err(DecodeError::UnknownOutputItem {
                path: path.to_owned(),
                kind: value
                    .get("type")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_owned(),
            });
        }
    }
    Ok(())
}

/// Canonical usage from Responses usage; implausible numbers are an invalid reply.
pub(crate) fn usage(wire: &ResponseUsage) -> Result<Usage, DecodeError> {
    let usage = Usage {
        input_tokens: wire.input_tokens,
        output_tokens: wire.output_tokens,
        cache_read_input_tokens: wire
            .input_tokens_details
            .as_ref()
            .map_or(0, |d| d.cached_tokens),
        cache_creation_input_tokens: wire
            .input_tokens_details
            .as_ref()
            .map_or(0, |d| d.cache_write_tokens),
        reasoning_tokens: wire
            .output_tokens_details
            .as_ref()
            .map_or(0, |d| d.reasoning_tokens),
    };
    if usage.is_consistent() {
        Ok(usage)
    } else {
        Err(DecodeError::InvalidUsage { usage })
    }
}

/// `completed` ends the turn (with a tool call: `ToolUse`); `incomplete`
/// says why in `incomplete_details.reason`.
pub(crate) fn stop_reason(
    status: Option<&str>,
    details: Option<&IncompleteDetails>,
    called_tools: bool,
) -> StopReason {
    match status {
        Some("incomplete") => match details.and_then(|d| d.reason.as_deref()) {
            Some("max_output_tokens") => StopReason::MaxTokens,
            Some("content_filter") => StopReason::ContentFilter,
            Some(other) => StopReason::Other(other.to_owned()),
            None => StopReason::Other("incomplete".to_owned()),
        },
        _ if called_tools => StopReason::ToolUse,
        _ => StopReason::EndTurn,
    }
}
