//! Decoding a Messages supplier's SSE events into canonical stream events.
//!
//! Messages streams have explicit blocks, so decoding is mostly renaming:
//! `content_block_start`/`_delta`/`_stop` become `BlockStart`/`Delta`/
//! `BlockStop` (with canonical indexes 0, 1, 2, ... in the order blocks
//! open), `message_start` becomes `Start` plus the early `Usage`, and
//! `message_stop` becomes `Finish` with the usage merged from
//! `message_start` and `message_delta`. `ping` and unknown event types are
//! dropped; an `error` event fails the stream.

use super::MessagesSupplier;
use super::error::DecodeError;
use super::response;
use crate::wire::event::{Delta, Event, MessageDeltaBody};
use crate::wire::request::ContentBlock;
use crate::wire::response::{WireStopReason, WireUsage};
use router_canonical::parse::InvalidJson;
use router_canonical::sse::Frame;
use router_canonical::{BlockDelta, BlockKind, StreamEvent, SupplierError, SupplierStreamDecoder};
use serde_json::Value;

/// Turns a Messages supplier's SSE frames into canonical stream events, one
/// decoder per stream. Made by [`MessagesSupplier`]'s `stream_decoder` (as a
/// `Box<dyn SupplierStreamDecoder>`) or by [`StreamDecoder::new`]; the
/// default decodes as a `MessagesSupplier::default()` does.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    require_usage: bool,
    started: bool,
    finished: bool,
    next_block: usize,
    blocks: Vec<BlockState>,
    usage: WireUsage,
    stop_reason: Option<WireStopReason>,
    stop_sequence: Option<String>,
    called_tools: bool,
}

#[derive(Debug)]
struct BlockState {
    /// The supplier's `index`.
    wire: usize,
    /// The canonical index.
    index: usize,
    kind: OpenKind,
    open: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum OpenKind {
    Text,
    Thinking,
    RedactedThinking,
    Tool,
}

impl SupplierStreamDecoder for StreamDecoder {
    /// Decode one SSE frame. The event type is read from the JSON `type`
    /// (the `event:` line repeats it); `ping` and unknown events give none.
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        self.decode_frame(frame).map_err(SupplierError::from)
    }

    /// Whether `message_stop` (and so `Finish`) has been seen. A stream that
    /// ends before it is truncated: not a success.
    fn is_finished(&self) -> bool {
        self.finished
    }
}

impl StreamDecoder {
    /// A decoder with `codec`'s options.
    pub fn new(codec: &MessagesSupplier) -> Self {
        StreamDecoder {
            require_usage: codec.require_usage,
            ..StreamDecoder::default()
        }
    }

