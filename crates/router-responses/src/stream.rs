//! Responses streaming (being built).

use crate::error::DecodeError;
use router_canonical::sse::Frame;
use router_canonical::{ApiError, NanoUsd, StopReason, StreamEvent, Usage};

/// Turns a Responses supplier's SSE frames into canonical stream events.
#[derive(Debug, Default)]
pub struct StreamDecoder {
    finished: bool,
}

impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder::default()
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }

    pub fn decode(&mut self, _frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        Ok(Vec::new())
    }
}

/// What every event of the client's stream repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    pub id: String,
    pub model: String,
    pub created: i64,
}

/// Writes canonical events as the client's `response.*` SSE events.
#[derive(Debug)]
pub struct StreamEncoder {
    #[allow(dead_code)]
    ctx: StreamContext,
}

impl StreamEncoder {
    pub fn new(ctx: StreamContext) -> Self {
        StreamEncoder { ctx }
    }

    pub fn encode(&mut self, _event: &StreamEvent, _out: &mut Vec<u8>) {}

    pub fn encode_finish(
        &mut self,
        _stop_reason: &StopReason,
        _usage: &Usage,
        _cost: NanoUsd,
        _out: &mut Vec<u8>,
    ) {
    }

    pub fn encode_error(&mut self, _error: &ApiError, _out: &mut Vec<u8>) {}
}
