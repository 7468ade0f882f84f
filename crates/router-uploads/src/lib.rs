//! Temporary image uploads (section I), without HTTP: the checks of an
//! upload's body, its admission and storage, deletion, the resolution of
//! inference requests' references, and the expiry and purge passes.
//!
//! The HTTP edge reads the request and hands [`Uploads::begin`] the
//! declared length, then [`Upload::receive`] the content type and the body
//! as a stream of byte chunks; it gets back the [`UploadRecord`] or an
//! [`UploadError`], which says what to answer (`ApiError` carries the code,
//! its status and Retry-After).
//!
//! An upload is checked in the order of GP-39: the account's zero data
//! retention (403), the rate (429), the envelope (413, 10 MiB + 64 KiB),
//! the multipart shape (400: exactly one part, named `file`), the file
//! size (413: 1 byte to 10 MiB), the type (415: PNG, JPEG, WebP or GIF,
//! declared and detected alike), the quota (429, atomic with admission)
//! and only then the store (503 when it is missing or fails; the upload was
//! admitted and counts toward the rate).
//!
//! Bodies in flight count too (`in_flight.rs`): before anything else, an
//! instance with `ROUTER_UPLOAD_CONCURRENCY_TOTAL` uploads in progress
//! answers 503 `uploads_unavailable`; after the rate, an account with
//! `ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT` in progress is 429
//! `upload_rate_limit` (a limit on how fast it sends, like the rate); and
//! after the envelope, the upload reserves one file and the bytes its body
//! declares against the quota the account has left (429
//! `upload_quota_exceeded` when even the smallest file that body could
//! carry does not fit). The spool keeps no more than was reserved.
//!
//! Memory stays bounded whatever the upload's size: the file part is
//! streamed to a spool file on local disk while the rest of the body is
//! checked (multipart needs the whole body before the shape is known), and
//! then stored ([`ObjectStorage`]): renamed into place in a folder store,
//! copied in parts to S3. Objects get a random key, never the client's file
//! name.

mod error;
mod file_check;
mod in_flight;
mod lifecycle;
mod multipart;
pub mod object_storage;
mod record;
mod references;
mod spool;
pub mod structure;
pub mod video_content;

pub use error::{Shape, Unsupported, UploadError};
pub use in_flight::InFlight;
pub use lifecycle::Upload;
pub use multipart::ReadFailure;
pub use object_storage::ObjectStorage;
pub use record::{UploadRecord, parse_public_id, public_id};
pub use references::{ResolveError, ResolvedUpload};

use router_store::Database;
use std::path::PathBuf;
use std::time::Duration;

/// Largest file.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Largest multipart body.
pub const MAX_ENVELOPE_BYTES: u64 = MAX_FILE_BYTES + 64 * 1024;
/// Uploads of one account in progress at once on an instance.
pub const DEFAULT_CONCURRENCY_PER_ACCOUNT: usize = 4;
/// Uploads in progress at once on an instance.
pub const DEFAULT_CONCURRENCY_TOTAL: usize = 64;
/// How long an upload is readable.
pub const DEFAULT_TTL: Duration = Duration::from_secs(3600);
/// How long a tombstone is kept after its object is removed (Q-11, CF-23).
pub const DEFAULT_TOMBSTONE: Duration = Duration::from_secs(24 * 3600);
/// An image larger than this on a side, or in pixels, is refused before
/// anything decodes it (a decompression bomb): 415 `unsupported_file_type`.
pub const MAX_SIDE: usize = 16_384;
pub const MAX_PIXELS: u64 = 50_000_000;

/// Upload settings of a router process.
#[derive(Debug, Clone)]
pub struct UploadSettings {
    /// `ROUTER_OBJECT_STORE`; `None`: uploads answer 503 (once admitted).
    pub storage: Option<ObjectStorage>,
    /// `ROUTER_UPLOAD_TTL_SECS`.
    pub ttl: Duration,
    /// `ROUTER_UPLOAD_TOMBSTONE_SECS`.
    pub tombstone: Duration,
    /// Where file parts are spooled while the body is checked.
    pub spool_dir: PathBuf,
    /// How often the expiry and purge jobs run.
    pub every: Duration,
    /// `ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT` (at least 1).
    pub concurrency_per_account: usize,
    /// `ROUTER_UPLOAD_CONCURRENCY_TOTAL` (at least 1).
    pub concurrency_total: usize,
}

impl Default for UploadSettings {
    fn default() -> Self {
        UploadSettings {
            storage: None,
            ttl: DEFAULT_TTL,
            tombstone: DEFAULT_TOMBSTONE,
            spool_dir: std::env::temp_dir(),
            every: Duration::from_secs(60),
            concurrency_per_account: DEFAULT_CONCURRENCY_PER_ACCOUNT,
            concurrency_total: DEFAULT_CONCURRENCY_TOTAL,
        }
    }
}

/// The uploads of one router process: its settings, its uploads in
/// progress, and the database their bookkeeping lives in.
#[derive(Debug)]
pub struct Uploads {
    pub settings: UploadSettings,
    /// The uploads in progress on this instance and what they reserve.
    pub in_flight: InFlight,
    pub database: Database,
}

impl Uploads {
    pub fn new(settings: UploadSettings, database: Database) -> Uploads {
        Uploads {
            settings,
            in_flight: InFlight::default(),
            database,
        }
    }

    /// The object store (`ROUTER_OBJECT_STORE`), shared with video content;
    /// `None` when none is configured.
    pub fn storage(&self) -> Option<&ObjectStorage> {
        self.settings.storage.as_ref()
    }
}
