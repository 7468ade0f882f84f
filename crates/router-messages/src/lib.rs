//! Anthropic Messages wire types and their translation to and from the
//! canonical model (`POST /v1/messages`, `POST /v1/messages/count_tokens`).
//!
//! Four directions, each a function or a small state machine:
//!
//! | direction | API |
//! |---|---|
//! | client request -> canonical (validated, 400 before any network work) | [`parse_request`], [`apply_headers`], [`parse_count_tokens`], [`validate_count_tokens_headers`] |
//! | canonical -> Messages supplier request body | [`encode_request`] |
//! | Messages supplier reply -> canonical | [`decode_response`], [`StreamDecoder`] |
//! | canonical -> client reply | [`encode_response`], [`StreamEncoder`], [`error_body`] |
//!
//! The crate knows nothing of HTTP, async runtimes or storage: bytes in,
//! bytes out. Wire types live in [`wire`]; conversions are written by hand in
//! `from_wire.rs` and `to_wire.rs` (no `serde_json::Value` round trips).
//!
//! Messages differs from the OpenAI surfaces in three ways that shape this
//! crate:
//!
//! * **Strict bodies.** Unknown members are rejected (CF-03, D-28), so a
//!   native route never receives an unverified Anthropic field.
//! * **Native-only features.** `context_management`, `output_config`,
//!   adaptive thinking, `thinking.display`, a `system` turn inside `messages`,
//!   image tool results and `anthropic-beta` identifiers are carried only by
//!   a native Messages route: the parser records the first such field in
//!   `Request::native_only` (GP-53, D-26). `metadata` and block
//!   `cache_control` are annotations and never pin a request.
//! * **Usage counts.** Anthropic's `input_tokens` excludes cache reads and
//!   writes; the canonical count includes them. Decoders add them, encoders
//!   subtract them.
//!
//! Known gap: the canonical tool call has no `cache_control`, so a marker on a
//! `tool_use` block in the history is validated but not forwarded.
//!
//! ```
//! use router_canonical::sse::Decoder;
//! use router_canonical::StreamEvent;
//! use router_messages::{
//!     RequestHeaders, ResponseContext, StreamContext, StreamDecoder, StreamEncoder,
//!     apply_headers, decode_response, encode_request, encode_response, parse_request,
//! };
//!
//! // A client's request and headers, validated into the canonical model.
//! let mut request = parse_request(br#"{
//!     "model": "acme/claude-1",
//!     "max_tokens": 64,
//!     "system": "Be brief.",
//!     "messages": [{"role": "user", "content": "Say hi"}]
//! }"#)?;
//! apply_headers(&mut request, &RequestHeaders { version: Some("2023-06-01"), beta: None, direct_browser_access: None })?;
//! assert_eq!(request.sampling.max_output_tokens, Some(64));
//!
//! // The body for a Messages supplier, with the route's own model name.
//! let upstream: serde_json::Value =
//!     serde_json::from_slice(&encode_request(&request, "claude-1-20250101", 4096)?)?;
//! assert_eq!(upstream["model"], "claude-1-20250101");
//! assert_eq!(upstream["system"], "Be brief.");
//! assert_eq!(upstream["stream"], false);
//!
//! // The supplier's reply: its input count excludes the cache read...
//! let response = decode_response(br#"{
//!     "id": "msg_supplier_1", "type": "message", "role": "assistant",
//!     "model": "claude-1-20250101",
//!     "content": [{"type": "text", "text": "Hi!"}],
//!     "stop_reason": "end_turn", "stop_sequence": null,
//!     "usage": {"input_tokens": 3, "cache_read_input_tokens": 10, "output_tokens": 2}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//! assert_eq!(response.usage.input_tokens, 13); // ...the canonical count includes it.
//!
//! // ...written back under the router's id and the public model.
//! let ctx = ResponseContext { id: "msg_router_1", model: "acme/claude-1" };
//! let reply: serde_json::Value = serde_json::from_slice(&encode_response(&response, &ctx))?;
//! assert_eq!(reply["id"], "msg_router_1");
//! assert_eq!(reply["usage"]["input_tokens"], 3);
//! assert_eq!(reply["usage"]["cache_read_input_tokens"], 10);
//!
//! // A supplier's stream, decoded into canonical events and encoded for the client.
//! let supplier_sse = concat!(
//!     "event: message_start\n",
//!     "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-1-20250101\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
//!     "event: content_block_start\n",
//!     "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
//!     "event: content_block_delta\n",
//!     "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"Hi!\"}}\n\n",
//!     "event: content_block_stop\n",
//!     "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
//!     "event: message_delta\n",
//!     "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"end_turn\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":2}}\n\n",
//!     "event: message_stop\n",
//!     "data: {\"type\":\"message_stop\"}\n\n",
//! );
//! let mut frames = Vec::new();
//! Decoder::default().feed(supplier_sse.as_bytes(), &mut frames)?;
//! let mut decoder = StreamDecoder::new();
//! let mut encoder = StreamEncoder::new(StreamContext { id: "msg_router_2".into(), model: "acme/claude-1".into() });
//! let mut client_sse = Vec::new();
//! for frame in &frames {
//!     for event in decoder.decode(frame)? {
//!         encoder.encode(&event, &mut client_sse);
//!     }
//! }
//! assert!(decoder.is_finished());
//! let client_sse = String::from_utf8(client_sse)?;
//! assert!(client_sse.starts_with("event: message_start\n"));
//! assert!(client_sse.contains(r#""text":"Hi!""#));
//! assert!(client_sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
//! # let _ = StreamEvent::Usage { usage: Default::default() };
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Across protocols
//!
//! The canonical model is the hub: any wire crate's parser feeds any other's
//! encoder. Here a Chat Completions client is served by a Messages supplier,
//! and the supplier's Messages stream is re-encoded as Chat chunks.
//!
//! ```
//! use router_canonical::sse::Decoder;
//! use router_canonical::{NanoUsd, StreamEvent};
//!
//! // A Chat request (system prompt, one tool) becomes a Messages body...
//! let request = router_chat::parse_request(br#"{
//!     "model": "acme/claude-1",
//!     "messages": [{"role": "system", "content": "Be brief."},
//!                  {"role": "user", "content": "Weather in Paris?"}],
//!     "tools": [{"type": "function", "function": {"name": "weather",
//!                "parameters": {"type": "object"}}}],
//!     "stop": ["END"]
//! }"#)?;
//! let body: serde_json::Value =
//!     serde_json::from_slice(&router_messages::encode_request(&request, "claude-1", 1024)?)?;
//! assert_eq!(body["system"], "Be brief.");
//! assert_eq!(body["tools"][0]["input_schema"]["type"], "object");
//! assert_eq!(body["stop_sequences"][0], "END");
//! assert_eq!(body["max_tokens"], 1024); // Messages requires a limit; Chat had none.
//!
//! // ...and back: the body parses as a Messages request with the same meaning.
//! let again = router_messages::parse_request(&serde_json::to_vec(&body)?)?;
//! assert_eq!(again.messages, request.messages);
//! assert_eq!(again.tools, request.tools);
//!
//! // The supplier's Messages stream, re-encoded as Chat chunks for the client.
//! let supplier_sse = concat!(
//!     "event: message_start\n",
//!     "data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_s\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"claude-1\",\"content\":[],\"stop_reason\":null,\"stop_sequence\":null,\"usage\":{\"input_tokens\":9,\"output_tokens\":1}}}\n\n",
//!     "event: content_block_start\n",
//!     "data: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\"weather\",\"input\":{}}}\n\n",
//!     "event: content_block_delta\n",
//!     "data: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}\n\n",
//!     "event: content_block_stop\n",
//!     "data: {\"type\":\"content_block_stop\",\"index\":0}\n\n",
//!     "event: message_delta\n",
//!     "data: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":\"tool_use\",\"stop_sequence\":null},\"usage\":{\"output_tokens\":7}}\n\n",
//!     "event: message_stop\n",
//!     "data: {\"type\":\"message_stop\"}\n\n",
//! );
//! let mut frames = Vec::new();
//! Decoder::default().feed(supplier_sse.as_bytes(), &mut frames)?;
//! let mut decoder = router_messages::StreamDecoder::new();
//! let mut chat = router_chat::StreamEncoder::new(router_chat::StreamContext {
//!     id: "chatcmpl-1".into(), model: "acme/claude-1".into(), created: 1_700_000_000,
//! });
//! let mut out = Vec::new();
//! for frame in &frames {
//!     for event in decoder.decode(frame)? {
//!         match event {
//!             StreamEvent::Finish { stop_reason, usage, .. } => {
//!                 chat.encode_finish(&stop_reason, &usage, NanoUsd(1_000), &mut out)
//!             }
//!             other => chat.encode(&other, &mut out),
//!         }
//!     }
//! }
//! let out = String::from_utf8(out)?;
//! assert!(out.contains(r#""name":"weather""#));
//! assert!(out.contains(r#""finish_reason":"tool_calls""#));
//! assert!(out.contains(r#""prompt_tokens":9"#));
//! assert!(out.ends_with("data: [DONE]\n\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Golden fixtures
//!
//! `fixtures/messages/<case>/` holds, per case, the client `request.json`,
//! the parsed `canonical.json`, the `upstream_request.json` sent to a
//! supplier, a `supplier_response.json` with its `canonical_response.json`
//! and the client `response.json`, and for streams `supplier_stream.sse`,
//! `canonical_events.json` and `client_stream.sse`. `tests/golden.rs`
//! compares them as JSON values. To regenerate the expected files after an
//! intended change, run
//! `UPDATE_GOLDEN=1 cargo test -p router-messages --test golden` and review
//! the diff.

