//! Canonical -> wire: the `response` object for a Responses client.
//!
//! A `response` object with every member the OpenAI SDKs require. Output
//! blocks become items in order: consecutive text and refusal blocks share
//! one `message` item, each tool call is a `function_call` item, each thinking
//! block a `reasoning` item (summary text, signature as `encrypted_content`).
//! Redacted thinking has no Responses form and is left out. The request echo
//! members (`instructions`, `max_output_tokens`, `reasoning`, `tools`,
//! `tool_choice`, `text`, ...) repeat the client's request
//! ([`RequestEcho`](crate::RequestEcho)), or carry the protocol defaults
//! where it set none.

use super::echo::{RequestEcho, ResponsesExtra};
use crate::convert::{ToolNamespaces, reasoning_item};
use crate::wire::response::{
    FunctionCallOutput, IncompleteDetails, InputTokensDetails, OutputContent, OutputItem,
    OutputMessage, OutputRefusal, OutputText, OutputTokensDetails, ResponseError, ResponseObject,
    ResponseUsage, object, response_kind,
};
use crate::wire::to_json_bytes;
use router_canonical::{NanoUsd, OutputBlock, ReplyContext, Response, StopReason, Usage};
use serde_json::{Number, Value};

pub(crate) fn response(resp: &Response, ctx: &ReplyContext<'_>, extra: &ResponsesExtra) -> Vec<u8> {
    let namespaces = &extra.namespaces;
    let finish = Finish::of(&resp.stop_reason);
    let mut output = Vec::new();
    let mut message: Option<OutputMessage> = None;
    for block in &resp.output {
        let part = match block {
            OutputBlock::Text { text } => Some(output_text(text.clone())),
            OutputBlock::Refusal { text } => Some(OutputContent::Refusal(OutputRefusal {
                refusal: text.clone(),
            })),
            _ => None,
        };
        if let Some(part) = part {
            let index = output.len();
            message
                .get_or_insert_with(|| OutputMessage {
                    id: item_id("msg", ctx.id, index),
                    status: "completed".to_owned(),
                    role: "assistant".to_owned(),
                    content: Vec::new(),
                })
                .content
                .push(part);
            continue;
        }
        if let OutputBlock::RedactedThinking { .. } = block {
            continue;
        }
        if let Some(done) = message.take() {
            output.push(OutputItem::Message(done));
        }
        let index = output.len();
        match block {
            OutputBlock::ToolCall {
                id,
                name,
                arguments,
            } => output.push(OutputItem::FunctionCall(named_call(
                FunctionCallOutput {
                    id: Some(item_id("fc", ctx.id, index)),
                    status: Some("completed".to_owned()),
                    call_id: id.clone(),
                    name: name.clone(),
                    namespace: None,
                    arguments: arguments.clone(),
                },
                namespaces,
            ))),
            OutputBlock::Thinking { text, signature } => {
                output.push(OutputItem::Reasoning(reasoning_item(
                    Some(item_id("rs", ctx.id, index)),
                    text,
                    signature.as_ref(),
                )));
            }
            _ => {}
        }
    }
    if let Some(mut last) = message.take() {
        if finish.incomplete.is_some() {
            last.status = "incomplete".to_owned();
        }
        output.push(OutputItem::Message(last));
    }
    let reply = response_object(
        ResponseHead {
            id: ctx.id,
            model: ctx.model,
            created: ctx.created,
            echo: &extra.echo,
        },
        finish.status,
        finish.incomplete,
        None,
        output,
        Some(usage(&resp.usage, ctx.cost)),
    );
    to_json_bytes(&reply)
}

/// The `id`, `model` and `created_at` of the router's response object.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ResponseHead<'a> {
    pub(crate) id: &'a str,
    pub(crate) model: &'a str,
    pub(crate) created: i64,
    pub(crate) echo: &'a RequestEcho,
}

