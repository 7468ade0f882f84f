//! The OpenAI videos supplier dialect (`{base_url}/videos`):
//!
//! * create: `POST /videos` with `{model, prompt, seconds, size}` (`seconds`
//!   a string, as OpenAI spells it; `size` the request's resolution exactly
//!   as the catalog lists it, so a route's model must name its resolutions
//!   the supplier's way, e.g. `"1280x720"`). Two members beyond OpenAI's
//!   are sent only when the request has them, for OpenAI-compatible
//!   suppliers that take them: `aspect_ratio`, and `references:
//!   {image_urls?, video_urls?, audio_urls?}` (always plural lists). A model
//!   whose supplier is OpenAI itself lists no aspect ratios and no reference
//!   caps, so they never reach it. `mode` is the router's and is not
//!   sent; nor is `client_task_id` (the router's idempotency).
//! * create and poll (`GET /videos/{id}`) answer the video object `{id,
//!   object: "video", status: queued | in_progress | completed | failed,
//!   progress?, error?: {code, message}, ...}`;
//! * the file is `GET /videos/{id}/content`.
//!
//! A task ID is put in a path, so a reply whose `id` could leave its path
//! segment (`/`, `?`, `..`, anything beyond `[A-Za-z0-9_.:-]`, over 256
//! bytes) is an invalid reply, and the paths percent-encode the ID again
//! for IDs that came another way (an operator's reconciliation).

use router_canonical::openai_error::{SupplierErrorObject, bearer_auth, supplier_failure};
use router_canonical::{
    ApiError, ErrorCode, SupplierError, UpstreamState, UpstreamVideo, VideoRequest,
    VideoSupplierCodec,
};
use serde::{Deserialize, Serialize};

/// The longest task ID accepted from a supplier.
pub const MAX_TASK_ID: usize = 256;

/// Why a supplier's success reply is not a usable video object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// The body is not a video object (the parser's reason).
    #[error("the reply is not a video object: {0}")]
    Json(String),
    /// The task ID is empty, too long or not a safe path segment.
    #[error("the task ID is empty, too long or not a safe path segment")]
    TaskId,
    /// A status the dialect does not define.
    #[error("unknown video status `{0}`")]
    Status(String),
}

/// The OpenAI videos supplier codec.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenAiVideosSupplier;

#[derive(Serialize)]
struct WireCreate<'a> {
    model: &'a str,
    prompt: &'a str,
    seconds: String,
    size: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    aspect_ratio: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    references: Option<WireReferences<'a>>,
}

#[derive(Serialize)]
struct WireReferences<'a> {
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    image_urls: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    video_urls: &'a [String],
    #[serde(skip_serializing_if = "<[String]>::is_empty")]
    audio_urls: &'a [String],
}

#[derive(Deserialize)]
struct WireVideo {
    id: String,
    status: String,
    #[serde(default)]
    progress: Option<f64>,
    #[serde(default)]
    error: Option<SupplierErrorObject>,
}

/// A task ID fit for a path segment as it is.
fn safe_task_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_TASK_ID
        && id != "."
        && id != ".."
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.' | b':'))
}

/// `id` as one path segment: unreserved bytes as they are, every other
/// byte (and a `.` or `..` segment) percent-encoded.
fn segment(id: &str) -> String {
    if id == "." || id == ".." {
        return "%2E".repeat(id.len());
    }
    let mut out = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'-' | b'.' | b'~' | b':') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

impl VideoSupplierCodec for OpenAiVideosSupplier {
    fn create_path(&self) -> &'static str {
        "/videos"
    }

    fn poll_path(&self, task_id: &str) -> String {
        format!("/videos/{}", segment(task_id))
    }

    fn content_path(&self, task_id: &str) -> String {
        format!("/videos/{}/content", segment(task_id))
    }

    fn headers(&self, api_key: Option<&str>) -> Vec<(&'static str, String)> {
        bearer_auth(api_key)
    }

    fn encode_create(
        &self,
        request: &VideoRequest,
        upstream_model: &str,
    ) -> Result<Vec<u8>, ApiError> {
        let refs = &request.references;
        let size = openai_size(&request.resolution, request.aspect_ratio.as_deref());
        serde_json::to_vec(&WireCreate {
            model: upstream_model,
            prompt: &request.prompt,
            seconds: request.duration_seconds.to_string(),
            size: &size,
            aspect_ratio: request.aspect_ratio.as_deref(),
            references: (!refs.is_empty()).then_some(WireReferences {
                image_urls: &refs.images,
                video_urls: &refs.videos,
                audio_urls: &refs.audios,
            }),
        })
        .map_err(|e| {
            ApiError::new(
                ErrorCode::InternalError,
                format!("could not encode the video request: {e}"),
            )
        })
    }

    fn decode_task(&self, body: &[u8]) -> Result<UpstreamVideo, SupplierError> {
        let reply: WireVideo = serde_json::from_slice(body)
            .map_err(|e| SupplierError::invalid(DecodeError::Json(e.to_string())))?;
        if !safe_task_id(&reply.id) {
            return Err(SupplierError::invalid(DecodeError::TaskId));
        }
        let state = match reply.status.as_str() {
            "queued" => UpstreamState::Queued,
            "in_progress" => UpstreamState::InProgress,
            "completed" => UpstreamState::Completed,
            "failed" => UpstreamState::Failed {
                reason: failure_text(reply.error),
            },
            _ => return Err(SupplierError::invalid(DecodeError::Status(reply.status))),
        };
        let progress = if state == UpstreamState::Completed {
            100
        } else {
            // Clamped into 0..=100 first; `as` then truncates toward zero.
            reply.progress.unwrap_or(0.0).clamp(0.0, 100.0) as u8
        };
        Ok(UpstreamVideo {
            task_id: reply.id,
            state,
            progress,
        })
    }

    fn decode_error(
        &self,
        status: u16,
        headers: &dyn router_canonical::HeaderSource,
        body: &[u8],
    ) -> SupplierError {
        SupplierError::Reported(supplier_failure(status, headers, body))
    }
}

