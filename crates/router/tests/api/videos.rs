//! Video jobs end to end (section O, A-07, A-22, P-03, P-15, CF-13, CF-14,
//! GP-20..GP-26, RELIABILITY.md I7): the real router, PostgreSQL, the
//! object store and the mock supplier's OpenAI videos endpoint. Poller
//! passes are run on demand (`POST /admin/jobs/video-poller/run`).

use crate::harness::*;
use reqwest::Method;
use router_mock_supplier::{LEAKY_VIDEO_ERROR, VideoPlan};
use router_server::videos::VideoSettings;
use serde_json::{Value, json};
use std::time::Duration;

pub const VIDEO_CATALOG: &str = r#"
[[models]]
id = "m-vid"
aliases = ["vid-alias"]
modality = "video"

[models.video]
resolutions = ["720p", "1080p", "4k"]
durations = [3, 5, 8]
aspect_ratios = ["16:9", "9:16"]
max_prompt_length = 100
references = { images = 2, videos = 1, audios = 1, audio_videos = 1, total = 3 }
rates = { "720p" = { minimum = 500_000_000, per_second = 100_000_000 }, "1080p" = { minimum = 0, per_second = 200_000_000 } }

[[routes]]
id = "vid-route"
model = "m-vid"
supplier = "acme-secret-supplier"
upstream_model = "up-vid"
protocol = "videos"
internal_cost = { input = 0, output = 0 }
"#;

const RICH: i64 = 1_000_000_000_000;
/// 720p for 8 s: max(0.50, 8 × 0.10) = 0.80 USD (O-15).
const CHARGE_8S: i64 = 800_000_000;

async fn start() -> TestRouter {
    TestRouter::start_with_catalog(VIDEO_CATALOG).await
}

fn body(task: &str) -> Value {
    json!({
        "model": "vid-alias",
        "prompt": "a cat surfing",
        "mode": "references",
        "resolution": "720p",
        "duration": 8,
        "client_task_id": task,
    })
}

async fn create(r: &TestRouter, key: &str, body: &Value) -> reqwest::Response {
    r.post("/v1/videos", key, body).await
}

async fn create_ok(r: &TestRouter, key: &str, body: &Value) -> Value {
    let resp = create(r, key, body).await;
    let status = resp.status();
    let video: Value = resp.json().await.unwrap();
    assert_eq!(status, 200, "{video}");
    video
}

async fn get(r: &TestRouter, key: &str, path: &str) -> reqwest::Response {
    r.get(path, key).await
}

async fn video(r: &TestRouter, key: &str, id: &str) -> Value {
    let resp = get(r, key, &format!("/v1/videos/{id}")).await;
    assert_eq!(resp.status(), 200);
    resp.json().await.unwrap()
}

async fn content(r: &TestRouter, key: &str, id: &str, range: Option<&str>) -> reqwest::Response {
    let mut req = r
        .client
        .get(format!("{}/v1/videos/{id}/content", r.base))
        .bearer_auth(key);
    if let Some(range) = range {
        req = req.header("range", range);
    }
    req.send().await.unwrap()
}

/// One poller pass; how many jobs it polled.
async fn poll_pass_at(base: &str, client: &reqwest::Client) -> u64 {
    let resp = client
        .post(format!("{base}/admin/jobs/video-poller/run"))
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let body: Value = resp.json().await.unwrap();
    body["processed"].as_u64().unwrap()
}

async fn poll_pass(r: &TestRouter) -> u64 {
    r.run_job("video-poller").await
}

