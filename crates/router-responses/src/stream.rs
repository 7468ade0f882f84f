//! Responses streaming: a supplier's named `response.*` events to canonical
//! events ([`StreamDecoder`]), and canonical events to the client's
//! `response.*` events ([`StreamEncoder`]).
//!
//! Responses streams are already made of items and parts. The decoder maps
//! each content part of a `message` item (`output_index`, `content_index`)
//! and each `function_call` and `reasoning` item (`output_index`) to one
//! canonical block, numbered 0, 1, 2, ... in the order they open. Only one
//! block is open at a time: a new one closes the previous, and an event for a
//! closed one is an error. A reasoning item opens its block at its first
//! text (or at `output_item.done` when it carries text or
//! `encrypted_content`), so an empty reasoning item is no block at all -- the
//! same rule as [`crate::decode_response`]; its `encrypted_content` is the
//! block's signature delta. Text a supplier sends only in a `.done` event
//! (no deltas) is emitted from there.

use crate::error::DecodeError;
use crate::from_wire::{self, SUMMARY_SEPARATOR};
use crate::to_wire::usage as wire_usage;
use crate::to_wire::{Finish, ResponseHead, item_id, output_text, reasoning_item, response_object};
use crate::wire::event::{EventFields, ServerEvent};
use crate::wire::request::{ReasoningText, summary_text};
use crate::wire::response::{
    FunctionCallOutput, OutputContent, OutputItem, OutputMessage, OutputRefusal, ResponseError,
};
use crate::wire::to_json_bytes;
use router_canonical::parse::ObjectVisitor;
use router_canonical::sse::Frame;
use router_canonical::{ApiError, BlockDelta, BlockKind, NanoUsd, StopReason, StreamEvent, Usage};
use serde::Deserializer;
use serde_json::Value;

// ---------------------------------------------------------------------------
// Decoding a supplier stream

/// Turns a Responses supplier's SSE frames into canonical stream events. One per stream.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    started: bool,
    finished: bool,
    next_block: usize,
    open: Option<Open>,
    /// Every item or part a block was opened for (open or closed).
    seen: Vec<Key>,
    called_tools: bool,
}

/// What a block belongs to on the wire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Key {
    Part {
        output_index: usize,
        content_index: usize,
    },
    Item {
        output_index: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Text,
    Refusal,
    Tool,
    Thinking,
}

/// Which reasoning text a thinking block streams: the first kind to arrive
/// (summary or raw reasoning text) wins; the other is not mixed in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Source {
    Summary,
    Content,
}

#[derive(Debug)]
struct Open {
    key: Key,
    kind: Kind,
    /// The canonical index, once `BlockStart` was emitted (a reasoning block
    /// waits for its first text).
    index: Option<usize>,
    /// Whether any text (or arguments) was emitted for the block.
    streamed: bool,
    source: Option<Source>,
    /// The summary or content part the last thinking delta belonged to.
    part: Option<usize>,
}

impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder::default()
    }

    /// Whether `response.completed` or `response.incomplete` (and so
    /// `Finish`) has been seen.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Decode one SSE frame. The event type is the JSON `type` (the SSE
    /// `event:` name when the data has none). Unknown event types are
    /// ignored; unknown output items and content parts, `response.failed`
    /// and `error` events are errors. A stream finished without usage cannot
    /// be billed and is an error.
    pub fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        let data = frame.data.trim();
        let mut events = Vec::new();
        if data.is_empty() || data == "[DONE]" {
            return Ok(events);
        }
        if self.finished {
            return Err(DecodeError::AfterFinish);
        }
        let mut de = serde_json::Deserializer::from_str(data);
        let map = (&mut de)
            .deserialize_map(ObjectVisitor("a stream event object"))
            .map_err(|err| DecodeError::InvalidJson {
                path: ".".to_owned(),
                message: err.to_string(),
            })?;
        de.end().map_err(|err| DecodeError::InvalidJson {
            path: ".".to_owned(),
            message: err.to_string(),
        })?;
        let fields: EventFields =
            serde_path_to_error::deserialize(Value::Object(map)).map_err(DecodeError::json)?;
        let kind = fields
            .kind
            .clone()
            .or_else(|| frame.event.clone())
            .unwrap_or_default();
        self.event(&kind, fields, &mut events)?;
        Ok(events)
    }

    fn event(
        &mut self,
        kind: &str,
        f: EventFields,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        match kind {
            "response.created" | "response.in_progress" | "response.queued" => {
                if let Some(response) = &f.response {
                    self.start(&response.id, &response.model, events);
                }
            }
            "response.output_item.added" => {
                let oi = output_index(kind, &f)?;
                match f.item {
                    Some(OutputItem::FunctionCall(call)) => {
                        self.open_item(Key::Item { output_index: oi }, events)?;
                        self.start_tool(oi, call.call_id, call.name, events);
                        self.push_text(&call.arguments, events);
                    }
                    Some(OutputItem::Reasoning(_)) => {
                        self.open_item(Key::Item { output_index: oi }, events)?;
                        self.open_pending(Key::Item { output_index: oi });
                    }
                    Some(OutputItem::Unknown(value)) => return Err(unknown_item(oi, &value)),
                    // A message opens its blocks per content part.
                    Some(OutputItem::Message(_)) | None => {}
                }
            }
            "response.content_part.added" => {
                let key = part_key(kind, &f)?;
                let block = match f.part {
                    Some(OutputContent::OutputText(p)) => Some((Kind::Text, p.text)),
                    Some(OutputContent::Refusal(p)) => Some((Kind::Refusal, p.refusal)),
                    Some(OutputContent::Unknown(value)) => return Err(unknown_part(key, &value)),
                    None => None,
                };
                if let Some((block_kind, text)) = block {
                    self.open_item(key, events)?;
                    self.start_text(key, block_kind, events);
                    self.push_text(&text, events);
                }
            }
            "response.output_text.delta" | "response.refusal.delta" => {
                let key = part_key(kind, &f)?;
                let block_kind = if kind == "response.output_text.delta" {
                    Kind::Text
                } else {
                    Kind::Refusal
                };
                self.ensure_text(kind, key, block_kind, events)?;
                self.push_text(f.delta.as_deref().unwrap_or(""), events);
            }
            "response.output_text.done" | "response.refusal.done" => {
                let key = part_key(kind, &f)?;
                let text = if kind == "response.output_text.done" {
                    f.text
                } else {
                    f.refusal
                };
                if self.is_open(key) {
                    self.fill(text.as_deref().unwrap_or(""), events);
                }
            }
            "response.content_part.done" => {
                let key = part_key(kind, &f)?;
                if !self.seen.contains(&key)
                    && let Some(part) = f.part
                {
                    self.part_from_done(key, part, events)?;
                } else if self.is_open(key) {
                    let text = match f.part {
                        Some(OutputContent::OutputText(p)) => p.text,
                        Some(OutputContent::Refusal(p)) => p.refusal,
                        _ => String::new(),
                    };
                    self.fill(&text, events);
                    self.close(events);
                }
            }
            "response.function_call_arguments.delta" => {
                let key = Key::Item {
                    output_index: output_index(kind, &f)?,
                };
                self.expect_open(kind, key, Kind::Tool)?;
                self.push_text(f.delta.as_deref().unwrap_or(""), events);
            }
            "response.function_call_arguments.done" => {
                let key = Key::Item {
                    output_index: output_index(kind, &f)?,
                };
                if self.is_open(key) {
                    self.fill(f.arguments.as_deref().unwrap_or(""), events);
                }
            }
            "response.reasoning_summary_text.delta" | "response.reasoning_text.delta" => {
                let key = Key::Item {
                    output_index: output_index(kind, &f)?,
                };
                let (source, part) = if kind == "response.reasoning_summary_text.delta" {
                    (Source::Summary, f.summary_index)
                } else {
                    (Source::Content, f.content_index)
                };
                if !self.is_open(key) {
                    self.open_item(key, events)?;
                    self.open_pending(key);
                }
                self.thinking(
                    source,
                    part.unwrap_or(0),
                    f.delta.unwrap_or_default(),
                    events,
                );
            }
            "response.output_item.done" => {
                let oi = output_index(kind, &f)?;
                match f.item {
                    Some(item) => self.item_done(oi, item, events)?,
                    None => {
                        if self.open.as_ref().is_some_and(
                            |o| matches!(o.key, Key::Item { output_index } if output_index == oi),
                        ) {
                            self.close(events);
                        }
                    }
                }
            }
            "response.completed" | "response.incomplete" => {
                let response = f.response.ok_or(DecodeError::MissingUsage)?;
                self.start(&response.id, &response.model, events);
                self.close(events);
                let usage =
                    from_wire::usage(response.usage.as_ref().ok_or(DecodeError::MissingUsage)?)?;
                let status =
                    response
                        .status
                        .as_deref()
                        .unwrap_or(if kind == "response.completed" {
                            "completed"
                        } else {
                            "incomplete"
                        });
                let stop_reason = from_wire::stop_reason(
                    Some(status),
                    response.incomplete_details.as_ref(),
                    self.called_tools,
                );
                self.finished = true;
                events.push(StreamEvent::Finish {
                    stop_reason,
                    stop_sequence: None,
                    usage,
                });
            }
            "response.failed" => {
                return Err(match &f.response {
                    Some(response) => from_wire::supplier_failure(response),
                    None => DecodeError::SupplierError {
                        kind: None,
                        code: None,
                        message: None,
                    },
                });
            }
            "error" => return Err(error_event(f)),
            // Annotations, hosted-tool progress, keep-alives, future events.
            _ => {}
        }
        Ok(())
    }

    fn start(&mut self, id: &str, model: &str, events: &mut Vec<StreamEvent>) {
        if !self.started {
            self.started = true;
            events.push(StreamEvent::Start {
                id: id.to_owned(),
                model: model.to_owned(),
            });
        }
    }

    fn take_index(&mut self) -> usize {
        let index = self.next_block;
        self.next_block += 1;
        index
    }

    fn is_open(&self, key: Key) -> bool {
        self.open.as_ref().is_some_and(|o| o.key == key)
    }

    /// Prepare to open a block for `key`: the stream has started, the previous
    /// block is closed, and `key` was not used before.
    fn open_item(&mut self, key: Key, events: &mut Vec<StreamEvent>) -> Result<(), DecodeError> {
        self.start("", "", events);
        if self.seen.contains(&key) {
            return Err(DecodeError::OutOfOrder {
                event: "a second block for one output item or part".to_owned(),
                output_index: Some(key_output_index(key)),
            });
        }
        self.close(events);
        self.seen.push(key);
        Ok(())
    }

    fn start_tool(
        &mut self,
        output_index: usize,
        id: String,
        name: String,
        events: &mut Vec<StreamEvent>,
    ) {
        let index = self.take_index();
        self.called_tools = true;
        events.push(StreamEvent::BlockStart {
            index,
            block: BlockKind::ToolCall { id, name },
        });
        self.open = Some(Open {
            key: Key::Item { output_index },
            kind: Kind::Tool,
            index: Some(index),
            streamed: false,
            source: None,
            part: None,
        });
    }

    fn start_text(&mut self, key: Key, kind: Kind, events: &mut Vec<StreamEvent>) {
        let index = self.take_index();
        events.push(StreamEvent::BlockStart {
            index,
            block: if kind == Kind::Refusal {
                BlockKind::Refusal
            } else {
                BlockKind::Text
            },
        });
        self.open = Some(Open {
            key,
            kind,
            index: Some(index),
            streamed: false,
            source: None,
            part: None,
        });
    }

    /// A reasoning item whose block starts with its first text.
    fn open_pending(&mut self, key: Key) {
        self.open = Some(Open {
            key,
            kind: Kind::Thinking,
            index: None,
            streamed: false,
            source: None,
            part: None,
        });
    }

    /// The text block `key` for a delta, opened implicitly when the supplier
    /// skipped `content_part.added`.
    fn ensure_text(
        &mut self,
        event: &str,
        key: Key,
        kind: Kind,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        if self.is_open(key) {
            return self.expect_open(event, key, kind);
        }
        if self.seen.contains(&key) {
            return Err(out_of_order(event, key));
        }
        self.open_item(key, events)?;
        self.start_text(key, kind, events);
        Ok(())
    }

    fn expect_open(&self, event: &str, key: Key, kind: Kind) -> Result<(), DecodeError> {
        match &self.open {
            Some(open) if open.key == key && open.kind == kind => Ok(()),
            _ => Err(out_of_order(event, key)),
        }
    }

    /// Emit text (or arguments) for the open block.
    fn push_text(&mut self, text: &str, events: &mut Vec<StreamEvent>) {
        let Some(open) = &mut self.open else {
            return;
        };
        let (Some(index), false) = (open.index, text.is_empty()) else {
            return;
        };
        open.streamed = true;
        let delta = match open.kind {
            Kind::Text => BlockDelta::Text(text.to_owned()),
            Kind::Refusal => BlockDelta::Refusal(text.to_owned()),
            Kind::Tool => BlockDelta::ToolArguments(text.to_owned()),
            Kind::Thinking => BlockDelta::Thinking(text.to_owned()),
        };
        events.push(StreamEvent::Delta { index, delta });
    }

    /// Text from a `.done` event, emitted only when no delta carried it.
    fn fill(&mut self, text: &str, events: &mut Vec<StreamEvent>) {
        if self.open.as_ref().is_some_and(|o| !o.streamed) {
            self.push_text(text, events);
        }
    }

    fn thinking(
        &mut self,
        source: Source,
        part: usize,
        mut text: String,
        events: &mut Vec<StreamEvent>,
    ) {
        let Some(open) = &mut self.open else {
            return;
        };
        if text.is_empty() || *open.source.get_or_insert(source) != source {
            return;
        }
        // Parts are joined by a blank line, as in a non-streamed reply.
        if open.part.is_some_and(|p| p != part) {
            text.insert_str(0, SUMMARY_SEPARATOR);
        }
        open.part = Some(part);
        self.begin_thinking(events);
        self.push_text(&text, events);
    }

    /// Emit `BlockStart` for a pending reasoning block.
    fn begin_thinking(&mut self, events: &mut Vec<StreamEvent>) {
        if self.open.as_ref().is_some_and(|o| o.index.is_none()) {
            let index = self.take_index();
            if let Some(open) = &mut self.open {
                open.index = Some(index);
            }
            events.push(StreamEvent::BlockStart {
                index,
                block: BlockKind::Thinking,
            });
        }
    }

    /// Close the open block (a reasoning block that never started just goes).
    fn close(&mut self, events: &mut Vec<StreamEvent>) {
        if let Some(Open {
            index: Some(index), ..
        }) = self.open.take()
        {
            events.push(StreamEvent::BlockStop { index });
        }
    }

    /// A content part that only arrived in `content_part.done`.
    fn part_from_done(
        &mut self,
        key: Key,
        part: OutputContent,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let (kind, text) = match part {
            OutputContent::OutputText(p) => (Kind::Text, p.text),
            OutputContent::Refusal(p) => (Kind::Refusal, p.refusal),
            OutputContent::Unknown(value) => return Err(unknown_part(key, &value)),
        };
        self.open_item(key, events)?;
        self.start_text(key, kind, events);
        self.push_text(&text, events);
        self.close(events);
        Ok(())
    }

    /// `output_item.done`: close the item's block, emitting whatever the
    /// events before it did not carry.
    fn item_done(
        &mut self,
        oi: usize,
        item: OutputItem,
        events: &mut Vec<StreamEvent>,
    ) -> Result<(), DecodeError> {
        let key = Key::Item { output_index: oi };
        match item {
            OutputItem::Message(message) => {
                for (ci, part) in message.content.into_iter().enumerate() {
                    let part_key = Key::Part {
                        output_index: oi,
                        content_index: ci,
                    };
                    if self.is_open(part_key) {
                        self.close(events);
                    } else if !self.seen.contains(&part_key) {
                        self.part_from_done(part_key, part, events)?;
                    }
                }
                if self
                    .open
                    .as_ref()
                    .is_some_and(|o| key_output_index(o.key) == oi)
                {
                    self.close(events);
                }
            }
            OutputItem::FunctionCall(call) => {
                if !self.is_open(key) {
                    if self.seen.contains(&key) {
                        return Ok(());
                    }
                    self.open_item(key, events)?;
                    self.start_tool(oi, call.call_id, call.name, events);
                }
                self.fill(&call.arguments, events);
                self.close(events);
            }
            OutputItem::Reasoning(reasoning) => {
                if !self.is_open(key) {
                    if self.seen.contains(&key) {
                        return Ok(());
                    }
                    self.open_item(key, events)?;
                    self.open_pending(key);
                }
                let (text, signature) = from_wire::thinking(reasoning);
                if !text.is_empty() || signature.is_some() {
                    self.begin_thinking(events);
                }
                self.fill(&text, events);
                if let (
                    Some(signature),
                    Some(Open {
                        index: Some(index), ..
                    }),
                ) = (signature, &self.open)
                {
                    events.push(StreamEvent::Delta {
                        index: *index,
                        delta: BlockDelta::Signature(signature),
                    });
                }
                self.close(events);
            }
            OutputItem::Unknown(value) => return Err(unknown_item(oi, &value)),
        }
        Ok(())
    }
}

