#![warn(unreachable_pub)]
//! Anthropic Messages wire types and their translation to and from a
//! canonical, protocol-neutral model of LLM requests, replies and stream
//! events (`POST /v1/messages`, `POST /v1/messages/count_tokens`).
//!
//! The crate serves both parties of the protocol:
//!
//! | party | codec | does |
//! |---|---|---|
//! | a client calling you in Messages | [`MessagesClient`] ([`ClientCodec`]) | validates its headers and body into a canonical [`Request`] (a 400 naming the field, before any network work); renders replies, SSE events and errors as Messages |
//! | a Messages supplier you call | [`MessagesSupplier`] ([`SupplierCodec`]) | encodes a canonical request as a Messages body (refusing what Messages cannot carry); decodes its replies, SSE events and error replies, with a typed [`SupplierError`] |
//!
//! A translation between two protocols is the client codec of one and the
//! supplier codec of the other, joined by the canonical model. The crate
//! knows nothing of HTTP, async runtimes or storage: bytes in, bytes out.
//! The JSON types themselves are in [`wire`], for both directions.
//!
//! Messages differs from the OpenAI protocols in three ways that shape this
//! crate:
//!
//! * **Strict bodies.** A client's unknown members are refused, so a
//!   request forwarded to a Messages supplier holds no unverified field.
//! * **Native-only features.** `context_management`, `output_config`,
//!   adaptive thinking, `thinking.display`, a `system` turn inside
//!   `messages`, image tool results and `anthropic-beta` identifiers can be
//!   carried only to a Messages supplier: the parser records the first such
//!   field in [`Request::native_only`]. `metadata` and block `cache_control`
//!   are annotations and never pin a request.
//! * **Usage counts.** Anthropic's `input_tokens` excludes cache reads and
//!   writes; the canonical count includes them. Decoders add them, encoders
//!   subtract them.
//!
//! Known gap: the canonical tool call has no `cache_control`, so a marker on a
//! `tool_use` block in the history is validated but not forwarded.
//!
//! ```
//! use router_messages::sse::Decoder;
//! use router_messages::{
//!     ClientCodec, ClientStreamEncoder, HeaderSource, MessagesClient, MessagesSupplier,
//!     ReplyContext, StreamContext, SupplierCodec, SupplierTarget,
//! };
//!
//! /// The request's HTTP headers, by lower-case name.
//! struct Headers(&'static [(&'static str, &'static str)]);
//! impl HeaderSource for Headers {
//!     fn header(&self, name: &str) -> Option<&str> {
//!         self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
//!     }
//! }
//!
//! // A client's request and headers, validated into the canonical model.
//! let client = MessagesClient;
//! let headers = Headers(&[("content-type", "application/json"), ("anthropic-version", "2023-06-01")]);
//! let (request, ()) = client.parse_request(&headers, br#"{
//!     "model": "acme/claude-1",
//!     "max_tokens": 64,
//!     "system": "Be brief.",
//!     "messages": [{"role": "user", "content": "Say hi"}]
//! }"#)?;
//! assert_eq!(request.sampling.max_output_tokens, Some(64));
//!
//! // The body for a Messages supplier, with the supplier's own model name.
//! let supplier = MessagesSupplier { require_usage: true };
//! let target = SupplierTarget::new("claude-1-20250101").with_default_max_output_tokens(Some(4096));
//! let upstream: serde_json::Value =
//!     serde_json::from_slice(&supplier.encode_request(&request, &target)?)?;
//! assert_eq!(upstream["model"], "claude-1-20250101");
//! assert_eq!(upstream["system"], "Be brief.");
//! assert_eq!(upstream["stream"], false);
//! assert_eq!(supplier.headers(&request, Some("sk-test"))[1], ("x-api-key", "sk-test".to_owned()));
//!
//! // The supplier's reply: its input count excludes the cache read...
//! let response = supplier.decode_response(br#"{
//!     "id": "msg_supplier_1", "type": "message", "role": "assistant",
//!     "model": "claude-1-20250101",
//!     "content": [{"type": "text", "text": "Hi!"}],
//!     "stop_reason": "end_turn", "stop_sequence": null,
//!     "usage": {"input_tokens": 3, "cache_read_input_tokens": 10, "output_tokens": 2}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//! assert_eq!(response.usage.input_tokens, 13); // ...the canonical count includes it.
//!
//! // ...written back to the client under your id and the public model name.
//! let ctx = ReplyContext::new("msg_router_1", "acme/claude-1", 0);
//! let reply: serde_json::Value = serde_json::from_slice(&client.encode_response(&response, &ctx, &()))?;
//! assert_eq!(reply["id"], "msg_router_1");
//! assert_eq!(reply["usage"]["input_tokens"], 3);
//! assert_eq!(reply["usage"]["cache_read_input_tokens"], 10);
//!
//! // A supplier's error reply keeps its status and type.
//! let error = supplier.decode_error(529, &(), br#"{"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}"#);
//! assert_eq!(error.reported().and_then(|f| f.kind.as_deref()), Some("overloaded_error"));
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
//! let mut decoder = supplier.stream_decoder();
//! let stream = StreamContext::new("msg_router_2", "acme/claude-1", 0);
//! let mut encoder = client.stream_encoder(stream, ());
//! let mut client_sse = Vec::new();
//! for frame in &frames {
//!     for event in decoder.decode(frame)? {
//!         encoder.event(&event, &mut client_sse);
//!     }
//! }
//! assert!(decoder.is_finished());
//! let client_sse = String::from_utf8(client_sse)?;
//! assert!(client_sse.starts_with("event: message_start\n"));
//! assert!(client_sse.contains(r#""text":"Hi!""#));
//! assert!(client_sse.ends_with("event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Across protocols
//!
//! The canonical model is the hub: any wire crate's client codec feeds any
//! other's supplier codec. The workspace crate `router-bridge-example`
//! serves a Chat Completions client from a Messages supplier, streams
//! included.
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

pub mod client;
mod convert;
pub mod supplier;
pub mod wire;

pub use client::{ErrorEnvelope, MessagesClient, StreamEncoder};
pub use supplier::{BedrockMessagesSupplier, DecodeError, MessagesSupplier, StreamDecoder};

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
