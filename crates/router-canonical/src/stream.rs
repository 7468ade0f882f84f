//! Canonical stream events: what every SSE dialect decodes into and encodes from.
//!
//! The sequence is `Start`, then blocks (`BlockStart`, `Delta`*, `BlockStop`)
//! with increasing indexes, then exactly one `Finish`. Decoders of protocols
//! without explicit blocks (Chat) synthesise the block events.

use crate::response::{StopReason, Usage};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum StreamEvent {
    Start {
        id: String,
        model: String,
    },
    BlockStart {
        index: usize,
        block: BlockKind,
    },
    Delta {
        index: usize,
        delta: BlockDelta,
    },
    BlockStop {
        index: usize,
    },
    /// Usage seen mid-stream (some suppliers report input tokens early).
    Usage {
        usage: Usage,
    },
    Finish {
        stop_reason: StopReason,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        stop_sequence: Option<String>,
        usage: Usage,
    },
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockKind {
    Text,
    Thinking,
    RedactedThinking { data: String },
    ToolCall { id: String, name: String },
    Refusal,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
#[non_exhaustive]
pub enum BlockDelta {
    Text(String),
    Thinking(String),
    Signature(String),
    ToolArguments(String),
    Refusal(String),
}