fn key_output_index(key: Key) -> usize {
    match key {
        Key::Part { output_index, .. } | Key::Item { output_index } => output_index,
    }
}

fn out_of_order(event: &str, key: Key) -> DecodeError {
    DecodeError::OutOfOrder {
        event: event.to_owned(),
        output_index: Some(key_output_index(key)),
    }
}

fn output_index(event: &str, f: &EventFields) -> Result<usize, DecodeError> {
    f.output_index.ok_or_else(|| DecodeError::OutOfOrder {
        event: event.to_owned(),
        output_index: None,
    })
}

fn part_key(event: &str, f: &EventFields) -> Result<Key, DecodeError> {
    Ok(Key::Part {
        output_index: output_index(event, f)?,
        content_index: f.content_index.unwrap_or(0),
    })
}

fn type_of(value: &Value) -> String {
    value
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_owned()
}

fn unknown_item(output_index: usize, value: &Value) -> DecodeError {
    DecodeError::UnknownOutputItem {
        path: format!("output[{output_index}]"),
        kind: type_of(value),
    }
}

fn unknown_part(key: Key, value: &Value) -> DecodeError {
    let path = match key {
        Key::Part {
            output_index,
            content_index,
        } => format!("output[{output_index}].content[{content_index}]"),
        Key::Item { output_index } => format!("output[{output_index}]"),
    };
    DecodeError::UnknownContent {
        path,
        kind: type_of(value),
    }
}

