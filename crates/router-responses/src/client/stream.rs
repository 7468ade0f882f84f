//! Canonical stream events written as a Responses client's named
//! `response.*` SSE events ([`StreamEncoder`]).

use super::echo::{RequestEcho, ResponsesExtra};
use super::response::{
    Finish, ResponseHead, item_id, named_call, output_text, response_object, usage,
};
use crate::convert::{ToolNamespaces, reasoning_item};
use crate::wire::event::ServerEvent;
use crate::wire::request::{ReasoningText, summary_text};
use crate::wire::response::{
    FunctionCallOutput, OutputContent, OutputItem, OutputMessage, OutputRefusal, ResponseError,
};
use crate::wire::to_json_bytes;
use router_canonical::codec::finish_of;
use router_canonical::{
    ApiError, BlockDelta, BlockKind, ClientStreamEncoder, StreamContext, StreamEnd, StreamEvent,
};

/// Writes canonical events as the client's `response.*` SSE events.
///
/// `response.created` and `response.in_progress` open the stream; each
/// canonical block becomes a content part of a `message` item (consecutive
/// text and refusal blocks share one message, as in a complete reply), a
/// `function_call` item or a `reasoning` item; the finish ends with
/// `response.completed` (`response.incomplete` for a length or
/// content-filter stop) carrying the whole response and its usage, with
/// `cost` when the finish states one.
#[derive(Debug)]
pub struct StreamEncoder {
    ctx: StreamContext,
    sequence: u64,
    started: bool,
    done: bool,
    /// Finished output items, for the final response.
    output: Vec<OutputItem>,
    /// The message item text and refusal blocks are written to.
    message: Option<OutputMessage>,
    block: Option<Block>,
    /// The request's namespaced functions, named as declared in the calls.
    namespaces: ToolNamespaces,
    /// The request members every `response` object repeats.
    echo: RequestEcho,
}

#[derive(Debug)]
enum Block {
    Part {
        index: usize,
        content_index: usize,
        refusal: bool,
        text: String,
    },
    Tool {
        index: usize,
        call: FunctionCallOutput,
    },
    Thinking {
        index: usize,
        id: String,
        text: String,
        signature: Option<String>,
    },
    /// A block with no Responses form (redacted thinking).
    Skipped { index: usize },
}

impl Block {
    fn index(&self) -> usize {
        match self {
            Block::Part { index, .. }
            | Block::Tool { index, .. }
            | Block::Thinking { index, .. }
            | Block::Skipped { index } => *index,
        }
    }
}

impl StreamEncoder {
    /// An encoder for one stream, whose events all repeat `ctx`.
    pub fn new(ctx: StreamContext) -> Self {
        StreamEncoder {
            ctx,
            sequence: 0,
            started: false,
            done: false,
            output: Vec::new(),
            message: None,
            block: None,
            namespaces: ToolNamespaces::default(),
            echo: RequestEcho::default(),
        }
    }

    /// Name the calls of the request's namespaced functions as declared.
    pub fn with_namespaces(mut self, namespaces: ToolNamespaces) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// Repeat the request's members in every `response` object, and name
    /// the calls of its namespaced functions as declared.
    pub fn with_extra(mut self, extra: ResponsesExtra) -> Self {
        self.namespaces = extra.namespaces;
        self.echo = extra.echo;
        self
    }