    /// [`SupplierStreamDecoder::decode`], with the crate's typed error.
    pub(crate) fn decode_frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = frame.data.trim();
        let mut events = Vec::new();
        if data.is_empty() {
            return Ok(events);
        }
        let mut de = serde_json::Deserializer::from_str(data);
        let event: Event = serde_path_to_error::deserialize(&mut de).map_err(InvalidJson::from)?;
        de.end().map_err(|err| InvalidJson {
            path: ".".to_owned(),
            message: err.to_string(),
        })?;
        match event {
            Event::Ping | Event::Unknown(_) => return Ok(events),
            Event::Error { error } => {
                return Err(DecodeError::SupplierError {
                    kind: error.kind,
                    message: error.message,
                });
            }
            _ if self.finished => return Err(DecodeError::AfterStop),
            Event::MessageStart { .. } if self.started => {
                return Err(DecodeError::OutOfOrder {
                    kind: event.kind().to_owned(),
                });
            }
            Event::MessageStart { .. } => {}
            _ if !self.started => {
                return Err(DecodeError::OutOfOrder {
                    kind: event.kind().to_owned(),
                });
            }
            _ => {}
        }
        match event {
            Event::MessageStart { message } => {
                self.started = true;
                events.push(StreamEvent::Start {
                    id: message.id,
                    model: message.model,
                });
                if let Some(usage) = &message.usage {
                    merge_usage(&mut self.usage, usage);
                    // The early usage is reported only when both counts are there.
                    if let Ok(usage) = response::usage(&self.usage, true) {
                        events.push(StreamEvent::Usage { usage });
                    }
                }
            }
            Event::ContentBlockStart {
                index,
                content_block,
            } => self.block_start(index, content_block, &mut events)?,
            Event::ContentBlockDelta { index, delta } => self.delta(index, delta, &mut events)?,
            Event::ContentBlockStop { index } => {
                let block = self.open_block(index)?;
                block.open = false;
                events.push(StreamEvent::BlockStop { index: block.index });
            }
            Event::MessageDelta { delta, usage } => {
                let MessageDeltaBody {
                    stop_reason,
                    stop_sequence,
                } = delta;
                if stop_reason.is_some() {
                    self.stop_reason = stop_reason;
                }
                if stop_sequence.is_some() {
                    self.stop_sequence = stop_sequence;
                }
                if let Some(usage) = &usage {
                    merge_usage(&mut self.usage, usage);
                }
            }
            Event::MessageStop => {
                self.finished = true;
                // A block the supplier left open ends with the message.
                for block in self.blocks.iter_mut().filter(|b| b.open) {
                    block.open = false;
                    events.push(StreamEvent::BlockStop { index: block.index });
                }
                events.push(StreamEvent::Finish {
                    stop_reason: response::stop_reason_of(
                        self.stop_reason.as_ref(),
                        self.called_tools,
                    ),
                    stop_sequence: self.stop_sequence.take(),
                    usage: response::usage(&self.usage, self.require_usage)?,
                });
            }
            Event::Ping | Event::Unknown(_) | Event::Error { .. } => {}
        }
        Ok(events)
    }

    fn block_start(
        &mut self,
        wire: usize,
        block: ContentBlock,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.blocks.iter().any(|b| b.wire == wire) {
            return Err(DecodeError::DuplicateBlock { index: wire });
        }
        let index = self.next_block;
        let (kind, start, deltas) = match block {
            ContentBlock::Text(b) => (
                OpenKind::Text,
                BlockKind::Text,
                vec![BlockDelta::Text(b.text)],
            ),
            ContentBlock::Thinking(b) => (
                OpenKind::Thinking,
                BlockKind::Thinking,
                vec![
                    BlockDelta::Thinking(b.thinking),
                    BlockDelta::Signature(b.signature.unwrap_or_default()),
                ],
            ),
            ContentBlock::RedactedThinking(b) => (
                OpenKind::RedactedThinking,
                BlockKind::RedactedThinking { data: b.data },
                Vec::new(),
            ),
            ContentBlock::ToolUse(b) => {
                self.called_tools = true;
                let input = match b.input {
                    Value::Object(map) if map.is_empty() => String::new(),
                    other => other.to_string(),
                };
                (
                    OpenKind::Tool,
                    BlockKind::ToolCall {
                        id: b.id,
                        name: b.name,
                    },
                    vec![BlockDelta::ToolArguments(input)],
                )
            }
            other => {
                return Err(DecodeError::UnknownContent {
                    path: format!("content_block_start[{wire}].content_block"),
                    kind: other.kind().to_owned(),
                });
            }
        };
        self.next_block += 1;
        self.blocks.push(BlockState {
            wire,
            index,
            kind,
            open: true,
        });
        events.push(StreamEvent::BlockStart {
            index,
            block: start,
        });
        for delta in deltas {
            let empty = match &delta {
                BlockDelta::Text(s)
                | BlockDelta::Thinking(s)
                | BlockDelta::Signature(s)
                | BlockDelta::ToolArguments(s)
                | BlockDelta::Refusal(s) => s.is_empty(),
                _ => false,
            };
            if !empty {
                events.push(StreamEvent::Delta { index, delta });
            }
        }
        Ok(())
    }

    fn open_block(&mut self, wire: usize) -> Result<&mut BlockState, DecodeError> {
        self.blocks
            .iter_mut()
            .find(|b| b.wire == wire && b.open)
            .ok_or(DecodeError::UnknownBlock { index: wire })
    }

    fn delta(
        &mut self,
        wire: usize,
        delta: Delta,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let block = self.open_block(wire)?;
        let (index, kind) = (block.index, block.kind);
        let (expected, delta) = match delta {
            Delta::TextDelta { text } => (OpenKind::Text, BlockDelta::Text(text)),
            Delta::ThinkingDelta { thinking } => {
                (OpenKind::Thinking, BlockDelta::Thinking(thinking))
            }
            Delta::SignatureDelta { signature } => {
                (OpenKind::Thinking, BlockDelta::Signature(signature))
            }
            Delta::InputJsonDelta { partial_json } => {
                (OpenKind::Tool, BlockDelta::ToolArguments(partial_json))
            }
            // Citations annotate documents and search results, which the
            // router never sends; they are not part of the public reply.
            Delta::CitationsDelta { .. } if kind == OpenKind::Text => return Ok(()),
            Delta::CitationsDelta { .. } => {
                return Err(DecodeError::MismatchedDelta {
                    index: wire,
                    kind: "citations_delta".to_owned(),
                });
            }
            Delta::Unknown(value) => {
                return Err(DecodeError::UnknownDelta {
                    index: wire,
                    kind: value
                        .get("type")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_owned(),
                });
            }
        };
        if kind != expected {
            return Err(DecodeError::MismatchedDelta {
                index: wire,
                kind: delta_kind(&delta).to_owned(),
            });
        }
        events.push(StreamEvent::Delta { index, delta });
        Ok(())
    }
}

fn delta_kind(delta: &BlockDelta) -> &'static str {
    match delta {
        BlockDelta::Text(_) | BlockDelta::Refusal(_) => "text_delta",
        BlockDelta::Thinking(_) => "thinking_delta",
        BlockDelta::Signature(_) => "signature_delta",
        BlockDelta::ToolArguments(_) => "input_json_delta",
        _ => "text_delta",
    }
}

/// Later counts replace earlier ones: `message_delta` usage is cumulative
/// and may repeat the input and cache counts of `message_start`.
fn merge_usage(into: &mut WireUsage, from: &WireUsage) {
    if from.input_tokens.is_some() {
        into.input_tokens = from.input_tokens;
    }
    if from.cache_creation_input_tokens.is_some() {
        into.cache_creation_input_tokens = from.cache_creation_input_tokens;
    }
    if from.cache_read_input_tokens.is_some() {
        into.cache_read_input_tokens = from.cache_read_input_tokens;
    }
    if from.output_tokens.is_some() {
        into.output_tokens = from.output_tokens;
    }
    if let Some(details) = &from.output_tokens_details
        && details.thinking_tokens.is_some()
    {
        into.output_tokens_details = Some(details.clone());
    }
}
