//! The client side: the create body the gateway accepts, the video object
//! and the video error envelope.
//!
//! The create body (spec §POST /v1/videos):
//! `{model, prompt, mode, resolution, duration, aspect_ratio?, references?,
//! client_task_id}` with `references: {image_url | image_urls[], video_url |
//! video_urls[], audio_url | audio_urls[]}`. As for image generation, the body is strict: an unknown member is a 400
//! `invalid_parameter` naming it (a misspelt `aspect_ratio` must not pass
//! silently into a paid job), and `null` counts as absent, as the OpenAI
//! SDKs send it for an unset optional. Every refusal names its member in
//! `param`, with a path for nested ones (`references.image_urls[1]`).
//!
//! What needs the catalog (the model, the prompt's length, listed and
//! priced values, reference caps) is the caller's, against its own catalog.

use router_canonical::parse::{json_object, required_text};
use router_canonical::{ApiError, VideoReferences, VideoRequest, VideoStatus};
use serde::Serialize;
use serde_json::{Map, Value};

/// The longest `client_task_id`.
pub const MAX_CLIENT_TASK_ID: usize = 128;

/// The public failure reason shown when the record carries none.
pub const DEFAULT_FAIL_REASON: &str = "The video could not be generated.";

/// The relative content path of video `id` (`metadata.url`).
pub fn content_path(id: &str) -> String {
    format!("/v1/videos/{id}/content")
}

/// Validate a `POST /v1/videos` body into a [`VideoRequest`]: every rule
/// that needs no catalog.
pub fn parse_create(body: &[u8]) -> Result<VideoRequest, ApiError> {
    let object = json_object(body)?;
    for name in object.keys() {
        if !MEMBERS.contains(&name.as_str()) {
            return Err(ApiError::invalid(
                name.as_str(),
                format!("Unknown parameter `{name}`."),
            ));
        }
    }
    let model = required_text(&object, "model")?;
    let prompt = required_text(&object, "prompt")?;
    let mode = required_text(&object, "mode")?;
    let resolution = required_text(&object, "resolution")?;
    let duration_seconds = duration(object.get("duration"))?;
    let aspect_ratio = match present(&object, "aspect_ratio") {
        None => None,
        Some(_) => Some(required_text(&object, "aspect_ratio")?),
    };
    let client_task_id = client_task_id(object.get("client_task_id"))?;
    let references = match present(&object, "references") {
        None => VideoReferences::default(),
        // O-09: references belong to the references mode only.
        Some(_) if mode != "references" => {
            return Err(ApiError::invalid(
                "references",
                format!(
                    "`references` are accepted only with `mode: \"references\"`, not `{mode}`."
                ),
            ));
        }
        Some(value) => references(value)?,
    };
    Ok(VideoRequest {
        model,
        prompt,
        mode,
        resolution,
        duration_seconds,
        aspect_ratio,
        references,
        client_task_id,
    })
}

const MEMBERS: [&str; 8] = [
    "model",
    "prompt",
    "mode",
    "resolution",
    "duration",
    "aspect_ratio",
    "references",
    "client_task_id",
];

/// The member's value unless absent or `null`.
fn present<'a>(object: &'a Map<String, Value>, name: &str) -> Option<&'a Value> {
    object.get(name).filter(|v| !v.is_null())
}

/// Whole seconds: `5` and `5.0` are the same duration; a fraction,
/// a string, zero or a negative number is not a duration.
fn duration(value: Option<&Value>) -> Result<u32, ApiError> {
    let refuse = |why: &str| ApiError::invalid("duration", format!("`duration` {why}."));
    let number = match value {
        None | Some(Value::Null) => return Err(refuse("is required")),
        Some(Value::Number(number)) => number,
        Some(_) => return Err(refuse("must be a number of seconds")),
    };
    let seconds = match number.as_u64() {
        Some(n) => Some(n),
        None => number
            .as_f64()
            .filter(|f| f.fract() == 0.0 && *f >= 0.0 && *f <= f64::from(u32::MAX))
            // Exact: a whole number within u32 converts without loss.
            .map(|f| f as u64),
    };
    match seconds.map(u32::try_from) {
        Some(Ok(0)) => Err(refuse("must be at least 1 second")),
        Some(Ok(seconds)) => Ok(seconds),
        Some(Err(_)) => Err(refuse("is too large")),
        None => Err(refuse("must be a whole number of seconds")),
    }
}

