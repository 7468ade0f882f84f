//! Messages streaming: supplier SSE events to canonical events
//! ([`StreamDecoder`]), and canonical events to the client's SSE events
//! ([`StreamEncoder`]).
//!
//! Messages streams have explicit blocks, so decoding is mostly renaming:
//! `content_block_start`/`_delta`/`_stop` become `BlockStart`/`Delta`/
//! `BlockStop` (with canonical indexes 0, 1, 2, ... in the order blocks
//! open), `message_start` becomes `Start` plus the early `Usage`, and
//! `message_stop` becomes `Finish` with the usage merged from
//! `message_start` and `message_delta`. `ping` and unknown event types are
//! dropped (D-30); an `error` event fails the stream.
//!
//! The encoder writes every event with an `event:` name equal to its
//! payload's `type` (D-31). `message_start` carries the input tokens a
//! supplier reported early: it is written at the `Usage` that follows
//! `Start` (a Messages supplier's own `message_start` gives both at once),
//! or else at the first block (or the finish); then one `ping`.

use crate::envelope::ErrorEnvelope;
use crate::error::DecodeError;
use crate::from_wire;
use crate::to_wire;
use crate::wire::event::{Delta, Event, MessageDeltaBody};
use crate::wire::request::{ContentBlock, RedactedThinkingBlock, ThinkingBlock, ToolUseBlock};
use crate::wire::response::{
    MessageObject, WireStopReason, WireUsage, assistant_role, message_kind,
};
use crate::wire::to_json_bytes;
use router_canonical::sse::{self, Frame};
use router_canonical::{ApiError, BlockDelta, BlockKind, StopReason, StreamEvent, Usage};
use serde_json::{Map, Value};

// ---------------------------------------------------------------------------
// Decoding a supplier stream

