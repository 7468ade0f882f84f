//! `POST /v1/uploads` and `DELETE /v1/uploads/{id}`: HTTP in and out of
//! the uploads wing (`router_uploads`), which holds the checks, the store
//! and the object store.

use crate::app::App;
use crate::body::{BodyError, Incoming};
use crate::reply::{self, Body};
use futures::TryStreamExt;
use http::{Response, StatusCode};
use http_body_util::BodyExt;
use router_canonical::ApiError;
use router_core::ownership::Resource;
use router_uploads::{MAX_ENVELOPE_BYTES, ReadFailure, UploadError};
use uuid::Uuid;

/// A body's read error as the uploads wing sees it (a local type: the
/// error and the trait are both other crates').
struct BodyRead(BodyError);

impl ReadFailure for BodyRead {
    fn timed_out(&self) -> bool {
        self.0.is_timeout()
    }
}

/// `POST /v1/uploads`.
pub async fn create(
    app: &App,
    account_id: Uuid,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let (parts, body) = request.into_parts();
    let declared = crate::body::declared_length(&parts.headers);
    let upload = match app.uploads.begin(account_id, declared).await {
        Ok(upload) => upload,
        Err(e @ UploadError::TooLarge) => {
            // 413 at once; what the client is still sending is read after
            // the answer (bounded), so it reads the 413 instead of a broken pipe.
            crate::body::drain_in_background(&parts.headers, body, 0, MAX_ENVELOPE_BYTES as usize);
            return Err(e.into());
        }
        Err(e) => return Err(e.into()),
    };
    let content_type = parts
        .headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let record = upload
        .receive(content_type, body.into_data_stream().map_err(BodyRead))
        .await?;
    let body = serde_json::to_vec(&record).unwrap_or_default();
    Ok(reply::json(StatusCode::CREATED, body, request_id))
}

/// `DELETE /v1/uploads/{id}`: anything but the caller's readable upload is
/// one 404 (GP-12).
pub async fn delete(
    app: &App,
    account_id: Uuid,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let deleted = match id {
        Some(id) => app.uploads.delete(account_id, id).await?,
        None => false,
    };
    if deleted {
        Ok(reply::no_content(request_id))
    } else {
        Err(Resource::Upload.not_found())
    }
}