async fn admin_video(r: &TestRouter, id: &str) -> Value {
    let (status, body) = r
        .admin(Method::GET, &format!("/admin/videos/{id}"), None)
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The video error envelope: the code, `error.requestId` = `x-request-id`
/// (P-03, O-31). Returns the body and the `x-video-id` header if any.
async fn expect_video_error(
    resp: reqwest::Response,
    status: u16,
    code: &str,
) -> (Value, Option<String>) {
    let actual = resp.status().as_u16();
    let request_id = request_id(&resp);
    let video_id = resp
        .headers()
        .get("x-video-id")
        .map(|v| v.to_str().unwrap().to_owned());
    let body: Value = resp.json().await.unwrap();
    assert_eq!(actual, status, "{body}");
    assert_eq!(body["error"]["code"], code, "{body}");
    assert_eq!(body["error"]["requestId"], request_id.as_str(), "{body}");
    for field in ["message", "type", "param"] {
        assert!(body["error"].get(field).is_some(), "{body}");
    }
    (body, video_id)
}

async fn wallet(r: &TestRouter, c: &Customer) -> (i64, i64) {
    let account = r.account(&c.account_id).await;
    (
        account["balance_nano_usd"].as_i64().unwrap(),
        account["held_nano_usd"].as_i64().unwrap(),
    )
}

/// O-01, O-15, O-21, O-22, O-24, O-26, O-27, GP-22, GP-24: create → queued
/// with the charge held; polled to completion; the content is in the
/// object store before the hold is settled, exactly once.
#[tokio::test(flavor = "multi_thread")]
async fn o01_o21_a_video_is_created_polled_to_completion_downloaded_and_charged_once() {
    let r = start().await;
    let c = r.rich_customer().await;
    let v = create_ok(&r, &c.key, &body("job-1")).await;
    let id = v["id"].as_str().unwrap().to_owned();
    assert!(id.starts_with("video_"), "{v}");
    assert_eq!(v["object"], "video");
    assert_eq!(v["status"], "queued");
    assert_eq!(v["model"], "vid-alias", "O-22: the model as submitted");
    assert_eq!(v["progress"], 0);
    assert!(v["created_at"].as_i64().unwrap() > 1_700_000_000);
    assert!(v.get("completed_at").is_none_or(Value::is_null), "{v}");
    assert!(v["metadata"].get("url").is_none_or(Value::is_null), "{v}");
    // Held, not charged (O-15: max(0.50, 8 × 0.10) = 0.80).
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S));
    let counts = r.mock.video_counts();
    assert_eq!(counts.submissions, 1);
    let task = counts.tasks[0].clone();
    // The supplier got the OpenAI create for the route's model, with the
    // route's key; never the client's key or idempotency key.
    let (sent, authorization) = &counts.created[0];
    assert_eq!(sent["model"], "up-vid", "{sent}");
    assert_eq!(sent["prompt"], "a cat surfing");
    assert_eq!(sent["seconds"], "8");
    // OpenAI sizes are WIDTHxHEIGHT: 720p at the default 16:9.
    assert_eq!(sent["size"], "1280x720");
    assert!(sent.get("client_task_id").is_none(), "{sent}");
    assert_eq!(authorization.as_deref(), Some("Bearer supplier-secret-key"));
    // First poll: in progress; progress reported, never decreasing.
    assert_eq!(poll_pass(&r).await, 1);
    let v1 = video(&r, &c.key, &id).await;
    assert_eq!(v1["status"], "in_progress", "{v1}");
    assert_eq!(v1["progress"], 50);
    assert_eq!(v1["model"], "vid-alias");
    let early = content(&r, &c.key, &id, None).await;
    expect_video_error(early, 404, "video_not_ready").await;
    // Second poll: completed; content copied, then settled.
    assert_eq!(poll_pass(&r).await, 1);
    let done = video(&r, &c.key, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["progress"], 100);
    assert_eq!(done["model"], "vid-alias");
    assert!(done["completed_at"].as_i64().unwrap() >= done["created_at"].as_i64().unwrap());
    let url = done["metadata"]["url"].as_str().unwrap();
    assert_eq!(url, format!("/v1/videos/{id}/content"));
    assert!(
        done["metadata"]
            .get("fail_reason")
            .is_none_or(Value::is_null)
    );
    assert_eq!(wallet(&r, &c).await, (RICH - CHARGE_8S, 0));
    // Completed is terminal: no more polls, no second charge.
    assert_eq!(poll_pass(&r).await, 0);
    assert_eq!(r.mock.video_counts().polls[&task], 2);
    assert_eq!(wallet(&r, &c).await, (RICH - CHARGE_8S, 0));
    // The whole file (O-26).
    let expected = r.mock.video_content(&task);
    let resp = get(&r, &c.key, url).await;
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["content-type"], "video/mp4");
    assert_eq!(resp.headers()["accept-ranges"], "bytes");
    assert_eq!(
        resp.headers()["content-length"],
        expected.len().to_string().as_str()
    );
    assert_eq!(resp.bytes().await.unwrap().as_ref(), expected.as_slice());
    // The request's history: reserved and settled once, as `videos`.
    let admin = admin_video(&r, &id).await;
    let record = r
        .request_record(admin["request_id"].as_str().unwrap())
        .await;
    assert_eq!(record["status"], "succeeded", "{record}");
    assert_eq!(record["protocol"], "videos");
    assert_eq!(record["charged_nano_usd"], CHARGE_8S);
    assert_eq!(record["hold"]["status"], "settled");
    assert_eq!(r.mock.video_counts().downloads[&task], 1);
}

/// O-27, O-28, O-29, GP-24, CF-13, CF-14: single ranges (end clamped), the
/// empty 416 and the invalid_range envelope.
#[tokio::test(flavor = "multi_thread")]
async fn o27_o29_ranges_partial_unsatisfiable_and_invalid() {
    let r = start().await;
    let c = r.rich_customer().await;
    let id = create_ok(&r, &c.key, &body("ranges")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // The default plan completes on the second poll.
    poll_pass(&r).await;
    poll_pass(&r).await;
    let task = r.mock.video_counts().tasks[0].clone();
    let file = r.mock.video_content(&task);
    let size = file.len();
    for (range, start, end) in [
        ("bytes=0-99".to_owned(), 0, 99),
        ("bytes=0-0".to_owned(), 0, 0),
        ("bytes=-500".to_owned(), size - 500, size - 1),
        ("bytes=500-".to_owned(), 500, size - 1),
        (format!("bytes=100-{}", size + 1000), 100, size - 1),
    ] {
        let resp = content(&r, &c.key, &id, Some(&range)).await;
        assert_eq!(resp.status(), 206, "{range}");
        assert_eq!(
            resp.headers()["content-range"],
            format!("bytes {start}-{end}/{size}").as_str(),
            "{range}"
        );
        assert_eq!(resp.headers()["accept-ranges"], "bytes");
        assert_eq!(resp.headers()["content-type"], "video/mp4");
        let bytes = resp.bytes().await.unwrap();
        assert_eq!(bytes.as_ref(), &file[start..=end], "{range}");
    }
    // O-28, CF-14: well-formed, unsatisfiable: empty, only the two headers.
    let resp = content(
        &r,
        &c.key,
        &id,
        Some(&format!("bytes={size}-{}", size + 10)),
    )
    .await;
    assert_eq!(resp.status(), 416);
    assert_eq!(
        resp.headers()["content-range"],
        format!("bytes */{size}").as_str()
    );
    assert_eq!(resp.headers()["accept-ranges"], "bytes");
    assert!(resp.headers().get("content-type").is_none());
    assert!(resp.headers().get("x-request-id").is_none());
    assert!(resp.bytes().await.unwrap().is_empty());
    // O-29, CF-13: malformed, multi-range, another unit → the envelope.
    for bad in ["bytes=0-1,5-6", "bytes=abc", "items=0-1", "bytes=5-1"] {
        let resp = content(&r, &c.key, &id, Some(bad)).await;
        expect_video_error(resp, 416, "invalid_range").await;
    }
    // A number past u64 (20 digits) is a broken header, not a seek past the
    // end: the envelope (never a 500).
    let resp = content(&r, &c.key, &id, Some("bytes=99999999999999999999-")).await;
    expect_video_error(resp, 416, "invalid_range").await;
}

/// O-16, O-17, O-18, GP-26, O-31: the same key and normalized request is the
/// same video (keys reordered, 5 == 5.0); other parameters → 409, no job; a
/// new key is a new video.
#[tokio::test(flavor = "multi_thread")]
async fn o16_o18_idempotency_by_client_task_id() {
    let r = start().await;
    let c = r.rich_customer().await;
    let first = create_ok(&r, &c.key, &body("same")).await;
    // Keys reordered, whitespace, 8.0 for 8: the same normalized request.
    let text = r#"{ "client_task_id": "same", "duration": 8.0, "resolution": "720p",
        "mode": "references", "prompt": "a cat surfing", "model": "vid-alias" }"#;
    let resp = r
        .client
        .post(format!("{}/v1/videos", r.base))
        .bearer_auth(&c.key)
        .header("content-type", "application/json")
        .body(text)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let again: Value = resp.json().await.unwrap();
    assert_eq!(again["id"], first["id"]);
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S), "one hold");
    // O-17: another duration → 409, no job, no hold.
    let mut changed = body("same");
    changed["duration"] = json!(5);
    let (error, _) = expect_video_error(
        create(&r, &c.key, &changed).await,
        409,
        "idempotency_conflict",
    )
    .await;
    assert_eq!(error["error"]["param"], "client_task_id");
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S));
    // O-18: a new key is a new video.
    let other = create_ok(&r, &c.key, &body("other")).await;
    assert_ne!(other["id"], first["id"]);
    assert_eq!(r.mock.video_counts().submissions, 2);
    // GP-26: keys are per team: another account may use the same key.
    let b = r.rich_customer().await;
    let theirs = create_ok(&r, &b.key, &body("same")).await;
    assert_ne!(theirs["id"], first["id"]);
}

