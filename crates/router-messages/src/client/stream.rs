//! Writing canonical stream events as a Messages client's SSE events.
//!
//! The encoder writes every event with an `event:` name equal to its
//! payload's `type`. `message_start` carries the input tokens a
//! supplier reported early: it is written at the `Usage` that follows
//! `Start` (a Messages supplier's own `message_start` gives both at once),
//! or else at the first block (or the finish); then one `ping`.

use super::envelope::ErrorEnvelope;
use super::response;
use crate::wire::event::{Delta, Event, MessageDeltaBody};
use crate::wire::request::{ContentBlock, RedactedThinkingBlock, ThinkingBlock, ToolUseBlock};
use crate::wire::response::{MessageObject, WireStopReason, assistant_role, message_kind};
use crate::wire::to_json_bytes;
use router_canonical::codec::finish_of;
use router_canonical::sse;
use router_canonical::{
    ApiError, BlockDelta, BlockKind, ClientStreamEncoder, StreamContext, StreamEnd, StreamEvent,
    Usage,
};
use serde_json::{Map, Value};

/// Writes canonical events as a Messages client's SSE events; made by
/// [`MessagesClient`](super::MessagesClient)'s `stream_encoder`, one per
/// streamed reply.
///
/// Every event's `event:` name equals its payload's `type`. `message_start`
/// (and one `ping`) is written at the first `Usage` after `Start`, or else
/// at the first block or the ending, so it carries the input tokens known
/// by then. The stream context's `created` and a [`StreamEnd`]'s cost have
/// no place in a Messages stream and are not written.
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
    pub(crate) fn new(ctx: StreamContext) -> Self {
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
            usage: Some(response::client_usage(&self.usage)),
        };
        write(&Event::MessageStart { message }, out);
        write(&Event::Ping, out);
    }
}

impl ClientStreamEncoder for StreamEncoder {
    /// Encode one canonical event. `Start` writes nothing; an early `Usage`
    /// writes `message_start` with it, at once; `Finish` writes the ending,
    /// as [`ClientStreamEncoder::finish`] does.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.finished {
            return;
        }
        match event {
            StreamEvent::Start { .. } => {}
            // Usage once the stream started goes to the wildcard arm: nothing.
            StreamEvent::Usage { usage } if !self.started => {
                self.usage = *usage;
                self.start(out);
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
                    // A block kind added later has no Messages form: an empty text block.
                    _ => ContentBlock::text(""),
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
                    // A delta kind added later has no Messages form.
                    _ => return,
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
            StreamEvent::Finish { .. } => {
                if let Some(end) = finish_of(event) {
                    self.finish(&end, out);
                }
            }
            // Usage after the start, and an event added later, write nothing.
            _ => {}
        }
    }

    /// Close what is open, then `message_delta` with the stop reason and the
    /// terminal usage, then `message_stop`. The cost is not written.
    fn finish(&mut self, end: &StreamEnd<'_>, out: &mut Vec<u8>) {
        let StreamEnd {
            stop_reason,
            stop_sequence,
            usage,
            ..
        } = *end;
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
            response::stop_reason(stop_reason)
        };
        write(
            &Event::MessageDelta {
                delta: MessageDeltaBody {
                    stop_reason: Some(stop_reason),
                    stop_sequence: stop_sequence.map(str::to_owned),
                },
                usage: Some(response::client_usage(usage)),
            },
            out,
        );
        write(&Event::MessageStop, out);
        self.finished = true;
    }

    /// A terminal `error` event (the Messages error envelope) for a failure
    /// after the stream started; nothing is written after it.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        self.finished = true;
        sse::encode(
            Some("error"),
            &String::from_utf8_lossy(&to_json_bytes(&ErrorEnvelope::from(error))),
            out,
        );
    }
}

/// One event, named after its `type`. Serialized JSON has no raw newlines.
fn write(event: &Event, out: &mut Vec<u8>) {
    let json = to_json_bytes(event);
    sse::encode(Some(event.kind()), &String::from_utf8_lossy(&json), out);
}