/// The supplier's own account of a failure, for operators only.
fn failure_text(error: Option<SupplierErrorObject>) -> String {
    let error = error.unwrap_or_default();
    match (error.code, error.message) {
        (Some(code), Some(message)) => format!("{code}: {message}"),
        (Some(text), None) | (None, Some(text)) => text,
        (None, None) => "failed without a reason".to_owned(),
    }
}

/// OpenAI's `size` (`WIDTHxHEIGHT`) for a catalog resolution: `WxH` as it
/// is; `<N>p` as N pixels on the short side, the long side from the aspect
/// ratio (`16:9` when none is given; `9:16` is portrait), rounded up to an
/// even number (`480p` → `854x480`); anything else as it is.
pub fn openai_size(resolution: &str, aspect_ratio: Option<&str>) -> String {
    let is_digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some((w, h)) = resolution.split_once('x')
        && is_digits(w)
        && is_digits(h)
    {
        return resolution.to_owned();
    }
    let Some(short) = resolution
        .strip_suffix('p')
        .filter(|n| is_digits(n) && n.len() <= 5)
        .and_then(|n| n.parse::<u64>().ok())
        .filter(|n| *n > 0)
    else {
        return resolution.to_owned();
    };
    let (a, b) = aspect_ratio
        .and_then(|r| r.split_once(':'))
        .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
        .filter(|(a, b)| *a > 0 && *b > 0 && *a <= 100 && *b <= 100)
        .unwrap_or((16, 9));
    let (wide, narrow) = (a.max(b), a.min(b));
    let mut long = (short * wide).div_ceil(narrow);
    long += long % 2;
    if a >= b {
        format!("{long}x{short}")
    } else {
        format!("{short}x{long}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::VideoReferences;
    use serde_json::{Value, json};

    fn request() -> VideoRequest {
        VideoRequest {
            model: "alias/vid".into(),
            prompt: "a cat".into(),
            mode: "references".into(),
            resolution: "1280x720".into(),
            duration_seconds: 8,
            aspect_ratio: None,
            references: VideoReferences::default(),
            client_task_id: "job-1".into(),
        }
    }

    fn encoded(request: &VideoRequest) -> Value {
        let body = OpenAiVideosSupplier
            .encode_create(request, "sora-2")
            .unwrap();
        serde_json::from_slice(&body).unwrap()
    }

    #[test]
    fn catalog_resolutions_become_openai_sizes() {
        assert_eq!(openai_size("720p", None), "1280x720");
        assert_eq!(openai_size("720p", Some("16:9")), "1280x720");
        assert_eq!(openai_size("720p", Some("9:16")), "720x1280");
        assert_eq!(openai_size("1080p", Some("16:9")), "1920x1080");
        assert_eq!(openai_size("480p", None), "854x480");
        assert_eq!(openai_size("720p", Some("1:1")), "720x720");
        assert_eq!(openai_size("1024x1792", Some("9:16")), "1024x1792");
        // Not a form it knows (or an aspect ratio it cannot read): as is,
        // or the default shape.
        assert_eq!(openai_size("hd", None), "hd");
        assert_eq!(openai_size("0p", None), "0p");
        assert_eq!(openai_size("720p", Some("wide")), "1280x720");
    }

    #[test]
    fn the_create_body_is_openais_with_extensions_only_when_present() {
        assert_eq!(
            encoded(&request()),
            json!({"model": "sora-2", "prompt": "a cat", "seconds": "8", "size": "1280x720"})
        );
        let with_extras = VideoRequest {
            aspect_ratio: Some("16:9".into()),
            references: VideoReferences {
                images: vec!["https://m.example/a.png".into()],
                videos: vec![],
                audios: vec![
                    "https://m.example/a.mp3".into(),
                    "https://m.example/b.mp3".into(),
                ],
            },
            ..request()
        };
        assert_eq!(
            encoded(&with_extras),
            json!({"model": "sora-2", "prompt": "a cat", "seconds": "8", "size": "1280x720",
                   "aspect_ratio": "16:9",
                   "references": {"image_urls": ["https://m.example/a.png"],
                                  "audio_urls": ["https://m.example/a.mp3", "https://m.example/b.mp3"]}})
        );
    }

    #[test]
    fn paths_and_headers() {
        let codec: &dyn VideoSupplierCodec = &OpenAiVideosSupplier;
        assert_eq!(codec.create_path(), "/videos");
        assert_eq!(codec.poll_path("video_123"), "/videos/video_123");
        assert_eq!(codec.content_path("video_123"), "/videos/video_123/content");
        // IDs that did not come through decode_task cannot leave their segment.
        assert_eq!(
            codec.poll_path("../admin?x=1"),
            "/videos/..%2Fadmin%3Fx%3D1"
        );
        assert_eq!(codec.poll_path(".."), "/videos/%2E%2E");
        assert_eq!(codec.content_path("a/b"), "/videos/a%2Fb/content");
        assert_eq!(
            codec.headers(Some("sk-1")),
            vec![("authorization", "Bearer sk-1".to_owned())]
        );
        assert!(codec.headers(None).is_empty());
    }

    #[test]
    fn task_replies_decode_each_status() {
        let decode =
            |body: Value| OpenAiVideosSupplier.decode_task(&serde_json::to_vec(&body).unwrap());
        let queued = decode(
            json!({"id": "video_1", "object": "video", "status": "queued",
                                   "progress": 0, "seconds": "8", "size": "1280x720"}),
        )
        .unwrap();
        assert_eq!(
            queued,
            UpstreamVideo {
                task_id: "video_1".into(),
                state: UpstreamState::Queued,
                progress: 0
            }
        );
        let running =
            decode(json!({"id": "video_1", "status": "in_progress", "progress": 42.7})).unwrap();
        assert_eq!(
            (running.state, running.progress),
            (UpstreamState::InProgress, 42)
        );
        let over = decode(json!({"id": "v", "status": "in_progress", "progress": 250})).unwrap();
        assert_eq!(over.progress, 100);
        let under = decode(json!({"id": "v", "status": "in_progress", "progress": -3})).unwrap();
        assert_eq!(under.progress, 0);
        let null = decode(json!({"id": "v", "status": "queued", "progress": null})).unwrap();
        assert_eq!(null.progress, 0);
        let done = decode(json!({"id": "v", "status": "completed", "progress": 90})).unwrap();
        assert_eq!((done.state, done.progress), (UpstreamState::Completed, 100));
        let failed = decode(json!({"id": "v", "status": "failed", "progress": 10,
            "error": {"code": "moderation_blocked", "message": "supplier-x internal: blocked"}}))
        .unwrap();
        assert_eq!(
            failed.state,
            UpstreamState::Failed {
                reason: "moderation_blocked: supplier-x internal: blocked".into()
            }
        );
        assert_eq!(failed.progress, 10);
        let bare = decode(json!({"id": "v", "status": "failed"})).unwrap();
        assert_eq!(
            bare.state,
            UpstreamState::Failed {
                reason: "failed without a reason".into()
            }
        );
    }

    #[test]
    fn unusable_replies_are_invalid() {
        for bad in [
            json!({"status": "queued"}),
            json!({"id": "v"}),
            json!({"id": "v", "status": "pending"}),
            json!({"id": "", "status": "queued"}),
            json!({"id": "../x", "status": "queued"}),
            json!({"id": "..", "status": "queued"}),
            json!({"id": "a?b", "status": "queued"}),
            json!({"id": "x".repeat(MAX_TASK_ID + 1), "status": "queued"}),
            json!({"id": 5, "status": "queued"}),
            json!([1]),
        ] {
            let error = OpenAiVideosSupplier
                .decode_task(&serde_json::to_vec(&bad).unwrap())
                .unwrap_err();
            assert!(
                matches!(error, SupplierError::InvalidReply(_)),
                "{bad}: {error}"
            );
        }
        assert!(matches!(
            OpenAiVideosSupplier.decode_task(b"not json"),
            Err(SupplierError::InvalidReply(_))
        ));
    }

    #[test]
    fn error_replies_are_reported() {
        let reported = OpenAiVideosSupplier.decode_error(
            429,
            &(),
            br#"{"error":{"type":"rate_limit_error","message":"slow down"}}"#,
        );
        let failure = reported.reported().unwrap();
        assert_eq!(failure.status, Some(429));
        assert_eq!(failure.kind.as_deref(), Some("rate_limit_error"));
        let html = OpenAiVideosSupplier.decode_error(502, &(), b"<html>");
        assert_eq!(html.reported().and_then(|f| f.status), Some(502));
    }
}