/// O-19, GP-25, O-32, I7: the supplier took the body and dropped the
/// connection → 503 submission_unknown with x-video-id; the replay is the
/// same and never resubmits; the hold stays (the reaper leaves it) until an
/// operator gives the task id, then polling resumes and settles once.
#[tokio::test(flavor = "multi_thread")]
async fn o19_a_lost_submission_is_unknown_held_and_reconciled_by_task_id() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock
        .set_video_plan(Some("up-vid"), VideoPlan::DropOnSubmit);
    let (_, video_id) = expect_video_error(
        create(&r, &c.key, &body("lost")).await,
        503,
        "submission_unknown",
    )
    .await;
    let id = video_id.expect("x-video-id");
    let (_, replayed) = expect_video_error(
        create(&r, &c.key, &body("lost")).await,
        503,
        "submission_unknown",
    )
    .await;
    assert_eq!(replayed.as_deref(), Some(id.as_str()));
    assert_eq!(r.mock.video_counts().submissions, 1, "never resubmitted");
    let v = video(&r, &c.key, &id).await;
    assert_eq!(v["status"], "unknown", "{v}");
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S), "held");
    // Neither the poller nor the reaper touches it.
    assert_eq!(poll_pass(&r).await, 0);
    let (status, reaped) = r
        .admin(Method::POST, "/admin/jobs/hold-reaper/run", None)
        .await;
    assert_eq!((status, reaped["processed"].as_u64()), (200, Some(0)));
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S));
    // The operator sees what happened and reconciles with the task id.
    let admin = admin_video(&r, &id).await;
    assert_eq!(admin["status"], "unknown");
    assert!(admin["supplier_error"].as_str().is_some(), "{admin}");
    let task = r.mock.video_counts().tasks[0].clone();
    let (status, reconciled) = r
        .admin(
            Method::POST,
            &format!("/admin/videos/{id}/reconcile"),
            Some(json!({"upstream_task_id": task})),
        )
        .await;
    assert_eq!(status, 200, "{reconciled}");
    assert_eq!(reconciled["status"], "queued");
    // A second reconciliation is refused: it is no longer unknown.
    let (status, _) = r
        .admin(
            Method::POST,
            &format!("/admin/videos/{id}/reconcile"),
            Some(json!({"outcome": "failed", "reason": "late"})),
        )
        .await;
    assert_eq!(status, 409);
    // The job's plan (drop) never finishes at the mock: in progress.
    assert_eq!(poll_pass(&r).await, 1);
    assert_eq!(video(&r, &c.key, &id).await["status"], "in_progress");
    // GP-25: after reconciliation the replay is 200 with the video.
    let replay = create_ok(&r, &c.key, &body("lost")).await;
    assert_eq!(replay["id"], id.as_str());
    assert_eq!(r.mock.video_counts().submissions, 1);
}

/// O-32, GP-25: an unknown job reconciled as failed is released, once.
#[tokio::test(flavor = "multi_thread")]
async fn o32_an_unknown_job_reconciled_as_failed_is_released_once() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock.set_video_plan(None, VideoPlan::DropOnSubmit);
    let (_, id) = expect_video_error(
        create(&r, &c.key, &body("gone")).await,
        503,
        "submission_unknown",
    )
    .await;
    let id = id.unwrap();
    let (status, body_) = r
        .admin(
            Method::POST,
            &format!("/admin/videos/{id}/reconcile"),
            Some(json!({"outcome": "failed", "reason": "supplier has no such task"})),
        )
        .await;
    assert_eq!(status, 200, "{body_}");
    assert_eq!(body_["status"], "failed");
    assert_eq!(wallet(&r, &c).await, (RICH, 0), "released, nothing charged");
    let v = video(&r, &c.key, &id).await;
    assert_eq!(v["status"], "failed");
    assert!(v["metadata"]["fail_reason"].as_str().is_some());
    let (status, _) = r
        .admin(
            Method::POST,
            &format!("/admin/videos/{id}/reconcile"),
            Some(json!({"outcome": "failed", "reason": "again"})),
        )
        .await;
    assert_eq!(status, 409, "released once");
    // Unknown fields and half forms are refused (400).
    for bad in [
        json!({"outcome": "failed", "extra": 1}),
        json!({"outcome": "completed"}),
        json!({}),
    ] {
        let (status, _) = r
            .admin(
                Method::POST,
                &format!("/admin/videos/{id}/reconcile"),
                Some(bad),
            )
            .await;
        assert_eq!(status, 400);
    }
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
}

