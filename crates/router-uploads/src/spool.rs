//! An upload's body read to its end: the envelope limit as it arrives
//! (413), then the shape (400), the one file part written to a spool file
//! on local disk as it comes (at most the bytes reserved for it), with its
//! first and last bytes kept for the file checks.

use crate::error::{Shape, UploadError};
use crate::multipart::{self, FormData, FormError, PartHead, ReadFailure};
use crate::object_storage::ObjectStorage;
use crate::{MAX_ENVELOPE_BYTES, UploadSettings};
use bytes::Bytes;
use futures::Stream;
use std::path::PathBuf;
use std::sync::Arc;
use uuid::Uuid;

/// A spool file, removed when dropped.
pub(crate) struct Spool {
    pub(crate) path: PathBuf,
}

impl Drop for Spool {
    fn drop(&mut self) {
        // Small and local: a blocking unlink is fine here.
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The one file part, spooled.
pub(crate) struct FilePart {
    pub(crate) spool: Spool,
    /// Bytes the part had (counted past the limit, not stored past it).
    pub(crate) bytes: u64,
    /// Bytes the spool could keep: what was reserved (at most
    /// [`crate::MAX_FILE_BYTES`]).
    pub(crate) limit: u64,
    pub(crate) declared: Option<String>,
    pub(crate) filename: Option<String>,
    /// The first bytes (the signature) and the last (the trailer).
    pub(crate) head: Vec<u8>,
    pub(crate) tail: Vec<u8>,
}

const HEAD: usize = 16;
const TAIL: usize = 12;

impl From<FormError> for UploadError {
    fn from(error: FormError) -> Self {
        match error {
            FormError::TooLarge => UploadError::TooLarge,
            FormError::Malformed => UploadError::InvalidUpload(Shape::Malformed),
            FormError::TimedOut => UploadError::TimedOut,
        }
    }
}

/// Reads the whole body (its declared length was checked): the envelope
/// limit as it arrives (413), then the shape (400), keeping at most
/// `limit` bytes of the file part on disk.
pub(crate) async fn read_multipart<S, E>(
    settings: &UploadSettings,
    content_type: &str,
    body: S,
    limit: u64,
) -> Result<FilePart, UploadError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: ReadFailure,
{
    let boundary =
        multipart::boundary(content_type).ok_or(UploadError::InvalidUpload(Shape::NotMultipart))?;
    let mut form = FormData::new(body, &boundary, MAX_ENVELOPE_BYTES);
    let mut file: Option<FilePart> = None;
    let mut shape_error: Option<Shape> = None;
    while let Some(head) = form.next_part().await? {
        let is_file = head.name.as_deref() == Some("file");
        if !is_file || file.is_some() {
            // Read on (the next part skips this one's data): an envelope
            // over the limit is 413 before the shape.
            shape_error.get_or_insert(if is_file {
                Shape::NotOneFile
            } else {
                Shape::OtherPart
            });
            continue;
        }
        file = Some(spool_part(settings, head, &mut form, limit).await?);
    }
    if let Some(shape) = shape_error {
        return Err(UploadError::InvalidUpload(shape));
    }
    file.ok_or(UploadError::InvalidUpload(Shape::NotOneFile))
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

/// A new spool file: in a folder store's spool folder when there is one
/// and it can take the file (storing is then a rename), else in the local
/// spool folder (a store that cannot be written says so when storing).
async fn create_spool(settings: &UploadSettings) -> Result<(Spool, std::fs::File), UploadError> {
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

async fn spool_part<S, E>(
    settings: &UploadSettings,
    head: PartHead,
    form: &mut FormData<S>,
    limit: u64,
) -> Result<FilePart, UploadError>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
    E: ReadFailure,
{
    let declared = head.content_type;
    let filename = head
        .filename
        .map(|name| name.chars().filter(|c| !c.is_control()).take(255).collect());
    let (spool, file) = create_spool(settings).await?;
    let mut out = SpoolWriter::new(file);
    let (mut bytes, mut head, mut tail) = (0_u64, Vec::with_capacity(HEAD), Vec::new());
    while let Some(chunk) = form.next_chunk().await? {
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

fn spool_error(e: &std::io::Error) -> UploadError {
    tracing::error!(error = %e, "upload spool failure");
    UploadError::Unavailable
}
