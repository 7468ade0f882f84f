//! Legacy OpenAI Completions (`POST /v1/completions`) on the canonical (Chat) path.
//!
//! Work in progress: the public API is fixed, the bodies are being filled in.

use router_canonical::{ApiError, NanoUsd, Request, Response, StopReason, StreamEvent, Usage};

/// A parsed Completions request: the canonical request that rides the Chat
/// path, and the prompt to echo when the client asked for `echo: true`.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    pub request: Request,
    /// `Some(prompt)` when `echo` is `true`.
    pub echo: Option<String>,
}

/// Validate a client's Completions body.
pub fn parse_request(_body: &[u8]) -> Result<CompletionRequest, ApiError> {
    Err(ApiError::new(
        router_canonical::ErrorCode::InternalError,
        "not implemented yet",
    ))
}

/// What the router's reply states that the canonical response does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    pub id: &'a str,
    pub model: &'a str,
    pub created: i64,
    pub cost: NanoUsd,
    pub echo: Option<&'a str>,
}

/// The client's `text_completion` JSON.
pub fn encode_response(_response: &Response, _ctx: &ResponseContext<'_>) -> Vec<u8> {
    Vec::new()
}

/// What every chunk of the client's stream repeats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StreamContext {
    pub id: String,
    pub model: String,
    pub created: i64,
    pub echo: Option<String>,
}

/// Writes canonical events as `text_completion` SSE chunks.
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

/// The OpenAI error envelope for a Completions client.
pub fn error_body(_error: &ApiError) -> Vec<u8> {
    Vec::new()
}
