//! Encoding a canonical reply as the `message` object (with its usage and
//! stop reason) sent back to a Messages client.

use crate::convert::tool_input;
use crate::wire::request::{ContentBlock, RedactedThinkingBlock, ThinkingBlock, ToolUseBlock};
use crate::wire::response::{
    MessageObject, OutputTokensDetails, WireStopReason, WireUsage, assistant_role, message_kind,
};
use crate::wire::to_json_bytes;
use router_canonical::{OutputBlock, ReplyContext, Response, StopReason, Usage};
use serde_json::{Map, Value};

/// The client's `message` object under the reply's id and model. It
/// has no creation time and no cost: the Messages schema is fixed.
pub(crate) fn response(resp: &Response, ctx: &ReplyContext<'_>) -> Vec<u8> {
    let mut refused = false;
    let content = resp
        .output
        .iter()
        .map(|block| output_block(block, &mut refused))
        .collect();
    let stop_reason = if refused {
        WireStopReason::Refusal
    } else {
        stop_reason(&resp.stop_reason)
    };
    let message = MessageObject {
        id: ctx.id.to_owned(),
        kind: message_kind(),
        role: assistant_role(),
        model: ctx.model.to_owned(),
        content,
        stop_reason: Some(stop_reason),
        stop_sequence: resp.stop_sequence.clone(),
        usage: Some(client_usage(&resp.usage)),
    };
    to_json_bytes(&message)
}

/// One output block for a client. A refusal is a text block (the stop
/// reason says `refusal`); a thinking block always carries a `signature`
/// (empty when its supplier gave none).
fn output_block(block: &OutputBlock, refused: &mut bool) -> ContentBlock {
    match block {
        OutputBlock::Text { text } => ContentBlock::text(text.clone()),
        OutputBlock::Refusal { text } => {
            *refused = true;
            ContentBlock::text(text.clone())
        }
        OutputBlock::Thinking { text, signature } => ContentBlock::Thinking(ThinkingBlock {
            thinking: text.clone(),
            signature: Some(signature.clone().unwrap_or_default()),
            extra: Map::new(),
        }),
        OutputBlock::RedactedThinking { data } => {
            ContentBlock::RedactedThinking(RedactedThinkingBlock {
                data: data.clone(),
                extra: Map::new(),
            })
        }
        // Arguments that are not an object (a supplier cut short) become `{}`:
        // a client's SDK expects an object here.
        OutputBlock::ToolCall {
            id,
            name,
            arguments,
        } => ContentBlock::ToolUse(ToolUseBlock {
            id: id.clone(),
            name: name.clone(),
            input: tool_input(arguments).unwrap_or_else(|| Value::Object(Map::new())),
            cache_control: None,
            extra: Map::new(),
        }),
        // A block kind added later has no Messages form: an empty text block.
        _ => ContentBlock::text(""),
    }
}

/// Messages usage: `input_tokens` excludes cache reads and writes.
pub(crate) fn client_usage(usage: &Usage) -> WireUsage {
    WireUsage {
        input_tokens: Some(
            usage
                .input_tokens
                .saturating_sub(usage.cache_read_input_tokens)
                .saturating_sub(usage.cache_creation_input_tokens),
        ),
        cache_creation_input_tokens: Some(usage.cache_creation_input_tokens),
        cache_read_input_tokens: Some(usage.cache_read_input_tokens),
        output_tokens: Some(usage.output_tokens),
        output_tokens_details: Some(OutputTokensDetails {
            thinking_tokens: Some(usage.reasoning_tokens),
        }),
    }
}

/// Messages has no content filter stop; a filtered turn reads as a refusal.
pub(crate) fn stop_reason(stop: &StopReason) -> WireStopReason {
    match stop {
        StopReason::EndTurn => WireStopReason::EndTurn,
        StopReason::MaxTokens => WireStopReason::MaxTokens,
        StopReason::StopSequence => WireStopReason::StopSequence,
        StopReason::ToolUse => WireStopReason::ToolUse,
        StopReason::ContentFilter | StopReason::Refusal => WireStopReason::Refusal,
        StopReason::PauseTurn => WireStopReason::PauseTurn,
        StopReason::Other(other) => WireStopReason::Other(other.clone()),
        // A stop reason added later: the turn ended.
        _ => WireStopReason::EndTurn,
    }
}
