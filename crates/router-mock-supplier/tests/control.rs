//! Scripting over HTTP: the `/_mock/*` control endpoints, in process and
//! through the `mock-supplier` binary.

#![expect(
    clippy::unwrap_used,
    reason = "helpers outside #[test] fns: a failed step must fail the test"
)]

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

use common::{client, start};
use reqwest::Method;
use serde_json::{Value, json};

/// `http://ADDR` from `http://ADDR/v1`.
fn origin(base_url: &str) -> &str {
    base_url.strip_suffix("/v1").unwrap()
}

async fn control(method: Method, origin: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let mut request = client().request(method, format!("{origin}{path}"));
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

async fn chat(base_url: &str, model: &str, stream: bool) -> reqwest::Response {
    client()
        .post(format!("{base_url}/chat/completions"))
        .header("x-probe", "yes")
        .json(&json!({
            "model": model,
            "stream": stream,
            "messages": [{"role": "user", "content": "hi"}],
        }))
        .send()
        .await
        .unwrap()
}

async fn reply_text(base_url: &str, model: &str) -> String {
    let body: Value = chat(base_url, model, false).await.json().await.unwrap();
    body["choices"][0]["message"]["content"]
        .as_str()
        .unwrap()
        .to_owned()
}

#[tokio::test(flavor = "multi_thread")]
async fn control_endpoints_script_record_and_reset() {
    let mock = start().await;
    let base = mock.base_url();
    let origin = origin(&base);

    let (status, body) = control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"script": {"kind": "reply", "text": "global"}})),
    )
    .await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"model": "m-a", "script": {"kind": "status", "status": 429, "retry_after": "1"}})),
    )
    .await;
    let (status, _) = control(
        Method::PUT,
        origin,
        "/_mock/default",
        Some(json!({"kind": "reply", "text": "bare default"})),
    )
    .await;
    assert_eq!(status, 200);

    let limited = chat(&base, "m-a", false).await;
    assert_eq!(limited.status(), 429);
    assert_eq!(limited.headers()["retry-after"], "1");
    assert_eq!(reply_text(&base, "m-a").await, "global");
    assert_eq!(reply_text(&base, "m-b").await, "bare default");

    control(
        Method::PUT,
        origin,
        "/_mock/default",
        Some(json!({"script": {"kind": "reply", "text": "wrapped default"}})),
    )
    .await;
    assert_eq!(reply_text(&base, "m-b").await, "wrapped default");

    let (status, calls) = control(Method::GET, origin, "/_mock/calls", None).await;
    assert_eq!(status, 200);
    let calls = calls["calls"].as_array().unwrap();
    assert_eq!(calls.len(), 4, "control calls are not recorded");
    assert_eq!(calls[0]["path"], "/v1/chat/completions");
    assert_eq!(calls[0]["headers"]["x-probe"], "yes");
    assert_eq!(calls[0]["body"]["model"], "m-a");
    assert_eq!(calls[3]["body"]["model"], "m-b");
    assert_eq!(mock.call_count(), 4);

    control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"script": {"kind": "reply", "text": "dropped by reset"}})),
    )
    .await;
    let (status, body) = control(Method::POST, origin, "/_mock/reset", None).await;
    assert_eq!((status, body), (200, json!({"ok": true})));
    assert_eq!(mock.call_count(), 0);
    assert_eq!(reply_text(&base, "m").await, "wrapped default");
}

#[tokio::test(flavor = "multi_thread")]
async fn control_endpoints_reject_bad_requests() {
    let mock = start().await;
    let base = mock.base_url();
    let origin = origin(&base);

    let (status, body) = control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"script": {"kind": "reply", "txt": "typo"}})),
    )
    .await;
    assert_eq!(status, 400);
    let message = body["error"]["message"].as_str().unwrap();
    assert!(message.contains("txt"), "{message}");

    let (status, _) = control(
        Method::PUT,
        origin,
        "/_mock/default",
        Some(json!({"kind": "no_such_kind"})),
    )
    .await;
    assert_eq!(status, 400);
    let (status, _) = control(Method::GET, origin, "/_mock/reset", None).await;
    assert_eq!(status, 405);
    let (status, _) = control(Method::GET, origin, "/_mock/nothing", None).await;
    assert_eq!(status, 404);
    assert_eq!(mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn control_scripts_drive_messages_and_responses() {
    let mock = start().await;
    let base = mock.base_url();
    let origin = origin(&base);
    let (status, _) = control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"model": "claude-a", "script": {
            "kind": "reply", "text": "hi", "provider_extras": true,
            "finish_reason": "stop_sequence", "stop_sequence": "END",
            "thinking_signature": "c2ln", "reasoning_content": "hm",
            "usage": {"prompt_tokens": 9, "completion_tokens": 2, "cache_creation_tokens": 4},
        }})),
    )
    .await;
    assert_eq!(status, 200);
    let (status, _) = control(
        Method::POST,
        origin,
        "/_mock/scripts",
        Some(json!({"model": "gpt-r", "script": {"kind": "stream_error", "after_chunks": 1}})),
    )
    .await;
    assert_eq!(status, 200);

    let message: Value = client()
        .post(format!("{base}/messages"))
        .json(&json!({"model": "claude-a", "max_tokens": 8,
                      "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(message["provider_x"], 1);
    assert_eq!(message["stop_reason"], "stop_sequence");
    assert_eq!(message["stop_sequence"], "END");
    assert_eq!(message["content"][0]["signature"], "c2ln");
    assert_eq!(message["usage"]["input_tokens"], 5);
    assert_eq!(message["usage"]["cache_creation_input_tokens"], 4);

    let failed = client()
        .post(format!("{base}/responses"))
        .json(&json!({"model": "gpt-r", "input": "hi"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        failed.status(),
        500,
        "a stream error without a stream is a 500"
    );

    let (_, calls) = control(Method::GET, origin, "/_mock/calls", None).await;
    let paths: Vec<&str> = calls["calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|call| call["path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["/v1/messages", "/v1/responses"]);
}

/// Kills the binary even when an assertion fails.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn binary_announces_its_url_and_serves_the_configured_default() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mock-supplier"))
        .args([
            "--listen",
            "127.0.0.1:0",
            "--default-reply",
            "from the binary",
        ])
        .args(["--first-chunk-delay-ms", "1", "--chunk-delay-ms", "1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let running = Running(child);
    let line = tokio::task::spawn_blocking(move || {
        let mut line = String::new();
        BufReader::new(stdout).read_line(&mut line).unwrap();
        line
    })
    .await
    .unwrap();
    let base = line
        .trim_end()
        .strip_prefix("mock-supplier listening on ")
        .unwrap()
        .to_owned();
    assert!(
        base.starts_with("http://127.0.0.1:") && base.ends_with("/v1"),
        "{base}"
    );

    assert_eq!(reply_text(&base, "m").await, "from the binary");
    let message: Value = client()
        .post(format!("{base}/messages"))
        .json(&json!({"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(message["content"][0]["text"], "from the binary");
    let streamed = chat(&base, "m", true).await.text().await.unwrap();
    assert!(streamed.contains("\"content\":\"binary\""), "{streamed}");
    assert!(streamed.ends_with("data: [DONE]\n\n"));

    #[cfg(unix)]
    {
        let mut running = running;
        let pid = running.0.id().to_string();
        let sent = Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        assert!(sent.success());
        let status = tokio::task::spawn_blocking(move || running.0.wait())
            .await
            .unwrap()
            .unwrap();
        assert!(status.success(), "SIGTERM is a clean exit: {status:?}");
    }
}