/// An `error` event: `{code, message, param}`, or nested under `error`.
fn error_event(f: EventFields) -> DecodeError {
    fn text(v: Option<&Value>) -> Option<String> {
        match v? {
            Value::String(s) => Some(s.clone()),
            Value::Null => None,
            other => Some(other.to_string()),
        }
    }
    let nested = f.error.as_ref();
    DecodeError::SupplierError {
        kind: text(nested.and_then(|e| e.get("type"))),
        code: text(f.code.as_ref()).or_else(|| text(nested.and_then(|e| e.get("code")))),
        message: f
            .message
            .or_else(|| text(nested.and_then(|e| e.get("message")))),
    }
}

// ---------------------------------------------------------------------------
// Encoding the client stream

/// What every event of the client's stream repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    /// The router's response id (`resp_...`).
    pub id: String,
    /// The public model ID the client asked for.
    pub model: String,
    /// Unix seconds.
    pub created: i64,
}

/// Writes canonical events as the client's `response.*` SSE events.
///
/// `response.created` and `response.in_progress` open the stream; each
/// canonical block becomes a content part of a `message` item (consecutive
/// text and refusal blocks share one message, as in
/// [`crate::encode_response`]), a `function_call` item or a `reasoning`
/// item; [`StreamEncoder::encode_finish`] ends with `response.completed`
/// (`response.incomplete` for a length or content-filter stop) carrying the
/// whole response and its usage with `cost` (C-10, GP-04).
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
    pub fn new(ctx: StreamContext) -> Self {
        StreamEncoder {
            ctx,
            sequence: 0,
            started: false,
            done: false,
            output: Vec::new(),
            message: None,
            block: None,
        }
    }

    /// Encode every event except `Finish` (which needs the settled cost: see
    /// [`StreamEncoder::encode_finish`]). Mid-stream usage writes nothing.
    pub fn encode(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        if self.done {
            return;
        }
        self.start(out);
        match event {
            StreamEvent::BlockStart { index, block } => self.block_start(*index, block, out),
            StreamEvent::Delta { index, delta } => self.delta(*index, delta, out),
            StreamEvent::BlockStop { index } => {
                if self.block.as_ref().is_some_and(|b| b.index() == *index) {
                    self.block_stop(out);
                }
            }
            StreamEvent::Start { .. } | StreamEvent::Usage { .. } | StreamEvent::Finish { .. } => {}
        }
    }

    /// Close what is open and write `response.completed` (or
    /// `response.incomplete`) with the full output and usage including
    /// `cost` (C-10, GP-04).
    pub fn encode_finish(
        &mut self,
        stop_reason: &StopReason,
        usage: &Usage,
        cost: NanoUsd,
        out: &mut Vec<u8>,
    ) {
        if self.done {
            return;
        }
        self.start(out);
        let finish = Finish::of(stop_reason);
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
            Some(wire_usage(usage, cost)),
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

    /// A failure after the stream started (GP-04): an `error` event with the
    /// router's stable code, then `response.failed` with the output so far.
    /// `response.created` comes first if nothing was written yet, as SDK
    /// stream helpers require it before any other event.
    pub fn encode_error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
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

    fn head(&self) -> ResponseHead<'_> {
        ResponseHead {
            id: &self.ctx.id,
            model: &self.ctx.model,
            created: self.ctx.created,
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
                let call = FunctionCallOutput {
                    id: Some(item_id("fc", &self.ctx.id, output_index)),
                    status: Some("in_progress".to_owned()),
                    call_id: id.clone(),
                    name: name.clone(),
                    arguments: String::new(),
                };
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
