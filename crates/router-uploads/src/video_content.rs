//! The uploads' object store is also where video content is kept: this is
//! the one adapter between core's `VideoObjects` port (the copy of a
//! completed video) and it.

use crate::Uploads;
use crate::object_storage::PutError;
use router_core::VideoChunks;
use router_core::video_jobs::{ContentCopyError, VideoObjects};

impl VideoObjects for Uploads {
    fn configured(&self) -> bool {
        self.storage().is_some()
    }

    async fn put_video(&self, key: &str, chunks: VideoChunks) -> Result<u64, ContentCopyError> {
        let storage = self.storage().ok_or(ContentCopyError::NotConfigured)?;
        storage
            .put_chunks(key, chunks)
            .await
            .map_err(|error| match error {
                PutError::Source(e) => ContentCopyError::Source(e),
                PutError::Store(e) => ContentCopyError::Store(Box::new(e)),
            })
    }
}
