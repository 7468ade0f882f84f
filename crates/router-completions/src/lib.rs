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
//! | client request -> canonical (validated before any network work) | [`CompletionsClient`] as a [`ClientCodec`], or [`parse_request`] |
//! | canonical -> client reply | [`CompletionsClient`], or [`encode_response`], [`StreamEncoder`], [`error_body`] |
//!
//! There is no supplier direction: no supplier speaks this protocol to the
//! router, and the request leaves as Chat (or whatever the route speaks)
//! through that protocol's wire crate. Like every wire crate this one knows
//! nothing of HTTP, async runtimes or storage: bytes in, bytes out. Wire
//! types live in [`wire`]; the client side (parsing, reply and stream
//! encoding, the error envelope) in [`client`].
//!
//! `echo: true` (E-05, GP-55) is not something a supplier does: the parser
//! hands the prompt back in [`CompletionRequest::echo`], and the server passes
//! it on in [`ResponseContext::echo`] or [`CompletionStreamContext::echo`], which put it
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
//!     cost: Some(NanoUsd(1_500)),
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
//!
//! # Stability
//!
//! This crate belongs to the router wire family (`router-canonical`,
//! `router-chat`, `router-messages`, `router-responses`,
//! `router-completions`, `router-images`, `router-videos`), released
//! together at one version; `CHANGELOG.md` in the repository lists every
//! release. Semantic versioning, as Cargo reads it before 1.0: a `0.x.y`
//! patch release never breaks a caller, a `0.x` minor release may. Enums
//! that grow with the protocols (`StreamEvent`, `OutputBlock`,
//! `StopReason`, `BlockDelta`, `BlockKind`, `ContentPart`, `Role`,
//! `Protocol`, `ErrorCode`, `SupplierErrorCategory`, `SupplierError`) and
//! the structs a caller builds (`ReplyContext`, `StreamContext`,
//! `StreamEnd`, `SupplierTarget`, `SupplierFailure`, `ErrorReply`) are
//! `#[non_exhaustive]`: match them with a wildcard arm and build them with
//! their constructors, and a new variant or member breaks nothing. The
//! minimum supported Rust version (`rust-version`, now 1.88) stays at least
//! six releases behind the newest stable and is raised only in a minor
//! release.

#![warn(unreachable_pub)]

pub mod client;
pub mod wire;

pub use client::{
    CompletionRequest, CompletionStreamContext, CompletionsClient, DEFAULT_MAX_TOKENS,
    ResponseContext, StreamEncoder, encode_response, error_body, parse_request,
};
/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