/// O-21, O-32, P-08, new-api #2050: a job the supplier fails is released,
/// shows a public reason, and the supplier's text reaches only operators.
#[tokio::test(flavor = "multi_thread")]
async fn o32_a_failed_job_is_released_and_its_supplier_text_never_shown() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock.set_video_plan(None, VideoPlan::leaky_failure());
    let id = create_ok(&r, &c.key, &body("fails")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(poll_pass(&r).await, 1);
    let resp = get(&r, &c.key, &format!("/v1/videos/{id}")).await;
    let text = resp.text().await.unwrap();
    assert!(
        !text.contains("gpu-node-7") && !text.contains("canary"),
        "{text}"
    );
    let v: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["status"], "failed");
    assert!(v["completed_at"].as_i64().is_some());
    assert!(v["metadata"]["fail_reason"].as_str().is_some());
    assert!(v["metadata"].get("url").is_none_or(Value::is_null));
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    // GP-24: a failed video has no content.
    expect_video_error(content(&r, &c.key, &id, None).await, 404, "video_not_ready").await;
    // Terminal: never polled again; still released once.
    assert_eq!(poll_pass(&r).await, 0);
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    let admin = admin_video(&r, &id).await;
    assert!(
        admin["supplier_error"]
            .as_str()
            .unwrap()
            .contains(LEAKY_VIDEO_ERROR),
        "{admin}"
    );
    let record = r
        .request_record(admin["request_id"].as_str().unwrap())
        .await;
    assert_eq!(record["status"], "failed");
    assert_eq!(record["hold"]["status"], "released");
}

/// A submission the supplier refused outright: failed and released; the
/// create answers 502 with x-video-id, and so does its replay (without a
/// second submission).
#[tokio::test(flavor = "multi_thread")]
async fn a_refused_submission_is_failed_and_released() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock.set_video_plan(
        None,
        VideoPlan::Refuse {
            status: 400,
            message: "acme-secret-supplier moderation canary".into(),
        },
    );
    let (error, id) = expect_video_error(
        create(&r, &c.key, &body("refused")).await,
        502,
        "upstream_error",
    )
    .await;
    assert!(!error.to_string().contains("canary"));
    let id = id.expect("x-video-id");
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    let (_, again) = expect_video_error(
        create(&r, &c.key, &body("refused")).await,
        502,
        "upstream_error",
    )
    .await;
    assert_eq!(again.as_deref(), Some(id.as_str()));
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(video(&r, &c.key, &id).await["status"], "failed");
}

/// Issue 33: a submission answered with a redirect is not followed (the
/// prompt and the supplier key would go to its target): refused, failed
/// and released after one submission; the target is never reached.
#[tokio::test(flavor = "multi_thread")]
async fn a_redirected_submission_is_not_followed_and_released() {
    let r = start().await;
    let c = r.rich_customer().await;
    let canary = Canary::start().await;
    r.mock.set_video_plan(
        None,
        VideoPlan::Redirect {
            status: 307,
            location: format!("{}/v1/videos", canary.base),
        },
    );
    let (_, id) = expect_video_error(
        create(&r, &c.key, &body("redirected")).await,
        502,
        "upstream_error",
    )
    .await;
    let id = id.expect("x-video-id");
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(video(&r, &c.key, &id).await["status"], "failed");
    assert_eq!(canary.hits(), 0, "the redirect target was never reached");
}

