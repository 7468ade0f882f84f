//! Graceful drain with the real `router` binary (issue 30): on SIGTERM the
//! listener closes at once, a line says how many requests are draining, a
//! short stream finishes normally within `ROUTER_DRAIN_SECS`, and requests
//! still running when it ends get their protocol's error (a stream's error
//! event, a complete request's 503), their holds voided at once and their
//! attempts recorded (kind `shutdown`).

use crate::harness::*;
use router_mock_supplier::{MockReply, MockSupplier, Script};
use router_store::test_support::TestDatabase;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// A streamed reply of `words` words, one every `every_ms`.
fn paced_stream(words: usize, every_ms: u64) -> Script {
    MockReply {
        chunk_delay_ms: every_ms,
        ..MockReply::text(vec!["word"; words].join(" "))
    }
    .into()
}

async fn wait_for_calls(mock: &MockSupplier, n: usize) {
    let start = Instant::now();
    while mock.call_count() < n {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "supplier not called"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn sigterm_drains_short_streams_and_stops_long_ones_with_an_error_and_no_hold() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let mut router =
        spawn_router_process(db.url(), &mock.base_url(), &[("ROUTER_DRAIN_SECS", "3")]).await;
    let client = reqwest::Client::new();
    let base = router.base.clone();
    let key = funded_key_over_http(&client, &base, "drain@example.com", 1_000_000_000_000).await;

    // In order: a short Chat stream (~1.5 s), a long Chat stream (~20 s),
    // a long Messages stream, and a complete request the supplier never
    // answers.
    let send = |path: &'static str, body: Value| {
        let request = client
            .post(format!("{base}{path}"))
            .bearer_auth(&key)
            .header("x-api-key", &key)
            .header("anthropic-version", "2023-06-01")
            .json(&body)
            .send();
        tokio::spawn(async move {
            let resp = request.await.unwrap();
            let status = resp.status().as_u16();
            let id = resp
                .headers()
                .get("x-request-id")
                .unwrap()
                .to_str()
                .unwrap()
                .to_owned();
            let text = resp.text().await.unwrap_or_default();
            (status, id, text)
        })
    };
    let streamed = |model: &str| {
        json!({"model": model, "stream": true, "max_tokens": 200,
               "messages": [{"role": "user", "content": "hello"}]})
    };
    mock.enqueue(paced_stream(5, 250));
    let short = send("/v1/chat/completions", streamed("m-text"));
    wait_for_calls(&mock, 1).await;
    mock.enqueue(paced_stream(80, 250));
    let long_chat = send("/v1/chat/completions", streamed("m-text"));
    wait_for_calls(&mock, 2).await;
    mock.enqueue(paced_stream(80, 250));
    let long_messages = send("/v1/messages", streamed("m-via-messages"));
    wait_for_calls(&mock, 3).await;
    mock.enqueue(Script::Stall);
    let stalled = send("/v1/chat/completions", hello("m-gpt-only"));
    wait_for_calls(&mock, 4).await;

    let pid = router.child.id().unwrap().to_string();
    let signalled = Instant::now();
    let killed = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap();
    assert!(killed.success());
    // The listener is closed at once: a new connection is refused.
    let address = base.trim_start_matches("http://").to_owned();
    let start = Instant::now();
    loop {
        match tokio::net::TcpStream::connect(&address).await {
            Err(e) => {
                // Refused, or reset when the SYN met the listener closing.
                assert!(
                    matches!(
                        e.kind(),
                        std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::ConnectionReset
                    ),
                    "{e:?}"
                );
                break;
            }
            Ok(_) => assert!(
                start.elapsed() < Duration::from_secs(1),
                "the listener still accepts after SIGTERM"
            ),
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }

    // The short stream ends normally within the drain.
    let (status, short_id, text) = short.await.unwrap();
    assert_eq!(status, 200);
    assert!(text.trim_end().ends_with("data: [DONE]"), "{text}");
    assert!(!text.contains("\"error\""), "{text}");

    // The long Chat stream gets an error event with the 503 code.
    let (status, chat_id, text) = long_chat.await.unwrap();
    assert_eq!(status, 200);
    let errors: Vec<Value> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .filter_map(|d| serde_json::from_str::<Value>(d).ok())
        .filter(|v| v.get("error").is_some())
        .collect();
    assert_eq!(errors.len(), 1, "{text}");
    assert_eq!(errors[0]["error"]["code"], "service_unavailable", "{text}");
    assert!(
        text.contains("word"),
        "some of the answer had arrived: {text}"
    );
    assert!(
        signalled.elapsed() >= Duration::from_secs(3),
        "stopped before the drain ended"
    );

    // The long Messages stream ends with an `error` event.
    let (status, messages_id, text) = long_messages.await.unwrap();
    assert_eq!(status, 200);
    let events = sse_events(&text);
    let (last_name, last) = events.last().unwrap();
    assert_eq!(last_name, "error", "{text}");
    assert_eq!(last["error"]["type"], "overloaded_error", "{text}");

    // The complete request waiting on its supplier gets a 503.
    let (status, stalled_id, text) = stalled.await.unwrap();
    assert_eq!(status, 503, "{text}");
    let body: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(body["error"]["code"], "service_unavailable");

    // The process ends on its own, soon after the drain.
    let exit = tokio::time::timeout(Duration::from_secs(10), router.child.wait())
        .await
        .expect("the router exits after its drain")
        .unwrap();
    assert!(exit.success(), "{exit:?}");
    let log = (&mut router.stderr).await.unwrap();
    let draining = log
        .lines()
        .find(|l| l.contains("draining requests in flight"))
        .unwrap_or_else(|| panic!("no drain line: {log}"));
    assert!(draining.contains("\"requests\":4"), "{draining}");

    // The history: the short stream settled; each stopped request failed,
    // its hold released (not left for the reaper), its attempt recorded.
    let history = |id: String| {
        let database = db.database().clone();
        async move {
            database
                .get_request(id.parse().unwrap())
                .await
                .unwrap()
                .unwrap()
        }
    };
    let settled = history(short_id).await;
    assert_eq!(settled.status, "succeeded");
    assert_eq!(settled.hold.unwrap().status, "settled");
    for id in [chat_id, messages_id, stalled_id] {
        let stopped = history(id).await;
        assert_eq!(stopped.status, "failed", "{stopped:?}");
        assert_eq!(
            stopped.hold.as_ref().unwrap().status,
            "released",
            "{stopped:?}"
        );
        assert_eq!(stopped.charged_nano, None);
        let last = stopped.attempts.last().expect("attempt recorded");
        assert_eq!(last.outcome, "failed");
        assert_eq!(
            last.failure_kind.as_deref(),
            Some("shutdown"),
            "{stopped:?}"
        );
    }
    let reconciliation = db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
    mock.shutdown();
}

/// The drain's end stops image generations and video submissions too
/// (issue 30, item 3): an image still waiting on its supplier gets the 503
/// `service_unavailable` with its hold voided and its attempt recorded as
/// `shutdown`; a video submission cut mid-call is `unknown` (the supplier
/// may have taken it, GP-25), answered at once, its hold kept for the
/// operator's reconciliation rather than lost with the process.
#[tokio::test(flavor = "multi_thread")]
async fn the_drain_end_stops_image_generations_and_video_submissions() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = MockSupplier::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let db = TestDatabase::new().await;
    let objects = std::env::temp_dir().join(format!("router-drain-{}", uuid::Uuid::new_v4()));
    let store = format!("file://{}", objects.display());
    let mut router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_DRAIN_SECS", "2"), ("ROUTER_OBJECT_STORE", &store)],
    )
    .await;
    let client = reqwest::Client::new();
    let base = router.base.clone();
    let key =
        funded_key_over_http(&client, &base, "drain-media@example.com", 1_000_000_000_000).await;

    mock.enqueue(Script::Stall);
    let image = {
        let request = client
            .post(format!("{base}/v1/images/generations"))
            .bearer_auth(&key)
            .json(&json!({"model": "m-img", "prompt": "a cat"}))
            .send();
        tokio::spawn(async move {
            let resp = request.await.unwrap();
            let status = resp.status().as_u16();
            let id = request_id(&resp);
            (status, id, resp.json::<Value>().await.unwrap())
        })
    };
    wait_for_calls(&mock, 1).await;
    mock.set_video_plan(None, router_mock_supplier::VideoPlan::StallOnSubmit);
    let video = {
        let request = client
            .post(format!("{base}/v1/videos"))
            .bearer_auth(&key)
            .json(
                &json!({"model": "m-video", "prompt": "a cat surfing", "mode": "references",
                          "resolution": "720p", "duration": 5, "client_task_id": "drained"}),
            )
            .send();
        tokio::spawn(async move {
            let resp = request.await.unwrap();
            let status = resp.status().as_u16();
            let video_id = resp
                .headers()
                .get("x-video-id")
                .map(|v| v.to_str().unwrap().to_owned());
            (status, video_id, resp.json::<Value>().await.unwrap())
        })
    };
    let start = Instant::now();
    while mock.video_counts().submissions < 1 {
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "video not submitted"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let pid = router.child.id().unwrap().to_string();
    let signalled = Instant::now();
    assert!(
        std::process::Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );

    let (status, image_id, body) = image.await.unwrap();
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "service_unavailable", "{body}");
    assert!(
        signalled.elapsed() >= Duration::from_secs(2),
        "stopped before the drain ended"
    );
    let (status, video_id, body) = video.await.unwrap();
    assert!(status >= 500, "{status} {body}");
    assert!(video_id.is_some(), "the unknown video is named: {body}");

    let exit = tokio::time::timeout(Duration::from_secs(10), router.child.wait())
        .await
        .expect("the router exits after its drain")
        .unwrap();
    assert!(exit.success(), "{exit:?}");

    let stopped = db
        .database()
        .get_request(image_id.parse().unwrap())
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stopped.status, "failed", "{stopped:?}");
    assert_eq!(
        stopped.hold.as_ref().unwrap().status,
        "released",
        "{stopped:?}"
    );
    assert_eq!(stopped.charged_nano, None);
    let attempt = stopped.attempts.last().expect("attempt recorded");
    assert_eq!(
        attempt.failure_kind.as_deref(),
        Some("shutdown"),
        "{stopped:?}"
    );

    let status: Vec<String> = {
        use diesel_async::RunQueryDsl;
        #[derive(diesel::QueryableByName)]
        struct Row {
            #[diesel(sql_type = diesel::sql_types::Text)]
            status: String,
        }
        let mut conn = db.database().connection().await.unwrap();
        diesel::sql_query("SELECT status FROM videos")
            .load::<Row>(&mut conn)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.status)
            .collect()
    };
    assert_eq!(status, ["unknown"]);
    let reconciliation = db.database().reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
    let _ = std::fs::remove_dir_all(&objects);
    mock.shutdown();
}
