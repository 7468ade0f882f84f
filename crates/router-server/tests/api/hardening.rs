//! The Low and info findings of issue 33's attack, each reproduced over
//! real HTTP against the router (RELIABILITY.md §3 e, f).

use crate::harness::*;
use serde_json::json;

/// An `image_url` part is forwarded to the supplier, which fetches it: a
/// private, loopback or metadata address is refused with 400 before any
/// supplier call, on every surface that takes an image URL (the rule video
/// references already had).
#[tokio::test]
async fn image_urls_to_private_addresses_never_reach_a_supplier() {
    let (r, c) = TestRouter::start_rich().await;
    let canary = Canary::start().await;
    let port = canary.port();
    let private = [
        format!("http://127.0.0.1:{port}/a.png"),
        format!("http://localhost:{port}/a.png"),
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        "http://[::ffff:169.254.169.254]/".to_owned(),
        "http://[2002:a9fe:a9fe::]/".to_owned(),
        "http://[fec0::1]/a.png".to_owned(),
        "http://0x7f.1/a.png".to_owned(),
        "http://10.0.0.1/a.png".to_owned(),
        "http://metadata.google.internal/computeMetadata/v1/".to_owned(),
    ];
    for url in &private {
        let chat = json!({"model": "m-text", "messages": [{"role": "user", "content": [
            {"type": "text", "text": "what is this"},
            {"type": "image_url", "image_url": {"url": url}}]}]});
        let body = expect_error(r.chat(&c.key, &chat).await, 400, "invalid_parameter").await;
        assert_eq!(
            body["error"]["param"], "messages[0].content[1].image_url.url",
            "{url}: {body}"
        );
        let responses = json!({"model": "m-text", "input": [{"role": "user", "content": [
            {"type": "input_image", "image_url": url}]}]});
        let resp = r.post("/v1/responses", &c.key, &responses).await;
        assert_eq!(resp.status(), 400, "{url}");
        let messages = json!({"model": "m-text", "max_tokens": 16, "messages": [{"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": url}}]}]});
        let resp = r.messages(&c.key, &messages).await;
        assert_eq!(resp.status(), 400, "{url}");
    }
    assert_eq!(r.mock.call_count(), 0);
    assert_eq!(canary.hits(), 0);
}
