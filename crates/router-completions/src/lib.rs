#![doc = include_str!("../README.md")]
#![warn(unreachable_pub)]
#![warn(missing_docs)]

pub mod client;
pub mod wire;

pub use client::{
    CompletionRequest, CompletionStreamContext, CompletionsClient, DEFAULT_MAX_TOKENS,
    ResponseContext, StreamEncoder, encode_response, error_body, parse_request, parse_request_with,
};
/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
