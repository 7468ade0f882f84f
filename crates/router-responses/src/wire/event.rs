//! Streaming events: named `response.*` SSE events whose JSON `type` equals
//! the SSE event name.
//!
//! [`ServerEvent`] is what the router writes to its clients (every member
//! the reference lists, `sequence_number` on each). [`EventFields`] is the
//! lenient view the decoder reads a supplier's event through: every member
//! any event type carries, all optional, so one shape serves every type and
//! unknown event types can be skipped.

use super::request::ReasoningText;
use super::response::{OutputContent, OutputItem, ResponseObject};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One event of the router's client stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesServerEvent))]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum ServerEvent {
    /// `response.created`: the response exists, `status: "in_progress"`.
    #[serde(rename = "response.created")]
    Created {
        /// The response as it stands.
        response: Box<ResponseObject>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.in_progress`: generation is under way.
    #[serde(rename = "response.in_progress")]
    InProgress {
        /// The response as it stands.
        response: Box<ResponseObject>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.completed`: the last event of a finished response.
    #[serde(rename = "response.completed")]
    Completed {
        /// The response as it stands.
        response: Box<ResponseObject>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.incomplete`: the last event of a response cut short (a token cap or a filter).
    #[serde(rename = "response.incomplete")]
    Incomplete {
        /// The response as it stands.
        response: Box<ResponseObject>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.failed`: the last event of a response that failed.
    #[serde(rename = "response.failed")]
    Failed {
        /// The response as it stands.
        response: Box<ResponseObject>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.output_item.added`: an output item opens.
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        /// The output item's position in `output`.
        output_index: usize,
        /// The output item.
        item: OutputItem,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.output_item.done`: an output item is complete.
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        /// The output item's position in `output`.
        output_index: usize,
        /// The output item.
        item: OutputItem,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.content_part.added`: a content part of a message opens.
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The content part.
        part: OutputContent,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.content_part.done`: a content part is complete.
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The content part.
        part: OutputContent,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.output_text.delta`: more text of an `output_text` part.
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The text to append.
        delta: String,
        /// Token log probabilities (always empty: none are returned).
        logprobs: Vec<Value>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.output_text.done`: an `output_text` part's whole text.
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The part's whole text.
        text: String,
        /// Token log probabilities (always empty: none are returned).
        logprobs: Vec<Value>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.refusal.delta`: more of a refusal.
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The refusal text to append.
        delta: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.refusal.done`: a refusal's whole text.
    #[serde(rename = "response.refusal.done")]
    RefusalDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `content`.
        content_index: usize,
        /// The refusal's whole text.
        refusal: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.function_call_arguments.delta`: more of a function call's arguments.
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// A piece of the arguments' JSON text, to append.
        delta: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.function_call_arguments.done`: a function call's whole arguments.
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The function's name.
        name: String,
        /// The arguments' whole JSON text.
        arguments: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.reasoning_summary_part.added`: a reasoning summary part opens.
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The summary part.
        part: ReasoningText,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.reasoning_summary_part.done`: a reasoning summary part is complete.
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The summary part.
        part: ReasoningText,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.reasoning_summary_text.delta`: more text of a reasoning summary part.
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The summary text to append.
        delta: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// `response.reasoning_summary_text.done`: a reasoning summary part's whole text.
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        /// The id of the output item.
        item_id: String,
        /// The output item's position in `output`.
        output_index: usize,
        /// The part's position in the item's `summary`.
        summary_index: usize,
        /// The part's whole text.
        text: String,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
    /// A stream failure, with the router's stable error code.
    #[serde(rename = "error")]
    Error {
        /// The error's code, if any.
        code: Option<String>,
        /// A human-readable description.
        message: String,
        /// The request parameter at fault, if any.
        param: Option<String>,
        /// The event's position in the stream, from 0.
        sequence_number: u64,
    },
}

impl ServerEvent {
    /// The event's `type` (and SSE event name).
    pub fn kind(&self) -> &'static str {
        match self {
            ServerEvent::Created { .. } => "response.created",
            ServerEvent::InProgress { .. } => "response.in_progress",
            ServerEvent::Completed { .. } => "response.completed",
            ServerEvent::Incomplete { .. } => "response.incomplete",
            ServerEvent::Failed { .. } => "response.failed",
            ServerEvent::OutputItemAdded { .. } => "response.output_item.added",
            ServerEvent::OutputItemDone { .. } => "response.output_item.done",
            ServerEvent::ContentPartAdded { .. } => "response.content_part.added",
            ServerEvent::ContentPartDone { .. } => "response.content_part.done",
            ServerEvent::OutputTextDelta { .. } => "response.output_text.delta",
            ServerEvent::OutputTextDone { .. } => "response.output_text.done",
            ServerEvent::RefusalDelta { .. } => "response.refusal.delta",
            ServerEvent::RefusalDone { .. } => "response.refusal.done",
            ServerEvent::FunctionCallArgumentsDelta { .. } => {
                "response.function_call_arguments.delta"
            }
            ServerEvent::FunctionCallArgumentsDone { .. } => {
                "response.function_call_arguments.done"
            }
            ServerEvent::ReasoningSummaryPartAdded { .. } => {
                "response.reasoning_summary_part.added"
            }
            ServerEvent::ReasoningSummaryPartDone { .. } => "response.reasoning_summary_part.done",
            ServerEvent::ReasoningSummaryTextDelta { .. } => {
                "response.reasoning_summary_text.delta"
            }
            ServerEvent::ReasoningSummaryTextDone { .. } => "response.reasoning_summary_text.done",
            ServerEvent::Error { .. } => "error",
        }
    }
}

/// A supplier event as the decoder reads it: `type` plus whichever members
/// that type has. Members of the wrong JSON type are still an error (with
/// their path); absent ones are `None`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ResponsesEventFields))]
#[serde(default)]
pub struct EventFields {
    /// The event's `type`, such as `response.output_text.delta`.
    #[serde(rename = "type")]
    pub kind: Option<String>,
    /// The output item's position in `output`.
    pub output_index: Option<usize>,
    /// The part's position in the item's `content`.
    pub content_index: Option<usize>,
    /// The part's position in the item's `summary`.
    pub summary_index: Option<usize>,
    /// The id of the output item.
    pub item_id: Option<String>,
    /// Text to append (`*.delta` events).
    pub delta: Option<String>,
    /// A part's whole text (`*.done` events).
    pub text: Option<String>,
    /// A refusal's whole text (`response.refusal.done`).
    pub refusal: Option<String>,
    /// A call's whole arguments (`response.function_call_arguments.done`).
    pub arguments: Option<String>,
    /// The output item (`response.output_item.*`).
    pub item: Option<OutputItem>,
    /// The content part (`response.content_part.*`).
    pub part: Option<OutputContent>,
    /// The response (`response.created`, `.completed`, `.failed`, ...).
    pub response: Option<Box<ResponseObject>>,
    /// `error` events: a string code (some suppliers send a number).
    pub code: Option<Value>,
    /// A human-readable description (`error` events).
    pub message: Option<String>,
    /// The request parameter at fault (`error` events).
    pub param: Option<String>,
    /// Some suppliers nest the failure: `{"type": "error", "error": {...}}`.
    pub error: Option<Value>,
}
