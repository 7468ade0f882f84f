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
