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
    MessageStart {
        message: MessageObject,
    },
    ContentBlockStart {
        index: usize,
        content_block: ContentBlock,
    },
    ContentBlockDelta {
        index: usize,
        delta: Delta,
    },
    ContentBlockStop {
        index: usize,
    },
    MessageDelta {
        delta: MessageDeltaBody,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        usage: Option<WireUsage>,
    },
    MessageStop,
    Ping,
    Error {
        error: ErrorObject,
    },
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
    TextDelta {
        text: String,
    },
    ThinkingDelta {
        thinking: String,
    },
    SignatureDelta {
        signature: String,
    },
    InputJsonDelta {
        partial_json: String,
    },
    /// A citation for a text block (documents and search results only).
    CitationsDelta {
        citation: Value,
    },
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
    #[serde(default)]
    pub stop_reason: Option<WireStopReason>,
    #[serde(default)]
    pub stop_sequence: Option<String>,
}

/// The `error` of an `error` event or an error response body.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesErrorObject))]
pub struct ErrorObject {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    #[serde(flatten, skip_serializing)]
    pub extra: Map<String, Value>,
}
