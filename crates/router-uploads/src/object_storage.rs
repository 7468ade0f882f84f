//! The object store behind uploads and video content: a folder
//! (`file:///…`) or any S3-compatible store (`s3://bucket/prefix`), through
//! the `object_store` crate.
//!
//! An upload's spool file becomes its object by a rename in a folder store
//! on the same file system. Other writes go in parts (256 KiB to a folder,
//! 5 MiB, S3's smallest part, to S3), one in flight at a time, so a write
//! holds one part in memory whatever the object's size; a failed multipart
//! write is aborted, leaving no partial object.

use bytes::Bytes;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use std::sync::Arc;

/// The object store behind uploads and video content.
#[derive(Clone)]
pub struct ObjectStorage {
    store: Arc<dyn ObjectStore>,
    /// Bytes per part of a multipart write (memory held per upload).
    part_size: usize,
    /// What it was configured as, for logs (no credentials: those come
    /// from the environment).
    describe: String,
    /// The folder of a `file://` store: a file spooled inside it is moved
    /// into place by a rename instead of being copied.
    local_root: Option<std::path::PathBuf>,
}

impl std::fmt::Debug for ObjectStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectStorage")
            .field("store", &self.describe)
            .field("part_size", &self.part_size)
            .finish()
    }
}

/// `ROUTER_OBJECT_STORE` could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StorageConfigError {
    #[error("`{0}` is not file:///absolute/path or s3://bucket/prefix")]
    Scheme(String),
    #[error("the folder `{path}` cannot be used: {source}")]
    Folder {
        path: String,
        source: std::io::Error,
    },
    #[error(transparent)]
    Store(#[from] object_store::Error),
}

