//! Temporary image uploads (section I): `POST /v1/uploads`,
//! `DELETE /v1/uploads/{id}`, the object store behind them, and the expiry
//! and purge jobs.
//!
//! `POST` checks in the order of GP-39: the account's zero data retention
//! (403), the rate (429), the envelope (413, 10 MiB + 64 KiB), the
//! multipart shape (400: exactly one part, named `file`), the file size
//! (413: 1 byte to 10 MiB), the type (415: PNG, JPEG, WebP or GIF, declared
//! and detected alike), the quota (429, atomic with admission) and only
//! then the store (503 when it is missing or fails; the upload was admitted
//! and counts toward the rate).
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
//! then stored (`object_storage.rs`): renamed into place in a folder store,
//! copied in parts to S3. Objects get a random key, never the client's file
//! name.

use crate::app::App;
use crate::body::Incoming;
use crate::jobs::JobError;
use crate::multipart::{self, FormData, FormError, PartHead};
pub use crate::object_storage::ObjectStorage;
use crate::ownership::Resource;
use crate::reply::{self, Body};
use bytes::Bytes;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
pub use in_flight::InFlight;
use in_flight::{Claim, Refusal};
use router_canonical::{ApiError, ErrorCode};
use router_store::uploads::{self as store, AdmitError, NewUpload, UploadRow};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

mod in_flight;

/// Largest file.
pub const MAX_FILE_BYTES: u64 = 10 * 1024 * 1024;
/// Largest multipart body.
pub const MAX_ENVELOPE_BYTES: u64 = MAX_FILE_BYTES + 64 * 1024;
/// What the envelope allows beside the file (the multipart framing): a
/// body of `n` bytes carries a file of at least `n` less this.
const FRAMING_BYTES: u64 = MAX_ENVELOPE_BYTES - MAX_FILE_BYTES;
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
/// Uploads an expiry or purge pass handles at most.
const PASS_BATCH: i64 = 500;

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

/// The public ID of an upload.
pub fn public_id(id: Uuid) -> String {
    format!("upl_{}", id.simple())
}

/// The upload behind a public ID (`upl_` and 32 hex digits); anything else
/// is `None`.
pub fn parse_public_id(text: &str) -> Option<Uuid> {
    let hex = text.strip_prefix("upl_")?;
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Uuid::try_parse(hex).ok()
}

/// The upload record (GP-01).
#[derive(Debug, serde::Serialize, utoipa::ToSchema)]
pub struct UploadRecord {
    /// `upl_…`; reference it as `file_id` in an image part.
    pub id: String,
    /// Always `upload`.
    pub object: &'static str,
    pub filename: Option<String>,
    pub bytes: i64,
    pub mime_type: String,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds; recorded at admission and never recomputed (CF-24).
    pub expires_at: i64,
}

impl UploadRecord {
    fn of(row: &UploadRow) -> UploadRecord {
        UploadRecord {
            id: public_id(row.id),
            object: "upload",
            filename: row.filename.clone(),
            bytes: row.bytes,
            mime_type: row.mime_type.clone(),
            created_at: row.created_at.timestamp(),
            expires_at: row.expires_at.timestamp(),
        }
    }
}

fn error(code: ErrorCode, message: impl Into<String>) -> ApiError {
    ApiError::new(code, message)
}

fn invalid_upload(message: &str) -> ApiError {
    error(ErrorCode::InvalidUpload, message).with_param("file")
}

fn too_large() -> ApiError {
    error(
        ErrorCode::UploadTooLarge,
        format!(
            "The file must be 1 to {MAX_FILE_BYTES} bytes, in a body of at most {MAX_ENVELOPE_BYTES} bytes."
        ),
    )
    .with_param("file")
}

fn storage_error(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "upload bookkeeping failure");
    error(ErrorCode::InternalError, "Storage failure.")
}

fn unavailable() -> ApiError {
    error(
        ErrorCode::UploadsUnavailable,
        "Uploads are temporarily unavailable.",
    )
}

fn admit_error(e: AdmitError) -> ApiError {
    match e {
        AdmitError::DataProtection => error(
            ErrorCode::DataProtectionRestriction,
            "Zero data retention is on for this account: uploads are not accepted.",
        ),
        AdmitError::Rate { retry_after_secs } => {
            let mut e = error(
                ErrorCode::UploadRateLimit,
                "Upload rate exceeded: 20 a minute and 120 a day per account.",
            );
            e.retry_after = Some(retry_after_secs);
            e
        }
        AdmitError::Quota => error(
            ErrorCode::UploadQuotaExceeded,
            "Upload quota exceeded: 32 files and 64 MiB per account, until uploads expire or are removed.",
        ),
        AdmitError::Store(e) => storage_error(e),
    }
}