/// Turns a Messages supplier's SSE frames into canonical stream events. One per stream.
#[derive(Debug, Default)]
pub struct StreamDecoder {
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

impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder::default()
    }

    /// Whether `message_stop` (and so `Finish`) has been seen. A stream that
    /// ends before it is truncated: not a success, never charged.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Decode one SSE frame. The event type is read from the JSON `type`
    /// (the `event:` line repeats it).
    pub fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = frame.data.trim();
        let mut events = Vec::new();
        if data.is_empty() {
            return Ok(events);
        }
        let mut de = serde_json::Deserializer::from_str(data);
        let event: Event = serde_path_to_error::deserialize(&mut de).map_err(DecodeError::json)?;
        de.end().map_err(|err| DecodeError::InvalidJson {
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
                    if let Ok(usage) = from_wire::usage(&self.usage) {
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
                    stop_reason: from_wire::stop_reason_of(
                        self.stop_reason.as_ref(),
                        self.called_tools,
                    ),
                    stop_sequence: self.stop_sequence.take(),
                    usage: from_wire::usage(&self.usage)?,
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

// ---------------------------------------------------------------------------
// Encoding the client stream

/// What the client's stream states that the supplier's did not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    /// The router's message id (`msg_...`).
    pub id: String,
    /// The public model ID the client asked for (D-36).
    pub model: String,
}

/// Writes canonical events as the client's Messages SSE events.
#[derive(Debug)]
pub struct StreamEncoder {
    ctx: StreamContext,
    started: bool,
    finished: bool,
    /// Usage reported before `message_start` was written.
    usage: Usage,
    /// Canonical block index -> client block index, for open blocks.
    open: Vec<(usize, usize)>,
    next_index: usize,
    refused: bool,
}

impl StreamEncoder {
    pub fn new(ctx: StreamContext) -> Self {
        StreamEncoder {
            ctx,
            started: false,
            finished: false,
            usage: Usage::default(),
            open: Vec::new(),
            next_index: 0,
            refused: false,
        }
    }

    /// Encode one canonical event. `Start` writes nothing; an early `Usage`
    /// writes `message_start` with it, at once; `Finish` is
    /// [`StreamEncoder::encode_finish`].
    pub fn encode(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            StreamEvent::Start { .. } => {}
            StreamEvent::Usage { usage } => {
                if !self.started {
                    self.usage = *usage;
                    self.start(out);
                }
            }
            StreamEvent::BlockStart { index, block } => {
                self.start(out);
                let client = self.next_index;
                self.next_index += 1;
                self.open.push((*index, client));
                let content_block = match block {
                    BlockKind::Text => ContentBlock::text(""),
                    BlockKind::Refusal => {
                        self.refused = true;
                        ContentBlock::text("")
                    }
                    BlockKind::Thinking => ContentBlock::Thinking(ThinkingBlock {
                        thinking: String::new(),
                        signature: Some(String::new()),
                        extra: Map::new(),
                    }),
                    BlockKind::RedactedThinking { data } => {
                        ContentBlock::RedactedThinking(RedactedThinkingBlock {
                            data: data.clone(),
                            extra: Map::new(),
                        })
                    }
                    BlockKind::ToolCall { id, name } => ContentBlock::ToolUse(ToolUseBlock {
                        id: id.clone(),
                        name: name.clone(),
                        input: Value::Object(Map::new()),
                        cache_control: None,
                        extra: Map::new(),
                    }),
                };
                write(
                    &Event::ContentBlockStart {
                        index: client,
                        content_block,
                    },
                    out,
                );
            }
            StreamEvent::Delta { index, delta } => {
                let Some(client) = self.client_index(*index) else {
                    return;
                };
                let delta = match delta {
                    BlockDelta::Text(text) | BlockDelta::Refusal(text) => {
                        Delta::TextDelta { text: text.clone() }
                    }
                    BlockDelta::Thinking(thinking) => Delta::ThinkingDelta {
                        thinking: thinking.clone(),
                    },
                    BlockDelta::Signature(signature) => Delta::SignatureDelta {
                        signature: signature.clone(),
                    },
                    BlockDelta::ToolArguments(partial_json) => Delta::InputJsonDelta {
                        partial_json: partial_json.clone(),
                    },
                };
                write(
                    &Event::ContentBlockDelta {
                        index: client,
                        delta,
                    },
                    out,
                );
            }
            StreamEvent::BlockStop { index } => {
                if let Some(position) = self.open.iter().position(|(c, _)| c == index) {
                    let (_, client) = self.open.remove(position);
                    write(&Event::ContentBlockStop { index: client }, out);
                }
            }
            StreamEvent::Finish {
                stop_reason,
                stop_sequence,
                usage,
            } => self.encode_finish(stop_reason, stop_sequence.as_deref(), usage, out),
        }
    }

    /// Close what is open, then `message_delta` with the stop reason and the
    /// terminal usage, then `message_stop`.
    pub fn encode_finish(
        &mut self,
        stop_reason: &StopReason,
        stop_sequence: Option<&str>,
        usage: &Usage,
        out: &mut Vec<u8>,
    ) {
        if self.finished {
            return;
        }
        self.start(out);
        for (_, client) in std::mem::take(&mut self.open) {
            write(&Event::ContentBlockStop { index: client }, out);
        }
        let stop_reason = if self.refused {
            WireStopReason::Refusal
        } else {
            to_wire::stop_reason(stop_reason)
        };
        write(
            &Event::MessageDelta {
                delta: MessageDeltaBody {
                    stop_reason: Some(stop_reason),
                    stop_sequence: stop_sequence.map(str::to_owned),
                },
                usage: Some(to_wire::client_usage(usage)),
            },
            out,
        );
        write(&Event::MessageStop, out);
        self.finished = true;
    }

    /// A terminal `error` event for a failure after the stream started
    /// (D-33, P-17): a stable public error, nothing of the supplier's.
    pub fn encode_error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        self.finished = true;
        sse::encode(
            Some("error"),
            &String::from_utf8_lossy(&to_json_bytes(&ErrorEnvelope::from(error))),
            out,
        );
    }

    fn client_index(&self, index: usize) -> Option<usize> {
        self.open
            .iter()
            .find(|(c, _)| *c == index)
            .map(|(_, client)| *client)
    }

    /// `message_start` (with the usage known so far) and one `ping`, once.
    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        let message = MessageObject {
            id: self.ctx.id.clone(),
            kind: message_kind(),
            role: assistant_role(),
            model: self.ctx.model.clone(),
            content: Vec::new(),
            stop_reason: None,
            stop_sequence: None,
            usage: Some(to_wire::client_usage(&self.usage)),
        };
        write(&Event::MessageStart { message }, out);
        write(&Event::Ping, out);
    }
}

/// One event, named after its `type`. Serialized JSON has no raw newlines.
fn write(event: &Event, out: &mut Vec<u8>) {
    let json = to_json_bytes(event);
    sse::encode(Some(event.kind()), &String::from_utf8_lossy(&json), out);
}
