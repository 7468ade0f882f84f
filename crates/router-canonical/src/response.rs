//! The canonical (non-streaming) response: output blocks, stop reason, usage.

use serde::{Deserialize, Serialize};

/// A complete reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The supplier's response ID; the server replaces it with its own.
    pub id: String,
    /// The model the supplier reports; the server answers with the public ID.
    pub model: String,
    /// The content, in order.
    pub output: Vec<OutputBlock>,
    /// Why generation stopped.
    pub stop_reason: StopReason,
    /// The stop sequence that ended it, if one did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_sequence: Option<String>,
    /// Token usage.
    pub usage: Usage,
    /// Unix seconds.
    pub created: i64,
}

/// One block of a reply's content.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum OutputBlock {
    /// Answer text.
    Text {
        /// The text.
        text: String,
    },
    /// The model's reasoning, readable.
    Thinking {
        /// The reasoning text.
        text: String,
        /// Its supplier's signature, replayed to that supplier with it.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        signature: Option<String>,
    },
    /// Reasoning the supplier encrypted: opaque data to replay as is.
    RedactedThinking {
        /// The opaque data.
        data: String,
    },
    /// A call of one of the request's tools.
    ToolCall {
        /// The call's ID.
        id: String,
        /// The tool's name.
        name: String,
        /// The arguments, a JSON text.
        arguments: String,
    },
    /// A model refusal (OpenAI `refusal`).
    Refusal {
        /// The refusal text.
        text: String,
    },
}

impl Response {
    /// The answer text, every text block joined.
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

/// Why generation stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum StopReason {
    /// Natural end (Chat `stop`, Messages `end_turn`).
    EndTurn,
    /// The output cap was reached.
    MaxTokens,
    /// A stop sequence was generated.
    StopSequence,
    /// The model called a tool and waits for its result.
    ToolUse,
    /// The supplier's content filter stopped it.
    ContentFilter,
    /// The model refused.
    Refusal,
    /// A long turn paused (server tools); the caller may continue it.
    PauseTurn,
    /// Anything else a supplier sends, kept as-is.
    Other(String),
}

/// Token usage. `input_tokens` counts every input token, cache reads and
/// writes included (OpenAI's convention); `output_tokens` includes reasoning
/// tokens. Wire crates whose protocol counts differently convert at the edge.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    /// Every input token, cache reads and writes included.
    pub input_tokens: u64,
    /// Every output token, reasoning included.
    pub output_tokens: u64,
    /// Input tokens read from the supplier's prompt cache.
    #[serde(default)]
    pub cache_read_input_tokens: u64,
    /// Input tokens written to the supplier's prompt cache.
    #[serde(default)]
    pub cache_creation_input_tokens: u64,
    /// Output tokens spent on reasoning.
    #[serde(default)]
    pub reasoning_tokens: u64,
}

impl Usage {
    /// Input and output tokens.
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