/// O-20, O-23, O-25, O-30, A-22, GP-72: unknown, malformed and another
/// team's ids are one 404 task_not_found; content before completion is
/// video_not_ready.
#[tokio::test(flavor = "multi_thread")]
async fn o20_o23_o30_foreign_unknown_and_malformed_ids_are_not_found() {
    let r = start().await;
    let a = r.rich_customer().await;
    let b = r.rich_customer().await;
    let id = create_ok(&r, &a.key, &body("mine")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    expect_video_error(content(&r, &a.key, &id, None).await, 404, "video_not_ready").await;
    let foreign = get(&r, &b.key, &format!("/v1/videos/{id}")).await;
    let (foreign, _) = expect_video_error(foreign, 404, "task_not_found").await;
    let (foreign_content, _) =
        expect_video_error(content(&r, &b.key, &id, None).await, 404, "task_not_found").await;
    for bad in [
        "video_0123456789abcdef0123456789abcdef".to_owned(),
        "..%2f".to_owned(),
        "video_%00".to_owned(),
        "x".repeat(10_000),
        "vidéo".to_owned(),
    ] {
        let resp = get(&r, &a.key, &format!("/v1/videos/{bad}")).await;
        let (unknown, _) = expect_video_error(resp, 404, "task_not_found").await;
        assert_eq!(unknown["error"]["message"], foreign["error"]["message"]);
    }
    assert_eq!(
        foreign_content["error"]["message"],
        foreign["error"]["message"]
    );
}

/// O-02, O-03, O-07, O-33, O-34, A-07: refusals before any money or job.
#[tokio::test(flavor = "multi_thread")]
async fn o02_o34_refusals_happen_before_money_and_submission() {
    let r = start().await;
    let c = r.rich_customer().await;
    // O-02: 256 KiB + 1 → 413; exactly 256 KiB is not 413.
    let pad = |n: usize| {
        let mut b = body("big");
        b["prompt"] = json!("");
        let base = serde_json::to_vec(&b).unwrap().len();
        b["prompt"] = json!("a".repeat(n - base));
        b
    };
    let big = pad(262_145);
    assert_eq!(serde_json::to_vec(&big).unwrap().len(), 262_145);
    expect_video_error(create(&r, &c.key, &big).await, 413, "payload_too_large").await;
    let fits = pad(262_144);
    let resp = create(&r, &c.key, &fits).await;
    assert_eq!(resp.status(), 400, "over the prompt limit, but not 413");
    // O-34: not JSON.
    let resp = r
        .client
        .post(format!("{}/v1/videos", r.base))
        .bearer_auth(&c.key)
        .header("content-type", "text/plain")
        .body(serde_json::to_vec(&body("plain")).unwrap())
        .send()
        .await
        .unwrap();
    expect_video_error(resp, 400, "invalid_parameter").await;
    // O-03: unknown model 404, a text model 400.
    let mut unknown = body("m1");
    unknown["model"] = json!("nope");
    expect_video_error(create(&r, &c.key, &unknown).await, 404, "model_not_found").await;
    let mut text = body("m2");
    text["model"] = json!("m-text");
    let (error, _) =
        expect_video_error(create(&r, &c.key, &text).await, 400, "invalid_parameter").await;
    assert_eq!(error["error"]["param"], "model");
    // O-07: listed but not priced.
    let mut unpriced = body("m3");
    unpriced["resolution"] = json!("4k");
    expect_video_error(
        create(&r, &c.key, &unpriced).await,
        400,
        "invalid_parameter",
    )
    .await;
    // O-33: short of credits → 402, nothing submitted, nothing held.
    let poor = r.customer(100, &["inference"]).await;
    expect_video_error(
        create(&r, &poor.key, &body("poor")).await,
        402,
        "insufficient_credits",
    )
    .await;
    // A-07: a key without `inference`.
    let reader = r.customer(RICH, &["account:read"]).await;
    let resp = create(&r, &reader.key, &body("read")).await;
    assert_eq!(resp.status(), 403);
    assert_eq!(r.mock.video_counts().submissions, 0);
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    // Nothing was stored for the refused ones: the keys are still free.
    create_ok(&r, &c.key, &body("poor")).await;
}

/// A5, O-16, I7: 50 concurrent identical creates → one job, one hold, one
/// submission, 50 identical ids.
#[tokio::test(flavor = "multi_thread")]
async fn a5_fifty_concurrent_identical_creates_make_one_job() {
    let r = start().await;
    let c = r.rich_customer().await;
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(50));
    let mut tasks = Vec::new();
    for _ in 0..50 {
        let (client, base, key, barrier) = (
            r.client.clone(),
            r.base.clone(),
            c.key.clone(),
            barrier.clone(),
        );
        tasks.push(tokio::spawn(async move {
            barrier.wait().await;
            let resp = client
                .post(format!("{base}/v1/videos"))
                .bearer_auth(&key)
                .json(&body("burst"))
                .send()
                .await
                .unwrap();
            let status = resp.status().as_u16();
            let v: Value = resp.json().await.unwrap();
            (status, v["id"].as_str().unwrap_or_default().to_owned())
        }));
    }
    let mut ids = std::collections::HashSet::new();
    for task in tasks {
        let (status, id) = task.await.unwrap();
        assert_eq!(status, 200);
        ids.insert(id);
    }
    assert_eq!(ids.len(), 1, "{ids:?}");
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S), "one hold");
    // One request (hold) row for the account.
    assert_eq!(count(&r, "SELECT count(*) AS n FROM videos").await, 1);
    assert_eq!(count(&r, "SELECT count(*) AS n FROM holds").await, 1);
}

/// Two instances, a real interval: each job is polled once per interval
/// whichever instance runs the pass, however often.
#[tokio::test(flavor = "multi_thread")]
async fn two_instances_poll_each_job_once_per_interval() {
    let r = TestRouter::start_videos(
        VIDEO_CATALOG,
        VideoSettings {
            poll_interval: Duration::from_secs(3600),
        },
    )
    .await;
    let second = r.second_router().await;
    let c = r.rich_customer().await;
    for i in 0..3 {
        create_ok(&r, &c.key, &body(&format!("pair-{i}"))).await;
    }
    // Due an interval after submission: force them due now.
    sql(&r, "UPDATE videos SET next_poll_at = now()").await;
    let (a, b, a2, b2) = tokio::join!(
        poll_pass_at(&r.base, &r.client),
        poll_pass_at(&second.base, &second.client),
        poll_pass_at(&r.base, &r.client),
        poll_pass_at(&second.base, &second.client),
    );
    assert_eq!(a + b + a2 + b2, 3, "each job claimed once");
    let counts = r.mock.video_counts();
    assert_eq!(counts.tasks.len(), 3);
    for task in &counts.tasks {
        assert_eq!(counts.polls[task], 1, "{task}");
    }
}

/// GP-22: a job that never finishes stays in progress, its progress never
/// decreases, and its hold stays (neither the poller nor the reaper frees
/// it).
#[tokio::test(flavor = "multi_thread")]
async fn gp22_a_job_that_never_finishes_keeps_its_hold_and_progress_never_decreases() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock.set_video_plan(None, VideoPlan::Never);
    let id = create_ok(&r, &c.key, &body("forever")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let mut last = 0;
    for _ in 0..12 {
        assert_eq!(poll_pass(&r).await, 1);
        let v = video(&r, &c.key, &id).await;
        assert_eq!(v["status"], "in_progress");
        let p = v["progress"].as_i64().unwrap();
        assert!(p >= last && p < 100, "{p} after {last}");
        last = p;
    }
    // Even with its hold's expiry in the past, the reaper leaves it.
    sql(&r, "UPDATE holds SET expires_at = now() - interval '1 day'").await;
    let (status, reaped) = r
        .admin(Method::POST, "/admin/jobs/hold-reaper/run", None)
        .await;
    assert_eq!((status, reaped["processed"].as_u64()), (200, Some(0)));
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S));
}

