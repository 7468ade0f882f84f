//! Chat supplier streaming: `chat.completion.chunk` frames to canonical
//! events ([`StreamDecoder`]).
//!
//! Chat has no explicit blocks, so the decoder synthesises them: a run of
//! `content` deltas is a text block, a run of `reasoning_content` deltas a
//! thinking block, each tool call (by its `index`) a tool-call block. A block
//! closes when a delta of another kind or another tool call arrives, so block
//! indexes are 0, 1, 2, ... in the order blocks open.

use super::ChatSupplier;
use super::error::DecodeError;
use super::response;
use crate::wire::chunk::{ChatCompletionChunk, Delta, FunctionDelta, ToolCallDelta};
use crate::wire::response::FinishReason;
use router_canonical::codec::{SupplierError, SupplierStreamDecoder};
use router_canonical::parse::InvalidJson;
use router_canonical::sse::Frame;
use router_canonical::{BlockDelta, BlockKind, StreamEvent, Usage};

/// Turns a Chat supplier's SSE frames into canonical stream events. One per
/// stream. [`Default`] is the decoder of `ChatSupplier::default()`.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    require_usage: bool,
    started: bool,
    finished: bool,
    next_block: usize,
    open: Option<Open>,
    tools: Vec<ToolState>,
    finish_reason: Option<FinishReason>,
    usage: Option<Usage>,
}

/// The block deltas currently go to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text(usize),
    Thinking(usize),
    Refusal(usize),
    /// A tool call, by its slot in `tools`.
    Tool(usize),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TextKind {
    Text,
    Thinking,
    Refusal,
}

#[derive(Debug)]
struct ToolState {
    chat_index: u32,
    id: Option<String>,
    name: Option<String>,
    /// The canonical block index, once `BlockStart` was emitted.
    block: Option<usize>,
    /// Arguments that arrived before the id and name.
    pending: String,
    closed: bool,
}

impl SupplierStreamDecoder for StreamDecoder {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        self.decode_frame(frame).map_err(SupplierError::from)
    }

    /// Whether `data: [DONE]` (and so `Finish`) has been seen.
    fn is_finished(&self) -> bool {
        self.finished
    }
}

impl StreamDecoder {
    /// A decoder for one stream of `codec`'s supplier.
    pub fn new(codec: &ChatSupplier) -> Self {
        StreamDecoder {
            require_usage: codec.require_usage,
            ..StreamDecoder::default()
        }
    }

