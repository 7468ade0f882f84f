//! The streaming reply: `chat.completion.chunk` objects carried in SSE `data:` lines.

use super::response::{ChatUsage, FinishReason};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One `chat.completion.chunk`, or a supplier's in-stream `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatCompletionChunk))]
pub struct ChatCompletionChunk {
    /// The completion's `id`, the same on every chunk of a stream.
    #[serde(default)]
    pub id: String,
    /// Always `chat.completion.chunk`.
    #[serde(default = "chunk_object")]
    pub object: String,
    /// When the completion was created, in Unix seconds.
    #[serde(default)]
    pub created: i64,
    /// The model that generated the completion.
    #[serde(default)]
    pub model: String,
    /// The choices this chunk continues; empty on the usage-only last chunk.
    #[serde(default)]
    pub choices: Vec<ChunkChoice>,
    /// Only on the last chunk (`stream_options.include_usage`); `null` before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<ChatUsage>,
    /// A failure the supplier reports after the stream started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<StreamError>,
}

pub(crate) fn chunk_object() -> String {
    "chat.completion.chunk".to_owned()
}

/// One entry of a chunk's `choices`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatChunkChoice))]
pub struct ChunkChoice {
    /// Which choice this continues (always 0: one choice per request).
    #[serde(default)]
    pub index: u32,
    /// What this chunk adds to the choice's message.
    #[serde(default)]
    pub delta: Delta,
    /// Required and nullable in OpenAI's schema: `null` until the last chunk.
    #[serde(default)]
    pub finish_reason: Option<FinishReason>,
}

/// `delta`: the part of the assistant message a chunk adds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatDelta))]
pub struct Delta {
    /// `assistant`, on the first chunk only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<String>,
    /// A piece of the message's text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// A piece of the model's reasoning text (DeepSeek and vLLM's name).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reasoning_content: Option<String>,
    /// Reasoning text under the name some gateways use (read only).
    #[serde(default, skip_serializing)]
    pub reasoning: Option<String>,
    /// A piece of the model's refusal message.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refusal: Option<String>,
    /// Fragments of tool calls, keyed by `index`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_calls: Option<Vec<ToolCallDelta>>,
}

/// A fragment of a tool call: the first carries `id`, `type` and
/// `function.name`; later ones carry pieces of `function.arguments`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatToolCallDelta))]
pub struct ToolCallDelta {
    /// Ordinal of the tool call within the message. Some suppliers omit it
    /// (read as 0; a new `id` then starts a new call).
    #[serde(default)]
    pub index: u32,
    /// The call's id, on its first fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// `function`, on the call's first fragment.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The function's name (first fragment) or a piece of its arguments.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<FunctionDelta>,
}

/// `function` of a tool call fragment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatFunctionDelta))]
pub struct FunctionDelta {
    /// The function's name, on the call's first fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// A piece of the JSON arguments text, to be concatenated in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<String>,
}

/// A supplier's in-stream error object (fields vary by supplier).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = ChatStreamError))]
pub struct StreamError {
    /// A human-readable description of the failure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The error's `type` (such as `server_error`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// The error's `code`: a string or a number depending on the supplier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<Value>,
}
