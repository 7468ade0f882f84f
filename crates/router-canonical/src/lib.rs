#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

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
pub mod sse;
pub mod stream;
pub mod supplier_error;
pub mod surface;
pub mod translate;
pub mod video;

pub use capability::{Capability, CapabilitySet, Requirements};
pub use codec::{
    BodyExtensions, ClientCodec, ClientStreamEncoder, ErrorReply, HeaderSource, ReplyContext,
    StreamContext, StreamEnd, StreamFraming, SupplierCodec, SupplierStreamDecoder, SupplierTarget,
    encode_path_segment,
};
pub use error::{ApiError, ErrorCode, Field, ProductCode};
pub use image::{GeneratedImage, ImageRequest, ImageSupplierCodec};
pub use money::{NanoUsd, PricePerMTok, Rates};
pub use protocol::Protocol;
pub use request::{
    CacheControl, ContentPart, ImageSource, Message, NativeFields, Reasoning, Request,
    ResponseFormat, Role, Sampling, ThinkingConfig, ThinkingMode, Tool, ToolChoice,
};
pub use response::{OutputBlock, Response, StopReason, Usage};
pub use stream::{BlockDelta, BlockKind, StreamEvent};
pub use supplier_error::{
    SupplierError, SupplierErrorCategory, SupplierFailure, parse_retry_after,
};
pub use video::{
    UpstreamState, UpstreamVideo, VideoReferences, VideoRequest, VideoStatus, VideoSupplierCodec,
};
