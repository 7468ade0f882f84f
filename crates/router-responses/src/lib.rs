//! The OpenAI Responses protocol (`POST /v1/responses`, stateless): its wire
//! types and their translation to and from the canonical model of
//! [`router_canonical`].
//!
//! The protocol has two parties, and a codec for each:
//!
//! | party | codec | what it does |
//! |---|---|---|
//! | a client calling you in Responses | [`ResponsesClient`] ([`ClientCodec`]) | validate its request into a canonical [`Request`]; write canonical replies ([`ClientCodec::encode_response`]), streams ([`StreamEncoder`]) and errors as Responses JSON and SSE |
//! | a Responses supplier you call | [`ResponsesSupplier`] ([`SupplierCodec`]) | encode a canonical request for it; decode its reply, its stream ([`StreamDecoder`]) and its error replies, with typed errors ([`DecodeError`], [`SupplierError`]) |
//!
//! A translation between two protocols is the client codec of one and the
//! supplier codec of the other, joined by the canonical model.
//!
//! The crate knows nothing of HTTP, async runtimes or storage: bytes in,
//! bytes out. Wire types live in [`wire`]; conversions are written by hand
//! (no `serde_json::Value` round trips).
//!
//! The protocol is used statelessly: a client's `store` must be false (or
//! absent); `previous_response_id`, `conversation`, `item_reference` items,
//! stored `prompt`s and `background: true` are refused; and a supplier is
//! always sent `store: false`.
//!
//! ```
//! use router_canonical::sse::Decoder;
//! use router_responses::{
//!     ClientCodec, ClientStreamEncoder, NanoUsd, ReplyContext, ResponsesClient,
//!     ResponsesSupplier, StreamContext, SupplierCodec, SupplierTarget,
//! };
//!
//! let client = ResponsesClient;
//! let supplier = ResponsesSupplier { require_usage: true };
//!
//! // A client's request, validated into the canonical model (no headers here).
//! // `namespaces`: how `namespace` tools were flattened, to name calls back.
//! let (request, namespaces) = client.parse_request(&(), br#"{
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
//! let target = SupplierTarget::new("resp-1-2025");
//! let upstream: serde_json::Value =
//!     serde_json::from_slice(&supplier.encode_request(&request, &target)?)?;
//! assert_eq!(upstream["model"], "resp-1-2025");
//! assert_eq!(upstream["store"], false);
//! assert_eq!(upstream["instructions"], "Be brief.");
//! assert_eq!(upstream["reasoning"]["effort"], "low");
//! assert!(upstream.get("reasoning_effort").is_none());
//! assert!(upstream.get("x_custom").is_none());
//! assert_eq!(
//!     supplier.headers(&request, Some("sk-1")),
//!     [("authorization", "Bearer sk-1".to_owned())]
//! );
//!
//! // The supplier's reply, read into the canonical response...
//! let response = supplier.decode_response(br#"{
//!     "id": "resp_sup_1", "object": "response", "created_at": 1700000000,
//!     "status": "completed", "model": "resp-1-2025",
//!     "output": [{"type": "message", "id": "msg_1", "status": "completed", "role": "assistant",
//!                 "content": [{"type": "output_text", "text": "Hi!", "annotations": []}]}],
//!     "usage": {"input_tokens": 9, "output_tokens": 2, "total_tokens": 11}
//! }"#)?;
//! assert_eq!(response.text(), "Hi!");
//!
//! // ...and written back to the client under your id and public model.
//! let ctx = ReplyContext::new("resp_router1", "acme/resp-1", 1700000001).with_cost(Some(NanoUsd(1_500)));
//! let reply: serde_json::Value = serde_json::from_slice(&client.encode_response(&response, &ctx, &namespaces))?;
//! assert_eq!(reply["object"], "response");
//! assert_eq!(reply["output"][0]["content"][0]["text"], "Hi!");
//! assert_eq!(reply["usage"]["total_tokens"], 11);
//! assert_eq!(reply["usage"]["cost"], 0.0000015);
//!
//! // A supplier stream, decoded frame by frame and re-encoded for the client.
//! let stream = concat!(
//!     "event: response.created\n",
//!     "data: {\"type\":\"response.created\",\"sequence_number\":0,\"response\":{\"id\":\"resp_sup_2\",\"object\":\"response\",\"created_at\":1700000000,\"status\":\"in_progress\",\"model\":\"resp-1-2025\",\"output\":[]}}\n\n",
//!     "event: response.output_text.delta\n",
//!     "data: {\"type\":\"response.output_text.delta\",\"sequence_number\":1,\"item_id\":\"msg_1\",\"output_index\":0,\"content_index\":0,\"delta\":\"Hi!\"}\n\n",
//!     "event: response.completed\n",
//!     "data: {\"type\":\"response.completed\",\"sequence_number\":2,\"response\":{\"id\":\"resp_sup_2\",\"object\":\"response\",\"created_at\":1700000000,\"status\":\"completed\",\"model\":\"resp-1-2025\",\"output\":[],\"usage\":{\"input_tokens\":9,\"output_tokens\":2,\"total_tokens\":11}}}\n\n",
//! );
//! let mut frames = Vec::new();
//! Decoder::default().feed(stream.as_bytes(), &mut frames)?;
//! let mut decoder = supplier.stream_decoder();
//! let mut encoder = client.stream_encoder(
//!     StreamContext::new("resp_router2".to_owned(), "acme/resp-1".to_owned(), 1700000001),
//!     namespaces,
//! );
//! let mut out = Vec::new();
//! for frame in &frames {
//!     for event in decoder.decode(frame)? {
//!         // `Finish` ends the client stream (without a cost; see `finish`).
//!         encoder.event(&event, &mut out);
//!     }
//! }
//! assert!(decoder.is_finished());
//! let out = String::from_utf8(out)?;
//! assert!(out.starts_with("event: response.created\n"));
//! assert!(out.contains("event: response.output_text.delta\n"));
//! // The last event is `response.completed`, with the whole output.
//! let last = out.trim_end().rsplit("\n\n").next().unwrap_or_default();
//! let data = last.strip_prefix("event: response.completed\ndata: ").ok_or("not completed")?;
//! let completed: serde_json::Value = serde_json::from_str(data)?;
//! assert_eq!(completed["response"]["output"][0]["content"][0]["text"], "Hi!");
//! assert_eq!(completed["response"]["usage"]["total_tokens"], 11);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
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
mod convert;
pub mod supplier;
pub mod wire;

pub use client::{ResponsesClient, StreamEncoder};
pub use convert::{ToolNamespaces, flat_name};
pub use supplier::{DecodeError, ResponsesSupplier, StreamDecoder};

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
