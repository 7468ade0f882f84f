//! A Responses supplier's named `response.*` stream events, decoded into
//! canonical events ([`StreamDecoder`]).
//!
//! Responses streams are already made of items and parts. The decoder maps
//! each content part of a `message` item (`output_index`, `content_index`)
//! and each `function_call` and `reasoning` item (`output_index`) to one
//! canonical block, numbered 0, 1, 2, ... in the order they open. Only one
//! block is open at a time: a new one closes the previous, and an event for a
//! closed one is an error. A reasoning item opens its block at its first
//! text (or at `output_item.done` when it carries text or
//! `encrypted_content`), so an empty reasoning item is no block at all -- the
//! same rule as a complete reply; its `encrypted_content` is the
//! block's signature delta. Text a supplier sends only in a `.done` event
//! (no deltas) is emitted from there.

use super::error::DecodeError;
use super::response as reply;
use crate::convert::{SUMMARY_SEPARATOR, thinking};
use crate::wire::event::EventFields;
use crate::wire::response::{OutputContent, OutputItem};
use router_canonical::parse::{InvalidJson, ObjectVisitor};
use router_canonical::sse::Frame;
use router_canonical::{
    BlockDelta, BlockKind, StreamEvent, SupplierError, SupplierStreamDecoder, Usage,
};
use serde::Deserializer;
use serde_json::Value;

/// Turns a Responses supplier's SSE frames into canonical stream events. One per stream.
///
/// `Default` reads a stream without usage as zero usage;
/// [`ResponsesSupplier::decoder`](crate::ResponsesSupplier::decoder) makes
/// one that follows the codec's `require_usage`. Through
/// [`SupplierStreamDecoder::decode`], errors are sorted into a
/// [`SupplierError`]; [`StreamDecoder::decode_frame`] keeps the typed
/// [`DecodeError`].
#[derive(Debug, Default)]
pub struct StreamDecoder {
    /// Whether a stream finished without usage is invalid.
    require_usage: bool,
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
    /// A decoder for one stream; `require_usage` makes a stream that
    /// finishes without usage invalid.
    pub(crate) fn new(require_usage: bool) -> Self {
        StreamDecoder {
            require_usage,
            ..StreamDecoder::default()
        }
    }

    /// Whether `response.completed` or `response.incomplete` (and so
    /// `Finish`) has been seen.
    pub fn is_finished(&self) -> bool {
        self.finished
    }

    /// Decode one SSE frame, with the decoder's own typed error. The event
    /// type is the JSON `type` (the SSE `event:` name when the data has
    /// none). Unknown event types are ignored; unknown output items and
    /// content parts, `response.failed` and `error` events are errors, and so
    /// is a stream finished without usage when usage is required.
    pub fn decode_frame(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
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
            .map_err(|err| DecodeError::at_root(&err))?;
        de.end().map_err(|err| DecodeError::at_root(&err))?;
        let fields: EventFields =
            serde_path_to_error::deserialize(Value::Object(map)).map_err(InvalidJson::from)?;
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
                        self.start_tool(
                            oi,
                            call.call_id,
                            called_name(call.name, call.namespace),
                            events,
                        );
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
                let response = match f.response {
                    None if self.require_usage => return Err(DecodeError::MissingUsage),
                    response => response,
                };
                let (id, model) = response
                    .as_ref()
                    .map_or(("", ""), |r| (r.id.as_str(), r.model.as_str()));
                self.start(id, model, events);
                self.close(events);
                let usage = match response.as_ref().and_then(|r| r.usage.as_ref()) {
                    Some(usage) => reply::usage(usage)?,
                    None if self.require_usage => return Err(DecodeError::MissingUsage),
                    None => Usage::default(),
                };
                let status = response
                    .as_ref()
                    .and_then(|r| r.status.as_deref())
                    .unwrap_or(if kind == "response.completed" {
                        "completed"
                    } else {
                        "incomplete"
                    });
                let stop_reason = reply::stop_reason(
                    Some(status),
                    response
                        .as_ref()
                        .and_then(|r| r.incomplete_details.as_ref()),
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
                    Some(response) => reply::supplier_failure(response),
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
                    self.start_tool(
                        oi,
                        call.call_id,
                        called_name(call.name, call.namespace),
                        events,
                    );
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
                let (text, signature) = thinking(reasoning);
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

impl SupplierStreamDecoder for StreamDecoder {
    fn decode(&mut self, frame: &Frame) -> Result<Vec<StreamEvent>, SupplierError> {
        self.decode_frame(frame).map_err(SupplierError::from)
    }

    fn is_finished(&self) -> bool {
        self.finished
    }
}

/// The canonical name of a supplier's call: a namespaced function's flat
/// name, as the request's tools carry it.
pub(crate) fn called_name(name: String, namespace: Option<String>) -> String {
    match namespace {
        Some(namespace) => crate::convert::flat_name(&namespace, &name),
        None => name,
    }
}