/// RELIABILITY.md (c), I7: the router is killed with SIGKILL while jobs are
/// queued or in progress and one is unknown; another process on the same
/// database resumes polling: the in-progress job completes (content copied,
/// settled once), the failing one is released once, the unknown one keeps
/// its hold (the reaper runs every second and leaves it), and nothing is
/// resubmitted.
#[tokio::test(flavor = "multi_thread")]
async fn kill9_jobs_resume_or_stay_unknown_and_no_hold_is_lost_or_released_twice() {
    use router_mock_supplier::MockSupplier;
    use router_store::test_support::TestDatabase;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let store = std::env::temp_dir()
        .join("router-test-videos")
        .join(uuid::Uuid::new_v4().simple().to_string());
    let store_url = format!("file://{}", store.display());
    let env = [
        ("ROUTER_OBJECT_STORE", store_url.as_str()),
        ("ROUTER_VIDEO_POLL_INTERVAL_MS", "100"),
        ("ROUTER_HOLD_LEASE_SECS", "2"),
        ("ROUTER_REAPER_INTERVAL_SECS", "1"),
    ];
    let client = reqwest::Client::new();
    let mut first = spawn_router_process(db.url(), &mock.base_url(), &env).await;
    let admin = |base: String, method: Method, path: String, body: Option<Value>| {
        let client = client.clone();
        async move {
            let mut req = client
                .request(method, format!("{base}{path}"))
                .bearer_auth(ADMIN_TOKEN);
            if let Some(body) = body {
                req = req.json(&body);
            }
            req.send().await.unwrap().json::<Value>().await.unwrap()
        }
    };
    let account = admin(
        first.base.clone(),
        Method::POST,
        "/admin/accounts".into(),
        Some(json!({"email": "kill9@example.com"})),
    )
    .await;
    let account_id = account["id"].as_str().unwrap().to_owned();
    admin(
        first.base.clone(),
        Method::POST,
        format!("/admin/accounts/{account_id}/credits"),
        Some(json!({"amount_nano_usd": RICH})),
    )
    .await;
    let key = admin(
        first.base.clone(),
        Method::POST,
        "/admin/api-keys".into(),
        Some(json!({"account_id": account_id, "scopes": ["inference"]})),
    )
    .await["key"]
        .as_str()
        .unwrap()
        .to_owned();
    // The harness catalog's `m-video`: 720p for 10 s = max(0.10, 10 × 0.02).
    let charge = 200_000_000i64;
    let job = |task: &str| {
        json!({"model": "m-video", "prompt": "p", "mode": "references",
               "resolution": "720p", "duration": 10, "client_task_id": task})
    };
    let post = |base: String, body: Value| {
        let (client, key) = (client.clone(), key.clone());
        async move {
            client
                .post(format!("{base}/v1/videos"))
                .bearer_auth(key)
                .json(&body)
                .send()
                .await
                .unwrap()
        }
    };
    mock.set_video_plan(None, VideoPlan::Never);
    let running: Value = post(first.base.clone(), job("running"))
        .await
        .json()
        .await
        .unwrap();
    let doomed: Value = post(first.base.clone(), job("doomed"))
        .await
        .json()
        .await
        .unwrap();
    mock.set_video_plan(None, VideoPlan::DropOnSubmit);
    let lost = post(first.base.clone(), job("lost")).await;
    assert_eq!(lost.status(), 503);
    let lost_id = lost.headers()["x-video-id"].to_str().unwrap().to_owned();
    let running_id = running["id"].as_str().unwrap().to_owned();
    let doomed_id = doomed["id"].as_str().unwrap().to_owned();
    let status_of = |base: String, id: String| {
        let (client, key) = (client.clone(), key.clone());
        async move {
            client
                .get(format!("{base}/v1/videos/{id}"))
                .bearer_auth(key)
                .send()
                .await
                .unwrap()
                .json::<Value>()
                .await
                .unwrap()["status"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        }
    };
    // The background poller takes both to in_progress.
    for _ in 0..300 {
        if status_of(first.base.clone(), running_id.clone()).await == "in_progress"
            && status_of(first.base.clone(), doomed_id.clone()).await == "in_progress"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        status_of(first.base.clone(), running_id.clone()).await,
        "in_progress"
    );
    // SIGKILL.
    first.child.start_kill().unwrap();
    first.child.wait().await.unwrap();
    let tasks = mock.video_counts().tasks;
    assert_eq!(tasks.len(), 3);
    // While no router runs, the supplier finishes one and fails the other.
    assert!(mock.set_video_task_plan(&tasks[0], VideoPlan::CompleteAfter { polls: 1 }));
    assert!(mock.set_video_task_plan(&tasks[1], VideoPlan::leaky_failure()));
    let second = spawn_router_process(db.url(), &mock.base_url(), &env).await;
    for _ in 0..300 {
        if status_of(second.base.clone(), running_id.clone()).await == "completed"
            && status_of(second.base.clone(), doomed_id.clone()).await == "failed"
        {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        status_of(second.base.clone(), running_id.clone()).await,
        "completed"
    );
    assert_eq!(
        status_of(second.base.clone(), doomed_id.clone()).await,
        "failed"
    );
    assert_eq!(
        status_of(second.base.clone(), lost_id.clone()).await,
        "unknown"
    );
    // Let the reaper run at least twice more: the unknown hold stays.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let account = admin(
        second.base.clone(),
        Method::GET,
        format!("/admin/accounts/{account_id}"),
        None,
    )
    .await;
    assert_eq!(account["balance_nano_usd"], RICH - charge, "{account}");
    assert_eq!(
        account["held_nano_usd"], charge,
        "only the unknown job is held"
    );
    assert_eq!(mock.video_counts().submissions, 3, "nothing resubmitted");
    // The completed video is downloadable from the new process.
    let url = format!("{}/v1/videos/{running_id}/content", second.base);
    let resp = send_with_key(&client, reqwest::Method::GET, url, &key).await;
    let bytes = resp.bytes().await.unwrap();
    assert_eq!(bytes.as_ref(), mock.video_content(&tasks[0]).as_slice());
    let reconciliation = db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
    mock.shutdown();
    let _ = std::fs::remove_dir_all(&store);
}

/// RELIABILITY.md K7, GP-25: a job whose process died between taking the
/// hold and recording the supplier's answer (still `submitting` long after)
/// becomes `unknown` on the next poller pass: held, never resubmitted, and
/// its replay is the 503 with its id.
#[tokio::test(flavor = "multi_thread")]
async fn k7_a_submission_orphaned_by_a_dead_process_becomes_unknown_and_stays_held() {
    let r = start().await;
    let c = r.rich_customer().await;
    r.mock.set_video_plan(None, VideoPlan::Never);
    let id = create_ok(&r, &c.key, &body("orphan")).await["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // As a process killed mid-submission leaves it.
    sql(
        &r,
        "UPDATE videos SET status = 'submitting', upstream_task_id = NULL, next_poll_at = NULL,
                created_at = now() - interval '1 hour'",
    )
    .await;
    assert_eq!(poll_pass(&r).await, 0);
    assert_eq!(video(&r, &c.key, &id).await["status"], "unknown");
    let (_, replayed) = expect_video_error(
        create(&r, &c.key, &body("orphan")).await,
        503,
        "submission_unknown",
    )
    .await;
    assert_eq!(replayed.as_deref(), Some(id.as_str()));
    assert_eq!(r.mock.video_counts().submissions, 1);
    assert_eq!(wallet(&r, &c).await, (RICH, CHARGE_8S));
    let admin = admin_video(&r, &id).await;
    assert_eq!(admin["status"], "unknown");
}

/// O-03..O-14 end to end (the rules are unit-tested in router-videos and
/// router-core; here: each refusal is a 400 in the video envelope naming
/// its field, before money or submission) and O-15's two charges.
#[tokio::test(flavor = "multi_thread")]
async fn o04_o14_each_rule_refuses_with_400_and_o15_charges() {
    let r = start().await;
    let c = r.rich_customer().await;
    let with = |task: &str, change: &dyn Fn(&mut Value)| {
        let mut b = body(task);
        change(&mut b);
        b
    };
    let refs = |v: Value| move |b: &mut Value| b["references"] = v.clone();
    let cases: Vec<(&str, Value)> = vec![
        (
            "model",
            with("r1", &|b| drop(b.as_object_mut().unwrap().remove("model"))),
        ),
        (
            "prompt",
            with("r2", &|b| drop(b.as_object_mut().unwrap().remove("prompt"))),
        ),
        (
            "prompt",
            with("r3", &|b| b["prompt"] = json!("é".repeat(101))),
        ),
        (
            "mode",
            with("r4", &|b| drop(b.as_object_mut().unwrap().remove("mode"))),
        ),
        ("mode", with("r5", &|b| b["mode"] = json!("text"))),
        (
            "aspect_ratio",
            with("r6", &|b| b["aspect_ratio"] = json!("4:3")),
        ),
        (
            "resolution",
            with("r7", &|b| {
                drop(b.as_object_mut().unwrap().remove("resolution"))
            }),
        ),
        (
            "duration",
            with("r8", &|b| {
                drop(b.as_object_mut().unwrap().remove("duration"))
            }),
        ),
        ("duration", with("r9", &|b| b["duration"] = json!(4))),
        (
            "references",
            with("r10", &|b| {
                b["mode"] = json!("other");
                b["references"] = json!({"image_url": "https://cdn.example.com/a.png"});
            }),
        ),
        (
            "references",
            with(
                "r11",
                &refs(json!({"image_url": "data:image/png;base64,iVBORw0KGgo="})),
            ),
        ),
        (
            "references",
            with("r12", &refs(json!({"image_url": "upl_0123456789abcdef"}))),
        ),
        (
            "references",
            with(
                "r13",
                &refs(json!({"image_url": "http://169.254.169.254/latest"})),
            ),
        ),
        (
            "references",
            with(
                "r14",
                &refs(json!({"image_url": "http://2130706433/a.png"})),
            ),
        ),
        (
            "references",
            with(
                "r15",
                &refs(json!({
            "image_url": "https://cdn.example.com/a.png",
            "image_urls": ["https://cdn.example.com/b.png", "https://cdn.example.com/c.png"]})),
            ),
        ),
        (
            "references",
            with(
                "r16",
                &refs(json!({"image_urls": ["https://cdn.example.com/a.png"]})),
            ),
        ),
        (
            "references",
            with(
                "r17",
                &refs(json!({"image_urls": [
            "https://cdn.example.com/a.png", "https://cdn.example.com/b.png", "https://cdn.example.com/c.png"]})),
            ),
        ),
        (
            "references",
            with(
                "r18",
                &refs(json!({
            "video_url": "https://cdn.example.com/a.mp4", "audio_url": "https://cdn.example.com/a.mp3"})),
            ),
        ),
        ("client_task_id", with("", &|_| {})),
        ("client_task_id", with(&"a".repeat(129), &|_| {})),
        ("client_task_id", with("a b", &|_| {})),
        ("client_task_id", with("a/b", &|_| {})),
        (
            "client_task_id",
            with("x", &|b| {
                drop(b.as_object_mut().unwrap().remove("client_task_id"))
            }),
        ),
    ];
    for (param, bad) in &cases {
        let (error, _) =
            expect_video_error(create(&r, &c.key, bad).await, 400, "invalid_parameter").await;
        let named = error["error"]["param"].as_str().unwrap_or_default();
        assert!(named.starts_with(param), "{param}: {error} for {bad}");
    }
    assert_eq!(r.mock.video_counts().submissions, 0);
    assert_eq!(wallet(&r, &c).await, (RICH, 0));
    // O-05, O-13, O-14: at the limits it is accepted. O-15: 3 s at
    // 0.10/s is under the 0.50 minimum; 8 s is 0.80.
    let ok = with(&"a".repeat(128), &|b| {
        b["duration"] = json!(3);
        b["references"] = json!({
            "image_urls": ["https://cdn.example.com/a.png", "https://cdn.example.com/b.png"],
            "video_url": "https://cdn.example.com/a.mp4"});
    });
    create_ok(&r, &c.key, &ok).await;
    assert_eq!(wallet(&r, &c).await, (RICH, 500_000_000));
    create_ok(&r, &c.key, &body("eight")).await;
    assert_eq!(wallet(&r, &c).await, (RICH, 500_000_000 + CHARGE_8S));
}

/// Tracing (issue 30, item 9) reaches video suppliers too: the submission
/// joins the client's `traceparent` and names the request its hold belongs
/// to; the poller's and the download's background calls name the same
/// request, each in a trace of its own.
#[tokio::test(flavor = "multi_thread")]
async fn video_supplier_calls_carry_the_request_id_and_trace() {
    const TRACE_ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
    let r = start().await;
    let c = r.rich_customer().await;
    let resp = r
        .client
        .post(format!("{}/v1/videos", r.base))
        .bearer_auth(&c.key)
        .header("traceparent", format!("00-{TRACE_ID}-00f067aa0ba902b7-01"))
        .json(&body("traced"))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    let router_id = request_id(&resp);
    let created: Value = resp.json().await.unwrap();
    let id = created["id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        poll_pass(&r).await;
    }
    assert_eq!(video(&r, &c.key, &id).await["status"], "completed");

    let identities = r.mock.video_counts().identities;
    let calls: Vec<&str> = identities.iter().map(|i| i.call).collect();
    assert_eq!(calls, ["create", "poll", "poll", "content"]);
    for identity in &identities {
        assert_eq!(
            identity.request_id.as_deref(),
            Some(router_id.as_str()),
            "{identity:?}"
        );
        let traceparent = identity.traceparent.as_deref().expect("traceparent sent");
        assert_eq!(traceparent.len(), 55, "{traceparent}");
        let joins_client = traceparent.split('-').nth(1) == Some(TRACE_ID);
        assert_eq!(joins_client, identity.call == "create", "{identity:?}");
    }
}

/// Issue 32: a `videos` route takes the connection settings inference
/// routes do. On an Azure OpenAI deployment every call of the job (the
/// submission, each poll, the download) goes under the deployment path
/// with `api-version` and the resource's `api-key`, never a bearer; the
/// mock answers as Azure does without them (401, 404), so the job only
/// completes when every call carried them.
#[tokio::test(flavor = "multi_thread")]
async fn a_videos_route_on_an_azure_deployment_sends_its_connection_settings_on_every_call() {
    let r = TestRouter::start_with_catalog(
        r#"
[[suppliers]]
id = "azure-videos"
base_url = "{BASE}/openai/deployments/{model}"
auth = { type = "header", name = "api-key", key_env = "TEST_AZURE_VIDEOS_KEY" }
query = { api-version = "2025-04-01-preview" }

[[models]]
id = "m-vid-azure"
modality = "video"

[models.video]
resolutions = ["720p"]
durations = [8]
aspect_ratios = ["16:9"]
max_prompt_length = 100
references = { images = 1, total = 1 }
rates = { "720p" = { minimum = 500_000_000, per_second = 100_000_000 } }

[[routes]]
id = "azure-sora"
model = "m-vid-azure"
supplier = "azure-videos"
upstream_model = "sora-prod"
protocol = "videos"
internal_cost = { input = 0, output = 0 }
"#,
    )
    .await;
    let c = r.rich_customer().await;
    let mut request = body("azure-job");
    request["model"] = json!("m-vid-azure");
    let created = create_ok(&r, &c.key, &request).await;
    let id = created["id"].as_str().unwrap().to_owned();
    for _ in 0..2 {
        poll_pass(&r).await;
    }
    assert_eq!(video(&r, &c.key, &id).await["status"], "completed");
    assert_eq!(wallet(&r, &c).await, (RICH - CHARGE_8S, 0));

    let identities = r.mock.video_counts().identities;
    let calls: Vec<&str> = identities.iter().map(|i| i.call).collect();
    assert_eq!(calls, ["create", "poll", "poll", "content"]);
    let task = &r.mock.video_counts().tasks[0];
    for identity in &identities {
        // `{BASE}` is the mock's `/v1`.
        let expected_path = match identity.call {
            "create" => "/v1/openai/deployments/sora-prod/videos".to_owned(),
            "poll" => format!("/v1/openai/deployments/sora-prod/videos/{task}"),
            _ => format!("/v1/openai/deployments/sora-prod/videos/{task}/content"),
        };
        assert_eq!(identity.path, expected_path, "{identity:?}");
        assert_eq!(
            identity.query.as_deref(),
            Some("api-version=2025-04-01-preview"),
            "{identity:?}"
        );
        // The harness gives every key variable the same test key.
        assert_eq!(
            identity.api_key.as_deref(),
            Some("supplier-secret-key"),
            "{identity:?}"
        );
        assert_eq!(identity.authorization, None, "{identity:?}");
    }
}
