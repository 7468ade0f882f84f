//! Canonical -> wire: the `text_completion` reply a Completions client reads.
//!
//! Only text blocks reach the client, concatenated in order. The surface has
//! no tools, reasoning or refusal field, so other blocks are left out: a
//! tool call cannot be asked for here, thinking is the supplier's working,
//! and a refusal is reported through `finish_reason: "content_filter"`.

use crate::client::ResponseContext;
use crate::wire::response::{
    Choice, CompletionUsage, FinishReason, TEXT_COMPLETION, TextCompletion,
};
use crate::wire::to_json_bytes;
use router_canonical::{NanoUsd, OutputBlock, Response, StopReason, Usage};

pub(crate) fn response(resp: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    let mut text = ctx.echo.map(str::to_owned).unwrap_or_default();
    for block in &resp.output {
        if let OutputBlock::Text { text: t } = block {
            text.push_str(t);
        }
    }
    let completion = TextCompletion {
        id: ctx.id.to_owned(),
        object: TEXT_COMPLETION.to_owned(),
        created: ctx.created,
        model: ctx.model.to_owned(),
        choices: vec![Choice {
            text,
            index: 0,
            logprobs: None,
            finish_reason: Some(finish_reason(&resp.stop_reason)),
        }],
        usage: Some(usage(&resp.usage, ctx.cost)),
    };
    to_json_bytes(&completion)
}

/// Usage, with the charge in `cost` (USD) when there is one.
pub(crate) fn usage(usage: &Usage, cost: Option<NanoUsd>) -> CompletionUsage {
    CompletionUsage {
        prompt_tokens: usage.input_tokens,
        completion_tokens: usage.output_tokens,
        total_tokens: usage.total_tokens(),
        cost: cost.map(NanoUsd::to_usd_json),
    }
}

/// Every canonical stop reason as one of the protocol's three values.
pub(crate) fn finish_reason(stop: &StopReason) -> FinishReason {
    match stop {
        StopReason::MaxTokens => FinishReason::Length,
        StopReason::ContentFilter | StopReason::Refusal => FinishReason::ContentFilter,
        // A natural end or a stop sequence is `stop`. Tool use cannot be
        // requested on this surface and only server tools pause a turn (the
        // router rejects those); should either arrive, generation has ended
        // as far as a text client can tell. A supplier's unknown reason is
        // not forwarded: the SDKs type `finish_reason` as a closed set.
        StopReason::EndTurn
        | StopReason::StopSequence
        | StopReason::ToolUse
        | StopReason::PauseTurn
        | StopReason::Other(_) => FinishReason::Stop,
        // A stop reason added later: generation ended.
        _ => FinishReason::Stop,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_reason_maps_into_the_closed_set() {
        let cases = [
            (StopReason::EndTurn, FinishReason::Stop),
            (StopReason::StopSequence, FinishReason::Stop),
            (StopReason::MaxTokens, FinishReason::Length),
            (StopReason::ContentFilter, FinishReason::ContentFilter),
            (StopReason::Refusal, FinishReason::ContentFilter),
            (StopReason::ToolUse, FinishReason::Stop),
            (StopReason::PauseTurn, FinishReason::Stop),
            (StopReason::Other("eos".to_owned()), FinishReason::Stop),
        ];
        for (stop, expected) in cases {
            assert_eq!(finish_reason(&stop), expected, "{stop:?}");
        }
    }
}
