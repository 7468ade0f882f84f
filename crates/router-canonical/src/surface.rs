//! The names every wire crate re-exports at its root, so a consumer finds
//! them at the same path in each (`router_chat::sse`,
//! `router_messages::ErrorCode`, `router_responses::ClientCodec`, ...):
//! `pub use router_canonical::surface::*;` in each crate's `lib.rs`.
//!
//! Besides these, each wire crate's root exports its own codecs
//! (`ChatClient`, `MessagesSupplier`, ...), its client stream encoder as
//! `StreamEncoder`, its supplier stream decoder as `StreamDecoder` and its
//! decoder's typed error as `DecodeError`, where it has that side.

pub use crate::codec::{
    BodyExtensions, ClientCodec, ClientStreamEncoder, ErrorReply, HeaderSource, ReplyContext,
    StreamContext, StreamEnd, StreamFraming, SupplierCodec, SupplierStreamDecoder, SupplierTarget,
    finish_of,
};
pub use crate::error::{ApiError, ErrorCode, Field, ProductCode};
pub use crate::money::NanoUsd;
pub use crate::parse::InvalidJson;
pub use crate::protocol::Protocol;
pub use crate::request::{ContentPart, Message, Request, Role};
pub use crate::response::{OutputBlock, Response, StopReason, Usage};
pub use crate::sse;
pub use crate::sse::Frame;
pub use crate::stream::{BlockDelta, BlockKind, StreamEvent};
pub use crate::supplier_error::{SupplierError, SupplierErrorCategory, SupplierFailure};
pub use crate::translate::{FrameDecoder, StreamTranslator};
