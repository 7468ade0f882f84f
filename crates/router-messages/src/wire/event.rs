//! The streaming reply: named SSE events whose `event:` name equals the
//! `type` of their JSON payload.

use super::request::ContentBlock;
use super::response::{MessageObject, WireStopReason, WireUsage};
use router_canonical::parse::{ObjectVisitor, tag, typed};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Map, Value};

/// One stream event. An event type this crate does not know is kept as
/// `Unknown` (and dropped by the supplier stream decoder).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesEvent))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// `message_start`: the message with empty `content`, and its usage so far.
    MessageStart {
        /// The message as it starts.
        message: MessageObject,
    },
    /// `content_block_start`: a content block opens.
    ContentBlockStart {
        /// The block's position in the message's `content`.
        index: usize,
        /// The block with empty text, thinking or input.
        content_block: ContentBlock,
    },
    /// `content_block_delta`: a piece of an open block.
    ContentBlockDelta {
        /// The block it continues.
        index: usize,
        /// The piece.
        delta: Delta,
    },
    /// `content_block_stop`: a block is complete.
    ContentBlockStop {
        /// The block that closed.
        index: usize,
    },
    /// `message_delta`: the stop reason and the final output usage.
    MessageDelta {
        /// The stop reason and stop sequence.
        delta: MessageDeltaBody,
        /// Cumulative usage (at least `output_tokens`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<WireUsage>,
    },
    /// `message_stop`: the last event of a stream.
    MessageStop,
    /// `ping`: a keep-alive with no content.
    Ping,
    /// `error`: the stream failed after it started.
    Error {
        /// What went wrong.
        error: ErrorObject,
    },
    /// Any other event, kept whole.
    #[serde(untagged)]
    Unknown(Value),
}

impl Event {
    /// The `type` of the event (and so its SSE `event:` name).
    pub fn kind(&self) -> &str {
        match self {
            Event::MessageStart { .. } => "message_start",
            Event::ContentBlockStart { .. } => "content_block_start",
            Event::ContentBlockDelta { .. } => "content_block_delta",
            Event::ContentBlockStop { .. } => "content_block_stop",
            Event::MessageDelta { .. } => "message_delta",
            Event::MessageStop => "message_stop",
            Event::Ping => "ping",
            Event::Error { .. } => "error",
            Event::Unknown(value) => value.get("type").and_then(Value::as_str).unwrap_or(""),
        }
    }
}

impl<'de> Deserialize<'de> for Event {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Start {
            message: MessageObject,
        }
        #[derive(Deserialize)]
        struct BlockStart {
            index: usize,
            content_block: ContentBlock,
        }
        #[derive(Deserialize)]
        struct BlockDelta {
            index: usize,
            delta: Delta,
        }
        #[derive(Deserialize)]
        struct BlockStop {
            index: usize,
        }
        #[derive(Deserialize)]
        struct MessageDelta {
            #[serde(default)]
            delta: MessageDeltaBody,
            #[serde(default)]
            usage: Option<WireUsage>,
        }
        #[derive(Deserialize)]
        struct Error {
            #[serde(default)]
            error: ErrorObject,
        }
        let map = d.deserialize_map(ObjectVisitor("a stream event object"))?;
        match tag(&map)? {
            "message_start" => {
                typed(map).map(|e: Start| Event::MessageStart { message: e.message })
            }
            "content_block_start" => typed(map).map(|e: BlockStart| Event::ContentBlockStart {
                index: e.index,
                content_block: e.content_block,
            }),
            "content_block_delta" => typed(map).map(|e: BlockDelta| Event::ContentBlockDelta {
                index: e.index,
                delta: e.delta,
            }),
            "content_block_stop" => {
                typed(map).map(|e: BlockStop| Event::ContentBlockStop { index: e.index })
            }
            "message_delta" => typed(map).map(|e: MessageDelta| Event::MessageDelta {
                delta: e.delta,
                usage: e.usage,
            }),
            "message_stop" => Ok(Event::MessageStop),
            "ping" => Ok(Event::Ping),
            "error" => typed(map).map(|e: Error| Event::Error { error: e.error }),
            _ => Ok(Event::Unknown(Value::Object(map))),
        }
    }
}

/// The `delta` of a `content_block_delta`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesDelta))]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Delta {
    /// `text_delta`: more text of a `text` block.
    TextDelta {
        /// The text to append.
        text: String,
    },
    /// `thinking_delta`: more reasoning of a `thinking` block.
    ThinkingDelta {
        /// The reasoning text to append.
        thinking: String,
    },
    /// `signature_delta`: the signature of a `thinking` block, before it closes.
    SignatureDelta {
        /// The opaque signature that lets the block be sent back.
        signature: String,
    },
    /// `input_json_delta`: more of a `tool_use` block's input.
    InputJsonDelta {
        /// A piece of the input's JSON text, to be concatenated in order.
        partial_json: String,
    },
    /// A citation for a text block (documents and search results only).
    CitationsDelta {
        /// The citation object, kept as sent.
        citation: Value,
    },
    /// Any other delta, kept whole.
    #[serde(untagged)]
    Unknown(Value),
}

impl<'de> Deserialize<'de> for Delta {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        struct Text {
            text: String,
        }
        #[derive(Deserialize)]
        struct Thinking {
            thinking: String,
        }
        #[derive(Deserialize)]
        struct Signature {
            signature: String,
        }
        #[derive(Deserialize)]
        struct InputJson {
            partial_json: String,
        }
        #[derive(Deserialize)]
        struct Citations {
            #[serde(default)]
            citation: Value,
        }
        let map = d.deserialize_map(ObjectVisitor("a content block delta object"))?;
        match tag(&map)? {
            "text_delta" => typed(map).map(|d: Text| Delta::TextDelta { text: d.text }),
            "thinking_delta" => typed(map).map(|d: Thinking| Delta::ThinkingDelta {
                thinking: d.thinking,
            }),
            "signature_delta" => typed(map).map(|d: Signature| Delta::SignatureDelta {
                signature: d.signature,
            }),
            "input_json_delta" => typed(map).map(|d: InputJson| Delta::InputJsonDelta {
                partial_json: d.partial_json,
            }),
            "citations_delta" => typed(map).map(|d: Citations| Delta::CitationsDelta {
                citation: d.citation,
            }),
            _ => Ok(Delta::Unknown(Value::Object(map))),
        }
    }
}

/// The `delta` of a `message_delta`: both members always written (nullable).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesMessageDeltaBody))]
pub struct MessageDeltaBody {
    /// Why generation stopped.
    #[serde(default)]
    pub stop_reason: Option<WireStopReason>,
    /// The stop sequence that matched, with `stop_sequence`.
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// The `error` of an `error` event or an error response body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesErrorObject))]
pub struct ErrorObject {
    /// The error's `type`, such as `overloaded_error` or `invalid_request_error`.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// A human-readable description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Other members (read, never written).
    #[serde(flatten, skip_serializing)]
    pub extra: Map<String, Value>,
}
