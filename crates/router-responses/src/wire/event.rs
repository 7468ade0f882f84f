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
    #[serde(rename = "response.created")]
    Created {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.in_progress")]
    InProgress {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.completed")]
    Completed {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.incomplete")]
    Incomplete {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.failed")]
    Failed {
        response: Box<ResponseObject>,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_item.added")]
    OutputItemAdded {
        output_index: usize,
        item: OutputItem,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_item.done")]
    OutputItemDone {
        output_index: usize,
        item: OutputItem,
        sequence_number: u64,
    },
    #[serde(rename = "response.content_part.added")]
    ContentPartAdded {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
        sequence_number: u64,
    },
    #[serde(rename = "response.content_part.done")]
    ContentPartDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        part: OutputContent,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_text.delta")]
    OutputTextDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        logprobs: Vec<Value>,
        sequence_number: u64,
    },
    #[serde(rename = "response.output_text.done")]
    OutputTextDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        text: String,
        logprobs: Vec<Value>,
        sequence_number: u64,
    },
    #[serde(rename = "response.refusal.delta")]
    RefusalDelta {
        item_id: String,
        output_index: usize,
        content_index: usize,
        delta: String,
        sequence_number: u64,
    },
    #[serde(rename = "response.refusal.done")]
    RefusalDone {
        item_id: String,
        output_index: usize,
        content_index: usize,
        refusal: String,
        sequence_number: u64,
    },
    #[serde(rename = "response.function_call_arguments.delta")]
    FunctionCallArgumentsDelta {
        item_id: String,
        output_index: usize,
        delta: String,
        sequence_number: u64,
    },
    #[serde(rename = "response.function_call_arguments.done")]
    FunctionCallArgumentsDone {
        item_id: String,
        output_index: usize,
        name: String,
        arguments: String,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_summary_part.added")]
    ReasoningSummaryPartAdded {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: ReasoningText,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_summary_part.done")]
    ReasoningSummaryPartDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        part: ReasoningText,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_summary_text.delta")]
    ReasoningSummaryTextDelta {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        delta: String,
        sequence_number: u64,
    },
    #[serde(rename = "response.reasoning_summary_text.done")]
    ReasoningSummaryTextDone {
        item_id: String,
        output_index: usize,
        summary_index: usize,
        text: String,
        sequence_number: u64,
    },
    /// A stream failure, with the router's stable error code.
    #[serde(rename = "error")]
    Error {
        code: Option<String>,
        message: String,
        param: Option<String>,
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
    #[serde(rename = "type")]
    pub kind: Option<String>,
    pub output_index: Option<usize>,
    pub content_index: Option<usize>,
    pub summary_index: Option<usize>,
    pub item_id: Option<String>,
    pub delta: Option<String>,
    pub text: Option<String>,
    pub refusal: Option<String>,
    pub arguments: Option<String>,
    pub item: Option<OutputItem>,
    pub part: Option<OutputContent>,
    pub response: Option<Box<ResponseObject>>,
    /// `error` events: a string code (some suppliers send a number).
    pub code: Option<Value>,
    pub message: Option<String>,
    pub param: Option<String>,
    /// Some suppliers nest the failure: `{"type": "error", "error": {...}}`.
    pub error: Option<Value>,
}
