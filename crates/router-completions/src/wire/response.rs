//! The reply: a `text_completion` object, also the shape of every stream chunk.
//!
//! Field set and nullability follow the public OpenAI reference (and its
//! Python SDK's `Completion` model): `id`, `object`, `created`, `model` and
//! `choices` always present; each choice has `text`, `index`, `logprobs`
//! (always `null` here) and `finish_reason` (`null` on a streamed delta).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The `object` of every Completions reply and chunk.
pub const TEXT_COMPLETION: &str = "text_completion";

/// A `text_completion` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionTextCompletion))]
pub struct TextCompletion {
    /// The completion's ID.
    pub id: String,
    /// Always `text_completion`.
    pub object: String,
    /// Unix seconds.
    pub created: i64,
    /// The model the caller asked for.
    pub model: String,
    /// The one completion (or its delta, on a chunk).
    pub choices: Vec<Choice>,
    /// On the reply, and on the last chunk of a stream only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<CompletionUsage>,
}

/// One completion, or the delta of one in a stream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionChoice))]
pub struct Choice {
    /// The generated text (with the prompt in front when `echo` was set).
    pub text: String,
    /// Always 0.
    pub index: u32,
    /// The router never returns log probabilities: always `null`.
    #[serde(default)]
    pub logprobs: Option<Value>,
    /// `stop`, `length` or `content_filter`; `null` on a streamed delta.
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

/// The three finish reasons the legacy protocol defines. The router maps
/// every canonical stop reason onto one of them, so strict clients (the
/// Python SDK types it as a closed literal) can always read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionFinishReason))]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    /// A natural end or a stop sequence.
    Stop,
    /// The token limit.
    Length,
    /// The supplier's content filter or a refusal.
    ContentFilter,
}

/// `usage`, with the router's settled charge in `cost` (USD).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = CompletionUsage))]
pub struct CompletionUsage {
    /// Input tokens.
    pub prompt_tokens: u64,
    /// Generated tokens.
    pub completion_tokens: u64,
    /// Input and generated tokens.
    pub total_tokens: u64,
    /// Absent when the caller reports no charge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<Value>,
}
