//! The non-streaming reply: a `message` object and its `usage`.
//!
//! Read from Messages suppliers (lenient: unknown members ignored, an unknown
//! `stop_reason` kept) and written to clients with every member the
//! Messages schema defines.

use super::request::ContentBlock;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A `message` object.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesMessageObject))]
pub struct MessageObject {
    /// The message's id (`msg_...`).
    #[serde(default)]
    pub id: String,
    /// Always `message`.
    #[serde(rename = "type", default = "message_kind")]
    pub kind: String,
    /// Always `assistant`.
    #[serde(default = "assistant_role")]
    pub role: String,
    /// The model that generated the message.
    #[serde(default)]
    pub model: String,
    /// The generated content blocks.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Nullable and always present in Anthropic's schema (`null` in `message_start`).
    #[serde(default)]
    pub stop_reason: Option<WireStopReason>,
    /// The stop sequence that matched, when `stop_reason` is `stop_sequence`.
    #[serde(default)]
    pub stop_sequence: Option<String>,
    /// Tokens read and written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<WireUsage>,
}

pub(crate) fn message_kind() -> String {
    "message".to_owned()
}

pub(crate) fn assistant_role() -> String {
    "assistant".to_owned()
}

/// `stop_reason`, open to values a supplier may add.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum WireStopReason {
    /// `end_turn`: a natural end.
    EndTurn,
    /// `max_tokens`: the `max_tokens` cap was reached.
    MaxTokens,
    /// `stop_sequence`: a stop sequence matched.
    StopSequence,
    /// `tool_use`: the model called tools.
    ToolUse,
    /// `pause_turn`: a long turn paused, to be continued by sending it back.
    PauseTurn,
    /// `refusal`: the model declined.
    Refusal,
    /// A value this crate does not know, kept as sent.
    Other(String),
}

impl WireStopReason {
    /// The wire name.
    pub fn as_str(&self) -> &str {
        match self {
            WireStopReason::EndTurn => "end_turn",
            WireStopReason::MaxTokens => "max_tokens",
            WireStopReason::StopSequence => "stop_sequence",
            WireStopReason::ToolUse => "tool_use",
            WireStopReason::PauseTurn => "pause_turn",
            WireStopReason::Refusal => "refusal",
            WireStopReason::Other(s) => s,
        }
    }

    /// Reads a wire name; an unknown one is `Other`.
    pub fn parse(s: &str) -> Self {
        match s {
            "end_turn" => WireStopReason::EndTurn,
            "max_tokens" => WireStopReason::MaxTokens,
            "stop_sequence" => WireStopReason::StopSequence,
            "tool_use" => WireStopReason::ToolUse,
            "pause_turn" => WireStopReason::PauseTurn,
            "refusal" => WireStopReason::Refusal,
            other => WireStopReason::Other(other.to_owned()),
        }
    }
}

impl Serialize for WireStopReason {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

#[cfg(feature = "openapi")]
router_canonical::impl_to_schema!(WireStopReason as "MessagesStopReason", uses [], {
    router_canonical::openapi::open_string(
        &["end_turn", "max_tokens", "stop_sequence", "tool_use", "pause_turn", "refusal"],
        "Why generation stopped; a supplier may add values.",
    )
});

impl<'de> Deserialize<'de> for WireStopReason {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(WireStopReason::parse(&s))
    }
}

/// `usage` of a message, of `message_start` and of `message_delta`.
///
/// Anthropic's `input_tokens` excludes cache reads and writes (the canonical
/// count includes them). Every member is optional because `message_delta`
/// may carry only `output_tokens`; the decoder decides what is required.
/// Replies to clients always write all five members.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesWireUsage))]
pub struct WireUsage {
    /// Input tokens outside the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    /// Input tokens written to the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_creation_input_tokens: Option<u64>,
    /// Input tokens read from the prompt cache.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_read_input_tokens: Option<u64>,
    /// Tokens generated, thinking included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// A breakdown of the output tokens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens_details: Option<OutputTokensDetails>,
}

/// `output_tokens_details`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesOutputTokensDetails))]
pub struct OutputTokensDetails {
    /// Output tokens spent thinking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking_tokens: Option<u64>,
}