fn refused(e: Refusal) -> ApiError {
    match e {
        Refusal::Total(_) => {
            tracing::warn!(error = %e, "an upload was refused: ROUTER_UPLOAD_CONCURRENCY_TOTAL");
            error(
                ErrorCode::UploadsUnavailable,
                "Too many uploads are in progress; retry shortly.",
            )
            .with_retry_after(Some(1))
        }
        Refusal::Account(n) => error(
            ErrorCode::UploadRateLimit,
            format!("At most {n} uploads of an account may be in progress at once."),
        )
        .with_retry_after(Some(1)),
        Refusal::Quota => admit_error(AdmitError::Quota),
    }
}

/// A spool file, removed when dropped.
struct Spool {
    path: PathBuf,
}

impl Drop for Spool {
    fn drop(&mut self) {
        // Small and local: a blocking unlink is fine here.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The one file part, spooled.
struct FilePart {
    spool: Spool,
    /// Bytes the part had (counted past the limit, not stored past it).
    bytes: u64,
    /// Bytes the spool could keep: what was reserved (at most
    /// [`MAX_FILE_BYTES`]).
    limit: u64,
    declared: Option<String>,
    filename: Option<String>,
    /// The first bytes (the signature) and the last (the trailer).
    head: Vec<u8>,
    tail: Vec<u8>,
}

const HEAD: usize = 16;
const TAIL: usize = 12;

fn declared_length(parts: &http::request::Parts) -> Option<u64> {
    parts
        .headers
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
}

/// Reads the whole body (its declared length was checked): the envelope
/// limit as it arrives (413), then the shape (400), keeping at most
/// `limit` bytes of the file part on disk.
async fn read_multipart(
    settings: &UploadSettings,
    parts: &http::request::Parts,
    body: Incoming,
    limit: u64,
) -> Result<FilePart, ApiError> {
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let boundary = multipart::boundary(content_type)
        .ok_or_else(|| invalid_upload("The body must be multipart/form-data with a boundary."))?;
    let mut form = FormData::new(body.into_data_stream(), &boundary, MAX_ENVELOPE_BYTES);
    let mut file: Option<FilePart> = None;
    let mut shape_error: Option<&'static str> = None;
    while let Some(head) = form.next_part().await.map_err(form_error)? {
        let is_file = head.name.as_deref() == Some("file");
        if !is_file || file.is_some() {
            // Read on (the next part skips this one's data): an envelope
            // over the limit is 413 before the shape.
            shape_error.get_or_insert(if is_file {
                "Send exactly one part named `file`."
            } else {
                "The only part accepted is `file`."
            });
            continue;
        }
        file = Some(spool_part(settings, head, &mut form, limit).await?);
    }
    if let Some(message) = shape_error {
        return Err(invalid_upload(message));
    }
    file.ok_or_else(|| invalid_upload("Send exactly one part named `file`."))
}

/// Bytes gathered before one write to the spool file.
const SPOOL_BLOCK: usize = 256 * 1024;

/// Writes a part's chunks to its spool file in blocks of [`SPOOL_BLOCK`],
/// each one trip to the blocking pool, without copying them: the chunks
/// are the connection's reads (often much smaller), and a write per chunk
/// would be a trip per chunk.
struct SpoolWriter {
    /// Shared with the blocking pool's write (`Write` is implemented for `&File`).
    file: Arc<std::fs::File>,
    pending: Vec<Bytes>,
    pending_len: usize,
}

impl SpoolWriter {
    fn new(file: std::fs::File) -> SpoolWriter {
        SpoolWriter {
            file: Arc::new(file),
            pending: Vec::new(),
            pending_len: 0,
        }
    }

    async fn write(&mut self, chunk: Bytes) -> std::io::Result<()> {
        self.pending_len += chunk.len();
        self.pending.push(chunk);
        if self.pending_len >= SPOOL_BLOCK {
            self.flush().await?;
        }
        Ok(())
    }

    async fn flush(&mut self) -> std::io::Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let file = Arc::clone(&self.file);
        let chunks = std::mem::take(&mut self.pending);
        self.pending_len = 0;
        tokio::task::spawn_blocking(move || {
            use std::io::Write as _;
            let mut out = &*file;
            for chunk in &chunks {
                out.write_all(chunk)?;
            }
            Ok(())
        })
        .await
        .map_err(std::io::Error::other)?
    }
}

fn form_error(e: FormError) -> ApiError {
    match e {
        FormError::TooLarge => too_large(),
        FormError::Malformed => invalid_upload("The multipart body is malformed or truncated."),
        FormError::TimedOut => crate::body::request_timeout(),
    }
}

/// A new spool file: in a folder store's spool folder when there is one
/// and it can take the file (storing is then a rename), else in the local
/// spool folder (a store that cannot be written says so when storing).
async fn create_spool(settings: &UploadSettings) -> Result<(Spool, std::fs::File), ApiError> {
    let name = format!("router-upload-{}", Uuid::new_v4().simple());
    let in_store = settings.storage.as_ref().and_then(ObjectStorage::spool_dir);
    let local = settings.spool_dir.clone();
    tokio::task::spawn_blocking(move || {
        if let Some(dir) = in_store {
            let path = dir.join(&name);
            let _ = std::fs::create_dir_all(&dir);
            if let Ok(file) = std::fs::File::create(&path) {
                return Ok((Spool { path }, file));
            }
        }
        let path = local.join(&name);
        std::fs::File::create(&path).map(|file| (Spool { path }, file))
    })
    .await
    .map_err(std::io::Error::other)
    .and_then(|created| created)
    .map_err(|e| spool_error(&e))
}

async fn spool_part<S>(
    settings: &UploadSettings,
    head: PartHead,
    form: &mut FormData<S>,
    limit: u64,
) -> Result<FilePart, ApiError>
where
    S: futures::Stream<Item = Result<Bytes, crate::body::BodyError>> + Unpin,
{
    let declared = head.content_type;
    let filename = head
        .filename
        .map(|name| name.chars().filter(|c| !c.is_control()).take(255).collect());
    let (spool, file) = create_spool(settings).await?;
    let mut out = SpoolWriter::new(file);
    let (mut bytes, mut head, mut tail) = (0_u64, Vec::with_capacity(HEAD), Vec::new());
    while let Some(chunk) = form.next_chunk().await.map_err(form_error)? {
        bytes += chunk.len() as u64;
        // Past the limit (the file size or the reservation) the part is
        // still read (its shape may be wrong, which answers first) but no
        // longer kept.
        if bytes > limit {
            continue;
        }
        if head.len() < HEAD {
            let take = (HEAD - head.len()).min(chunk.len());
            head.extend_from_slice(&chunk[..take]);
        }
        tail.extend_from_slice(&chunk[chunk.len().saturating_sub(TAIL)..]);
        if tail.len() > TAIL {
            tail.drain(..tail.len() - TAIL);
        }
        out.write(chunk).await.map_err(|e| spool_error(&e))?;
    }
    out.flush().await.map_err(|e| spool_error(&e))?;
    Ok(FilePart {
        spool,
        bytes,
        limit,
        declared,
        filename,
        head,
        tail,
    })
}

fn spool_error(e: &std::io::Error) -> ApiError {
    tracing::error!(error = %e, "upload spool failure");
    unavailable()
}

/// The four accepted types and their signatures.
const TYPES: [&str; 4] = ["image/png", "image/jpeg", "image/webp", "image/gif"];

fn detected_type(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"\x89PNG\r\n\x1a\n") {
        Some("image/png")
    } else if head.starts_with(&[0xFF, 0xD8, 0xFF]) {
        Some("image/jpeg")
    } else if head.starts_with(b"GIF87a") || head.starts_with(b"GIF89a") {
        Some("image/gif")
    } else if head.len() >= 12 && &head[..4] == b"RIFF" && &head[8..12] == b"WEBP" {
        Some("image/webp")
    } else {
        None
    }
}

