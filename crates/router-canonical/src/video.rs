//! Video generation: the validated request, what a supplier says about its
//! task, and the supplier-side codec trait of video dialects.
//!
//! A video is an asynchronous job, not a request/reply: the router submits a
//! task once, polls it, and copies its content when it completes. Like image
//! generation it does not fit [`crate::SupplierCodec`]; [`VideoSupplierCodec`]
//! is its small sibling (as [`crate::ImageSupplierCodec`] is for images),
//! with the same typed [`SupplierError`] kinds.

use crate::ApiError;
use crate::codec::SupplierError;
use serde::Serialize;

/// Reference media of a video request: absolute public `http(s)` URLs only, checked when parsed; the router never fetches them itself.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct VideoReferences {
    /// Reference images, by URL.
    pub images: Vec<String>,
    /// Reference videos, by URL.
    pub videos: Vec<String>,
    /// Reference audio, by URL.
    pub audios: Vec<String>,
}

impl VideoReferences {
    /// How many reference assets there are, of every kind.
    pub fn total(&self) -> usize {
        self.images.len() + self.videos.len() + self.audios.len()
    }

    /// Whether there is no reference at all.
    pub fn is_empty(&self) -> bool {
        self.total() == 0
    }
}

/// One video to generate, as validated from the client's body (every rule
/// that needs no catalog has passed; the rules of a model catalog, such as
/// listed durations and sizes, are the caller's).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize)]
pub struct VideoRequest {
    /// The logical model ID (or alias) exactly as submitted; it is what the
    /// video object shows throughout.
    pub model: String,
    /// What to generate.
    pub prompt: String,
    /// The generation mode (`text`, `references`, ...).
    pub mode: String,
    /// The resolution (`720p`, ...).
    pub resolution: String,
    /// Whole seconds (a body's `5.0` is 5).
    pub duration_seconds: u32,
    /// The aspect ratio, when set.
    pub aspect_ratio: Option<String>,
    /// The reference media.
    pub references: VideoReferences,
    /// The client's idempotency key: 1–128 of `[A-Za-z0-9_.-]`.
    pub client_task_id: String,
}

impl VideoRequest {
    /// The normalized text of this request, for a fingerprint of it (a
    /// gateway hashes it to recognize a replayed submission).
    /// The parsed request is what is written, so two bodies that differ only
    /// in key order, whitespace or numeric spelling (`5` and `5.0`) give the
    /// same text, while any string differing by one character (the model as
    /// submitted included) does not. Every field takes part (an absent
    /// aspect ratio as `null`, the client task ID too), in a fixed order,
    /// under a version tag so a later form cannot collide with this.
    ///
    /// The text is the compact JSON `["video-request/v1", {model, prompt,
    /// mode, resolution, duration_seconds, aspect_ratio, references:
    /// {images, videos, audios}, client_task_id}]`, members in that order.
    pub fn fingerprint_input(&self) -> Vec<u8> {
        // Serializing a struct gives its fields in declaration order, and
        // serde_json escapes strings one way only: the text is canonical.
        serde_json::to_vec(&("video-request/v1", self)).unwrap_or_else(|_| Vec::new())
    }
}

/// The public status of a video.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VideoStatus {
    /// Waiting to start.
    Queued,
    /// Being generated.
    InProgress,
    /// Done; the content can be downloaded.
    Completed,
    /// Failed; nothing to download.
    Failed,
    /// Submission was attempted but the supplier's task is unconfirmed:
    /// held until an operator reconciles it.
    Unknown,
}

impl VideoStatus {
    /// Every status.
    pub const ALL: [VideoStatus; 5] = [
        VideoStatus::Queued,
        VideoStatus::InProgress,
        VideoStatus::Completed,
        VideoStatus::Failed,
        VideoStatus::Unknown,
    ];

    /// The wire (and stored) name.
    pub fn as_str(self) -> &'static str {
        match self {
            VideoStatus::Queued => "queued",
            VideoStatus::InProgress => "in_progress",
            VideoStatus::Completed => "completed",
            VideoStatus::Failed => "failed",
            VideoStatus::Unknown => "unknown",
        }
    }

    /// The status named `name`, if it is one.
    pub fn parse(name: &str) -> Option<VideoStatus> {
        VideoStatus::ALL.into_iter().find(|s| s.as_str() == name)
    }

    /// Completed and failed never change again.
    pub fn is_terminal(self) -> bool {
        matches!(self, VideoStatus::Completed | VideoStatus::Failed)
    }
}

