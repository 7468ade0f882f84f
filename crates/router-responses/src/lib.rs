//! OpenAI Responses (`POST /v1/responses`, stateless) wire types and their
//! translation to and from the canonical model.
//!
//! Four directions, each a function or a small state machine:
//!
//! | direction | API |
//! |---|---|
//! | client request -> canonical (validated, 400 before any network work) | [`parse_request`] |
//! | canonical -> Responses supplier request body | [`encode_request`] |
//! | Responses supplier reply -> canonical | [`decode_response`], [`StreamDecoder`] |
//! | canonical -> client reply | [`encode_response`], [`StreamEncoder`], [`error_body`] |
//!
//! The crate knows nothing of HTTP, async runtimes or storage: bytes in,
//! bytes out. Wire types live in [`wire`]; conversions are written by hand in
//! `from_wire.rs` and `to_wire.rs` (no `serde_json::Value` round trips); the
//! mapping decisions (instructions, assistant turns, reasoning items, what is
//! refused rather than dropped) are documented there.
//!
//! The gateway is stateless: `store` must be false (or absent),
//! `previous_response_id`, `conversation`, `item_reference` items, stored
//! `prompt`s and `background: true` are refused (C-11, GP-49, CF-07), and a
//! supplier is always sent `store: false`.
//!
//! ```
//! use router_canonical::sse::Decoder;
//! use router_canonical::{NanoUsd, StreamEvent};
//! use router_responses::{
//!     ResponseContext, StreamContext, StreamDecoder, StreamEncoder, decode_response,
//!     encode_request, encode_response, parse_request,
//! };
//!
//! // A client's request, validated into the canonical model.
//! let request = parse_request(br#"{
//!     "model": "acme/resp-1",
//!     "instructions": "Be brief.",
//!     "input": "Say hi",
//!     "max_output_tokens": 16,
//!     "reasoning_effort": "low",
//!     "x_custom": 1
//! }"#)?;
//! assert_eq!(request.messages.len(), 2); // the instructions, then the input
//! assert_eq!(request.reasoning.effort.as_deref(), Some("low"));
//!
//! // The body for a Responses supplier, with the route's own model name.
//! let upstream: serde_json::Value =
//!     serde_json::from_slice(&encode_request(&request, "resp-1-2025")?)?;
//! assert_eq!(upstream["model"], "resp-1-2025");
//! assert_eq!(upstream["store"], false);
//! assert_eq!(upstream["instructions"], "Be brief.");
//! assert_eq!(upstream["reasoning"]["effort"], "low");
//! assert!(upstream.get("reasoning_effort").is_none());
//! assert!(upstream.get("x_custom").is_none());
//!
//! // The supplier's reply, read into the canonical response...
//! let response = decode_response(br#"{
//!     "id": "resp_sup_1", "object": "response", "created_at": 1700000000,
//!     "status": "completed", "model": "resp-1-2025",
//!     "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
//!                 "content": [{"type": "output_text", "text": "Hi!", "annotations": []}]}],
//!     "usage": {"input_tokens": 9, "output_tokens": 2, "total_tokens": 11}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//!
//! // ...and written back to the client under the router's id and public model.
//! let ctx = ResponseContext { id: "resp_router1", model: "acme/resp-1", created: 1700000001, cost: NanoUsd(1_500) };
//! let reply: serde_json::Value = serde_json::from_slice(&encode_response(&response, &ctx))?;
//! assert_eq!(reply["object"], "response");
//! assert_eq!(reply["output"][0]["content"][0]["text"], "Hi!");
//! assert_eq!(reply["usage"]["total_tokens"], 11);
//! assert_eq!(reply["usage"]["cost"], 0.0000015);
//!
//! // A supplier stream, decoded frame by frame and re-encoded for the client.
//! let supplier = concat!(
//!     "event: response.created\n",
//!     "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_sup_2\",\"object\":\"response\",\"created_at\":1700000000,\"status\":\"in_progress\",\"model\":\"resp-1-2025\",\"output\":[]}}\n\n",
//!     "event: response.output_text.delta\n",
//!     "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi!\"}\n\n",
//!     "event: response.completed\n",
//!     "data: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_sup_2\",\"object\":\"response\",\"created_at\":1700000000,\"status\":\"completed\",\"model\":\"resp-1-2025\",\"output\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":2,\"total_tokens\":11}}}\n\n",
//! );
//! let mut frames = Vec::new();
//! Decoder::default().feed(supplier.as_bytes(), &mut frames)?;
//! let mut decoder = StreamDecoder::new();
//! let mut encoder = StreamEncoder::new(StreamContext {
//!     id: "resp_router2".to_owned(),
//!     model: "acme/resp-1".to_owned(),
//!     created: 1700000001,
//! });
//! let mut client = Vec::new();
//! for frame in &frames {
//!     for event in decoder.decode(frame)? {
//!         match event {
//!             StreamEvent::Finish { stop_reason, usage, .. } => {
//!                 encoder.encode_finish(&stop_reason, &usage, NanoUsd(1_500), &mut client)
//!             }
//!             other => encoder.encode(&other, &mut client),
//!         }
//!     }
//! }
//! assert!(decoder.is_finished());
//! let client = String::from_utf8(client)?;
//! assert!(client.starts_with("event: response.created\n"));
//! assert!(client.contains("event: response.output_text.delta\n"));
//! // The last event is `response.completed`, with the output and the cost.
//! let last = client.trim_end().rsplit("\n\n").next().unwrap_or_default();
//! let data = last.strip_prefix("event: response.completed\ndata: ").ok_or("not completed")?;
//! let completed: serde_json::Value = serde_json::from_str(data)?;
//! assert_eq!(completed["response"]["output"][0]["content"][0]["text"], "Hi!");
//! assert_eq!(completed["response"]["usage"]["cost"], 0.0000015);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Golden fixtures
//!
//! `fixtures/responses/<case>/` holds, per case, the client `request.json`,
//! the parsed `canonical.json`, the `upstream_request.json` sent to a
//! supplier, a `supplier_response.json` with its `canonical_response.json` and
//! the client `response.json`, and for streams `supplier_stream.sse`,
//! `canonical_events.json` and `client_stream.sse`. `tests/golden.rs`
//! compares them as JSON values. To regenerate the expected files after an
//! intended change, run
//! `UPDATE_GOLDEN=1 cargo test -p router-responses --test golden` and review
//! the diff.