/// The format's own end: nothing may follow it (a polyglot with a second
/// file appended is refused).
fn ends_cleanly(mime: &str, part: &FilePart) -> bool {
    let tail = part.tail.as_slice();
    match mime {
        "image/png" => tail == b"\0\0\0\0IEND\xAE\x42\x60\x82",
        "image/jpeg" => tail.ends_with(&[0xFF, 0xD9]),
        "image/gif" => tail.ends_with(&[0x3B]),
        "image/webp" => {
            let riff = u32::from_le_bytes([part.head[4], part.head[5], part.head[6], part.head[7]]);
            u64::from(riff) + 8 == part.bytes
        }
        _ => false,
    }
}

/// The size (413) and type (415) checks; the format and dimensions come
/// from the header alone, before anything decodes the image. A file larger
/// than its reservation was not kept whole: the quota answers (429) before
/// the type.
async fn check_file(part: &FilePart) -> Result<(&'static str, i32, i32), ApiError> {
    if part.bytes == 0 || part.bytes > MAX_FILE_BYTES {
        return Err(too_large());
    }
    if part.bytes > part.limit {
        return Err(admit_error(AdmitError::Quota));
    }
    let unsupported = |message: &str| {
        error(ErrorCode::UnsupportedFileType, message.to_owned()).with_param("file")
    };
    let declared = part.declared.as_deref().unwrap_or_default();
    let Some(declared) = TYPES.iter().copied().find(|t| *t == declared) else {
        return Err(unsupported(
            "Only PNG, JPEG, WebP and GIF images are accepted (declare image/png, image/jpeg, image/webp or image/gif).",
        ));
    };
    let Some(detected) = detected_type(&part.head) else {
        return Err(unsupported(
            "The file is not a PNG, JPEG, WebP or GIF image.",
        ));
    };
    if detected != declared {
        return Err(error(
            ErrorCode::InvalidContentType,
            format!("The file is declared `{declared}` but its content is `{detected}`."),
        )
        .with_param("file"));
    }
    if !ends_cleanly(detected, part) {
        return Err(unsupported(
            "The file is not one complete image (data follows its end, or it is cut short).",
        ));
    }
    let path = part.spool.path.clone();
    let size = tokio::task::spawn_blocking(move || imagesize::size(path))
        .await
        .map_err(|_| unavailable())?
        .map_err(|_| unsupported("The image's header cannot be read."))?;
    let pixels = (size.width as u64).saturating_mul(size.height as u64);
    if size.width == 0
        || size.height == 0
        || size.width > MAX_SIDE
        || size.height > MAX_SIDE
        || pixels > MAX_PIXELS
    {
        return Err(unsupported(&format!(
            "Images may be at most {MAX_SIDE} pixels on a side and {MAX_PIXELS} pixels in all."
        )));
    }
    let side = |n: usize| i32::try_from(n).unwrap_or(i32::MAX);
    Ok((detected, side(size.width), side(size.height)))
}

