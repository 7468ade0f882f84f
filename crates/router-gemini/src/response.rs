//! Reading a Gemini `GenerateContentResponse` (a whole reply, or one stream
//! chunk's pieces): parts, finish reasons and usage.

use crate::error::DecodeError;
use crate::request::call_id;
use crate::wire::{GenerateContentResponse, Part, UsageMetadata};
use router_canonical::{OutputBlock, Response, StopReason, Usage};

pub(crate) fn parse(body: &[u8]) -> Result<GenerateContentResponse, DecodeError> {
    let reply: GenerateContentResponse =
        serde_json::from_slice(body).map_err(|e| DecodeError::InvalidJson(e.to_string()))?;
    if let Some(error) = reply.error {
        return Err(DecodeError::ErrorReply {
            status: error.status,
            message: error.message,
        });
    }
    if reply.candidates.is_empty()
        && let Some(reason) = reply
            .prompt_feedback
            .as_ref()
            .and_then(|f| f.block_reason.clone())
    {
        return Err(DecodeError::Blocked { reason });
    }
    Ok(reply)
}

pub(crate) fn decode(body: &[u8], require_usage: bool) -> Result<Response, DecodeError> {
    let reply = parse(body)?;
    let usage = usage(reply.usage_metadata.as_ref(), require_usage)?;
    let candidate = reply
        .candidates
        .into_iter()
        .next()
        .ok_or(DecodeError::NoCandidate)?;
    let mut output = Vec::new();
    let mut calls = 0;
    for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
        if let Some(block) = output_block(part, &mut calls)? {
            output.push(block);
        }
    }
    let stop_reason = stop_reason(candidate.finish_reason.as_deref(), calls > 0);
    Ok(Response {
        id: reply.response_id.unwrap_or_default(),
        model: reply.model_version.unwrap_or_default(),
        output,
        stop_reason,
        stop_sequence: None,
        usage,
        created: 0,
    })
}

/// The canonical block of one part; `calls` counts the function calls so
/// far (their IDs). An empty text part gives none.
pub(crate) fn output_block(
    part: Part,
    calls: &mut usize,
) -> Result<Option<OutputBlock>, DecodeError> {
    if let Some(call) = part.function_call {
        let arguments = call
            .args
            .unwrap_or_else(|| serde_json::Value::Object(Default::default()))
            .to_string();
        let id = match call.id {
            Some(id) if part.thought_signature.is_none() => id,
            _ => call_id(*calls, part.thought_signature.as_deref()),
        };
        *calls += 1;
        return Ok(Some(OutputBlock::ToolCall {
            id,
            name: call.name,
            arguments,
        }));
    }
    if let Some(text) = part.text {
        if part.thought == Some(true) {
            return Ok(Some(OutputBlock::Thinking {
                text,
                signature: part.thought_signature,
            }));
        }
        return Ok((!text.is_empty()).then_some(OutputBlock::Text { text }));
    }
    if part.inline_data.is_some() {
        return Err(DecodeError::UnsupportedPart {
            kind: "inlineData".into(),
        });
    }
    match part.other.keys().next() {
        Some(kind) => Err(DecodeError::UnsupportedPart { kind: kind.clone() }),
        // A part with only a signature (it closes a thought): nothing to show.
        None => Ok(None),
    }
}

/// The canonical stop reason of a `finishReason`. A turn that called a
/// function ends for the tool (Gemini says `STOP`).
pub(crate) fn stop_reason(finish: Option<&str>, called_tools: bool) -> StopReason {
    match finish {
        _ if called_tools => StopReason::ToolUse,
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => StopReason::EndTurn,
        Some("MAX_TOKENS") => StopReason::MaxTokens,
        Some(
            "SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII" | "IMAGE_SAFETY",
        ) => StopReason::ContentFilter,
        Some(other) => StopReason::Other(other.to_ascii_lowercase()),
    }
}

/// Canonical usage: input is the prompt (cached content included, and the
/// prompt of tool use), output the candidates plus the thoughts.
pub(crate) fn usage(
    metadata: Option<&UsageMetadata>,
    required: bool,
) -> Result<Usage, DecodeError> {
    let metadata = match metadata {
        Some(m) if m.prompt_token_count.is_some() => *m,
        _ if required => return Err(DecodeError::MissingUsage),
        _ => UsageMetadata::default(),
    };
    let thoughts = metadata.thoughts_token_count.unwrap_or(0);
    let input = metadata
        .prompt_token_count
        .unwrap_or(0)
        .checked_add(metadata.tool_use_prompt_token_count.unwrap_or(0));
    let output = metadata
        .candidates_token_count
        .unwrap_or(0)
        .checked_add(thoughts);
    let usage = Usage {
        input_tokens: input.unwrap_or(u64::MAX),
        output_tokens: output.unwrap_or(u64::MAX),
        cache_read_input_tokens: metadata.cached_content_token_count.unwrap_or(0),
        cache_creation_input_tokens: 0,
        reasoning_tokens: thoughts,
    };
    if input.is_none() || output.is_none() || !usage.is_consistent() {
        return Err(DecodeError::InvalidUsage { usage });
    }
    Ok(usage)
}