    fn head(&self) -> ResponseHead<'_> {
        ResponseHead {
            id: &self.ctx.id,
            model: &self.ctx.model,
            created: self.ctx.created,
            echo: &self.echo,
        }
    }

    fn next_sequence(&mut self) -> u64 {
        let n = self.sequence;
        self.sequence += 1;
        n
    }

    /// `response.created` and `response.in_progress`, once.
    fn start(&mut self, out: &mut Vec<u8>) {
        if self.started {
            return;
        }
        self.started = true;
        for created in [true, false] {
            let response = Box::new(response_object(
                self.head(),
                "in_progress",
                None,
                None,
                Vec::new(),
                None,
            ));
            let sequence_number = self.next_sequence();
            let event = if created {
                ServerEvent::Created {
                    response,
                    sequence_number,
                }
            } else {
                ServerEvent::InProgress {
                    response,
                    sequence_number,
                }
            };
            self.write(&event, out);
        }
    }

    /// The output index the next new item gets.
    fn next_output_index(&self) -> usize {
        self.output.len() + usize::from(self.message.is_some())
    }

    fn block_start(&mut self, index: usize, kind: &BlockKind, out: &mut Vec<u8>) {
        self.block_stop(out);
        match kind {
            BlockKind::Text | BlockKind::Refusal => {
                let refusal = *kind == BlockKind::Refusal;
                if self.message.is_none() {
                    let output_index = self.next_output_index();
                    let message = OutputMessage {
                        id: item_id("msg", &self.ctx.id, output_index),
                        status: "in_progress".to_owned(),
                        role: "assistant".to_owned(),
                        content: Vec::new(),
                    };
                    let sequence_number = self.next_sequence();
                    self.write(
                        &ServerEvent::OutputItemAdded {
                            output_index,
                            item: OutputItem::Message(message.clone()),
                            sequence_number,
                        },
                        out,
                    );
                    self.message = Some(message);
                }
                let (item_id, output_index, content_index) = self.message_position();
                let sequence_number = self.next_sequence();
                self.write(
                    &ServerEvent::ContentPartAdded {
                        item_id,
                        output_index,
                        content_index,
                        part: part(refusal, String::new()),
                        sequence_number,
                    },
                    out,
                );
                self.block = Some(Block::Part {
                    index,
                    content_index,
                    refusal,
                    text: String::new(),
                });
            }
            BlockKind::ToolCall { id, name } => {
                self.message_done(false, out);
                let output_index = self.next_output_index();
                let call = named_call(
                    FunctionCallOutput {
                        id: Some(item_id("fc", &self.ctx.id, output_index)),
                        status: Some("in_progress".to_owned()),
                        call_id: id.clone(),
                        name: name.clone(),
                        namespace: None,
                        arguments: String::new(),
                    },
                    &self.namespaces,
                );
                let sequence_number = self.next_sequence();
                self.write(
                    &ServerEvent::OutputItemAdded {
                        output_index,
                        item: OutputItem::FunctionCall(call.clone()),
                        sequence_number,
                    },
                    out,
                );
                self.block = Some(Block::Tool { index, call });
            }
            BlockKind::Thinking => {
                self.message_done(false, out);
                let output_index = self.next_output_index();
                let id = item_id("rs", &self.ctx.id, output_index);
                let sequence_number = self.next_sequence();
                self.write(
                    &ServerEvent::OutputItemAdded {
                        output_index,
                        item: OutputItem::Reasoning(reasoning_item(Some(id.clone()), "", None)),
                        sequence_number,
                    },
                    out,
                );
                self.block = Some(Block::Thinking {
                    index,
                    id,
                    text: String::new(),
                    signature: None,
                });
            }
            BlockKind::RedactedThinking { .. } => self.block = Some(Block::Skipped { index }),
            // A block kind added later has no Responses form.
            _ => {}
        }
    }

    /// The open message's id, output index and next content index.
    fn message_position(&self) -> (String, usize, usize) {
        match &self.message {
            Some(message) => (message.id.clone(), self.output.len(), message.content.len()),
            None => (String::new(), self.output.len(), 0),
        }
    }

    fn delta(&mut self, index: usize, delta: &BlockDelta, out: &mut Vec<u8>) {
        let output_index = self.output.len();
        let message_id = self.message.as_ref().map(|m| m.id.clone());
        let Some(block) = self.block.as_mut().filter(|b| b.index() == index) else {
            return;
        };
        // Built with sequence number 0; numbered once the borrow of `block` ends.
        let mut events = Vec::with_capacity(2);
        match (block, delta) {
            (
                Block::Part {
                    content_index,
                    refusal,
                    text,
                    ..
                },
                BlockDelta::Text(t) | BlockDelta::Refusal(t),
            ) if !t.is_empty() => {
                text.push_str(t);
                let item_id = message_id.unwrap_or_default();
                let content_index = *content_index;
                events.push(if *refusal {
                    ServerEvent::RefusalDelta {
                        item_id,
                        output_index,
                        content_index,
                        delta: t.clone(),
                        sequence_number: 0,
                    }
                } else {
                    ServerEvent::OutputTextDelta {
                        item_id,
                        output_index,
                        content_index,
                        delta: t.clone(),
                        logprobs: Vec::new(),
                        sequence_number: 0,
                    }
                });
            }
            (Block::Tool { call, .. }, BlockDelta::ToolArguments(a)) if !a.is_empty() => {
                call.arguments.push_str(a);
                events.push(ServerEvent::FunctionCallArgumentsDelta {
                    item_id: call.id.clone().unwrap_or_default(),
                    output_index,
                    delta: a.clone(),
                    sequence_number: 0,
                });
            }
            (Block::Thinking { id, text, .. }, BlockDelta::Thinking(t)) if !t.is_empty() => {
                if text.is_empty() {
                    events.push(ServerEvent::ReasoningSummaryPartAdded {
                        item_id: id.clone(),
                        output_index,
                        summary_index: 0,
                        part: summary(String::new()),
                        sequence_number: 0,
                    });
                }
                text.push_str(t);
                events.push(ServerEvent::ReasoningSummaryTextDelta {
                    item_id: id.clone(),
                    output_index,
                    summary_index: 0,
                    delta: t.clone(),
                    sequence_number: 0,
                });
            }
            (Block::Thinking { signature, .. }, BlockDelta::Signature(s)) => {
                signature.get_or_insert_with(String::new).push_str(s);
            }
            _ => {}
        }
        for event in events {
            let event = with_sequence(event, self.next_sequence());
            self.write(&event, out);
        }
    }

    /// Close the open block: its `.done` events, and the item's
    /// `output_item.done` unless it is a message part (the message stays open
    /// for the next text or refusal block).
    fn block_stop(&mut self, out: &mut Vec<u8>) {
        let Some(block) = self.block.take() else {
            return;
        };
        let output_index = self.output.len();
        match block {
            Block::Part {
                content_index,
                refusal,
                text,
                ..
            } => {
                let item_id = self
                    .message
                    .as_ref()
                    .map(|m| m.id.clone())
                    .unwrap_or_default();
                let sequence_number = self.next_sequence();
                let done = if refusal {
                    ServerEvent::RefusalDone {
                        item_id: item_id.clone(),
                        output_index,
                        content_index,
                        refusal: text.clone(),
                        sequence_number,
                    }
                } else {
                    ServerEvent::OutputTextDone {
                        item_id: item_id.clone(),
                        output_index,
                        content_index,
                        text: text.clone(),
                        logprobs: Vec::new(),
                        sequence_number,
                    }
                };
                self.write(&done, out);
                let finished = part(refusal, text);
                let sequence_number = self.next_sequence();
                self.write(
                    &ServerEvent::ContentPartDone {
                        item_id,
                        output_index,
                        content_index,
                        part: finished.clone(),
                        sequence_number,
                    },
                    out,
                );
                if let Some(message) = &mut self.message {
                    message.content.push(finished);
                }
            }
            Block::Tool { mut call, .. } => {
                let sequence_number = self.next_sequence();
                self.write(
                    &ServerEvent::FunctionCallArgumentsDone {
                        item_id: call.id.clone().unwrap_or_default(),
                        output_index,
                        name: call.name.clone(),
                        arguments: call.arguments.clone(),
                        sequence_number,
                    },
                    out,
                );
                call.status = Some("completed".to_owned());
                self.item_done(OutputItem::FunctionCall(call), out);
            }
            Block::Thinking {
                id,
                text,
                signature,
                ..
            } => {
                if !text.is_empty() {
                    let sequence_number = self.next_sequence();
                    self.write(
                        &ServerEvent::ReasoningSummaryTextDone {
                            item_id: id.clone(),
                            output_index,
                            summary_index: 0,
                            text: text.clone(),
                            sequence_number,
                        },
                        out,
                    );
                    let sequence_number = self.next_sequence();
                    self.write(
                        &ServerEvent::ReasoningSummaryPartDone {
                            item_id: id.clone(),
                            output_index,
                            summary_index: 0,
                            part: summary(text.clone()),
                            sequence_number,
                        },
                        out,
                    );
                }
                let item = reasoning_item(Some(id), &text, signature.as_ref());
                self.item_done(OutputItem::Reasoning(item), out);
            }
            Block::Skipped { .. } => {}
        }
    }

    /// Close the open message item, if any.
    fn message_done(&mut self, incomplete: bool, out: &mut Vec<u8>) {
        if let Some(mut message) = self.message.take() {
            message.status = if incomplete {
                "incomplete"
            } else {
                "completed"
            }
            .to_owned();
            self.item_done(OutputItem::Message(message), out);
        }
    }

    fn item_done(&mut self, item: OutputItem, out: &mut Vec<u8>) {
        let output_index = self.output.len();
        let sequence_number = self.next_sequence();
        self.write(
            &ServerEvent::OutputItemDone {
                output_index,
                item: item.clone(),
                sequence_number,
            },
            out,
        );
        self.output.push(item);
    }

    /// One SSE frame whose `event:` name equals the data's `type`.
    /// Serialized JSON has no raw newlines, so it is one `data:` line.
    fn write(&self, event: &ServerEvent, out: &mut Vec<u8>) {
        out.extend_from_slice(b"event: ");
        out.extend_from_slice(event.kind().as_bytes());
        out.extend_from_slice(b"\ndata: ");
        out.extend_from_slice(&to_json_bytes(event));
        out.extend_from_slice(b"\n\n");
    }
}