/// `POST /v1/uploads`.
pub async fn create(
    app: &App,
    account_id: Uuid,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let settings = &app.uploads;
    // Held until the request ends, however it ends.
    let mut ticket = app
        .uploads_in_flight
        .enter(account_id, settings.concurrency_total)
        .map_err(refused)?;
    let (parts, body) = request.into_parts();
    let declared = declared_length(&parts);
    let oversized = declared.is_some_and(|n| n > MAX_ENVELOPE_BYTES);
    // A body of known length carries a file of at most that length, and at
    // least that less the framing; one of unknown length, up to the limit.
    let claim = (!oversized).then(|| Claim {
        floor: declared.map_or(1, |n| n.saturating_sub(FRAMING_BYTES)),
        want: declared.map_or(MAX_FILE_BYTES, |n| n.min(MAX_FILE_BYTES)),
    });
    let limit = loop {
        let held = {
            let mut conn = app.database().connection().await.map_err(storage_error)?;
            store::precheck(&mut conn, account_id)
                .await
                .map_err(admit_error)?
        };
        match ticket.reserve(settings.concurrency_per_account, held, claim) {
            Ok(Some(limit)) => break limit,
            // One of the account's uploads was admitted meanwhile.
            Ok(None) => continue,
            Err(e) => return Err(refused(e)),
        }
    };
    if oversized {
        // 413 at once; what the client is still sending is read after the
        // answer (bounded), so it reads the 413 instead of a broken pipe.
        crate::body::drain_in_background(&parts.headers, body, 0, MAX_ENVELOPE_BYTES as usize);
        return Err(too_large());
    }
    let part = read_multipart(settings, &parts, body, limit).await?;
    ticket.settle(part.bytes);
    let (mime, width, height) = check_file(&part).await?;
    let new = NewUpload {
        account_id,
        object_key: store::new_object_key(),
        filename: part.filename.clone(),
        bytes: i64::try_from(part.bytes).unwrap_or(i64::MAX),
        mime_type: mime.to_owned(),
        width,
        height,
        ttl: settings.ttl,
    };
    let mut conn = app.database().connection().await.map_err(storage_error)?;
    let row = store::admit(&mut conn, &new).await.map_err(admit_error)?;
    ticket.admitted();
    // Admitted: from here the upload counts toward the rate whatever happens.
    let Some(storage) = &settings.storage else {
        store::mark_failed(&mut conn, row.id)
            .await
            .map_err(storage_error)?;
        tracing::warn!("an upload was refused: ROUTER_OBJECT_STORE is not set");
        return Err(unavailable());
    };
    if let Err(e) = storage
        .put_file(&row.object_key, &part.spool.path, part.bytes)
        .await
    {
        tracing::error!(error = %e, "an upload could not be stored");
        store::mark_failed(&mut conn, row.id)
            .await
            .map_err(storage_error)?;
        return Err(unavailable());
    }
    if !store::mark_stored(&mut conn, row.id)
        .await
        .map_err(storage_error)?
    {
        // The account's zero data retention went on while it was written:
        // the upload was scheduled for deletion with all the others.
        storage.remove(&row.object_key).await;
        return Err(admit_error(AdmitError::DataProtection));
    }
    let body = serde_json::to_vec(&UploadRecord::of(&row)).unwrap_or_default();
    Ok(reply::json(StatusCode::CREATED, body, request_id))
}

