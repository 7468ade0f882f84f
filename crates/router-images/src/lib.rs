//! OpenAI Images generation (`POST /v1/images/generations`), both parties.
//!
//! * [`client`]: the request the gateway accepts (strictly: one image,
//!   automatic size and quality, PNG, no edits, no streaming; GP-27) into a
//!   canonical [`ImageRequest`], and the reply with its receipt.
//! * [`supplier`]: [`ImagesSupplier`], the OpenAI Images supplier dialect
//!   (`POST {base_url}/images/generations`), an
//!   [`router_canonical::ImageSupplierCodec`].
//! * [`png`]: the complete PNG check every image passes before it is
//!   delivered or charged (N-02, N-09).
//!
//! ```
//! use router_images::client::parse_request;
//!
//! let request = parse_request(br#"{"model": "img-1", "prompt": "a cat"}"#)?;
//! assert_eq!(request.prompt, "a cat");
//! let refused = parse_request(br#"{"model": "img-1", "prompt": "a cat", "n": 2}"#).unwrap_err();
//! assert_eq!(refused.param.as_deref(), Some("n"));
//! # Ok::<(), router_canonical::ApiError>(())
//! ```

#![warn(unreachable_pub)]

pub mod client;
pub mod png;
pub mod supplier;

/// The canonical model this crate translates to and from, whole.
pub use router_canonical as canonical;
/// The names every wire crate exports at the same paths: `sse`,
/// `ErrorCode`, the codec traits, stream and error types.
pub use router_canonical::surface::*;
pub use router_canonical::{GeneratedImage, ImageRequest, ImageSupplierCodec};
pub use supplier::ImagesSupplier;