/// 1–128 letters, digits, `_`, `-` or `.`.
fn client_task_id(value: Option<&Value>) -> Result<String, ApiError> {
    let refuse =
        |why: &str| ApiError::invalid("client_task_id", format!("`client_task_id` {why}."));
    match value {
        None | Some(Value::Null) => Err(refuse("is required")),
        Some(Value::String(id)) if id.is_empty() => Err(refuse("is empty")),
        Some(Value::String(id))
            if !id
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.')) =>
        {
            Err(refuse(
                "may contain only letters, digits, underscore, hyphen and period",
            ))
        }
        // ASCII only from here: bytes are characters.
        Some(Value::String(id)) if id.len() > MAX_CLIENT_TASK_ID => Err(refuse(&format!(
            "is longer than {MAX_CLIENT_TASK_ID} characters"
        ))),
        Some(Value::String(id)) => Ok(id.clone()),
        Some(_) => Err(refuse("must be a string")),
    }
}

/// The three kinds of reference, as (singular, plural) member names.
const KINDS: [(&str, &str); 3] = [
    ("image_url", "image_urls"),
    ("video_url", "video_urls"),
    ("audio_url", "audio_urls"),
];

/// The reference object.
fn references(value: &Value) -> Result<VideoReferences, ApiError> {
    let Value::Object(object) = value else {
        return Err(ApiError::invalid(
            "references",
            "`references` must be an object of media URLs.",
        ));
    };
    for name in object.keys() {
        if !KINDS.iter().any(|(one, many)| name == one || name == many) {
            return Err(ApiError::invalid(
                format!("references.{name}"),
                format!(
                    "Unknown reference `{name}`; use image_url(s), video_url(s) or audio_url(s)."
                ),
            ));
        }
    }
    let [images, videos, audios] = KINDS.map(|(one, many)| kind(object, one, many));
    Ok(VideoReferences {
        images: images?,
        videos: videos?,
        audios: audios?,
    })
}

/// The URLs of one kind: its singular member or its plural one (never
/// both; the plural with at least two entries).
fn kind(object: &Map<String, Value>, one: &str, many: &str) -> Result<Vec<String>, ApiError> {
    match (present(object, one), present(object, many)) {
        (Some(_), Some(_)) => Err(ApiError::invalid(
            format!("references.{many}"),
            format!("`{one}` and `{many}` are mutually exclusive; send one of them."),
        )),
        (None, None) => Ok(Vec::new()),
        (Some(url), None) => Ok(vec![reference_url(url, &format!("references.{one}"))?]),
        (None, Some(Value::Array(urls))) => {
            if urls.len() < 2 {
                return Err(ApiError::invalid(
                    format!("references.{many}"),
                    format!("`{many}` needs at least two URLs; send one as `{one}`."),
                ));
            }
            urls.iter()
                .enumerate()
                .map(|(i, url)| reference_url(url, &format!("references.{many}[{i}]")))
                .collect()
        }
        (None, Some(_)) => Err(ApiError::invalid(
            format!("references.{many}"),
            format!("`{many}` must be an array of URLs."),
        )),
    }
}

fn reference_url(value: &Value, param: &str) -> Result<String, ApiError> {
    let Value::String(text) = value else {
        return Err(ApiError::invalid(
            param,
            format!("`{param}` must be a URL string."),
        ));
    };
    public_url(text).map_err(|why| {
        ApiError::invalid(
            param,
            format!("`{param}` must be a publicly reachable http(s) URL: {why}."),
        )
    })?;
    Ok(text.clone())
}