/// `DELETE /v1/uploads/{id}`: allowed under zero data retention (CF-16);
/// anything but the caller's readable upload is one 404 (GP-12).
pub async fn delete(
    app: &App,
    account_id: Uuid,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = id
        .and_then(parse_public_id)
        .ok_or_else(|| Resource::Upload.not_found())?;
    let mut conn = app.database().connection().await.map_err(storage_error)?;
    if store::schedule_deletion(&mut conn, account_id, id)
        .await
        .map_err(storage_error)?
    {
        Ok(reply::no_content(request_id))
    } else {
        Err(Resource::Upload.not_found())
    }
}

/// An upload referenced by an inference request, resolved to its bytes.
#[derive(Debug, Clone)]
pub struct ResolvedUpload {
    pub mime_type: String,
    pub bytes: Bytes,
    pub width: i32,
    pub height: i32,
}

/// Why a reference does not resolve.
#[derive(Debug, thiserror::Error)]
pub enum ResolveError {
    /// Unknown, foreign, expired, deleted or scheduled: one answer (GP-42).
    #[error("no such upload")]
    NotFound,
    #[error("uploads are unavailable")]
    Unavailable,
}

/// The caller's readable upload `file_id`, with its bytes.
pub async fn resolve(
    app: &App,
    account_id: Uuid,
    file_id: &str,
) -> Result<ResolvedUpload, ResolveError> {
    let id = parse_public_id(file_id).ok_or(ResolveError::NotFound)?;
    let mut conn = app
        .database()
        .connection()
        .await
        .map_err(|_| ResolveError::Unavailable)?;
    let row = store::find_readable(&mut conn, account_id, id)
        .await
        .map_err(|_| ResolveError::Unavailable)?
        .ok_or(ResolveError::NotFound)?;
    let storage = app
        .uploads
        .storage
        .as_ref()
        .ok_or(ResolveError::Unavailable)?;
    let bytes = storage.get(&row.object_key).await.map_err(|e| {
        tracing::error!(error = %e, "an upload could not be read");
        ResolveError::Unavailable
    })?;
    Ok(ResolvedUpload {
        mime_type: row.mime_type,
        bytes,
        width: row.width,
        height: row.height,
    })
}

/// The `upload-expiry` job: uploads past their expiry are scheduled for
/// removal (they already read as 404; this frees their quota once purged).
pub async fn expiry_pass(app: &App) -> Result<u64, JobError> {
    let mut conn = app.database().connection().await?;
    Ok(store::expire(&mut conn, PASS_BATCH).await?)
}

/// The `upload-purge` job: removes the objects of uploads scheduled for
/// removal (their tombstones start), then drops tombstones past their
/// keep. Without an object store there is nothing to remove objects from:
/// the queue waits.
pub async fn purge_pass(app: &App) -> Result<u64, JobError> {
    let mut conn = app.database().connection().await?;
    let mut processed = 0;
    if let Some(storage) = &app.uploads.storage {
        processed += store::purge(&mut conn, PASS_BATCH, |key| {
            let storage = storage.clone();
            async move { storage.remove(&key).await }
        })
        .await?;
    }
    processed += store::drop_tombstones(&mut conn, app.uploads.tombstone, PASS_BATCH).await?;
    Ok(processed)
}

