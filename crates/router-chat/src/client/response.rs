//! The `chat.completion` object sent back to a Chat client, and the usage
//! and finish-reason pieces its stream chunks share.

use crate::wire::request::{self as wire, FunctionCall, MessageContent, function_kind};
use crate::wire::response::{
    ChatCompletion, ChatUsage, Choice, CompletionTokensDetails, FinishReason, PromptTokensDetails,
    ResponseMessage,
};
use crate::wire::to_json_bytes;
use router_canonical::codec::ReplyContext;
use router_canonical::{NanoUsd, OutputBlock, Response, StopReason, Usage};

pub(crate) fn response(resp: &Response, ctx: &ReplyContext<'_>) -> Vec<u8> {
    let mut text: Option<String> = None;
    let mut reasoning: Option<String> = None;
    let mut refusal: Option<String> = None;
    let mut calls = Vec::new();
    for block in &resp.output {
        match block {
            OutputBlock::Text { text: t } => text.get_or_insert_with(String::new).push_str(t),
            OutputBlock::Thinking { text: t, .. } => {
                reasoning.get_or_insert_with(String::new).push_str(t);
            }
            OutputBlock::Refusal { text: t } => {
                refusal.get_or_insert_with(String::new).push_str(t);
            }
            OutputBlock::ToolCall {
                id,
                name,
                arguments,
            } => calls.push(wire::ToolCall {
                id: id.clone(),
                kind: function_kind(),
                function: FunctionCall {
                    name: name.clone(),
                    arguments: arguments.clone(),
                },
            }),
            // Opaque to every client; Chat has nowhere to put it.
            OutputBlock::RedactedThinking { .. } => {}
            // A block kind added later has no place in a Chat reply.
            _ => {}
        }
    }
    let completion = ChatCompletion {
        id: ctx.id.to_owned(),
        object: "chat.completion".to_owned(),
        created: ctx.created,
        model: ctx.model.to_owned(),
        choices: vec![Choice {
            index: 0,
            message: ResponseMessage {
                role: "assistant".to_owned(),
                content: text.map(MessageContent::Text),
                refusal,
                tool_calls: (!calls.is_empty()).then_some(calls),
                reasoning_content: reasoning,
                reasoning: None,
            },
            finish_reason: Some(finish_reason(&resp.stop_reason)),
            logprobs: None,
        }],
        usage: Some(usage(&resp.usage, ctx.cost)),
        error: None,
    };
    to_json_bytes(&completion)
}

/// Chat usage, with the charge in `cost` (USD) when there is one.
pub(crate) fn usage(usage: &Usage, cost: Option<NanoUsd>) -> ChatUsage {
    ChatUsage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: Some(usage.total_tokens()),
        prompt_tokens_details: Some(PromptTokensDetails {
            cached_tokens: Some(usage.cache_read_input_tokens),
        }),
        completion_tokens_details: Some(CompletionTokensDetails {
            reasoning_tokens: Some(usage.reasoning_tokens),
        }),
        cost: cost.map(NanoUsd::to_usd_json),
    }
}

pub(crate) fn finish_reason(stop: &StopReason) -> FinishReason {
    match stop {
        StopReason::EndTurn | StopReason::StopSequence => FinishReason::Stop,
        StopReason::MaxTokens => FinishReason::Length,
        StopReason::ToolUse => FinishReason::ToolCalls,
        StopReason::ContentFilter | StopReason::Refusal => FinishReason::ContentFilter,
        // Only server tools pause a turn, and the router rejects those; should
        // one arrive, the turn has ended as far as a Chat client can tell.
        StopReason::PauseTurn => FinishReason::Stop,
        StopReason::Other(other) => FinishReason::Other(other.clone()),
        // A stop reason added later: generation ended.
        _ => FinishReason::Stop,
    }
}
