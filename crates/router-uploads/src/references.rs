//! Uploads referenced by inference requests (`file_id` in an image part):
//! resolved to their bytes before routing, so the supplier gets them in
//! its own dialect (base64 data), never our ID.

use crate::Uploads;
use crate::error::UploadError;
use crate::record::parse_public_id;
use bytes::Bytes;
use router_canonical::{ApiError, ContentPart, ImageSource, Request};
use router_core::UploadReferences;
use router_store::uploads as store;
use std::collections::HashMap;
use uuid::Uuid;

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

/// Each referenced upload's `(media type, base64 data)`; `None`: it does
/// not resolve.
type Resolved = HashMap<String, Option<(String, String)>>;

impl Uploads {
    /// The account's readable upload `file_id`, with its bytes.
    pub async fn resolve(
        &self,
        account_id: Uuid,
        file_id: &str,
    ) -> Result<ResolvedUpload, ResolveError> {
        let id = parse_public_id(file_id).ok_or(ResolveError::NotFound)?;
        let mut conn = self
            .database
            .connection()
            .await
            .map_err(|_| ResolveError::Unavailable)?;
        let row = store::find_readable(&mut conn, account_id, id)
            .await
            .map_err(|_| ResolveError::Unavailable)?
            .ok_or(ResolveError::NotFound)?;
        let storage = self.storage().ok_or(ResolveError::Unavailable)?;
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

    /// Replaces every upload reference (`file_id`) of an inference request
    /// by the upload's bytes. Runs before routing, so a bad reference costs
    /// no supplier call. With the account's zero data retention on
    /// (`account_zdr`), a request that references an upload is
    /// [`UploadError::ReferencesUnderDataProtection`] first (GP-42, H-13);
    /// an unknown, foreign, expired, deleted or scheduled reference is one
    /// [`UploadError::UnknownReference`] naming the part (H-03).
    pub async fn resolve_references(
        &self,
        account_id: Uuid,
        account_zdr: bool,
        request: &mut Request,
    ) -> Result<(), UploadError> {
        let mut ids = Vec::new();
        for message in &request.messages {
            message.content.iter().for_each(|p| collect(p, &mut ids));
        }
        if ids.is_empty() {
            return Ok(());
        }
        if account_zdr {
            return Err(UploadError::ReferencesUnderDataProtection);
        }
        let mut resolved = Resolved::new();
        let ids: Vec<String> = ids.into_iter().map(str::to_owned).collect();
        for id in ids {
            if resolved.contains_key(&id) {
                continue;
            }
            let found = match self.resolve(account_id, &id).await {
                Ok(upload) => {
                    use base64::Engine as _;
                    let data = base64::engine::general_purpose::STANDARD.encode(&upload.bytes);
                    Some((upload.mime_type, data))
                }
                Err(ResolveError::NotFound) => None,
                Err(ResolveError::Unavailable) => return Err(UploadError::Unavailable),
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
}

/// Core's port: the pipeline's upload step (`router_core::pipeline`, step
/// 1) is [`Uploads::resolve_references`] with its public error.
impl UploadReferences for Uploads {
    async fn resolve_references(
        &self,
        account_id: Uuid,
        account_zdr: bool,
        request: &mut Request,
    ) -> Result<(), ApiError> {
        Uploads::resolve_references(self, account_id, account_zdr, request)
            .await
            .map_err(ApiError::from)
    }
}

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

fn replace(part: &mut ContentPart, path: &str, resolved: &Resolved) -> Result<(), UploadError> {
    match part {
        ContentPart::Image { source, .. } => {
            if let ImageSource::Upload { file_id, param } = source {
                let Some(Some((media_type, data))) = resolved.get(file_id.as_str()) else {
                    // The client's own path when its parser gave one.
                    let named: &str = if param.is_empty() { path } else { param };
                    return Err(UploadError::UnknownReference {
                        param: named.to_owned(),
                    });
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