/// The final `status` for a stop reason, and the incomplete reason if any.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finish {
    pub(crate) status: &'static str,
    pub(crate) incomplete: Option<&'static str>,
}

impl Finish {
    pub(crate) fn of(stop: &StopReason) -> Finish {
        let incomplete = match stop {
            StopReason::MaxTokens => Some("max_output_tokens"),
            StopReason::ContentFilter => Some("content_filter"),
            _ => None,
        };
        Finish {
            status: if incomplete.is_some() {
                "incomplete"
            } else {
                "completed"
            },
            incomplete,
        }
    }
}

/// The id of the router's output item `index`: `msg_`, `fc_` or `rs_`
/// followed by the response id's stem, so ids are stable per response.
/// A call of a namespaced function named as the client declared it: its
/// `namespace` and its own `name`, not the flat name the route saw.
pub(crate) fn named_call(
    mut call: FunctionCallOutput,
    namespaces: &ToolNamespaces,
) -> FunctionCallOutput {
    if let Some((namespace, name)) = namespaces.resolve(&call.name) {
        call.namespace = Some(namespace.to_owned());
        call.name = name.to_owned();
    }
    call
}

pub(crate) fn item_id(prefix: &str, response_id: &str, index: usize) -> String {
    let stem = response_id.strip_prefix("resp_").unwrap_or(response_id);
    format!("{prefix}_{stem}_{index}")
}

pub(crate) fn output_text(text: String) -> OutputContent {
    OutputContent::OutputText(OutputText {
        text,
        annotations: Vec::new(),
        logprobs: Vec::new(),
    })
}

/// The router's `response` object: the given state plus the fixed echo
/// members the OpenAI SDKs require.
pub(crate) fn response_object(
    head: ResponseHead<'_>,
    status: &str,
    incomplete: Option<&str>,
    error: Option<ResponseError>,
    output: Vec<OutputItem>,
    usage: Option<ResponseUsage>,
) -> ResponseObject {
    ResponseObject {
        id: head.id.to_owned(),
        object: response_kind(),
        created_at: Number::from(head.created),
        status: Some(status.to_owned()),
        background: Some(false),
        error,
        incomplete_details: incomplete.map(|reason| IncompleteDetails {
            reason: Some(reason.to_owned()),
        }),
        instructions: head.echo.instructions.clone().map(Value::from),
        max_output_tokens: head.echo.max_output_tokens.map(Value::from),
        model: head.model.to_owned(),
        output,
        parallel_tool_calls: head.echo.parallel_tool_calls.unwrap_or(true),
        previous_response_id: None,
        reasoning: head.echo.reasoning(),
        store: Some(false),
        temperature: head.echo.temperature,
        text: head.echo.text(),
        tool_choice: head.echo.tool_choice(),
        tools: head.echo.tools.clone(),
        top_p: head.echo.top_p,
        truncation: Some("disabled".to_owned()),
        usage,
        user: head.echo.user.clone(),
        safety_identifier: head.echo.safety_identifier.clone(),
        top_logprobs: head.echo.top_logprobs.clone(),
        prompt_cache_key: head.echo.prompt_cache_key.clone(),
        metadata: head.echo.metadata.clone().unwrap_or_else(|| object([])),
    }
}

/// Responses usage with the charge, when there is one, in `cost` (USD).
pub(crate) fn usage(usage: &Usage, cost: Option<NanoUsd>) -> ResponseUsage {
    ResponseUsage {
        input_tokens: usage.input_tokens,
        input_tokens_details: Some(InputTokensDetails {
            cached_tokens: usage.cache_read_input_tokens,
            cache_write_tokens: usage.cache_creation_input_tokens,
        }),
        output_tokens: usage.output_tokens,
        output_tokens_details: Some(OutputTokensDetails {
            reasoning_tokens: usage.reasoning_tokens,
        }),
        total_tokens: Some(usage.total_tokens()),
        cost: cost.map(NanoUsd::to_usd_json),
    }
}
