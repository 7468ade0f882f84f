//! Chat client streaming: canonical events to the client's
//! `chat.completion.chunk` SSE frames ([`StreamEncoder`]).

use super::response;
use crate::wire::chunk::{
    ChatCompletionChunk, ChunkChoice, Delta, FunctionDelta, ToolCallDelta, chunk_object,
};
use crate::wire::response::FinishReason;
use crate::wire::{request::function_kind, to_json_bytes};
use router_canonical::codec::{ClientStreamEncoder, StreamContext, StreamEnd, finish_of};
use router_canonical::openai_error::ErrorEnvelope;
use router_canonical::sse;
use router_canonical::{ApiError, BlockDelta, BlockKind, StreamEvent};

/// Writes canonical events as the client's `chat.completion.chunk` SSE
/// frames. Made by [`ClientCodec::stream_encoder`](crate::ClientCodec::stream_encoder)
/// on a [`ChatClient`](crate::ChatClient).
#[derive(Debug)]
pub struct StreamEncoder {
    ctx: StreamContext,
    /// Write the `choices: []` usage chunk before `[DONE]`.
    include_usage: bool,
    role_sent: bool,
    /// Canonical block index -> Chat `tool_calls[].index`.
    tool_ordinals: Vec<(usize, u32)>,
}

impl ClientStreamEncoder for StreamEncoder {
    /// Events with no Chat form (block boundaries, signatures, mid-stream
    /// usage) write nothing; `Finish` writes the ending, as
    /// [`ClientStreamEncoder::finish`] does without a cost.
    fn event(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        match finish_of(event) {
            Some(end) => self.finish(&end, out),
            None => self.encode(event, out),
        }
    }

    /// The `finish_reason` chunk, then (when the client asked for usage) a
    /// chunk with `choices: []` and `usage`, including `cost` when there is
    /// one, then `data: [DONE]`.
    fn finish(&mut self, end: &StreamEnd<'_>, out: &mut Vec<u8>) {
        self.chunk(
            Delta::default(),
            Some(response::finish_reason(end.stop_reason)),
            out,
        );
        if self.include_usage {
            let usage_chunk = ChatCompletionChunk {
                choices: Vec::new(),
                usage: Some(response::usage(end.usage, end.cost)),
                ..self.envelope()
            };
            write_data(&to_json_bytes(&usage_chunk), out);
        }
        sse::encode(None, "[DONE]", out);
    }

    /// A terminal `data: {"error": {...}}` frame for a failure after the
    /// stream started; no `[DONE]` follows.
    fn error(&mut self, error: &ApiError, out: &mut Vec<u8>) {
        write_data(&to_json_bytes(&ErrorEnvelope::from(error)), out);
    }
}

impl StreamEncoder {
    pub(crate) fn new(ctx: StreamContext, include_usage: bool) -> Self {
        StreamEncoder {
            ctx,
            include_usage,
            role_sent: false,
            tool_ordinals: Vec::new(),
        }
    }

    /// Every event but `Finish`.
    fn encode(&mut self, event: &StreamEvent, out: &mut Vec<u8>) {
        let delta = match event {
            StreamEvent::Start { .. } if !self.role_sent => Delta {
                content: Some(String::new()),
                ..Delta::default()
            },
            StreamEvent::BlockStart {
                index,
                block: BlockKind::ToolCall { id, name },
            } => {
                let ordinal = u32::try_from(self.tool_ordinals.len()).unwrap_or(u32::MAX);
                self.tool_ordinals.push((*index, ordinal));
                tool_delta(ToolCallDelta {
                    index: ordinal,
                    id: Some(id.clone()),
                    kind: Some(function_kind()),
                    function: Some(FunctionDelta {
                        name: Some(name.clone()),
                        arguments: Some(String::new()),
                    }),
                })
            }
            StreamEvent::Delta { index, delta } => match delta {
                BlockDelta::Text(t) if !t.is_empty() => Delta {
                    content: Some(t.clone()),
                    ..Delta::default()
                },
                BlockDelta::Thinking(t) if !t.is_empty() => Delta {
                    reasoning_content: Some(t.clone()),
                    ..Delta::default()
                },
                BlockDelta::Refusal(t) if !t.is_empty() => Delta {
                    refusal: Some(t.clone()),
                    ..Delta::default()
                },
                BlockDelta::ToolArguments(a) if !a.is_empty() => {
                    let Some(&(_, ordinal)) = self.tool_ordinals.iter().find(|(b, _)| b == index)
                    else {
                        return;
                    };
                    tool_delta(ToolCallDelta {
                        index: ordinal,
                        function: Some(FunctionDelta {
                            name: None,
                            arguments: Some(a.clone()),
                        }),
                        ..ToolCallDelta::default()
                    })
                }
                _ => return,
            },
            _ => return,
        };
        self.chunk(delta, None, out);
    }

    fn envelope(&self) -> ChatCompletionChunk {
        ChatCompletionChunk {
            id: self.ctx.id.clone(),
            object: chunk_object(),
            created: self.ctx.created,
            model: self.ctx.model.clone(),
            choices: Vec::new(),
            usage: None,
            error: None,
        }
    }

    fn chunk(&mut self, mut delta: Delta, finish_reason: Option<FinishReason>, out: &mut Vec<u8>) {
        if !self.role_sent {
            self.role_sent = true;
            delta.role = Some("assistant".to_owned());
        }
        let chunk = ChatCompletionChunk {
            choices: vec![ChunkChoice {
                index: 0,
                delta,
                finish_reason,
            }],
            ..self.envelope()
        };
        write_data(&to_json_bytes(&chunk), out);
    }
}

fn tool_delta(call: ToolCallDelta) -> Delta {
    Delta {
        tool_calls: Some(vec![call]),
        ..Delta::default()
    }
}

/// One `data:` frame. Serialized JSON has no raw newlines, so it is one line.
fn write_data(json: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(b"data: ");
    out.extend_from_slice(json);
    out.extend_from_slice(b"\n\n");
}
