//! The one request/response/stream-event model every wire protocol converts to and from.
//!
//! A wire crate (`router-chat`, `router-messages`, ...) parses its own JSON,
//! validates the rules of its surface and produces a [`Request`]. The core
//! routes the canonical request; a supplier client encodes it again with the
//! wire crate of the route's protocol. Responses and stream events travel the
//! same way back. Anything a protocol cannot carry is an
//! [`ErrorCode::UnsupportedConversion`], never a silent drop.
//!
//! It also holds what the wire crates share verbatim: path-tracking parsing
//! ([`parse`]) and the OpenAI error envelope ([`openai_error`]).
//!
//! This crate depends on serde (and sha2, for a video request's
//! fingerprint) only: no async runtime, no HTTP, no SQL.
//! It enables `serde_json`'s `preserve_order` feature, on purpose: objects
//! passed through without being read (tool schemas, native fields, opaque
//! parts) keep the key order the client sent, and models read that order.
//!
//! ```
//! use router_canonical::sse;
//! use router_canonical::{Capability, Message, NanoUsd, PricePerMTok, Rates, Request, Role, Usage};
//!
//! // A request as a wire crate would produce it: a system prompt and one user turn.
//! let request = Request {
//!     model: "acme/chat-1".into(),
//!     messages: vec![Message::text(Role::System, "Be brief."), Message::text(Role::User, "Hi")],
//!     stream: true,
//!     ..Request::default()
//! };
//! // What routing must honour: a streaming route, nothing native-only.
//! let needs = request.requirements();
//! assert!(needs.needs(Capability::Streaming));
//! assert!(!needs.needs(Capability::Tools));
//! assert!(!needs.native_only);
//!
//! // Billing in integer nano-USD: $3 / $15 per million tokens, rounded once.
//! let rates = Rates { input: PricePerMTok(3_000_000_000), output: PricePerMTok(15_000_000_000), ..Rates::default() };
//! let usage = Usage { input_tokens: 1_234, output_tokens: 56, ..Usage::default() };
//! assert_eq!(rates.charge(&usage)?, NanoUsd(4_542_000));
//! assert_eq!(NanoUsd(4_542_000).to_usd_string(), "0.004542000");
//!
//! // SSE framing, protocol-neutral: frames split across reads come out whole.
//! let mut wire = Vec::new();
//! sse::encode(Some("message_stop"), r#"{"type":"message_stop"}"#, &mut wire);
//! let (head, tail) = wire.split_at(10);
//! let mut decoder = sse::Decoder::default();
//! let mut frames = Vec::new();
//! decoder.feed(head, &mut frames)?;
//! assert!(frames.is_empty());
//! decoder.feed(tail, &mut frames)?;
//! assert_eq!(frames[0].event.as_deref(), Some("message_stop"));
//! assert_eq!(frames[0].data, r#"{"type":"message_stop"}"#);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Each wire crate's own docs show a full translation: parse a client request,
//! encode it for a supplier of another protocol, and decode the reply or its stream.
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

pub mod capability;
pub mod checksum;
pub mod codec;
pub mod error;
pub mod eventstream;
pub mod header;
pub mod image;
pub mod money;
pub mod openai_error;
#[cfg(feature = "openapi")]
pub mod openapi;
pub mod parse;
pub mod protocol;
pub mod public_host;
pub mod request;
pub mod response;
pub mod routing_options;
pub mod sse;
pub mod stream;
pub mod supplier_error;
pub mod surface;
pub mod translate;
pub mod video;

pub use capability::{Capability, CapabilitySet, Requirements};
pub use codec::{
    ClientCodec, ClientStreamEncoder, ErrorReply, HeaderSource, ReplyContext, StreamContext,
    StreamEnd, StreamFraming, SupplierCodec, SupplierStreamDecoder, SupplierTarget,
    encode_path_segment,
};
pub use error::{ApiError, ErrorCode, Field, ProductCode};
pub use image::{GeneratedImage, ImageRequest, ImageSupplierCodec};
pub use money::{NanoUsd, PricePerMTok, Rates};
pub use protocol::Protocol;
pub use request::{
    CacheControl, ContentPart, ImageSource, Message, NativeFields, PromptCacheMode, Reasoning,
    Request, ResponseFormat, Role, Sampling, ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
pub use response::{OutputBlock, Response, StopReason, Usage};
pub use routing_options::{Percent, RoutingOptions};
pub use stream::{BlockDelta, BlockKind, StreamEvent};
pub use supplier_error::{
    SupplierError, SupplierErrorCategory, SupplierFailure, parse_retry_after,
};
pub use video::{
    UpstreamState, UpstreamVideo, VideoReferences, VideoRequest, VideoStatus, VideoSupplierCodec,
};
