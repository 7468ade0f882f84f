//! An upload's life with the store: the checks before its body (the
//! account's switch, the rate, the caps and its reservation), admission
//! once the body checked out, storage (marked stored or failed), deletion,
//! and the expiry and purge passes.

use crate::error::UploadError;
use crate::file_check::check_file;
use crate::in_flight::{Claim, Ticket};
use crate::multipart::ReadFailure;
use crate::record::{UploadRecord, parse_public_id};
use crate::spool::read_multipart;
use crate::{MAX_ENVELOPE_BYTES, MAX_FILE_BYTES, Uploads};
use bytes::Bytes;
use futures::Stream;
use router_core::store::StoreError;
use router_store::uploads::{self as store, NewUpload};
use uuid::Uuid;

/// What the envelope allows beside the file (the multipart framing): a
/// body of `n` bytes carries a file of at least `n` less this.
const FRAMING_BYTES: u64 = MAX_ENVELOPE_BYTES - MAX_FILE_BYTES;
/// Uploads an expiry or purge pass handles at most.
const PASS_BATCH: i64 = 500;

/// An upload past the checks that come before its body, holding its place
/// among the uploads in progress and its reservation until it is dropped,
/// however the request ends.
#[derive(Debug)]
pub struct Upload<'a> {
    uploads: &'a Uploads,
    account_id: Uuid,
    ticket: Ticket<'a>,
    /// The bytes of the file part the spool may keep.
    limit: u64,
}

impl Uploads {
    /// An upload of `account_id` starts, its body declaring `declared`
    /// bytes (`None`: a body of unknown length). Checks, in order: this
    /// instance's uploads in progress (503), the account's switch (403) and
    /// rate (429), its uploads in progress (429), the envelope
    /// ([`UploadError::TooLarge`]: the caller has not read the body and
    /// drains it), and reserves room for the file against the quota (429).
    pub async fn begin(
        &self,
        account_id: Uuid,
        declared: Option<u64>,
    ) -> Result<Upload<'_>, UploadError> {
        let settings = &self.settings;
        let mut ticket = self
            .in_flight
            .enter(account_id, settings.concurrency_total)?;
        let oversized = declared.is_some_and(|n| n > MAX_ENVELOPE_BYTES);
        // A body of known length carries a file of at most that length, and at
        // least that less the framing; one of unknown length, up to the limit.
        let claim = (!oversized).then(|| Claim {
            floor: declared.map_or(1, |n| n.saturating_sub(FRAMING_BYTES)),
            want: declared.map_or(MAX_FILE_BYTES, |n| n.min(MAX_FILE_BYTES)),
        });
        let limit = loop {
            let held = {
                let mut conn = self
                    .database
                    .connection()
                    .await
                    .map_err(UploadError::store)?;
                store::precheck(&mut conn, account_id).await?
            };
            match ticket.reserve(settings.concurrency_per_account, held, claim) {
                Ok(Some(limit)) => break limit,
                // One of the account's uploads was admitted meanwhile.
                Ok(None) => continue,
                Err(e) => return Err(e.into()),
            }
        };
        if oversized {
            return Err(UploadError::TooLarge);
        }
        Ok(Upload {
            uploads: self,
            account_id,
            ticket,
            limit,
        })
    }

    /// Schedules the account's readable upload `id` (its public ID) for
    /// removal; allowed under zero data retention (CF-16). `false`: the
    /// account has no such readable upload, or `id` is no upload ID (one
    /// answer for all, GP-12).
    pub async fn delete(&self, account_id: Uuid, id: &str) -> Result<bool, UploadError> {
        let Some(id) = parse_public_id(id) else {
            return Ok(false);
        };
        let mut conn = self
            .database
            .connection()
            .await
            .map_err(UploadError::store)?;
        store::schedule_deletion(&mut conn, account_id, id)
            .await
            .map_err(UploadError::store)
    }

    /// The `upload-expiry` job: uploads past their expiry are scheduled for
    /// removal (they already read as 404; this frees their quota once
    /// purged). How many were.
    pub async fn expiry_pass(&self) -> Result<u64, StoreError> {
        let mut conn = self.database.connection().await?;
        store::expire(&mut conn, PASS_BATCH).await
    }

    /// The `upload-purge` job: removes the objects of uploads scheduled for
    /// removal (their tombstones start), then drops tombstones past their
    /// keep. Without an object store there is nothing to remove objects
    /// from: the queue waits. How many uploads it handled.
    pub async fn purge_pass(&self) -> Result<u64, StoreError> {
        let mut conn = self.database.connection().await?;
        let mut processed = 0;
        if let Some(storage) = self.storage() {
            processed += store::purge(&mut conn, PASS_BATCH, |key| {
                let storage = storage.clone();
                async move { storage.remove(&key).await }
            })
            .await?;
        }
        processed += store::drop_tombstones(&mut conn, self.settings.tombstone, PASS_BATCH).await?;
        Ok(processed)
    }
}

impl Upload<'_> {
    /// Reads the body (`content_type` is the request's) to its end, checks
    /// its shape and its file, admits the upload and stores it. From
    /// admission on, the upload counts toward the rate whatever happens.
    pub async fn receive<S, E>(
        mut self,
        content_type: &str,
        body: S,
    ) -> Result<UploadRecord, UploadError>
    where
        S: Stream<Item = Result<Bytes, E>> + Unpin,
        E: ReadFailure,
    {
        let uploads = self.uploads;
        let settings = &uploads.settings;
        let part = read_multipart(settings, content_type, body, self.limit).await?;
        self.ticket.settle(part.bytes);
        let (mime, width, height) = check_file(&part).await?;
        let new = NewUpload {
            account_id: self.account_id,
            object_key: store::new_object_key(),
            filename: part.filename.clone(),
            bytes: i64::try_from(part.bytes).unwrap_or(i64::MAX),
            mime_type: mime.to_owned(),
            width,
            height,
            ttl: settings.ttl,
        };
        let mut conn = uploads
            .database
            .connection()
            .await
            .map_err(UploadError::store)?;
        let row = store::admit(&mut conn, &new).await?;
        self.ticket.admitted();
        let Some(storage) = &settings.storage else {
            store::mark_failed(&mut conn, row.id)
                .await
                .map_err(UploadError::store)?;
            tracing::warn!("an upload was refused: ROUTER_OBJECT_STORE is not set");
            return Err(UploadError::Unavailable);
        };
        if let Err(e) = storage
            .put_file(&row.object_key, &part.spool.path, part.bytes)
            .await
        {
            tracing::error!(error = %e, "an upload could not be stored");
            store::mark_failed(&mut conn, row.id)
                .await
                .map_err(UploadError::store)?;
            return Err(UploadError::Unavailable);
        }
        if !store::mark_stored(&mut conn, row.id)
            .await
            .map_err(UploadError::store)?
        {
            // The account's zero data retention went on while it was written:
            // the upload was scheduled for deletion with all the others.
            storage.remove(&row.object_key).await;
            return Err(UploadError::DataProtection);
        }
        Ok(UploadRecord::of(&row))
    }
}
