//! Canonical stream events: what every SSE dialect decodes into and encodes from.
//!
//! The sequence is `Start`, then blocks (`BlockStart`, `Delta`*, `BlockStop`)
//! with increasing indexes, then exactly one `Finish`. Decoders of protocols
//! without explicit blocks (Chat) synthesise the block events.

use crate::response::{StopReason, Usage};
use serde::{Deserialize, Serialize};

/// One event of a streamed reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    /// The reply began.
    Start {
        /// The supplier's reply ID.
        id: String,
        /// The model the supplier reports.
        model: String,
    },
    /// A content block opened.
    BlockStart {
        /// The block's position in the reply, from 0.
        index: usize,
        /// What the block holds.
        block: BlockKind,
    },
    /// More content for an open block.
    Delta {
        /// The block it belongs to.
        index: usize,
        /// The content.
        delta: BlockDelta,
    },
    /// A content block closed.
    BlockStop {
        /// The block that closed.
        index: usize,
    },
    /// Usage seen mid-stream (some suppliers report input tokens early).
    Usage {
        /// The usage so far.
        usage: Usage,
    },
    /// The reply ended successfully.
    Finish {
        /// Why generation stopped.
        stop_reason: StopReason,
        /// The stop sequence that ended it, if one did.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_sequence: Option<String>,
        /// The whole reply's usage.
        usage: Usage,
    },
}

/// What a streamed content block holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockKind {
    /// Answer text.
    Text,
    /// The model's reasoning, readable.
    Thinking,
    /// Reasoning the supplier encrypted: opaque data to replay as is.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
    /// A call of one of the request's tools; its arguments arrive as deltas.
    ToolCall {
        /// The call's ID.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// A refusal to answer (OpenAI `refusal`).
    Refusal,
}

/// Content added to an open block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockDelta {
    /// Answer text.
    Text(String),
    /// Reasoning text.
    Thinking(String),
    /// The signature of a thinking block (replayed to its supplier).
    Signature(String),
    /// A piece of a tool call's JSON arguments.
    ToolArguments(String),
    /// Refusal text.
    Refusal(String),
}
