//! OpenAI Chat Completions wire types and their translation to and from the
//! canonical model of `router-canonical`.
//!
//! The protocol has two parties, each served by one codec:
//!
//! | party | codec | does |
//! |---|---|---|
//! | a client calling you in Chat | [`ChatClient`] ([`ClientCodec`]) | validates its request into a canonical [`Request`] (a rejection names the field), renders canonical replies, stream events ([`client::StreamEncoder`]) and errors as Chat JSON and SSE |
//! | a Chat supplier you call | [`ChatSupplier`] ([`SupplierCodec`]) | encodes a canonical request for it, decodes its reply, stream ([`supplier::StreamDecoder`]) and error replies, with a typed [`SupplierError`] |
//!
//! A translation from Chat to another protocol is [`ChatClient`] joined to
//! that protocol's supplier codec by the canonical model, and back.
//!
//! The crate knows nothing of HTTP, async runtimes or storage: bytes in,
//! bytes out. Wire types live in [`wire`]; conversions are written by hand
//! (no `serde_json::Value` round trips).
//!
//! ```
//! use router_chat::{
//!     ChatClient, ChatSupplier, ClientCodec, NanoUsd, ReplyContext, SupplierCodec, SupplierTarget,
//! };
//!
//! // A client's request, validated into the canonical model.
//! let client = ChatClient::default();
//! let (request, extra) = client.parse_request(&(), br#"{
//!     "model": "acme/chat-1",
//!     "messages": [{"role": "user", "content": "Say hi"}],
//!     "max_tokens": 16,
//!     "reasoning_effort": "low",
//!     "x_custom": 1
//! }"#)?;
//! assert_eq!(request.sampling.max_output_tokens, Some(16));
//!
//! // The body for a Chat supplier, with the supplier's own model name.
//! let supplier = ChatSupplier::default();
//! let target = SupplierTarget::new("chat-1-2025");
//! let upstream: serde_json::Value =
//!     serde_json::from_slice(&supplier.encode_request(&request, &target)?)?;
//! assert_eq!(upstream["model"], "chat-1-2025");
//! assert_eq!(upstream["max_completion_tokens"], 16);
//! assert_eq!(upstream["reasoning_effort"], "low");
//! assert!(upstream.get("x_custom").is_none());
//!
//! // The supplier's reply, read into the canonical response...
//! let response = supplier.decode_response(br#"{
//!     "id": "chatcmpl-1", "object": "chat.completion", "created": 1700000000,
//!     "model": "chat-1-2025",
//!     "choices": [{"index": 0, "finish_reason": "stop",
//!                  "message": {"role": "assistant", "content": "Hi!"}}],
//!     "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//!
//! // ...and written back to the client under your own id, model and charge.
//! let reply = ReplyContext::new("chatcmpl-gw-1", "acme/chat-1", 1700000001).with_cost(Some(NanoUsd(1_500)));
//! let body: serde_json::Value =
//!     serde_json::from_slice(&client.encode_response(&response, &reply, &extra))?;
//! assert_eq!(body["choices"][0]["message"]["content"], "Hi!");
//! assert_eq!(body["usage"]["total_tokens"], 11);
//! assert_eq!(body["usage"]["cost"], 0.0000015);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
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
mod native;
pub mod supplier;
pub mod wire;

pub use client::{ChatClient, ChatExtra, StreamEncoder};
pub use supplier::{ChatCompat, ChatSupplier, CompatChatSupplier, DecodeError, StreamDecoder};

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
