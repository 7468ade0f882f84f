//! The shapes of this crate's request and video object for an OpenAPI document (feature
//! `openapi`), next to the code that reads and renders them. They only
//! describe: nothing constructs them.

#![allow(dead_code)]

use utoipa::ToSchema;

/// A reference of a video job (`mode: "references"`).
#[derive(ToSchema)]
pub struct VideoReference {
    /// `image`, `video` or `audio`.
    #[serde(rename = "type")]
    kind: String,
    /// A public `https` URL.
    url: String,
}

/// `POST /v1/videos`: checked against the catalog's model (resolutions,
/// durations, aspect ratios, modes, prompt length; docs/guide/videos.md).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VideoCreateRequest {
    #[schema(min_length = 1)]
    model: String,
    #[schema(min_length = 1)]
    prompt: String,
    #[schema(min_length = 1)]
    mode: String,
    #[schema(min_length = 1)]
    resolution: String,
    /// Whole seconds.
    #[schema(minimum = 1)]
    duration: u32,
    #[schema(min_length = 1, max_length = 128, pattern = "^[A-Za-z0-9_.-]+$")]
    client_task_id: String,
    aspect_ratio: Option<String>,
    references: Option<Vec<VideoReference>>,
}

/// A video's outcome, once it has one.
#[derive(ToSchema)]
pub struct VideoMetadata {
    /// The content's path, once completed.
    url: Option<String>,
    /// Why it failed, once failed.
    fail_reason: Option<String>,
}

/// The video object (O-21).
#[derive(ToSchema)]
pub struct Video {
    id: String,
    /// `video`.
    object: String,
    model: String,
    /// `queued`, `in_progress`, `completed` or `failed`.
    status: String,
    #[schema(minimum = 0, maximum = 100)]
    progress: u8,
    /// Unix seconds.
    created_at: i64,
    /// Unix seconds; only in a terminal status.
    completed_at: Option<i64>,
    metadata: Option<VideoMetadata>,
}