/// Replaces every upload reference (`file_id`) of an inference request by
/// the upload's bytes, so the supplier gets them in its own dialect (base64
/// data), never our id. Runs before routing, so a bad reference costs no
/// supplier call. With the account's zero data retention on, a request
/// that references an upload is 503 `zdr_capacity_unavailable` first
/// (GP-42, H-13); an unknown, foreign, expired, deleted or scheduled
/// reference is one 400 `invalid_parameter` naming the part (H-03).
pub async fn resolve_references(
    app: &App,
    key: &router_core::store::ApiKeyRecord,
    request: &mut router_canonical::Request,
) -> Result<(), ApiError> {
    use router_canonical::{ContentPart, ImageSource};
    use std::collections::HashMap;

    fn collect<'a>(part: &'a ContentPart, ids: &mut Vec<&'a str>) {
        match part {
            ContentPart::Image {
                source: ImageSource::Upload { file_id, .. },
                ..
            } => ids.push(file_id),
            ContentPart::ToolResult { content, .. } => {
                content.iter().for_each(|p| collect(p, ids));
            }
            _ => {}
        }
    }
    fn replace(
        part: &mut ContentPart,
        path: &str,
        resolved: &HashMap<String, Option<(String, String)>>,
    ) -> Result<(), ApiError> {
        match part {
            ContentPart::Image { source, .. } => {
                if let ImageSource::Upload { file_id, param } = source {
                    let Some(Some((media_type, data))) = resolved.get(file_id.as_str()) else {
                        // The client's own path when its parser gave one.
                        let named: &str = if param.is_empty() { path } else { param };
                        return Err(ApiError::invalid(
                            named,
                            "The referenced upload does not exist or is no longer available.",
                        ));
                    };
                    *source = ImageSource::Base64 {
                        media_type: media_type.clone(),
                        data: data.clone(),
                    };
                }
                Ok(())
            }
            ContentPart::ToolResult { content, .. } => {
                for (k, p) in content.iter_mut().enumerate() {
                    replace(p, &format!("{path}.content[{k}]"), resolved)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    let mut ids = Vec::new();
    for message in &request.messages {
        message.content.iter().for_each(|p| collect(p, &mut ids));
    }
    if ids.is_empty() {
        return Ok(());
    }
    if key.account_zdr {
        return Err(ApiError::new(
            ErrorCode::ZdrCapacityUnavailable,
            "Zero data retention is on for this account: uploaded images cannot be read.",
        ));
    }
    let mut resolved: HashMap<String, Option<(String, String)>> = HashMap::new();
    let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
    for id in ids {
        if resolved.contains_key(&id) {
            continue;
        }
        let found = match resolve(app, key.account_id, &id).await {
            Ok(upload) => {
                use base64::Engine as _;
                let data = base64::engine::general_purpose::STANDARD.encode(&upload.bytes);
                Some((upload.mime_type, data))
            }
            Err(ResolveError::NotFound) => None,
            Err(ResolveError::Unavailable) => return Err(unavailable()),
        };
        resolved.insert(id, found);
    }
    for (i, message) in request.messages.iter_mut().enumerate() {
        for (j, part) in message.content.iter_mut().enumerate() {
            replace(part, &format!("messages[{i}].content[{j}]"), &resolved)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_ids_round_trip_and_anything_else_is_none() {
        let id = Uuid::now_v7();
        assert_eq!(parse_public_id(&public_id(id)), Some(id));
        for bad in [
            "",
            "upl_",
            "upl_xyz",
            &id.to_string(),
            &format!("upl_{}", id),
            &format!("file_{}", id.simple()),
            "upl_..%2f",
        ] {
            assert_eq!(parse_public_id(bad), None, "{bad}");
        }
    }

    #[test]
    fn signatures_of_the_four_types() {
        assert_eq!(detected_type(b"\x89PNG\r\n\x1a\n...."), Some("image/png"));
        assert_eq!(detected_type(&[0xFF, 0xD8, 0xFF, 0xE0]), Some("image/jpeg"));
        assert_eq!(detected_type(b"GIF89a......"), Some("image/gif"));
        assert_eq!(detected_type(b"RIFF\x10\0\0\0WEBPVP8 "), Some("image/webp"));
        assert_eq!(detected_type(b"%PDF-1.7\n"), None);
        assert_eq!(detected_type(b"BM\x3a\0\0\0"), None);
        assert_eq!(detected_type(b"<svg xmlns"), None);
    }
}
