//! The non-streaming reply: a `chat.completion` object and its `usage`.
//!
//! Read from Chat suppliers (lenient: unknown fields ignored, an unknown
//! `finish_reason` kept) and written to clients.

use super::request::{MessageContent, ToolCall};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

/// A `chat.completion` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatCompletion))]
pub struct ChatCompletion {
    /// The completion's id (`chatcmpl-...`).
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion`.
    #[serde(default = "completion_object")]
    pub object: String,
    /// When the completion was created, in Unix seconds.
    #[serde(default)]
    pub created: i64,
    /// The model that generated the completion.
    #[serde(default)]
    pub model: String,
    /// The generated choices (one per request here).
    #[serde(default)]
    pub choices: Vec<Choice>,
    /// Tokens read and written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// A failure some suppliers report in a success reply instead of an
    /// error status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<crate::wire::chunk::StreamError>,
}

fn completion_object() -> String {
    "chat.completion".to_owned()
}

/// One entry of `choices`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatChoice))]
pub struct Choice {
    /// The choice's position in `choices`.
    #[serde(default)]
    pub index: u32,
    /// The assistant message generated.
    pub message: ResponseMessage,
    /// Required and nullable in OpenAI's schema: serialized as `null` when absent.
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
    /// Log probabilities are never returned; always `null` outbound.
    #[serde(default)]
    pub logprobs: Option<Value>,
}

/// The assistant message of a choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatResponseMessage))]
pub struct ResponseMessage {
    /// Always `assistant`.
    #[serde(default = "assistant_role")]
    pub role: String,
    /// Required and nullable in OpenAI's schema: `null` when there is no text.
    /// Suppliers may send an array of parts; only text parts are understood.
    #[serde(default)]
    pub content: Option<MessageContent>,
    /// The model's refusal message, when it refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// The tool calls the model made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCall>>,
    /// Reasoning text (DeepSeek, vLLM and many OpenAI-compatible suppliers).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Reasoning text under the name some gateways use (read only).
    #[serde(default, skip_serializing)]
    pub reasoning: Option<String>,
}

fn assistant_role() -> String {
    "assistant".to_owned()
}

/// `finish_reason`, open to values a supplier may add.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum FinishReason {
    /// `stop`: a natural end or a stop sequence.
    Stop,
    /// `length`: the token cap was reached.
    Length,
    /// `tool_calls`: the model called tools.
    ToolCalls,
    /// `content_filter`: content was withheld by a filter.
    ContentFilter,
    /// Deprecated `function_call`.
    FunctionCall,
    /// A value this crate does not know, kept as sent.
    Other(String),
}

impl FinishReason {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            FinishReason::Stop => "stop",
            FinishReason::Length => "length",
            FinishReason::ToolCalls => "tool_calls",
            FinishReason::ContentFilter => "content_filter",
            FinishReason::FunctionCall => "function_call",
            FinishReason::Other(s) => s,
        }
    }

    /// Reads a wire name; an unknown one is `Other`.
    pub fn parse(s: &str) -> Self {
        match s {
            "stop" => FinishReason::Stop,
            "length" => FinishReason::Length,
            "tool_calls" => FinishReason::ToolCalls,
            "content_filter" => FinishReason::ContentFilter,
            "function_call" => FinishReason::FunctionCall,
            other => FinishReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for FinishReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(FinishReason as "ChatFinishReason", uses [], {
    router_canonical::openapi::open_string(
        &["stop", "length", "tool_calls", "content_filter", "function_call"],
        "Why generation stopped; a supplier may add values.",
    )
});

impl<'de> Deserialize<'de> for FinishReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(FinishReason::parse(&s))
    }
}

/// `usage` of a completion or of the last stream chunk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatUsage))]
pub struct ChatUsage {
    /// Tokens in the prompt.
    pub prompt_tokens: u64,
    /// Tokens generated, reasoning included.
    pub completion_tokens: u64,
    /// `prompt_tokens` plus `completion_tokens`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_tokens: Option<u64>,
    /// A breakdown of the prompt tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_tokens_details: Option<PromptTokensDetails>,
    /// A breakdown of the generated tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_tokens_details: Option<CompletionTokensDetails>,
    /// The charge in USD, written when the reply reports one; a supplier's own `cost`
    /// is read and ignored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}

/// `prompt_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatPromptTokensDetails))]
pub struct PromptTokensDetails {
    /// Prompt tokens read from the supplier's prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cached_tokens: Option<u64>,
}

/// `completion_tokens_details`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatCompletionTokensDetails))]
pub struct CompletionTokensDetails {
    /// Generated tokens spent on reasoning.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_tokens: Option<u64>,
}