    /// Decode one SSE frame, with the crate's typed error
    /// ([`SupplierStreamDecoder::decode`] sorts it into a [`SupplierError`]).
    /// `data: [DONE]` closes the open block and yields `Finish`; a stream
    /// without a usage chunk ends with zero usage, or is
    /// [`DecodeError::MissingUsage`] when the codec requires usage.
    pub fn decode_frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        if self.finished {
            return Err(DecodeError::AfterDone);
        }
        let data = frame.data.trim();
        let mut events = Vec::new();
        if data.is_empty() {
            return Ok(events);
        }
        if data == "[DONE]" {
            self.finish(&mut events)?;
            return Ok(events);
        }
        let mut de = serde_json::Deserializer::from_str(data);
        let chunk: ChatCompletionChunk =
            serde_path_to_error::deserialize(&mut de).map_err(InvalidJson::from)?;
        de.end().map_err(|err| InvalidJson {
            path: ".".to_owned(),
            message: err.to_string(),
        })?;
        if let Some(error) = chunk.error {
            return Err(DecodeError::SupplierError {
                kind: error.kind,
                code: error.code.map(|c| match c {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                }),
                message: error.message,
            });
        }
        if !self.started {
            self.started = true;
            events.push(StreamEvent::Start {
                id: chunk.id,
                model: chunk.model,
            });
        }
        if let Some(usage) = &chunk.usage {
            self.usage = Some(response::usage(usage)?);
        }
        // n is always 1; a supplier's extra choices are ignored.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            let Delta {
                role: _,
                content,
                reasoning_content,
                reasoning,
                refusal,
                tool_calls,
            } = choice.delta;
            if let Some(text) = reasoning_content.or(reasoning) {
                self.text(TextKind::Thinking, text, &mut events)?;
            }
            if let Some(text) = content {
                self.text(TextKind::Text, text, &mut events)?;
            }
            if let Some(text) = refusal {
                self.text(TextKind::Refusal, text, &mut events)?;
            }
            for call in tool_calls.into_iter().flatten() {
                self.tool(call, &mut events)?;
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(events)
    }

    fn text(
        &mut self,
        kind: TextKind,
        text: String,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if text.is_empty() {
            return Ok(());
        }
        let index = match (self.open, kind) {
            (Some(Open::Text(i)), TextKind::Text)
            | (Some(Open::Thinking(i)), TextKind::Thinking)
            | (Some(Open::Refusal(i)), TextKind::Refusal) => i,
            _ => {
                self.close(events)?;
                let index = self.take_index();
                let (open, block) = match kind {
                    TextKind::Text => (Open::Text(index), BlockKind::Text),
                    TextKind::Thinking => (Open::Thinking(index), BlockKind::Thinking),
                    TextKind::Refusal => (Open::Refusal(index), BlockKind::Refusal),
                };
                self.open = Some(open);
                events.push(StreamEvent::BlockStart { index, block });
                index
            }
        };
        let delta = match kind {
            TextKind::Text => BlockDelta::Text(text),
            TextKind::Thinking => BlockDelta::Thinking(text),
            TextKind::Refusal => BlockDelta::Refusal(text),
        };
        events.push(StreamEvent::Delta { index, delta });
        Ok(())
    }

    fn tool(
        &mut self,
        call: ToolCallDelta,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if let Some(kind) = call.kind.filter(|k| k != "function") {
            return Err(DecodeError::UnknownToolCallType { kind });
        }
        let FunctionDelta { name, arguments } = call.function.unwrap_or_default();
        // The latest call with this index, unless a new id says a new call began
        // (suppliers that omit `index` send every call as index 0).
        let slot = match self.tools.iter().rposition(|t| t.chat_index == call.index) {
            Some(slot) if !matches!((&call.id, &self.tools[slot].id), (Some(new), Some(old)) if new != old) => {
                slot
            }
            _ => {
                self.tools.push(ToolState {
                    chat_index: call.index,
                    id: None,
                    name: None,
                    block: None,
                    pending: String::new(),
                    closed: false,
                });
                self.tools.len() - 1
            }
        };
        if self.tools[slot].closed {
            return Err(DecodeError::InterleavedToolCall { index: call.index });
        }
        if self.open != Some(Open::Tool(slot)) {
            self.close(events)?;
            self.open = Some(Open::Tool(slot));
        }
        let tool = &mut self.tools[slot];
        if tool.id.is_none() {
            tool.id = call.id.filter(|id| !id.is_empty());
        }
        if tool.name.is_none() {
            tool.name = name.filter(|n| !n.is_empty());
        }
        if let Some(arguments) = arguments {
            tool.pending.push_str(&arguments);
        }
        if tool.block.is_none() && tool.id.is_some() && tool.name.is_some() {
            self.start_tool(slot, events);
        }
        let tool = &mut self.tools[slot];
        if let Some(index) = tool.block
            && !tool.pending.is_empty()
        {
            events.push(StreamEvent::Delta {
                index,
                delta: BlockDelta::ToolArguments(std::mem::take(&mut tool.pending)),
            });
        }
        Ok(())
    }

    fn start_tool(&mut self, slot: usize, events: &mut Vec<StreamEvent>) {
        let index = self.take_index();
        let tool = &mut self.tools[slot];
        tool.block = Some(index);
        events.push(StreamEvent::BlockStart {
            index,
            block: BlockKind::ToolCall {
                id: tool
                    .id
                    .clone()
                    .unwrap_or_else(|| format!("call_{}", tool.chat_index)),
                name: tool.name.clone().unwrap_or_default(),
            },
        });
    }

    fn take_index(&mut self) -> usize {
        let index = self.next_block;
        self.next_block += 1;
        index
    }

    /// Close the open block. A tool call still waiting for its id starts now
    /// with a generated one; one that never got a name is an error.
    fn close(&mut self, events: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        let index = match self.open.take() {
            None => return Ok(()),
            Some(Open::Text(i) | Open::Thinking(i) | Open::Refusal(i)) => i,
            Some(Open::Tool(slot)) => {
                self.tools[slot].closed = true;
                if self.tools[slot].block.is_none() {
                    if self.tools[slot].name.is_none() {
                        return Err(DecodeError::IncompleteToolCall {
                            index: self.tools[slot].chat_index,
                        });
                    }
                    self.start_tool(slot, events);
                }
                let tool = &mut self.tools[slot];
                let index = tool.block.unwrap_or_default();
                if !tool.pending.is_empty() {
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::ToolArguments(std::mem::take(&mut tool.pending)),
                    });
                }
                index
            }
        };
        events.push(StreamEvent::BlockStop { index });
        Ok(())
    }

    fn finish(&mut self, events: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        self.finished = true;
        self.close(events)?;
        let usage = match self.usage {
            Some(usage) => usage,
            None if self.require_usage => return Err(DecodeError::MissingUsage),
            None => Usage::default(),
        };
        events.push(StreamEvent::Finish {
            stop_reason: response::stop_reason(self.finish_reason.as_ref(), !self.tools.is_empty()),
            stop_sequence: None,
            usage,
        });
        Ok(())
    }
}
