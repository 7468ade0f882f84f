//! Decoding ConverseStream: AWS event-stream messages, each handed over as
//! a frame named by its `:event-type` (or exception type). `messageStart`
//! opens the reply; text and reasoning deltas open their block at their
//! first delta (Converse sends `contentBlockStart` only for tool use);
//! `messageStop` gives the stop reason and `metadata` the usage, which ends
//! the stream.

use crate::error::DecodeError;
use crate::response::{WireUsage, stop_reason, usage};
use router_canonical::sse::Frame;
use router_canonical::{BlockDelta, BlockKind, StreamEvent, SupplierError, SupplierStreamDecoder};
use serde_json::Value;
use std::collections::HashMap;

/// One stream's decoder.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    require_usage: bool,
    started: bool,
    stop_reason: Option<String>,
    finished: bool,
    /// Converse `contentBlockIndex` -> canonical index.
    blocks: HashMap<u64, usize>,
    next_block: usize,
    called_tools: bool,
}

impl StreamDecoder {
    pub fn new(require_usage: bool) -> Self {
        StreamDecoder {
            require_usage,
            ..StreamDecoder::default()
        }
    }

    /// The canonical index of Converse block `wire`, opening it as `kind`.
    fn block(&mut self, wire: u64, kind: BlockKind, events: &mut Vec<StreamEvent>) -> usize {
        if let Some(index) = self.blocks.get(&wire) {
            return *index;
        }
        let index = self.next_block;
        self.next_block += 1;
        self.blocks.insert(wire, index);
        events.push(StreamEvent::BlockStart { index, block: kind });
        index
    }

    fn decode_frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        let kind = frame.event.as_deref().unwrap_or_default();
        let data: Value = if frame.data.trim().is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&frame.data)
                .map_err(|e| DecodeError::InvalidJson(e.to_string()))?
        };
        let mut events = Vec::new();
        if kind.ends_with("Exception") {
            return Err(DecodeError::Exception {
                kind: kind.to_owned(),
                message: data["message"].as_str().map(str::to_owned),
            });
        }
        let out_of_order = || DecodeError::OutOfOrder {
            kind: kind.to_owned(),
        };
        if self.finished || (!self.started && kind != "messageStart") {
            return Err(out_of_order());
        }
        let index_of = |data: &Value| data["contentBlockIndex"].as_u64().unwrap_or(0);
        match kind {
            "messageStart" => {
                if self.started {
                    return Err(out_of_order());
                }
                self.started = true;
                events.push(StreamEvent::Start {
                    id: String::new(),
                    model: String::new(),
                });
            }
            "contentBlockStart" => {
                let tool = &data["start"]["toolUse"];
                if let (Some(id), Some(name)) = (tool["toolUseId"].as_str(), tool["name"].as_str())
                {
                    self.called_tools = true;
                    self.block(
                        index_of(&data),
                        BlockKind::ToolCall {
                            id: id.to_owned(),
                            name: name.to_owned(),
                        },
                        &mut events,
                    );
                }
            }
            "contentBlockDelta" => {
                let wire = index_of(&data);
                let delta = &data["delta"];
                if let Some(text) = delta["text"].as_str() {
                    let index = self.block(wire, BlockKind::Text, &mut events);
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::Text(text.to_owned()),
                    });
                } else if let Some(input) = delta["toolUse"]["input"].as_str() {
                    let index = *self.blocks.get(&wire).ok_or_else(out_of_order)?;
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::ToolArguments(input.to_owned()),
                    });
                } else if let Some(reasoning) = delta.get("reasoningContent") {
                    let index = self.block(wire, BlockKind::Thinking, &mut events);
                    if let Some(text) = reasoning["text"].as_str() {
                        events.push(StreamEvent::Delta {
                            index,
                            delta: BlockDelta::Thinking(text.to_owned()),
                        });
                    }
                    if let Some(signature) = reasoning["signature"].as_str() {
                        events.push(StreamEvent::Delta {
                            index,
                            delta: BlockDelta::Signature(signature.to_owned()),
                        });
                    }
                } else {
                    return Err(DecodeError::UnsupportedBlock {
                        kind: delta
                            .as_object()
                            .and_then(|d| d.keys().next().cloned())
                            .unwrap_or_default(),
                    });
                }
            }
            "contentBlockStop" => {
                if let Some(index) = self.blocks.get(&index_of(&data)) {
                    events.push(StreamEvent::BlockStop { index: *index });
                }
            }
            "messageStop" => {
                self.stop_reason =
                    Some(data["stopReason"].as_str().unwrap_or("end_turn").to_owned());
            }
            "metadata" => {
                let Some(stop) = self.stop_reason.take() else {
                    return Err(out_of_order());
                };
                let wire: Option<WireUsage> = data
                    .get("usage")
                    .map(|u| serde_json::from_value(u.clone()))
                    .transpose()
                    .map_err(|e| DecodeError::InvalidJson(e.to_string()))?;
                let usage = usage(wire.as_ref(), self.require_usage)?;
                events.push(StreamEvent::Finish {
                    stop_reason: stop_reason(Some(&stop), self.called_tools),
                    stop_sequence: None,
                    usage,
                });
                self.finished = true;
            }
            // Unknown events are dropped.
            _ => {}
        }
        Ok(events)
    }
}

impl SupplierStreamDecoder for StreamDecoder {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        self.decode_frame(frame).map_err(SupplierError::from)
    }

    /// Whether `metadata` (and so `Finish`) has been decoded.
    fn is_finished(&self) -> bool {
        self.finished
    }
}
