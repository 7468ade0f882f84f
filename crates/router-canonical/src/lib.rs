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
//! This crate depends on serde only: no async runtime, no HTTP, no SQL.

pub mod capability;
pub mod error;
pub mod money;
pub mod openai_error;
pub mod parse;
pub mod protocol;
pub mod request;
pub mod response;
pub mod routing_options;
pub mod sse;
pub mod stream;

pub use capability::{Capability, CapabilitySet, Requirements};
pub use error::{ApiError, ErrorCode};
pub use money::{NanoUsd, PricePerMTok, Rates};
pub use protocol::Protocol;
pub use request::{
    CacheControl, ContentPart, ImageSource, Message, NativeFields, PromptCacheMode, Reasoning,
    Request, ResponseFormat, Role, Sampling, ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
pub use response::{OutputBlock, Response, StopReason, Usage};
pub use routing_options::{Percent, RoutingOptions};
pub use stream::{BlockDelta, BlockKind, StreamEvent};
