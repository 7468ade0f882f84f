//! Video generation (`/v1/videos*`), the pure parts: no I/O.
//!
//! * [`client`]: the create body the gateway accepts into a canonical
//!   [`VideoRequest`] (every rule that needs no catalog), the video object
//!   (O-21) and the video error envelope with `error.requestId` (P-03).
//! * [`range`]: the content endpoint's `Range` header (O-26..O-29, GP-24,
//!   CF-13).
//! * [`supplier`]: [`OpenAiVideosSupplier`], the OpenAI videos supplier
//!   dialect, a [`router_canonical::VideoSupplierCodec`].
//!
//! ```
//! use router_videos::client::parse_create;
//!
//! let request = parse_create(br#"{"model": "vid-1", "prompt": "a cat", "mode": "references",
//!     "resolution": "720p", "duration": 5.0, "client_task_id": "job-1"}"#)?;
//! assert_eq!(request.duration_seconds, 5);
//! let refused = parse_create(br#"{"model": "vid-1", "prompt": "a cat", "mode": "references",
//!     "resolution": "720p", "duration": 5, "client_task_id": "a b"}"#).unwrap_err();
//! assert_eq!(refused.param.as_deref(), Some("client_task_id"));
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
pub mod range;
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
