//! Completions streaming: canonical events to the client's `text_completion`
//! chunks in SSE `data:` frames (E-08, GP-04).
//!
//! The stream is: the echoed prompt when `echo` was set (GP-55), one chunk
//! per non-empty text delta, a chunk carrying `finish_reason`, a chunk with
//! `choices: []` and `usage` (cost included), then `data: [DONE]`. A failure
//! after the stream started ends it with `data: {"error": {...}}` and no
//! `[DONE]`. Thinking, refusal and tool-call deltas have no Completions form
//! and write nothing, as in the non-streaming reply.

use crate::envelope::ErrorEnvelope;
use crate::to_wire;
use crate::wire::response::{Choice, FinishReason, TEXT_COMPLETION, TextCompletion};
use crate::wire::to_json_bytes;
use router_canonical::sse;
use router_canonical::{ApiError, BlockDelta, NanoUsd, StopReason, StreamEvent, Usage};

/// What every chunk of the client's stream repeats, and the prompt to echo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    /// The router's completion id.
    pub id: String,
    /// The public model ID the client asked for.
    pub model: String,
    /// Unix seconds.
    pub created: i64,
    /// `Some(prompt)` when the client sent `echo: true`.
    pub echo: Option<String>,
}

/// Writes canonical events as the client's `text_completion` SSE chunks.
#[derive(Debug)]
pub struct StreamEncoder {
    id: String,
    model: String,
    created: i64,
    /// The prompt still to be echoed; taken by the first chunk written.
    echo: Option<String>,
}

impl StreamEncoder {
    pub fn new(ctx: StreamContext) -> Self {
        let StreamContext {
            id,
            model,
            created,
            echo,
        } = ctx;
        StreamEncoder {
            id,
            model,
            created,
            echo,
        }
    }

    /// Encode every event except `Finish` (which needs the settled cost:
    /// see [`StreamEncoder::encode_finish`]). `Start` writes the echoed
    /// prompt, if any; text deltas write a chunk each; everything else
    /// writes nothing.
    pub fn encode(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        match event {
            StreamEvent::Start { .. } => self.flush_echo(out),
            StreamEvent::Delta {
                delta: BlockDelta::Text(text),
                ..
            } if !text.is_empty() => {
                self.flush_echo(out);
                self.chunk(text.clone(), None, out);
            }
            _ => {}
        }
    }

    /// The `finish_reason` chunk, then a chunk with `choices: []` and `usage`
    /// including `cost` (GP-04), then `data: [DONE]`.
    pub fn encode_finish(
        &mut self,
        stop_reason: &StopReason,
        usage: &Usage,
        cost: NanoUsd,
        out: &mut Vec<u8>,
    ) {
        self.flush_echo(out);
        self.chunk(
            String::new(),
            Some(to_wire::finish_reason(stop_reason)),
            out,
        );
        let usage_chunk = TextCompletion {
            usage: Some(to_wire::usage(usage, cost)),
            ..self.envelope(Vec::new())
        };
        write_data(&to_json_bytes(&usage_chunk), out);
        sse::encode(None, "[DONE]", out);
    }

    /// A terminal `data: {"error": {...}}` frame for a failure after the
    /// stream started; no `[DONE]` follows (GP-04, P-17).
    pub fn encode_error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        write_data(&to_json_bytes(&ErrorEnvelope::from(error)), out);
    }

    /// The echoed prompt as the stream's first chunk (GP-55), once. An empty
    /// prompt has nothing to echo.
    fn flush_echo(&mut self, out: &mut Vec<u8>) {
        if let Some(prompt) = self.echo.take()
            && !prompt.is_empty()
        {
            self.chunk(prompt, None, out);
        }
    }

    fn envelope(&self, choices: Vec<Choice>) -> TextCompletion {
        TextCompletion {
            id: self.id.clone(),
            object: TEXT_COMPLETION.to_owned(),
            created: self.created,
            model: self.model.clone(),
            choices,
            usage: None,
        }
    }

    fn chunk(&self, text: String, finish_reason: Option<FinishReason>, out: &mut Vec<u8>) {
        let chunk = self.envelope(vec![Choice {
            text,
            index: 0,
            logprobs: None,
            finish_reason,
        }]);
        write_data(&to_json_bytes(&chunk), out);
    }
}

/// One `data:` frame. Serialized JSON has no raw newlines, so it is one line.
fn write_data(json: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
}
