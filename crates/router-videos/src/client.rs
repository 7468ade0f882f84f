//! The client side: the create body the gateway accepts, the video object
//! and the video error envelope.

use router_canonical::{ApiError, VideoRequest, VideoStatus};

/// Validate a `POST /v1/videos` body into a [`VideoRequest`]: every rule
/// that needs no catalog.
pub fn parse_create(body: &[u8]) -> Result<VideoRequest, ApiError> {
    let _ = body;
    todo!()
}

/// What the video object shows, from the router's record of the video.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoView {
    /// The router's video ID (never the supplier's task ID).
    pub id: String,
    /// The logical model ID as submitted (O-22).
    pub model: String,
    pub status: VideoStatus,
    /// 0–100.
    pub progress: u8,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds of completion or failure; rendered only in a terminal
    /// status.
    pub completed_at: Option<i64>,
    /// The public failure reason (never the supplier's text); rendered only
    /// when failed.
    pub fail_reason: Option<String>,
    /// The relative content path (`/v1/videos/{id}/content`); rendered only
    /// when completed.
    pub content_url: Option<String>,
}

/// The video object (O-21) as JSON.
pub fn render_video(view: &VideoView) -> Vec<u8> {
    let _ = view;
    todo!()
}

/// A video error: the standard envelope plus `error.requestId`, equal to
/// the reply's `x-request-id` (P-03, O-31).
pub fn render_error(error: &ApiError, request_id: &str) -> Vec<u8> {
    let _ = (error, request_id);
    todo!()
}