pub mod envelope;
pub mod error;
mod from_wire;
pub mod stream;
mod to_wire;
pub mod wire;

pub use envelope::error_body;
pub use error::DecodeError;
pub use stream::{StreamContext, StreamDecoder, StreamEncoder};

use router_canonical::{ApiError, NanoUsd, Request, Response};

/// Validate a client's Responses body into a canonical request.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field path (`input[1].content[0].text`). Unknown top-level
/// fields are accepted (C-13); the vetted ones (`metadata`, `truncation`,
/// `include`, `top_logprobs`, `prompt_cache_key`, `prompt_cache_retention`,
/// and `text.verbosity`) are kept in `Request::native` for Responses routes,
/// everything else (`service_tier`, ...) is dropped.
pub fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    from_wire::request(body)
}

/// The JSON body for a Responses supplier (always `"store": false`).
/// `upstream_model` replaces the model.
///
/// Fails with `unsupported_conversion` when the request holds what Responses
/// cannot carry (stop sequences, penalties, a `thinking` configuration, an
/// unresolved upload, another protocol's opaque part, ...).
pub fn encode_request(request: &Request, upstream_model: &str) -> Result<Vec<u8>, ApiError> {
    to_wire::request(request, upstream_model)
}

/// Read a Responses supplier's non-streaming reply. A reply without usage,
/// with implausible usage, with an output item or content part of an
/// unknown type, or with a status other than `completed`/`incomplete` is
/// invalid (and never charged); `status: "failed"` is the supplier's error.
pub fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    from_wire::response(body)
}

/// What the router's reply states that the supplier's did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's response id (`resp_...`).
    pub id: &'a str,
    /// The public model ID the client asked for (C-15).
    pub model: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// The settled charge, reported as `usage.cost` in USD (GP-03).
    pub cost: NanoUsd,
}

/// The client's `response` JSON object.
pub fn encode_response(response: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    to_wire::response(response, ctx)
}
