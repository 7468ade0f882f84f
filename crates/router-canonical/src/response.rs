//! The canonical (non-streaming) response: output blocks, stop reason, usage.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The supplier's response ID; the server replaces it with its own.
    pub id: String,
    /// The model the supplier reports; the server answers with the public ID.
    pub model: String,
    pub output: Vec<OutputBlock>,
    pub stop_reason: StopReason,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    pub usage: Usage,
    /// Unix seconds.
    pub created: i64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputBlock {
    Text {
        text: String,
    },
    Thinking {
        text: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    RedactedThinking {
        data: String,
    },
    ToolCall {
        id: String,
        name: String,
        arguments: String,
    },
    /// A model refusal (OpenAI `refusal`).
    Refusal {
        text: String,
    },
}

impl Response {
    pub fn text(&self) -> String {
        let mut out = String::new();
        for block in &self.output {
            if let OutputBlock::Text { text } = block {
                out.push_str(text);
            }
        }
        out
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// Natural end (Chat `stop`, Messages `end_turn`).
    EndTurn,
    MaxTokens,
    StopSequence,
    ToolUse,
    ContentFilter,
    Refusal,
    PauseTurn,
    /// Anything else a supplier sends, kept as-is.
    Other(String),
}

/// Token usage. `input_tokens` counts every input token, cache reads and
/// writes included (OpenAI's convention); `output_tokens` includes reasoning
/// tokens. Wire crates whose protocol counts differently convert at the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    pub fn total_tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// Usage is plausible: cached parts do not exceed the input, reasoning
    /// does not exceed the output. Implausible usage is an invalid supplier
    /// response, never billed.
    pub fn is_consistent(&self) -> bool {
        self.cache_read_input_tokens
            .checked_add(self.cache_creation_input_tokens)
            .is_some_and(|cached| cached <= self.input_tokens)
            && self.reasoning_tokens <= self.output_tokens
    }
}
