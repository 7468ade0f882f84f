#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

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
