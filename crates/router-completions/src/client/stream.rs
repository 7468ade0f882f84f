//! Completions streaming: canonical events to the client's `text_completion`
//! chunks in SSE `data:` frames.
//!
//! The stream is: the echoed prompt when `echo` was set, one chunk
//! per non-empty text delta, a chunk carrying `finish_reason`, a chunk with
//! `choices: []` and `usage` (cost included), then `data: [DONE]`. A failure
//! after the stream started ends it with `data: {"error": {...}}` and no
//! `[DONE]`. Thinking, refusal and tool-call deltas have no Completions form
//! and write nothing, as in the non-streaming reply.

use crate::client::envelope::ErrorEnvelope;
use crate::client::response as to_wire;
use crate::wire::response::{Choice, FinishReason, TEXT_COMPLETION, TextCompletion};
use crate::wire::to_json_bytes;
use router_canonical::codec::{ClientStreamEncoder, StreamEnd, finish_of};
use router_canonical::sse;
use router_canonical::{ApiError, BlockDelta, StreamEvent};

/// What every chunk of the client's stream repeats, and the prompt to echo.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompletionStreamContext {
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
    /// An encoder for one streamed reply.
    pub fn new(ctx: CompletionStreamContext) -> Self {
        let CompletionStreamContext {
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

    /// The echoed prompt as the stream's first chunk, once. An empty
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

impl ClientStreamEncoder for StreamEncoder {
    /// `Start` writes the echoed prompt, or else a chunk with empty text, so
    /// the client hears from the stream as soon as the supplier does; text
    /// deltas write a chunk each; `Finish` writes the ending (no cost);
    /// everything else writes nothing.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        match event {
            StreamEvent::Start { .. } => {
                let before = out.len();
                self.flush_echo(out);
                if out.len() == before {
                    self.chunk(String::new(), None, out);
                }
            }
            StreamEvent::Delta {
                delta: BlockDelta::Text(text),
                ..
            } if !text.is_empty() => {
                self.flush_echo(out);
                self.chunk(text.clone(), None, out);
            }
            StreamEvent::Finish { .. } => {
                if let Some(end) = finish_of(event) {
                    self.finish(&end, out);
                }
            }
            _ => {}
        }
    }

    /// The `finish_reason` chunk, then a chunk with `choices: []` and `usage`
    /// (with `cost` when there is one), then `data: [DONE]`.
    fn finish(&mut self, end: &StreamEnd<'_>, out: &mut Vec<u8>) {
        self.flush_echo(out);
        self.chunk(
            String::new(),
            Some(to_wire::finish_reason(end.stop_reason)),
            out,
        );
        let usage_chunk = TextCompletion {
            usage: Some(to_wire::usage(end.usage, end.cost)),
            ..self.envelope(Vec::new())
        };
        write_data(&to_json_bytes(&usage_chunk), out);
        sse::encode(None, "[DONE]", out);
    }

    /// A terminal `data: {"error": {...}}` frame for a failure after the
    /// stream started; no `[DONE]` follows.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        write_data(&to_json_bytes(&ErrorEnvelope::from(error)), out);
    }
}