impl ClientStreamEncoder for StreamEncoder {
    /// Encode one event. `Finish` ends the stream as
    /// [`ClientStreamEncoder::finish`] does, without a cost; mid-stream usage
    /// writes nothing.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if let Some(end) = finish_of(event) {
            self.finish(&end, out);
            return;
        }
        if self.done {
            return;
        }
        self.start(out);
        match event {
            StreamEvent::BlockStart { index, block } => self.block_start(*index, block, out),
            StreamEvent::Delta { index, delta } => self.delta(*index, delta, out),
            StreamEvent::BlockStop { index }
                if self.block.as_ref().is_some_and(|b| b.index() == *index) =>
            {
                self.block_stop(out);
            }
            StreamEvent::Start { .. } | StreamEvent::Usage { .. } | StreamEvent::Finish { .. } => {}
            // The stop of a block not open, and an event added later, write nothing.
            _ => {}
        }
    }

    /// Close what is open and write `response.completed` (or
    /// `response.incomplete`) with the full output and usage, with `cost`
    /// when `end` states one.
    fn finish(&mut self, end: &StreamEnd<'_>, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.start(out);
        let finish = Finish::of(end.stop_reason);
        self.block_stop(out);
        self.message_done(finish.incomplete.is_some(), out);
        self.done = true;
        let output = std::mem::take(&mut self.output);
        let response = Box::new(response_object(
            self.head(),
            finish.status,
            finish.incomplete,
            None,
            output,
            Some(usage(end.usage, end.cost)),
        ));
        let sequence_number = self.next_sequence();
        self.write(
            &if finish.incomplete.is_some() {
                ServerEvent::Incomplete {
                    response,
                    sequence_number,
                }
            } else {
                ServerEvent::Completed {
                    response,
                    sequence_number,
                }
            },
            out,
        );
    }

    /// A failure after the stream started: an `error` event with the
    /// error's stable code, then `response.failed` with the output so far.
    /// `response.created` comes first if nothing was written yet, as SDK
    /// stream helpers require it before any other event.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.start(out);
        self.done = true;
        let sequence_number = self.next_sequence();
        self.write(
            &ServerEvent::Error {
                code: Some(error.code.as_str().to_owned()),
                message: error.message.clone(),
                param: error.param.clone(),
                sequence_number,
            },
            out,
        );
        let mut output = std::mem::take(&mut self.output);
        if let Some(mut message) = self.message.take()
            && !message.content.is_empty()
        {
            message.status = "incomplete".to_owned();
            output.push(OutputItem::Message(message));
        }
        let response = Box::new(response_object(
            self.head(),
            "failed",
            None,
            Some(ResponseError {
                // `response.error.code` is a closed list in the reference.
                code: Some(
                    if error.status() == 429 {
                        "rate_limit_exceeded"
                    } else {
                        "server_error"
                    }
                    .to_owned(),
                ),
                message: error.message.clone(),
            }),
            output,
            None,
        ));
        let sequence_number = self.next_sequence();
        self.write(
            &ServerEvent::Failed {
                response,
                sequence_number,
            },
            out,
        );
    }
}

fn part(refusal: bool, text: String) -> OutputContent {
    if refusal {
        OutputContent::Refusal(OutputRefusal { refusal: text })
    } else {
        output_text(text)
    }
}

fn summary(text: String) -> ReasoningText {
    ReasoningText {
        kind: summary_text(),
        text,
    }
}

/// Set the sequence number of a delta event built before it was known.
fn with_sequence(mut event: ServerEvent, n: u64) -> ServerEvent {
    match &mut event {
        ServerEvent::OutputTextDelta {
            sequence_number, ..
        }
        | ServerEvent::RefusalDelta {
            sequence_number, ..
        }
        | ServerEvent::FunctionCallArgumentsDelta {
            sequence_number, ..
        }
        | ServerEvent::ReasoningSummaryTextDelta {
            sequence_number, ..
        }
        | ServerEvent::ReasoningSummaryPartAdded {
            sequence_number, ..
        } => *sequence_number = n,
        _ => {}
    }
    event
}
