//! Decoding `streamGenerateContent?alt=sse`: each SSE frame is one
//! `GenerateContentResponse` chunk holding the next parts. Text and thought
//! parts continue the open block of their kind or open a new one; a
//! function call arrives whole (start, arguments, stop). The chunk with a
//! `finishReason` ends the stream: its `usageMetadata` is the final usage.

use crate::error::DecodeError;
use crate::response::{output_block, parse, stop_reason, usage};
use crate::wire::UsageMetadata;
use router_canonical::sse::Frame;
use router_canonical::{
    BlockDelta, BlockKind, OutputBlock, StreamEvent, SupplierError, SupplierStreamDecoder,
};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Text,
    Thinking,
}

/// One stream's decoder.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    require_usage: bool,
    started: bool,
    finished: bool,
    next_block: usize,
    /// The open block: its kind and canonical index.
    open: Option<(Open, usize)>,
    calls: usize,
    usage: Option<UsageMetadata>,
}

impl StreamDecoder {
    pub fn new(require_usage: bool) -> Self {
        StreamDecoder {
            require_usage,
            ..StreamDecoder::default()
        }
    }

    fn close(&mut self, events: &mut Vec<StreamEvent>) {
        if let Some((_, index)) = self.open.take() {
            events.push(StreamEvent::BlockStop { index });
        }
    }

    /// The index of an open block of `kind`, opening one if needed.
    fn open(&mut self, kind: Open, events: &mut Vec<StreamEvent>) -> usize {
        if let Some((open, index)) = self.open
            && open == kind
        {
            return index;
        }
        self.close(events);
        let index = self.next_block;
        self.next_block += 1;
        events.push(StreamEvent::BlockStart {
            index,
            block: match kind {
                Open::Text => BlockKind::Text,
                Open::Thinking => BlockKind::Thinking,
            },
        });
        self.open = Some((kind, index));
        index
    }

    fn decode_frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = frame.data.trim();
        let mut events = Vec::new();
        if data.is_empty() {
            return Ok(events);
        }
        if self.finished {
            return Err(DecodeError::AfterFinish);
        }
        let chunk = parse(data.as_bytes())?;
        if !self.started {
            self.started = true;
            events.push(StreamEvent::Start {
                id: chunk.response_id.clone().unwrap_or_default(),
                model: chunk.model_version.clone().unwrap_or_default(),
            });
        }
        if let Some(metadata) = chunk.usage_metadata {
            self.usage = Some(metadata);
        }
        let Some(candidate) = chunk.candidates.into_iter().next() else {
            return Ok(events);
        };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            let signature_only = part.text.is_none()
                && part.function_call.is_none()
                && part.thought_signature.is_some();
            if signature_only {
                // A signature closing the open thought.
                if let (Some((Open::Thinking, index)), Some(signature)) =
                    (self.open, part.thought_signature)
                {
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::Signature(signature),
                    });
                }
                continue;
            }
            match output_block(part, &mut self.calls)? {
                Some(OutputBlock::Text { text }) => {
                    let index = self.open(Open::Text, &mut events);
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::Text(text),
                    });
                }
                Some(OutputBlock::Thinking { text, signature }) => {
                    let index = self.open(Open::Thinking, &mut events);
                    if !text.is_empty() {
                        events.push(StreamEvent::Delta {
                            index,
                            delta: BlockDelta::Thinking(text),
                        });
                    }
                    if let Some(signature) = signature {
                        events.push(StreamEvent::Delta {
                            index,
                            delta: BlockDelta::Signature(signature),
                        });
                    }
                }
                Some(OutputBlock::ToolCall {
                    id,
                    name,
                    arguments,
                }) => {
                    self.close(&mut events);
                    let index = self.next_block;
                    self.next_block += 1;
                    events.push(StreamEvent::BlockStart {
                        index,
                        block: BlockKind::ToolCall { id, name },
                    });
                    events.push(StreamEvent::Delta {
                        index,
                        delta: BlockDelta::ToolArguments(arguments),
                    });
                    events.push(StreamEvent::BlockStop { index });
                }
                Some(OutputBlock::RedactedThinking { .. } | OutputBlock::Refusal { .. }) | None => {
                }
                Some(_) => {}
            }
        }
        if let Some(finish) = candidate.finish_reason {
            self.close(&mut events);
            let usage = usage(self.usage.as_ref(), self.require_usage)?;
            events.push(StreamEvent::Finish {
                stop_reason: stop_reason(Some(&finish), self.calls > 0),
                stop_sequence: None,
                usage,
            });
            self.finished = true;
        }
        Ok(events)
    }
}

impl SupplierStreamDecoder for StreamDecoder {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        self.decode_frame(frame).map_err(SupplierError::from)
    }

    /// Whether the chunk with a `finishReason` has been decoded. A stream
    /// that ends before it is truncated: not a success.
    fn is_finished(&self) -> bool {
        self.finished
    }
}