pub mod client;
mod convert;
pub mod supplier;
pub mod wire;

pub use client::envelope::{self, error_body};
pub use client::stream::{StreamContext, StreamEncoder};
pub use supplier::error::{self, DecodeError};
pub use supplier::stream::StreamDecoder;

use router_canonical::{ApiError, Request, Response};

/// Validate a client's `POST /v1/messages` body into a canonical request.
///
/// Every rejection is a 400 `invalid_parameter` whose `param` names the
/// offending field path (`messages[2].content[0].source.media_type`). The
/// model-maximum check of `max_tokens` (GP-51) is the server's: it needs
/// the catalog. The result has `inbound: Some(Protocol::Messages)`.
pub fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    client::request::request(body)
}

/// The Messages headers that bear on a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestHeaders<'a> {
    /// `anthropic-version`.
    pub version: Option<&'a str>,
    /// `anthropic-beta`.
    pub beta: Option<&'a str>,
    /// `anthropic-dangerous-direct-browser-access`.
    pub direct_browser_access: Option<&'a str>,
}

/// Check the Messages headers and record the beta identifiers on the request.
///
/// `anthropic-version` must be `2023-06-01` (missing is a 400, GP-31);
/// `anthropic-dangerous-direct-browser-access` must be `true` when present.
/// `anthropic-beta` is split on commas, trimmed and stored in
/// `request.native.betas`; a non-empty list pins the request to a native
/// route. Whether each identifier is allowed is the route's decision (D-04).
pub fn apply_headers(request: &mut Request, headers: &RequestHeaders<'_>) -> Result<(), ApiError> {
    client::headers::apply_headers(request, headers)
}