impl ObjectStorage {
    /// `file:///absolute/path` (created if missing) or `s3://bucket/prefix`
    /// with the usual `AWS_*` variables (`AWS_ENDPOINT` and
    /// `AWS_ALLOW_HTTP=true` for an S3-compatible store on plain HTTP).
    pub fn from_url(text: &str) -> Result<ObjectStorage, StorageConfigError> {
        let url = url::Url::parse(text).map_err(|_| StorageConfigError::Scheme(text.to_owned()))?;
        match url.scheme() {
            "file" => {
                let path = url
                    .to_file_path()
                    .map_err(|()| StorageConfigError::Scheme(text.to_owned()))?;
                std::fs::create_dir_all(&path).map_err(|source| StorageConfigError::Folder {
                    path: path.display().to_string(),
                    source,
                })?;
                let store = object_store::local::LocalFileSystem::new_with_prefix(&path)?;
                Ok(ObjectStorage {
                    store: Arc::new(store),
                    // A folder takes parts of any size: keep the buffer small.
                    part_size: 256 * 1024,
                    describe: text.to_owned(),
                    local_root: Some(path),
                })
            }
            "s3" => {
                let bucket = url
                    .host_str()
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| StorageConfigError::Scheme(text.to_owned()))?;
                let s3 = object_store::aws::AmazonS3Builder::from_env()
                    .with_bucket_name(bucket)
                    .build()?;
                let prefix = url.path().trim_matches('/');
                let store: Arc<dyn ObjectStore> = if prefix.is_empty() {
                    Arc::new(s3)
                } else {
                    Arc::new(object_store::prefix::PrefixStore::new(s3, prefix))
                };
                Ok(ObjectStorage {
                    store,
                    part_size: 5 * 1024 * 1024,
                    describe: text.to_owned(),
                    local_root: None,
                })
            }
            _ => Err(StorageConfigError::Scheme(text.to_owned())),
        }
    }

    /// A store built elsewhere (tests wrap one to inject failures):
    /// `part_size` bytes per part of a multipart write.
    pub fn from_store(
        store: Arc<dyn ObjectStore>,
        part_size: usize,
        describe: &str,
    ) -> ObjectStorage {
        ObjectStorage {
            store,
            part_size,
            describe: describe.to_owned(),
            local_root: None,
        }
    }

    /// Where to spool a file that will be stored: inside a folder store
    /// (so that storing it is a rename), else `None` (any local folder).
    pub fn spool_dir(&self) -> Option<std::path::PathBuf> {
        self.local_root.as_ref().map(|root| root.join(".spool"))
    }

    /// What it was configured as (`file:///…` or `s3://…`).
    pub fn location(&self) -> &str {
        &self.describe
    }

    /// Stores the spool file as `key`: renamed into place in a folder store
    /// on the same file system; otherwise copied, in one request when it
    /// fits a part, else a multipart write of `part_size` parts, one in
    /// flight at a time.
    pub async fn put_file(
        &self,
        key: &str,
        spool: &std::path::Path,
        bytes: u64,
    ) -> Result<(), object_store::Error> {
        let path = ObjectPath::from(key);
        if let Some(root) = &self.local_root {
            // Same folder tree, so normally the same file system: the spool
            // file becomes the object, atomically, without a copy.
            let target = root.join(key);
            if let Some(parent) = target.parent() {
                tokio::fs::create_dir_all(parent)
                    .await
                    .map_err(|e| io_error(key, e))?;
            }
            match tokio::fs::rename(spool, &target).await {
                Ok(()) => return Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::CrossesDevices => {}
                Err(e) => return Err(io_error(key, e)),
            }
        }
        let mut file = std::fs::File::open(spool).map_err(|e| io_error(key, e))?;
        if bytes <= self.part_size as u64 {
            let (_, data) = read_part(file, bytes as usize)
                .await
                .map_err(|e| io_error(key, e))?;
            self.store.put(&path, PutPayload::from(data)).await?;
            return Ok(());
        }
        let mut upload = self.store.put_multipart(&path).await?;
        let written = async {
            loop {
                let (rest, part) = read_part(file, self.part_size)
                    .await
                    .map_err(|e| io_error(key, e))?;
                file = rest;
                if part.is_empty() {
                    break;
                }
                upload.put_part(PutPayload::from(part)).await?;
            }
            upload.complete().await.map(|_| ())
        }
        .await;
        if written.is_err() {
            // Leave no partial object behind (the row is marked failed).
            let _ = upload.abort().await;
        }
        written
    }

    /// Writes `key` from chunks as they come from `source`, in `part_size` parts, one in flight at a time, so memory
    /// stays at one part whatever the size. A failed write, from the
    /// source or the store, is aborted and leaves no object. Returns the
    /// bytes written.
    pub async fn put_chunks<S, E>(&self, key: &str, source: S) -> Result<u64, PutError<E>>
    where
        S: futures::Stream<Item = Result<Bytes, E>>,
    {
        use futures::StreamExt;
        let mut source = std::pin::pin!(source);
        let path = ObjectPath::from(key);
        let mut upload = self
            .store
            .put_multipart(&path)
            .await
            .map_err(PutError::Store)?;
        let written = async {
            let mut total = 0u64;
            let mut part: Vec<u8> = Vec::with_capacity(self.part_size);
            while let Some(chunk) = source.next().await.transpose().map_err(PutError::Source)? {
                total += chunk.len() as u64;
                let mut chunk = &chunk[..];
                while !chunk.is_empty() {
                    let room = self.part_size - part.len();
                    let take = room.min(chunk.len());
                    part.extend_from_slice(&chunk[..take]);
                    chunk = &chunk[take..];
                    if part.len() == self.part_size {
                        let full = std::mem::replace(&mut part, Vec::with_capacity(self.part_size));
                        upload
                            .put_part(PutPayload::from(full))
                            .await
                            .map_err(PutError::Store)?;
                    }
                }
            }
            if !part.is_empty() || total == 0 {
                upload
                    .put_part(PutPayload::from(part))
                    .await
                    .map_err(PutError::Store)?;
            }
            upload.complete().await.map_err(PutError::Store)?;
            Ok(total)
        }
        .await;
        if written.is_err() {
            let _ = upload.abort().await;
        }
        written
    }

    /// Bytes `start..=end` of `key` as a stream of chunks, read as the
    /// client takes them (never the whole object in memory).
    pub async fn get_range(
        &self,
        key: &str,
        start: u64,
        end: u64,
    ) -> Result<
        futures::stream::BoxStream<'static, Result<Bytes, object_store::Error>>,
        object_store::Error,
    > {
        let options = object_store::GetOptions {
            range: Some(object_store::GetRange::Bounded(start..end + 1)),
            ..object_store::GetOptions::default()
        };
        let result = self.store.get_opts(&ObjectPath::from(key), options).await?;
        Ok(result.into_stream())
    }

    pub async fn get(&self, key: &str) -> Result<Bytes, object_store::Error> {
        self.store.get(&ObjectPath::from(key)).await?.bytes().await
    }

    /// Removes `key`; an object already gone counts as removed.
    pub async fn remove(&self, key: &str) -> bool {
        match self.store.delete(&ObjectPath::from(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => true,
            Err(e) => {
                tracing::warn!(error = %e, "could not remove an object");
                false
            }
        }
    }
}

/// Why [`ObjectStorage::put_chunks`] failed: its source or the store.
#[derive(Debug, thiserror::Error)]
pub enum PutError<E> {
    #[error("reading the source: {0}")]
    Source(E),
    #[error(transparent)]
    Store(object_store::Error),
}

/// Reads up to `size` bytes of `file` on the blocking pool, straight into
/// the part's buffer (tokio's `File` would read into a buffer of its own
/// and copy).
async fn read_part(file: std::fs::File, size: usize) -> std::io::Result<(std::fs::File, Vec<u8>)> {
    tokio::task::spawn_blocking(move || {
        let mut part = Vec::with_capacity(size);
        std::io::Read::read_to_end(&mut std::io::Read::take(&file, size as u64), &mut part)?;
        Ok((file, part))
    })
    .await
    .map_err(std::io::Error::other)?
}

fn io_error(key: &str, source: std::io::Error) -> object_store::Error {
    object_store::Error::Generic {
        store: "spool",
        source: format!("{key}: {source}").into(),
    }
}
