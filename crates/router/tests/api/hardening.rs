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

/// A polyglot: a file that starts and ends like an image but carries an
/// HTML page or a ZIP archive. The attack's PNG shell had no IDAT at all.
#[tokio::test]
async fn polyglot_uploads_are_refused_as_unsupported() {
    use router_images::png::{SIGNATURE, tiny_png, write_chunk};
    let r = TestRouter::start_uploads(test_uploads()).await;
    let c = r.rich_customer().await;
    let html = b"<!DOCTYPE html><html><script>fetch('/v1/uploads')</script></html>";
    let zip = b"PK\x03\x04\x14\0\0\0\0\0evil.shPK\x05\x06\0\0\0\0\0\0";
    let tiny = tiny_png();
    let mut png_shell = SIGNATURE.to_vec();
    png_shell.extend_from_slice(&tiny[8..33]); // IHDR
    write_chunk(&mut png_shell, b"tEXt", html);
    write_chunk(&mut png_shell, b"prVt", zip);
    write_chunk(&mut png_shell, b"IEND", &[]);
    let mut png_with_idat = tiny[..33].to_vec();
    write_chunk(&mut png_with_idat, b"tEXt", html);
    png_with_idat.extend_from_slice(&tiny[33..]);
    // GIF: a 1x1 image after a comment extension holding the page.
    let mut gif = b"GIF89a\x01\0\x01\0\x80\0\0\0\0\0\xff\xff\xff\x21\xfe".to_vec();
    gif.push(html.len() as u8);
    gif.extend_from_slice(html);
    gif.extend_from_slice(b"\0\x2c\0\0\0\0\x01\0\x01\0\0\x02\x02\x44\x01\0\x3b");
    // JPEG: SOI, a comment holding the archive, a frame, a scan, EOI.
    let mut jpeg = vec![0xFF, 0xD8, 0xFF, 0xFE];
    jpeg.extend_from_slice(&((zip.len() + 2) as u16).to_be_bytes());
    jpeg.extend_from_slice(zip);
    jpeg.extend_from_slice(&[0xFF, 0xC0, 0, 11, 8, 0, 1, 0, 1, 1, 1, 0x11, 0]);
    jpeg.extend_from_slice(&[
        0xFF, 0xDA, 0, 8, 1, 1, 0, 0, 0x3F, 0, 0x12, 0x34, 0xFF, 0xD9,
    ]);
    for (what, mime, bytes) in [
        ("PNG without IDAT", "image/png", &png_shell),
        ("PNG with HTML text", "image/png", &png_with_idat),
        ("GIF with an HTML comment", "image/gif", &gif),
        ("JPEG with a ZIP comment", "image/jpeg", &jpeg),
    ] {
        let resp = crate::uploads::upload(&r, &c.key, mime, bytes).await;
        let body = expect_error(resp, 415, "unsupported_file_type").await;
        assert_eq!(body["error"]["param"], "file", "{what}: {body}");
    }
    // The same shells without the cargo are images.
    let mut clean_gif = b"GIF89a\x01\0\x01\0\x80\0\0\0\0\0\xff\xff\xff".to_vec();
    clean_gif.extend_from_slice(b"\x2c\0\0\0\0\x01\0\x01\0\0\x02\x02\x44\x01\0\x3b");
    let resp = crate::uploads::upload(&r, &c.key, "image/gif", &clean_gif).await;
    assert_eq!(resp.status(), 201);
}

/// The magic-link answer does no database work for either address: with the
/// links table locked by another transaction, a known address is answered
/// at once (it used to wait for the lock, and in normal times took ~40 µs
/// longer than an unknown one), and the link is sent once the lock goes.
#[tokio::test(flavor = "multi_thread")]
async fn the_magic_link_answer_does_not_depend_on_the_address() {
    use diesel_async::RunQueryDsl;
    let r = TestRouter::start_with_mail().await;
    let (status, _) = r
        .admin(
            reqwest::Method::POST,
            "/admin/accounts",
            Some(json!({"email": "known@example.com", "email_verified": true})),
        )
        .await;
    assert_eq!(status, 201);
    let mut lock = r.db.database().connection().await.unwrap();
    diesel::sql_query("BEGIN").execute(&mut lock).await.unwrap();
    diesel::sql_query("LOCK TABLE magic_links IN ACCESS EXCLUSIVE MODE")
        .execute(&mut lock)
        .await
        .unwrap();
    for email in ["known@example.com", "nobody@example.com"] {
        let started = std::time::Instant::now();
        let resp = tokio::time::timeout(
            std::time::Duration::from_secs(3),
            r.client
                .post(format!("{}/api/auth/magic-link", r.base))
                .json(&json!({"email": email}))
                .send(),
        )
        .await
        .unwrap_or_else(|_| panic!("{email}: the answer waited for the database"))
        .unwrap();
        assert_eq!(resp.status(), 202, "{email}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(1),
            "{email}"
        );
    }
    diesel::sql_query("COMMIT")
        .execute(&mut lock)
        .await
        .unwrap();
    let mail = r
        .smtp
        .as_ref()
        .unwrap()
        .wait_for(1, std::time::Duration::from_secs(10))
        .await;
    assert_eq!(mail.len(), 1);
    let text = mail[0].body_text();
    assert!(text.contains("as known@example.com"), "{text}");
    assert!(text.contains("/api/auth/sign-in?token="), "{text}");
}

