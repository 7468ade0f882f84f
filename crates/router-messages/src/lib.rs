#![warn(unreachable_pub)]
#![warn(missing_docs)]
#![doc = include_str!("../README.md")]

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