/// Validate a `POST /v1/messages/count_tokens` body (D-37, D-38, D-40).
///
/// Looser than [`parse_request`] where the count body is (CF-21):
/// `max_tokens` is optional, `system` may be an empty string, tools may be
/// any objects. Stricter where counting is local (CF-04): image, thinking
/// and redacted_thinking blocks are a 400. Besides `model`, `messages`,
/// `system` and `tools` it takes `tool_choice`, `thinking`, `max_tokens` and
/// the common routing fields; anything else is a 400 naming the field.
pub fn parse_count_tokens(body: &[u8]) -> Result<Request, ApiError> {
    client::request::count_tokens(body)
}

/// Check the headers of a count_tokens call (betas are accepted and ignored).
pub fn validate_count_tokens_headers(headers: &RequestHeaders<'_>) -> Result<(), ApiError> {
    client::headers::check_headers(headers).map(|_| ())
}

/// The JSON body for a Messages supplier. `upstream_model` replaces the
/// model; `default_max_tokens` is sent when the request set no limit
/// (Messages requires one).
///
/// Works for native and converted requests alike. Fails with
/// `unsupported_conversion` when the request holds what Messages cannot
/// carry (an unresolved upload, a one-hour marker from another protocol
/// (F-11), tool arguments that are not an object, a temperature above 1,
/// `json_object` output, another protocol's opaque part). With
/// `prompt_cache: On` and no marker anywhere, the last block of the last
/// message gets a five-minute `cache_control` (F-08); the server sets `On`
/// only for routes where that applies (vendor-Claude models), as the
/// encoder cannot tell.
pub fn encode_request(
    request: &Request,
    upstream_model: &str,
    default_max_tokens: u32,
) -> Result<Vec<u8>, ApiError> {
    supplier::request::request(request, upstream_model, default_max_tokens)
}

/// Read a Messages supplier's non-streaming reply. A reply without usage,
/// with implausible usage or with a block type the router cannot represent
/// is invalid (CF-08) and never charged; unknown members are dropped (D-30).
pub fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    supplier::response::response(body)
}

/// What the router's reply states that the supplier's did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's message id (`msg_...`).
    pub id: &'a str,
    /// The public model ID the client asked for (D-36).
    pub model: &'a str,
}

/// The client's `message` JSON object (D-29). It carries no cost: the
/// Messages schema is fixed (GP-03).
pub fn encode_response(response: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    client::response::response(response, ctx)
}