/// The sign-in pages are never framed or sniffed and keep the token out of
/// Referer; the page behind a link says which account it signs into
/// (escaped), and says so without spending it.
#[tokio::test(flavor = "multi_thread")]
async fn the_sign_in_page_names_its_account_and_cannot_be_framed() {
    let r = TestRouter::start_with_mail().await;
    let (status, _) = r
        .admin(
            reqwest::Method::POST,
            "/admin/accounts",
            Some(json!({"email": "Page.Owner@example.com", "email_verified": true})),
        )
        .await;
    assert_eq!(status, 201);
    let resp = r
        .client
        .post(format!("{}/api/auth/magic-link", r.base))
        .json(&json!({"email": "page.owner@example.com"}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 202);
    let mail = r
        .smtp
        .as_ref()
        .unwrap()
        .wait_for(1, std::time::Duration::from_secs(10))
        .await;
    let text = mail[0].body_text();
    let token = text
        .split_whitespace()
        .find_map(|w| w.split_once("token=").map(|(_, t)| t.to_owned()))
        .unwrap();
    for (query, says) in [
        (
            format!("token={token}"),
            "as <strong>Page.Owner@example.com</strong>",
        ),
        (
            format!("token={}", "0".repeat(64)),
            "unknown, already used or expired",
        ),
        ("".to_owned(), "incomplete"),
    ] {
        let resp = r.get_plain(&format!("/api/auth/sign-in?{query}")).await;
        assert_eq!(resp.status(), 200);
        let headers = resp.headers().clone();
        assert_eq!(headers["x-frame-options"], "DENY");
        assert_eq!(headers["x-content-type-options"], "nosniff");
        assert_eq!(headers["referrer-policy"], "no-referrer");
        let csp = headers["content-security-policy"].to_str().unwrap();
        assert!(csp.contains("frame-ancestors 'none'"), "{csp}");
        let page = resp.text().await.unwrap();
        assert!(page.contains(says), "{query}: {page}");
    }
    // Showing the page twice spent nothing: the link still signs in.
    let resp = r
        .client
        .post(format!("{}/api/auth/sign-in", r.base))
        .header("origin", &r.base)
        .json(&json!({"token": token}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
    assert_eq!(resp.headers()["x-frame-options"], "DENY");
}

/// Failed operator authentication is limited per client address, through
/// the real binary with its default (30 a minute): after 30 wrong tokens the
/// address gets 429 with Retry-After, even with the right token (it is not
/// compared); another address (told apart by a trusted proxy) still gets in.
#[tokio::test(flavor = "multi_thread")]
async fn failed_admin_authentication_is_limited_per_address() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = router_store::test_support::TestDatabase::new().await;
    let router = spawn_router_process(
        db.url(),
        "http://127.0.0.1:9",
        &[("ROUTER_TRUSTED_PROXIES", "127.0.0.1")],
    )
    .await;
    let client = reqwest::Client::new();
    let accounts = |client_address: &str, token: &str| {
        client
            .get(format!(
                "{}/admin/accounts/{}",
                router.base,
                uuid::Uuid::nil()
            ))
            .header("x-forwarded-for", client_address)
            .bearer_auth(token)
            .send()
    };
    for attempt in 0..30 {
        let guess = format!("guess-{attempt:04}-xxxxxxxxxxxx");
        let resp = accounts("203.0.113.7", &guess).await.unwrap();
        assert_eq!(resp.status(), 401, "attempt {attempt}");
    }
    for token in ["one-more-wrong-guess-xx", ADMIN_TOKEN] {
        let resp = accounts("203.0.113.7", token).await.unwrap();
        let retry_after: u64 = resp.headers()["retry-after"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert!((1..=60).contains(&retry_after), "{retry_after}");
        expect_error(resp, 429, "rate_limited").await;
    }
    assert_eq!(
        accounts("203.0.113.8", ADMIN_TOKEN).await.unwrap().status(),
        404
    );
}

/// A one-character operator token stops start-up with one line naming it.
#[tokio::test(flavor = "multi_thread")]
async fn a_short_admin_token_stops_start_up() {
    let catalog =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/demo-catalog.toml");
    for token in ["x", "fifteen-chars-x", "sixteen chars xx"] {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_router"))
            .args(["serve"])
            .env("DATABASE_URL", "postgres://nobody@127.0.0.1:1/none")
            .env("ROUTER_CATALOG", &catalog)
            .env("ROUTER_LISTEN", "127.0.0.1:0")
            .env("ROUTER_ADMIN_TOKEN", token)
            .env_remove("ROUTER_LOG")
            .output()
            .await
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{token}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
        assert!(stderr.starts_with("router: ROUTER_ADMIN_TOKEN"), "{stderr}");
        if token.len() > 1 {
            assert!(!stderr.contains(token), "the token is not echoed: {stderr}");
        }
    }
}

/// The admin API takes one email address per account, once whatever its
/// case (the magic link then has one account to pick).
#[tokio::test]
async fn account_emails_are_one_address_unique_in_any_case() {
    let r = TestRouter::start().await;
    let create = |email: &str| {
        r.admin(
            reqwest::Method::POST,
            "/admin/accounts",
            Some(json!({"email": email, "email_verified": true})),
        )
    };
    for bad in [
        "",
        "not an address",
        "a@localhost",
        "<a@example.com>",
        "a@example.com\r\nBcc: victim@example.com",
        "a@b.example,c@d.example",
        "\"quoted\"@example.com",
    ] {
        let (status, body) = create(bad).await;
        assert_eq!(status, 400, "{bad:?}: {body}");
        assert_eq!(body["error"]["code"], "invalid_parameter", "{body}");
        assert_eq!(body["error"]["param"], "email", "{body}");
    }
    let (status, _) = create("Mixed.Case@Example.com").await;
    assert_eq!(status, 201);
    for again in ["mixed.case@example.com", "MIXED.CASE@EXAMPLE.COM"] {
        let (status, body) = create(again).await;
        assert_eq!(status, 409, "{again}: {body}");
        assert_eq!(body["error"]["param"], "email");
    }
}

/// A credential, `Origin` or `Sec-Fetch-Site` header sent twice is refused,
/// not resolved first-wins, even when the first copy is the good one.
#[tokio::test]
async fn repeated_credential_and_origin_headers_are_refused() {
    let (r, c) = TestRouter::start_rich().await;
    let chat = |headers: &[(&str, String)]| {
        let mut request = r
            .client
            .post(format!("{}/v1/chat/completions", r.base))
            .json(&hello("m-text"));
        for (name, value) in headers {
            request = request.header(*name, value);
        }
        request.send()
    };
    let bearer = format!("Bearer {}", c.key);
    let repeated = [
        vec![
            ("authorization", bearer.clone()),
            ("authorization", bearer.clone()),
        ],
        vec![("x-api-key", c.key.clone()), ("x-api-key", c.key.clone())],
        vec![
            ("authorization", bearer.clone()),
            ("authorization", "Bearer sk-someone-else".to_owned()),
        ],
    ];
    for headers in &repeated {
        expect_error(chat(headers).await.unwrap(), 401, "invalid_api_key").await;
    }
    assert_eq!(
        chat(&[("authorization", bearer)]).await.unwrap().status(),
        200
    );
    assert_eq!(r.mock.call_count(), 1);

    // The operator token twice.
    let resp = r
        .client
        .get(format!("{}/admin/accounts/{}", r.base, c.account_id))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
        .header("authorization", format!("Bearer {ADMIN_TOKEN}"))
        .send()
        .await
        .unwrap();
    expect_error(resp, 401, "invalid_api_key").await;

    // A session's mutation with Origin or Sec-Fetch-Site twice.
    let cookie = r.session_cookie(&c.account_id).await;
    let sign_out = |extra: Vec<(&'static str, String)>| {
        let mut request = r
            .client
            .post(format!("{}/api/auth/sign-out", r.base))
            .header("cookie", &cookie);
        for (name, value) in extra {
            request = request.header(name, value);
        }
        request.send()
    };
    for extra in [
        vec![
            ("origin", r.base.clone()),
            ("origin", "https://evil.example".to_owned()),
        ],
        vec![("origin", r.base.clone()), ("origin", r.base.clone())],
        vec![
            ("origin", r.base.clone()),
            ("sec-fetch-site", "same-origin".to_owned()),
            ("sec-fetch-site", "same-origin".to_owned()),
        ],
    ] {
        expect_error(
            sign_out(extra).await.unwrap(),
            403,
            "cross_origin_forbidden",
        )
        .await;
    }
    assert_eq!(
        sign_out(vec![("origin", r.base.clone())])
            .await
            .unwrap()
            .status(),
        204
    );
}

/// Through the binary at TRACE: a complete request the client abandons is
/// logged 499 `client_closed` (it was status 0), and no SQL parameter (an
/// account's email here) nor any fetched URL line reaches the log.
#[tokio::test(flavor = "multi_thread")]
async fn trace_logs_hold_no_sql_parameters_and_cancelled_requests_are_499() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mock = mock_answering("fine").await;
    let db = router_store::test_support::TestDatabase::new().await;
    let mut router = spawn_router_process(
        db.url(),
        &mock.base_url(),
        &[("ROUTER_LOG", "trace"), ("ROUTER_LOG_FORMAT", "json")],
    )
    .await;
    let client = reqwest::Client::new();
    let email = format!("sql-param-{}@example.com", uuid::Uuid::new_v4().simple());
    let key = funded_key_over_http(&client, &router.base, &email, 1_000_000_000_000).await;
    mock.enqueue_for("up-text-primary", slow_reply(5_000));
    let abandoned = client
        .post(format!("{}/v1/chat/completions", router.base))
        .bearer_auth(&key)
        .timeout(std::time::Duration::from_millis(500))
        .json(&hello("m-text"))
        .send()
        .await;
    assert!(abandoned.unwrap_err().is_timeout());
    // The abandoned request's hold is released by the dropped handler.
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    router.child.start_kill().unwrap();
    router.child.wait().await.unwrap();
    let log = tokio::time::timeout(std::time::Duration::from_secs(10), router.stderr)
        .await
        .unwrap()
        .unwrap();
    assert!(log.lines().count() > 20, "trace logging is on: {log}");
    assert!(!log.contains("with parameters"), "an SQL parameter line");
    assert!(!log.contains(&email), "the email is in the log");
    assert!(!log.contains(&key), "the key is in the log");
    let lines: Vec<serde_json::Value> = log
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect();
    assert!(
        !lines.iter().any(|l| l["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("reqwest") || t.starts_with("tokio_postgres"))
            && matches!(l["level"].as_str(), Some("DEBUG" | "TRACE"))),
        "a reqwest or tokio-postgres debug line"
    );
    let chats: Vec<&serde_json::Value> = lines
        .iter()
        .filter(|l| {
            l["target"] == "router::request" && l["fields"]["route"] == "/v1/chat/completions"
        })
        .collect();
    assert_eq!(chats.len(), 1, "{chats:?}");
    assert_eq!(chats[0]["fields"]["status"], 499);
    assert_eq!(chats[0]["fields"]["code"], "client_closed");
}

/// `ROUTER_SESSION_TTL_SECS` is the lifetime of a session opened without
/// one, through the binary (issue 33: never checked).
#[tokio::test(flavor = "multi_thread")]
async fn the_session_lifetime_setting_is_what_a_session_lasts() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let db = router_store::test_support::TestDatabase::new().await;
    let router = spawn_router_process(
        db.url(),
        "http://127.0.0.1:9",
        &[("ROUTER_SESSION_TTL_SECS", "321")],
    )
    .await;
    let client = reqwest::Client::new();
    let (account_id, _) =
        funded_account_over_http(&client, &router.base, "ttl@example.com", 0).await;
    let opened_at = chrono::Utc::now();
    let body: serde_json::Value = client
        .post(format!(
            "{}/admin/accounts/{account_id}/sessions",
            router.base
        ))
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let expires: chrono::DateTime<chrono::Utc> =
        body["expires_at"].as_str().unwrap().parse().unwrap();
    let lasts = (expires - opened_at).num_seconds();
    assert!((319..=323).contains(&lasts), "{lasts} s: {body}");
    // The session is live for its cookie.
    let cookie = format!(
        "{}={}",
        body["cookie_name"].as_str().unwrap(),
        body["cookie_value"].as_str().unwrap()
    );
    let resp = client
        .get(format!("{}/api/auth/session", router.base))
        .header("cookie", cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), 200);
}