/// One `data:` frame. Serialized JSON has no raw newlines, so it is one line.
fn write_data(json: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::sse::Decoder;
    use router_canonical::{BlockKind, ErrorCode, NanoUsd, StopReason, Usage};
    use serde_json::{Value, json};

    fn encoder(echo: Option<&str>) -> StreamEncoder {
        StreamEncoder::new(CompletionStreamContext {
            id: "cmpl-1".into(),
            model: "acme/text".into(),
            created: 7,
            echo: echo.map(str::to_owned),
        })
    }

    fn data(bytes: &[u8]) -> Vec<String> {
        let mut decoder = Decoder::default();
        let mut frames = Vec::new();
        decoder.feed(bytes, &mut frames).unwrap();
        assert!(!decoder.has_partial());
        frames.into_iter().map(|f| f.data).collect()
    }

    #[test]
    fn error_after_start_is_a_final_data_frame_without_done() {
        // GP-04, P-17
        let mut enc = encoder(None);
        let mut out = Vec::new();
        let text = StreamEvent::Delta {
            index: 0,
            delta: BlockDelta::Text("Hi".into()),
        };
        enc.event(&text, &mut out);
        enc.error(
            &ApiError::new(ErrorCode::UpstreamError, "the supplier failed"),
            &mut out,
        );
        let frames = data(&out);
        assert_eq!(frames.len(), 2);
        let error: Value = serde_json::from_str(&frames[1]).unwrap();
        assert_eq!(
            error,
            json!({"error": {
                "message": "the supplier failed",
                "type": "api_error",
                "param": null,
                "code": "upstream_error"
            }})
        );
        assert!(!frames.iter().any(|f| f == "[DONE]"));
    }

    #[test]
    fn start_writes_an_empty_chunk_at_once() {
        let mut enc = encoder(None);
        let mut out = Vec::new();
        let start = StreamEvent::Start {
            id: "s".into(),
            model: "m".into(),
        };
        enc.event(&start, &mut out);
        let frames = data(&out);
        assert_eq!(frames.len(), 1);
        let chunk: Value = serde_json::from_str(&frames[0]).unwrap();
        assert_eq!(chunk["choices"][0]["text"], "");
        assert_eq!(chunk["choices"][0]["finish_reason"], Value::Null);
    }

    #[test]
    fn events_without_a_completions_form_write_nothing() {
        let mut enc = encoder(None);
        let mut out = Vec::new();
        for event in [
            StreamEvent::BlockStart {
                index: 0,
                block: BlockKind::Thinking,
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Thinking("hmm".into()),
            },
            StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Signature("sig".into()),
            },
            StreamEvent::Delta {
                index: 1,
                delta: BlockDelta::ToolArguments("{}".into()),
            },
            StreamEvent::Delta {
                index: 2,
                delta: BlockDelta::Refusal("no".into()),
            },
            StreamEvent::Delta {
                index: 3,
                delta: BlockDelta::Text(String::new()),
            },
            StreamEvent::BlockStop { index: 0 },
            StreamEvent::Usage {
                usage: Usage::default(),
            },
        ] {
            enc.event(&event, &mut out);
        }
        assert!(out.is_empty(), "{}", String::from_utf8_lossy(&out));
    }

    #[test]
    fn the_echo_is_written_once_even_without_start() {
        // GP-55: the first chunk carries the prompt.
        let mut enc = encoder(Some("Q:"));
        let mut out = Vec::new();
        for text in [" A", "!"] {
            enc.event(
                &StreamEvent::Delta {
                    index: 0,
                    delta: BlockDelta::Text(text.into()),
                },
                &mut out,
            );
        }
        enc.finish(
            &StreamEnd::new(&StopReason::ContentFilter, &Usage::default())
                .with_cost(Some(NanoUsd::ZERO)),
            &mut out,
        );
        let frames = data(&out);
        let texts: Vec<Value> = frames[..frames.len() - 2]
            .iter()
            .map(|f| serde_json::from_str::<Value>(f).unwrap()["choices"][0]["text"].clone())
            .collect();
        assert_eq!(texts, vec![json!("Q:"), json!(" A"), json!("!"), json!("")]);
        let finish: Value = serde_json::from_str(&frames[3]).unwrap();
        assert_eq!(finish["choices"][0]["finish_reason"], "content_filter");
        let usage: Value = serde_json::from_str(&frames[4]).unwrap();
        assert_eq!(usage["usage"]["cost"], json!(0));
        assert_eq!(frames[5], "[DONE]");
    }

    #[test]
    fn every_chunk_has_the_fields_the_sdk_requires() {
        // The Python SDK's `Completion` needs id, object, created, model and
        // choices; each choice needs text, index, logprobs and finish_reason.
        let mut enc = encoder(Some("P"));
        let mut out = Vec::new();
        enc.event(
            &StreamEvent::Delta {
                index: 0,
                delta: BlockDelta::Text("x".into()),
            },
            &mut out,
        );
        enc.finish(
            &StreamEnd::new(&StopReason::EndTurn, &Usage::default()).with_cost(Some(NanoUsd(5))),
            &mut out,
        );
        for frame in data(&out).iter().filter(|f| *f != "[DONE]") {
            let chunk: Value = serde_json::from_str(frame).unwrap();
            for key in ["id", "object", "created", "model", "choices"] {
                assert!(chunk.get(key).is_some(), "{key} missing in {frame}");
            }
            assert_eq!(chunk["object"], "text_completion");
            for choice in chunk["choices"].as_array().unwrap() {
                for key in ["text", "index", "logprobs", "finish_reason"] {
                    assert!(choice.get(key).is_some(), "{key} missing in {frame}");
                }
            }
        }
    }
}