pub use router_canonical::public_host::public_url;

/// What the video object shows, from the router's record of the video.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoView {
    /// The router's video ID (never the supplier's task ID).
    pub id: String,
    /// The logical model ID as submitted.
    pub model: String,
    /// Where the video is in its life.
    pub status: VideoStatus,
    /// 0–100.
    pub progress: u8,
    /// Unix seconds.
    pub created_at: i64,
    /// Unix seconds of completion or failure; rendered only in a terminal
    /// status.
    pub completed_at: Option<i64>,
    /// The public failure reason (never the supplier's text); rendered only
    /// when failed ([`DEFAULT_FAIL_REASON`] when the record has none).
    pub fail_reason: Option<String>,
    /// The relative content path; rendered only when completed
    /// ([`content_path`] when the record has none).
    pub content_url: Option<String>,
}

#[derive(Serialize)]
struct VideoObject<'a> {
    id: &'a str,
    object: &'static str,
    model: &'a str,
    status: &'static str,
    progress: u8,
    created_at: i64,
    #[serde(skip_serializing_if = "Option::is_none")]
    completed_at: Option<i64>,
    #[serde(skip_serializing_if = "Metadata::is_empty")]
    metadata: Metadata,
}

#[derive(Serialize)]
struct Metadata {
    #[serde(skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    fail_reason: Option<String>,
}

impl Metadata {
    fn is_empty(&self) -> bool {
        self.url.is_none() && self.fail_reason.is_none()
    }
}

/// The video object as JSON: `{id, object: "video", model, status,
/// progress, created_at, completed_at?, metadata?: {url?, fail_reason?}}`.
/// `completed_at` only in a terminal status, `metadata.url` only when
/// completed, `metadata.fail_reason` only when failed; `metadata` itself
/// only when it holds one of them. `progress` is capped at 100 and is 100
/// once completed.
pub fn render_video(view: &VideoView) -> Vec<u8> {
    let completed = view.status == VideoStatus::Completed;
    let failed = view.status == VideoStatus::Failed;
    let object = VideoObject {
        id: &view.id,
        object: "video",
        model: &view.model,
        status: view.status.as_str(),
        progress: if completed {
            100
        } else {
            view.progress.min(100)
        },
        created_at: view.created_at,
        completed_at: view.completed_at.filter(|_| view.status.is_terminal()),
        metadata: Metadata {
            url: completed.then(|| {
                view.content_url
                    .clone()
                    .unwrap_or_else(|| content_path(&view.id))
            }),
            fail_reason: failed.then(|| {
                view.fail_reason
                    .clone()
                    .unwrap_or_else(|| DEFAULT_FAIL_REASON.to_owned())
            }),
        },
    };
    router_canonical::openai_error::to_json_bytes(&object)
}

