//! Legacy OpenAI Completions (`POST /v1/completions`) on the canonical (Chat) path.
//!
//! The legacy surface has no route of its own: it "rides the Chat path"
//! (E-09, CF-11). A client's prompt becomes a canonical request holding one
//! user message with the prompt text, which the core routes, retries and
//! settles exactly like a Chat request; the canonical response or stream is
//! then written back as `text_completion` objects.
//!
//! | direction | API |
//! |---|---|
//! | client request -> canonical (validated, 400 before any network work) | [`parse_request`] |
//! | canonical -> client reply | [`encode_response`], [`StreamEncoder`], [`error_body`] |
//!
//! There is no supplier direction: no supplier speaks this protocol to the
//! router, and the request leaves as Chat (or whatever the route speaks)
//! through that protocol's wire crate. Like every wire crate this one knows
//! nothing of HTTP, async runtimes or storage: bytes in, bytes out. Wire
//! types live in [`wire`]; conversions are written by hand in `from_wire.rs`,
//! `to_wire.rs` and [`stream`].
//!
//! `echo: true` (E-05, GP-55) is not something a supplier does: the parser
//! hands the prompt back in [`CompletionRequest::echo`], and the server passes
//! it on in [`ResponseContext::echo`] or [`StreamContext::echo`], which put it
//! in front of the generated text.
//!
//! ```
//! use router_canonical::{NanoUsd, OutputBlock, Response, Role, StopReason, Usage};
//! use router_completions::{ResponseContext, encode_response, parse_request};
//!
//! // A client's request, validated into the canonical model.
//! let parsed = parse_request(br#"{
//!     "model": "acme/text-1",
//!     "prompt": ["Once upon a time"],
//!     "echo": true,
//!     "logprobs": null,
//!     "x_custom": 1
//! }"#)?;
//! let request = &parsed.request;
//! assert_eq!(request.messages.len(), 1);
//! assert_eq!(request.messages[0].role, Role::User);
//! assert_eq!(request.messages[0].joined_text(), "Once upon a time");
//! assert_eq!(request.sampling.max_output_tokens, Some(128)); // the default (E-04)
//! assert_eq!(parsed.echo.as_deref(), Some("Once upon a time"));
//!
//! // The core routes it like a Chat request; the canonical reply comes back...
//! let response = Response {
//!     id: "chatcmpl-supplier-1".into(),
//!     model: "text-1-2025".into(),
//!     output: vec![OutputBlock::Text { text: ", a fox.".into() }],
//!     stop_reason: StopReason::EndTurn,
//!     stop_sequence: None,
//!     usage: Usage { input_tokens: 5, output_tokens: 4, ..Usage::default() },
//!     created: 1_700_000_000,
//! };
//!
//! // ...and is written to the client with the prompt echoed in front.
//! let ctx = ResponseContext {
//!     id: "cmpl-router-1",
//!     model: &request.model,
//!     created: 1_700_000_001,
//!     cost: NanoUsd(1_500),
//!     echo: parsed.echo.as_deref(),
//! };
//! let reply: serde_json::Value = serde_json::from_slice(&encode_response(&response, &ctx))?;
//! assert_eq!(reply["object"], "text_completion");
//! assert_eq!(reply["model"], "acme/text-1");
//! assert_eq!(reply["choices"][0]["text"], "Once upon a time, a fox.");
//! assert_eq!(reply["choices"][0]["finish_reason"], "stop");
//! assert_eq!(reply["usage"]["total_tokens"], 9);
//! assert_eq!(reply["usage"]["cost"], 0.0000015);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Golden fixtures
//!
//! `fixtures/completions/<case>/` holds, per case, the client `request.json`
//! and the parsed `canonical.json`; for a non-streaming case a hand-written
//! `canonical_response.json` and the client `response.json`; for a stream a
//! hand-written `canonical_events.json` and the `client_stream.sse`.
//! `tests/golden.rs` compares them as JSON values. To regenerate the expected
//! files after an intended change, run
//! `UPDATE_GOLDEN=1 cargo test -p router-completions --test golden` and review
//! the diff.

pub mod envelope;
mod from_wire;
pub mod stream;
mod to_wire;
pub mod wire;

pub use envelope::error_body;
pub use stream::{StreamContext, StreamEncoder};

use router_canonical::{ApiError, NanoUsd, Request, Response};

/// The output limit a request without `max_tokens` gets (E-04, Q-17).
pub const DEFAULT_MAX_TOKENS: u32 = from_wire::DEFAULT_MAX_TOKENS;

/// A parsed Completions request: the canonical request that rides the Chat
/// path, and the prompt to echo when the client asked for it.
#[derive(Debug, Clone, PartialEq)]
pub struct CompletionRequest {
    /// One user message holding the prompt; `inbound` is
    /// [`Protocol::Completions`](router_canonical::Protocol::Completions).
    pub request: Request,
    /// `Some(prompt)` when the client sent `echo: true` (E-05).
    pub echo: Option<String>,
}

/// Validate a client's Completions body into a canonical request.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field (`prompt`, `n`, `stop[1]`). `min_discount_percent` and
/// `zdr` are read into `Request::routing`; every other unknown top-level
/// field is accepted and dropped (E-12).
pub fn parse_request(body: &[u8]) -> Result<CompletionRequest, ApiError> {
    from_wire::request(body)
}

/// What the router's reply states that the canonical response does not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's completion id.
    pub id: &'a str,
    /// The public model ID the client asked for.
    pub model: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// The settled charge, reported as `usage.cost` in USD (GP-03).
    pub cost: NanoUsd,
    /// The prompt to put in front of the text ([`CompletionRequest::echo`]).
    pub echo: Option<&'a str>,
}

/// The client's `text_completion` JSON: the text blocks of `response`
/// concatenated (after the echoed prompt, if any), a `finish_reason` of
/// `stop`, `length` or `content_filter`, and `usage` with `cost`.
pub fn encode_response(response: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    to_wire::response(response, ctx)
}
