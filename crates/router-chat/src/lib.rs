//! OpenAI Chat Completions wire types and their translation to and from the
//! canonical model.
//!
//! Four directions, each a function or a small state machine:
//!
//! | direction | API |
//! |---|---|
//! | client request -> canonical (validated, 400 before any network work) | [`parse_request`] |
//! | canonical -> Chat supplier request body | [`encode_request`] |
//! | Chat supplier reply -> canonical | [`decode_response`], [`StreamDecoder`] |
//! | canonical -> client reply | [`encode_response`], [`StreamEncoder`], [`error_body`] |
//!
//! The crate knows nothing of HTTP, async runtimes or storage: bytes in,
//! bytes out. Wire types live in [`wire`]; conversions are written by hand in
//! `from_wire.rs` and `to_wire.rs` (no `serde_json::Value` round trips).
//!
//! ```
//! use router_canonical::NanoUsd;
//! use router_chat::{ResponseContext, decode_response, encode_request, encode_response, parse_request};
//!
//! // A client's request, validated into the canonical model.
//! let request = parse_request(br#"{
//!     "model": "acme/chat-1",
//!     "messages": [{"role": "user", "content": "Say hi"}],
//!     "max_tokens": 16,
//!     "reasoning_effort": "low",
//!     "x_custom": 1
//! }"#)?;
//! assert_eq!(request.sampling.max_output_tokens, Some(16));
//!
//! // The body for a Chat supplier, with the route's own model name.
//! let upstream: serde_json::Value = serde_json::from_slice(&encode_request(&request, "chat-1-2025")?)?;
//! assert_eq!(upstream["model"], "chat-1-2025");
//! assert_eq!(upstream["max_completion_tokens"], 16);
//! assert_eq!(upstream["reasoning_effort"], "low");
//! assert!(upstream.get("x_custom").is_none());
//!
//! // The supplier's reply, read into the canonical response...
//! let response = decode_response(br#"{
//!     "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000,
//!     "model": "chat-1-2025",
//!     "choices": [{"index": 0, "finish_reason": "stop",
//!                  "message": {"role": "assistant", "content": "Hi!"}}],
//!     "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//!
//! // ...and written back to the client under the router's id and public model.
//! let ctx = ResponseContext { id: "chatcmpl-router-1", model: "acme/chat-1", created: 1700000001, cost: NanoUsd(1_500) };
//! let reply: serde_json::Value = serde_json::from_slice(&encode_response(&response, &ctx))?;
//! assert_eq!(reply["choices"][0]["message"]["content"], "Hi!");
//! assert_eq!(reply["usage"]["total_tokens"], 11);
//! assert_eq!(reply["usage"]["cost"], 0.0000015);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Golden fixtures
//!
//! `fixtures/chat/<case>/` holds, per case, the client `request.json`, the
//! parsed `canonical.json`, the `upstream_request.json` sent to a supplier,
//! a `supplier_response.json` with its `canonical_response.json` and the
//! client `response.json`, and for streams `supplier_stream.sse`,
//! `canonical_events.json` and `client_stream.sse`. `tests/golden.rs`
//! compares them as JSON values. To regenerate the expected files after an
//! intended change, run `UPDATE_GOLDEN=1 cargo test -p router-chat --test golden`
//! and review the diff.

pub mod client;
pub mod envelope;
mod native;
pub mod supplier;
pub mod wire;

pub use client::stream::{StreamContext, StreamEncoder};
pub use envelope::error_body;
pub use supplier::error::DecodeError;
pub use supplier::stream::StreamDecoder;

use router_canonical::{ApiError, NanoUsd, Request, Response};

/// Validate a client's Chat Completions body into a canonical request.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field path (`messages[2].content`). Unknown top-level fields are
/// accepted; the vetted ones (`logit_bias`, `logprobs`, `top_logprobs`,
/// `metadata`, `prediction`, `verbosity`) are kept in `Request::native` for
/// Chat routes and everything else is dropped.
pub fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    client::request::request(body)
}

/// The JSON body for a Chat supplier. `upstream_model` replaces the model;
/// a streaming request asks for the usage chunk (`stream_options.include_usage`).
///
/// Fails with `unsupported_conversion` when the request holds what Chat
/// cannot carry (an unresolved upload, another protocol's opaque part).
pub fn encode_request(req: &Request, upstream_model: &str) -> Result<Vec<u8>, ApiError> {
    supplier::request::request(req, upstream_model)
}

/// Read a Chat supplier's non-streaming reply. A reply without choices or
/// usage, or with implausible usage, is invalid (and never charged).
pub fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    supplier::response::response(body)
}

/// What the router's reply states that the supplier's did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's response id.
    pub id: &'a str,
    /// The public model ID the client asked for (B-23).
    pub model: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// The settled charge, reported as `usage.cost` in USD (GP-03).
    pub cost: NanoUsd,
}

/// The client's `chat.completion` JSON.
pub fn encode_response(resp: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    client::response::response(resp, ctx)
}
