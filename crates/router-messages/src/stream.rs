//! Messages streaming (in progress).

use crate::error::DecodeError;
use router_canonical::sse::Frame;
use router_canonical::{ApiError, StopReason, StreamEvent, Usage};

#[derive(Debug, Default)]
pub struct StreamDecoder {
    finished: bool,
}

impl StreamDecoder {
    pub fn new() -> Self {
        StreamDecoder::default()
    }

    pub fn decode(&mut self, _frame: &Frame) -> Result<Vec<StreamEvent>, DecodeError> {
        Ok(Vec::new())
    }

    pub fn is_finished(&self) -> bool {
        self.finished
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    pub id: String,
    pub model: String,
}

#[derive(Debug)]
pub struct StreamEncoder {
    _ctx: StreamContext,
}

impl StreamEncoder {
    pub fn new(ctx: StreamContext) -> Self {
        StreamEncoder { _ctx: ctx }
    }

    pub fn encode(&mut self, _event: &StreamEvent, _out: &mut Vec<u8>) {}

    pub fn encode_finish(
        &mut self,
        _stop_reason: &StopReason,
        _stop_sequence: Option<&str>,
        _usage: &Usage,
        _out: &mut Vec<u8>,
    ) {
    }

    pub fn encode_error(&mut self, _error: &ApiError, _out: &mut Vec<u8>) {}
}