/// A video error: the standard envelope plus `error.requestId`, equal to
/// The reply's `x-request-id`:
/// `{"error": {"message", "type", "param", "code", "requestId"}}`.
pub fn render_error(error: &ApiError, request_id: &str) -> Vec<u8> {
    #[derive(Serialize)]
    struct Envelope<'a> {
        error: Object<'a>,
    }
    #[derive(Serialize)]
    struct Object<'a> {
        message: &'a str,
        #[serde(rename = "type")]
        kind: &'static str,
        param: Option<&'a str>,
        code: &'static str,
        #[serde(rename = "requestId")]
        request_id: &'a str,
    }
    router_canonical::openai_error::to_json_bytes(&Envelope {
        error: Object {
            message: &error.message,
            kind: error.code.openai_type(),
            param: error.param.as_deref(),
            code: error.code.as_str(),
            request_id,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{ErrorCode, ProductCode};
    use serde_json::json;

    fn body(extra: Value) -> Vec<u8> {
        let mut base = json!({
            "model": "vendor/vid",
            "prompt": "a cat",
            "mode": "references",
            "resolution": "720p",
            "duration": 5,
            "client_task_id": "job-1",
        });
        if let (Value::Object(base), Value::Object(extra)) = (&mut base, extra) {
            for (k, v) in extra {
                if v == json!("__remove__") {
                    base.remove(&k);
                } else {
                    base.insert(k, v);
                }
            }
        }
        serde_json::to_vec(&base).unwrap()
    }

    fn param_of(extra: Value) -> Option<String> {
        let error = parse_create(&body(extra)).unwrap_err();
        assert_eq!(error.code, ErrorCode::InvalidParameter, "{error:?}");
        error.param
    }

    fn refs(references: Value) -> Value {
        json!({"references": references})
    }

    #[test]
    fn a_full_request_parses() {
        let request = parse_create(&body(json!({
            "aspect_ratio": "16:9",
            "references": {"image_url": "https://media.example/a.png",
                           "video_urls": ["https://media.example/a.mp4", "http://8.8.8.8/b.mp4"]},
        })))
        .unwrap();
        assert_eq!(request.model, "vendor/vid");
        assert_eq!(request.mode, "references");
        assert_eq!(request.duration_seconds, 5);
        assert_eq!(request.aspect_ratio.as_deref(), Some("16:9"));
        assert_eq!(request.references.images, ["https://media.example/a.png"]);
        assert_eq!(request.references.videos.len(), 2);
        assert!(request.references.audios.is_empty());
        assert_eq!(request.client_task_id, "job-1");
        // `null` is absent for the optional members.
        let nulls = parse_create(&body(json!({"aspect_ratio": null, "references": null}))).unwrap();
        assert_eq!(nulls.aspect_ratio, None);
        assert!(nulls.references.is_empty());
    }

    /// Every required member.
    #[test]
    fn every_required_member_is_named_when_missing() {
        for name in [
            "model",
            "prompt",
            "mode",
            "resolution",
            "duration",
            "client_task_id",
        ] {
            assert_eq!(param_of(json!({name: "__remove__"})).as_deref(), Some(name));
            assert_eq!(param_of(json!({name: null})).as_deref(), Some(name));
        }
        for name in ["model", "prompt", "mode", "resolution"] {
            assert_eq!(param_of(json!({name: " "})).as_deref(), Some(name));
            assert_eq!(param_of(json!({name: 5})).as_deref(), Some(name));
        }
    }

    /// `5.0` is `5`; a fraction, a string, zero or a negative is not a duration.
    #[test]
    fn duration_is_whole_seconds() {
        for (value, seconds) in [(json!(5), 5), (json!(5.0), 5), (json!(10), 10)] {
            let request = parse_create(&body(json!({"duration": value}))).unwrap();
            assert_eq!(request.duration_seconds, seconds);
        }
        assert_eq!(
            parse_create(br#"{"model":"m","prompt":"p","mode":"references","resolution":"r","duration":5e0,"client_task_id":"x"}"#)
                .unwrap()
                .duration_seconds,
            5
        );
        for bad in [
            json!(5.5),
            json!("5"),
            json!(0),
            json!(-5),
            json!(1e12),
            json!(true),
        ] {
            assert_eq!(
                param_of(json!({"duration": bad})).as_deref(),
                Some("duration"),
                "{bad}"
            );
        }
    }

    /// 1–128 of `[A-Za-z0-9_.-]`.
    #[test]
    fn client_task_id_rules() {
        let longest: String = "aZ9_.-".repeat(22)[..128].to_owned();
        let request = parse_create(&body(json!({"client_task_id": longest}))).unwrap();
        assert_eq!(request.client_task_id.len(), 128);
        for bad in [
            json!(""),
            json!("a".repeat(129)),
            json!("a b"),
            json!("a/b"),
            json!("é"),
            json!("a\nb"),
            json!(7),
        ] {
            assert_eq!(
                param_of(json!({"client_task_id": bad})).as_deref(),
                Some("client_task_id"),
                "{bad}"
            );
        }
    }

    /// GP-27-style strictness: unknown members are named, in the body and in references.
    #[test]
    fn unknown_members_are_named() {
        assert_eq!(
            param_of(json!({"aspect": "16:9"})).as_deref(),
            Some("aspect")
        );
        assert_eq!(
            param_of(json!({"seconds": "4"})).as_deref(),
            Some("seconds")
        );
        assert_eq!(
            param_of(refs(json!({"image": "https://media.example/a.png"}))).as_deref(),
            Some("references.image")
        );
        assert_eq!(
            param_of(json!({"aspect_ratio": 1})).as_deref(),
            Some("aspect_ratio")
        );
        assert!(parse_create(b"[1]").is_err());
        assert!(parse_create(b"{").is_err());
        assert_eq!(
            param_of(refs(json!(["https://media.example/a.png"]))).as_deref(),
            Some("references")
        );
    }

    /// references only with `mode: "references"` (even an empty object).
    #[test]
    fn references_need_the_references_mode() {
        let with_mode = |mode: &str, references: Value| {
            parse_create(&body(json!({"mode": mode, "references": references})))
        };
        let one = json!({"image_url": "https://media.example/a.png"});
        assert_eq!(
            with_mode("text", one.clone()).unwrap_err().param.as_deref(),
            Some("references")
        );
        assert_eq!(
            with_mode("text", json!({})).unwrap_err().param.as_deref(),
            Some("references")
        );
        assert!(with_mode("references", one).is_ok());
        // Another mode without references passes here (the catalog decides, GP-21).
        let request = parse_create(&body(json!({"mode": "text"}))).unwrap();
        assert_eq!(request.mode, "text");
    }

    /// O-11 (pairs exclusive) and O-12 (plurals of two or more).
    #[test]
    fn singular_plural_pairs() {
        let a = "https://media.example/a";
        let b = "https://media.example/b";
        for (one, many) in KINDS {
            assert_eq!(
                param_of(refs(json!({one: a, many: [a, b]}))).as_deref(),
                Some(format!("references.{many}").as_str())
            );
            assert_eq!(
                param_of(refs(json!({many: [a]}))).as_deref(),
                Some(format!("references.{many}").as_str())
            );
            assert_eq!(
                param_of(refs(json!({many: []}))).as_deref(),
                Some(format!("references.{many}").as_str())
            );
            assert_eq!(
                param_of(refs(json!({many: a}))).as_deref(),
                Some(format!("references.{many}").as_str())
            );
            assert_eq!(
                param_of(refs(json!({one: [a, b]}))).as_deref(),
                Some(format!("references.{one}").as_str())
            );
            // A null partner is absent.
            assert!(parse_create(&body(refs(json!({one: a, many: null})))).is_ok());
            assert!(parse_create(&body(refs(json!({many: [a, b]})))).is_ok());
        }
    }

    /// The SSRF and non-URL corpus, refused without fetching.
    #[test]
    fn only_public_http_urls_are_references() {
        let refused = [
            "data:image/png;base64,iVBORw0KGgo=",
            "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk",
            "upl_01HZX3K9Q2",
            "file_abc123",
            "blob:https://media.example/550e8400-e29b-41d4-a716-446655440000",
            "file:///etc/passwd",
            "ftp://media.example/a.png",
            "gopher://media.example/",
            "//media.example/a.png",
            "/v1/uploads/upl_1",
            "https://",
            "http://localhost/a.png",
            "http://localhost./a.png",
            "http://LOCALHOST/a.png",
            "http://api.localhost/a.png",
            "http://127.0.0.1/a.png",
            "http://127.1/a.png",
            "http://2130706433/a.png",
            "http://0x7f000001/a.png",
            "http://0x7f.1/a.png",
            "http://0177.0.0.1/a.png",
            "http://017700000001/a.png",
            "http://10.0.0.1/a.png",
            "http://172.16.0.1/a.png",
            "http://192.168.1.1/a.png",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/a.png",
            "http://0.0.0.0/a.png",
            "http://0/a.png",
            "http://224.0.0.1/a.png",
            "http://255.255.255.255/a.png",
            "http://[::1]/a.png",
            "http://[::]/a.png",
            "http://[fc00::1]/a.png",
            "http://[fe80::1]/a.png",
            "http://[ff02::1]/a.png",
            "http://[::ffff:127.0.0.1]/a.png",
            "http://[::ffff:7f00:1]/a.png",
            "http://[::127.0.0.1]/a.png",
            "http://[::ffff:169.254.169.254]/a.png",
            "http://[64:ff9b::a9fe:a9fe]/a.png",
            "http://user@media.example/a.png",
            "http://user:pw@media.example/a.png",
            "http://media.example@127.0.0.1/a.png",
            "http://intranet/a.png",
            "http://metadata/computeMetadata/v1/",
            "http://printer.local/a.png",
            "http://metadata.google.internal/a",
            "http://router.home.arpa/a",
            " https://media.example/a.png",
            "https://media.example/a.png\n",
        ];
        for url in refused {
            let param = param_of(refs(json!({"image_url": url})));
            assert_eq!(param.as_deref(), Some("references.image_url"), "{url}");
            assert!(public_url(url).is_err(), "{url}");
        }
        for url in [
            "https://media.example/a.png",
            "http://media.example:8080/a.png?x=1#f",
            "https://8.8.8.8/a.png",
            "https://[2606:4700:4700::1111]/a.png",
            "https://cdn.example.com./a.png",
            "https://localhost.example.com/a.png",
        ] {
            assert_eq!(public_url(url), Ok(()), "{url}");
        }
        // The position of a refused URL in a plural is named.
        assert_eq!(
            param_of(refs(
                json!({"audio_urls": ["https://media.example/a", "http://10.1.1.1/b"]})
            ))
            .as_deref(),
            Some("references.audio_urls[1]")
        );
        let message = parse_create(&body(refs(
            json!({"image_url": "data:image/png;base64,AA=="}),
        )))
        .unwrap_err()
        .message;
        assert!(message.contains("http"), "{message}");
    }

    /// key order, whitespace and `5` vs `5.0` do not
    /// change the fingerprint; any parameter does.
    #[test]
    fn the_fingerprint_ignores_form_not_content() {
        let fingerprint = |text: &str| parse_create(text.as_bytes()).unwrap().fingerprint_input();
        let a = fingerprint(
            r#"{"model":"m","prompt":"p","mode":"references","resolution":"720p","duration":5,"client_task_id":"k","references":{"image_urls":["https://a.example/1","https://a.example/2"]}}"#,
        );
        let b = fingerprint(
            r#"{ "client_task_id" : "k", "references": {"image_urls": ["https://a.example/1", "https://a.example/2"]},
                "duration": 5.0, "resolution": "720p",
                "mode": "references", "prompt": "p", "model": "m", "aspect_ratio": null }"#,
        );
        assert_eq!(a, b);
        let other_duration = fingerprint(
            r#"{"model":"m","prompt":"p","mode":"references","resolution":"720p","duration":10,"client_task_id":"k","references":{"image_urls":["https://a.example/1","https://a.example/2"]}}"#,
        );
        assert_ne!(a, other_duration);
        let reordered_urls = fingerprint(
            r#"{"model":"m","prompt":"p","mode":"references","resolution":"720p","duration":5,"client_task_id":"k","references":{"image_urls":["https://a.example/2","https://a.example/1"]}}"#,
        );
        assert_ne!(a, reordered_urls, "the order of references is content");
    }

    fn view(status: VideoStatus) -> VideoView {
        VideoView {
            id: "vid_1".into(),
            model: "alias/vid".into(),
            status,
            progress: 40,
            created_at: 1_700_000_000,
            completed_at: Some(1_700_000_100),
            fail_reason: Some("The video could not be generated: content policy.".into()),
            content_url: None,
        }
    }

    fn rendered(view: &VideoView) -> Value {
        serde_json::from_slice(&render_video(view)).unwrap()
    }

    /// The object in each status.
    #[test]
    fn the_video_object_shows_what_each_status_allows() {
        let queued = rendered(&VideoView {
            progress: 0,
            completed_at: None,
            ..view(VideoStatus::Queued)
        });
        assert_eq!(
            queued,
            json!({"id": "vid_1", "object": "video", "model": "alias/vid", "status": "queued",
                   "progress": 0, "created_at": 1_700_000_000})
        );
        for status in [
            VideoStatus::Queued,
            VideoStatus::InProgress,
            VideoStatus::Unknown,
        ] {
            let value = rendered(&view(status));
            assert_eq!(value["status"], status.as_str());
            assert!(value.get("completed_at").is_none(), "{status:?}");
            assert!(value.get("metadata").is_none(), "{status:?}");
            assert_eq!(value["progress"], 40);
        }
        let completed = rendered(&view(VideoStatus::Completed));
        assert_eq!(completed["completed_at"], 1_700_000_100);
        assert_eq!(completed["progress"], 100);
        assert_eq!(
            completed["metadata"],
            json!({"url": "/v1/videos/vid_1/content"})
        );
        let failed = rendered(&view(VideoStatus::Failed));
        assert_eq!(failed["completed_at"], 1_700_000_100);
        assert_eq!(
            failed["metadata"],
            json!({"fail_reason": "The video could not be generated: content policy."})
        );
        let bare_failure = rendered(&VideoView {
            fail_reason: None,
            ..view(VideoStatus::Failed)
        });
        assert_eq!(bare_failure["metadata"]["fail_reason"], DEFAULT_FAIL_REASON);
        let capped = rendered(&VideoView {
            progress: 250,
            ..view(VideoStatus::InProgress)
        });
        assert_eq!(capped["progress"], 100);
    }

    /// The standard envelope plus `requestId`.
    #[test]
    fn errors_carry_the_request_id() {
        // A gateway's product code (router-core defines this one), rendered
        // like a protocol code; the statuses of the video codes are pinned
        // beside their definitions.
        const IDEMPOTENCY_CONFLICT: ErrorCode =
            ErrorCode::Product(&ProductCode::new("idempotency_conflict", 409));
        let error = ApiError::new(IDEMPOTENCY_CONFLICT, "different parameters");
        let value: Value = serde_json::from_slice(&render_error(&error, "req-1")).unwrap();
        assert_eq!(
            value,
            json!({"error": {"message": "different parameters", "type": "invalid_request_error",
                             "param": null, "code": "idempotency_conflict", "requestId": "req-1"}})
        );
        let named = ApiError::invalid("duration", "bad");
        let value: Value = serde_json::from_slice(&render_error(&named, "r")).unwrap();
        assert_eq!(value["error"]["param"], "duration");
        assert_eq!(value["error"]["code"], "invalid_parameter");
    }

    proptest::proptest! {
        /// Any bytes: a request or a named 400, never a panic.
        #[test]
        fn any_body_parses_or_is_refused(body in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
            if let Err(error) = parse_create(&body) {
                proptest::prop_assert_eq!(error.code, ErrorCode::InvalidParameter);
            }
        }

        /// Any reference text: judged without panicking, and what passes is
        /// an http(s) URL without credentials.
        #[test]
        fn any_reference_text_is_judged(text in "(https?://)?[a-zA-Z0-9.:@\\[\\]/%_-]{0,40}") {
            if public_url(&text).is_ok() {
                let url = url::Url::parse(&text).unwrap();
                proptest::prop_assert!(matches!(url.scheme(), "http" | "https"));
                proptest::prop_assert!(url.username().is_empty() && url.password().is_none());
            }
        }
    }
}
