#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod client;
mod convert;
pub mod supplier;
pub mod wire;

pub use client::{RequestEcho, ResponsesClient, ResponsesExtra, StreamEncoder};
pub use convert::{ToolNamespaces, flat_name};
pub use supplier::{DecodeError, ResponsesSupplier, StreamDecoder};

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