/// A supplier task's state, as its reply says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UpstreamState {
    /// The supplier has not started.
    Queued,
    /// The supplier is generating.
    InProgress,
    /// The supplier finished.
    Completed,
    /// `reason` is the supplier's own text: kept for operators, never shown
    /// to a client; the client sees a generic public reason.
    Failed {
        /// The supplier's reason.
        reason: String,
    },
}

/// What a create or poll reply says about the supplier's task.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamVideo {
    /// The supplier's task ID, used for every later poll and download.
    pub task_id: String,
    /// Where the task is.
    pub state: UpstreamState,
    /// 0–100 (clamped when decoded; 100 when completed).
    pub progress: u8,
}

/// The supplier side of a video dialect. Object safe, like
/// [`crate::ImageSupplierCodec`]. Every path is appended to the supplier's
/// base URL.
pub trait VideoSupplierCodec: Send + Sync + 'static {
    /// `POST` here to create a task.
    fn create_path(&self) -> &'static str;

    /// `GET` here to poll the task `task_id`.
    fn poll_path(&self, task_id: &str) -> String;

    /// `GET` here to download the completed task's video.
    fn content_path(&self, task_id: &str) -> String;

    /// The authentication headers of one request.
    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)>;

    /// The JSON body that creates the task; `upstream_model` is what the
    /// route calls the model.
    fn encode_create(
        &self,
        request: &VideoRequest,
        upstream_model: &str,
    ) -> Result<Vec<u8>, ApiError>;

    /// Read a success reply to a create or a poll.
    fn decode_task(&self, body: &[u8]) -> Result<UpstreamVideo, SupplierError>;

    /// Read an error reply (`status` is not 2xx) with its headers: always
    /// [`SupplierError::Reported`], with the `Retry-After` it asks for.
    fn decode_error(
        &self,
        status: u16,
        headers: &dyn crate::header::HeaderSource,
        body: &[u8],
    ) -> SupplierError;
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request() -> VideoRequest {
        VideoRequest {
            model: "vendor/vid".into(),
            prompt: "a cat".into(),
            mode: "references".into(),
            resolution: "720p".into(),
            duration_seconds: 5,
            aspect_ratio: None,
            references: VideoReferences::default(),
            client_task_id: "job-1".into(),
        }
    }

    /// A fingerprint of this text is stored for a video's lifetime, so its
    /// form must not drift between releases; this pins it.
    #[test]
    fn the_fingerprint_input_is_pinned() {
        assert_eq!(
            String::from_utf8(request().fingerprint_input()).unwrap(),
            GOLDEN_INPUT
        );
    }

    /// The pinned text (its SHA-256 is pinned in the gateway's tests).
    pub(crate) const GOLDEN_INPUT: &str = r#"["video-request/v1",{"model":"vendor/vid","prompt":"a cat","mode":"references","resolution":"720p","duration_seconds":5,"aspect_ratio":null,"references":{"images":[],"videos":[],"audios":[]},"client_task_id":"job-1"}]"#;

    /// Strings exactly, every field counts.
    #[test]
    fn every_field_changes_the_fingerprint() {
        let base = request().fingerprint_input();
        let changed = [
            VideoRequest {
                model: "vendor/VID".into(),
                ..request()
            },
            VideoRequest {
                prompt: "a cat ".into(),
                ..request()
            },
            VideoRequest {
                mode: "text".into(),
                ..request()
            },
            VideoRequest {
                resolution: "1080p".into(),
                ..request()
            },
            VideoRequest {
                duration_seconds: 6,
                ..request()
            },
            VideoRequest {
                aspect_ratio: Some("16:9".into()),
                ..request()
            },
            VideoRequest {
                client_task_id: "job-2".into(),
                ..request()
            },
            VideoRequest {
                references: VideoReferences {
                    images: vec!["https://a.example/x".into()],
                    ..VideoReferences::default()
                },
                ..request()
            },
            VideoRequest {
                references: VideoReferences {
                    videos: vec!["https://a.example/x".into()],
                    ..VideoReferences::default()
                },
                ..request()
            },
        ];
        let mut seen = std::collections::HashSet::from([base]);
        for request in changed {
            assert!(seen.insert(request.fingerprint_input()), "{request:?}");
        }
    }

    #[test]
    fn statuses_round_trip_and_only_two_are_terminal() {
        for status in VideoStatus::ALL {
            assert_eq!(VideoStatus::parse(status.as_str()), Some(status));
        }
        assert_eq!(VideoStatus::parse("done"), None);
        let terminal: Vec<_> = VideoStatus::ALL
            .into_iter()
            .filter(|s| s.is_terminal())
            .collect();
        assert_eq!(terminal, [VideoStatus::Completed, VideoStatus::Failed]);
    }
}
