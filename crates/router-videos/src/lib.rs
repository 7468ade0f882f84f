#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod client;
pub mod range;
#[cfg(feature = "openapi")]
pub mod schema;
pub mod supplier;

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
pub use router_canonical::{
    UpstreamVideo, VideoReferences, VideoRequest, VideoStatus, VideoSupplierCodec,
};
pub use supplier::OpenAiVideosSupplier;
