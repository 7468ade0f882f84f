//! The wire protocols the router speaks, inbound and towards suppliers.

use serde::{Deserialize, Serialize};
use std::fmt;
use std::str::FromStr;

/// A wire protocol. `Completions` is inbound only: it rides the Chat path.
/// `Images` (OpenAI Images generation) and `Videos` are not chat dialects:
/// their routes serve only image and video models; no text inference
/// request is ever routed to them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Protocol {
    /// OpenAI Chat Completions.
    Chat,
    /// OpenAI Responses.
    Responses,
    /// Anthropic Messages.
    Messages,
    /// Legacy OpenAI Completions (a client surface only).
    Completions,
    /// OpenAI Images generation.
    Images,
    /// Video generation.
    Videos,
    /// Google's Gemini API (`generateContent`, `streamGenerateContent`),
    /// also Vertex AI's publisher models. A supplier dialect only.
    Gemini,
    /// Anthropic's Messages body on Amazon Bedrock (`InvokeModel`,
    /// `InvokeModelWithResponseStream`, `anthropic_version:
    /// bedrock-2023-05-31`, the model in the path). A supplier dialect only.
    BedrockMessages,
    /// Amazon Bedrock's Converse API (`Converse`, `ConverseStream`), for
    /// every Bedrock model. A supplier dialect only.
    BedrockConverse,
}

impl Protocol {
    /// The protocol a request arriving in this one is routed, recorded and
    /// matched against routes as. Legacy Completions has no route of its
    /// own: it rides the Chat path. Every other protocol is its own.
    pub fn rides(self) -> Protocol {
        match self {
            Protocol::Completions => Protocol::Chat,
            other => other,
        }
    }

    /// The protocol's catalog name (`chat`, `messages`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Protocol::Chat => "chat",
            Protocol::Responses => "responses",
            Protocol::Messages => "messages",
            Protocol::Completions => "completions",
            Protocol::Images => "images",
            Protocol::Videos => "videos",
            Protocol::Gemini => "gemini",
            Protocol::BedrockMessages => "bedrock_messages",
            Protocol::BedrockConverse => "bedrock_converse",
        }
    }

    /// Whether this is a media-generation protocol (images, videos) rather
    /// than a text-inference one.
    pub fn is_media(self) -> bool {
        matches!(self, Protocol::Images | Protocol::Videos)
    }

    /// Whether this protocol is only ever spoken to suppliers: no client
    /// surface speaks it, so no request arrives in it.
    pub fn is_supplier_only(self) -> bool {
        matches!(
            self,
            Protocol::Gemini | Protocol::BedrockMessages | Protocol::BedrockConverse
        )
    }

    /// Whether a route of this protocol carries an Anthropic Messages body
    /// (and so its limits: temperature at most 1, no penalties).
    pub fn is_messages_body(self) -> bool {
        matches!(self, Protocol::Messages | Protocol::BedrockMessages)
    }
}

impl fmt::Display for Protocol {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown protocol `{0}` (expected chat, responses, messages, completions, images, videos, gemini, bedrock_messages or bedrock_converse)"
)]
/// A catalog name that is no protocol.
pub struct UnknownProtocol(pub String);

impl FromStr for Protocol {
    type Err = UnknownProtocol;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "chat" => Ok(Protocol::Chat),
            "responses" => Ok(Protocol::Responses),
            "messages" => Ok(Protocol::Messages),
            "completions" => Ok(Protocol::Completions),
            "images" => Ok(Protocol::Images),
            "videos" => Ok(Protocol::Videos),
            "gemini" => Ok(Protocol::Gemini),
            "bedrock_messages" => Ok(Protocol::BedrockMessages),
            "bedrock_converse" => Ok(Protocol::BedrockConverse),
            other => Err(UnknownProtocol(other.to_owned())),
        }
    }
}
