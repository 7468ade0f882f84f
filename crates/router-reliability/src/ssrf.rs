//! An SSRF corpus against the places a URL someone else chose reaches the
//! router: image parts of Chat, Responses and Messages (forwarded to
//! suppliers, which fetch them); channel destinations (Slack and Discord
//! webhook URLs, a Telegram `api_base`, which receive webhook secrets and
//! the bot token); and the image URLs a supplier answers (which the router
//! downloads). Every URL names loopback (a canary listening here), a
//! private, link-local, metadata or special-use address, in every spelling
//! the WHATWG parser reads, or a non-http scheme. Client URLs must be
//! refused with 400 before any supplier call; channel destinations (each
//! also in its `https` form) with 400 and nothing stored; a supplier's image
//! URL must never be fetched, the request failing without a charge and
//! without a 500. The canary is never hit.

use crate::harness::{Suite, free_port};
use anyhow::Result;
use router_mock_supplier::{ImageAnswer, MockImage, Script};
use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A surface's request body carrying an image URL.
type BodyFor = fn(&str) -> Value;

/// The corpus: `{P}` is the canary's port.
fn corpus(port: u16) -> Vec<String> {
    let literal = [
        // Loopback in every IPv4 spelling.
        "http://127.0.0.1:{P}/a.png",
        "http://127.1:{P}/a.png",
        "http://127.0.1:{P}/a.png",
        "http://2130706433:{P}/a.png",
        "http://0x7f000001:{P}/a.png",
        "http://0x7f.0x0.0x0.0x1:{P}/a.png",
        "http://0177.0.0.1:{P}/a.png",
        "http://017700000001:{P}/a.png",
        "http://127.000.000.001:{P}/a.png",
        "http://127.0.0.1.:{P}/a.png",
        "http://localhost:{P}/a.png",
        "http://LOCALHOST:{P}/a.png",
        "http://localhost.:{P}/a.png",
        "http://a.localhost:{P}/a.png",
        "http://[::1]:{P}/a.png",
        "http://[0:0:0:0:0:0:0:1]:{P}/a.png",
        "http://[::ffff:127.0.0.1]:{P}/a.png",
        "http://[::ffff:7f00:1]:{P}/a.png",
        "http://[::127.0.0.1]:{P}/a.png",
        "http://[64:ff9b::7f00:1]:{P}/a.png",
        "http://[2002:7f00:1::]:{P}/a.png",
        "http://[::ffff:0:7f00:1]:{P}/a.png",
        "http://0.0.0.0:{P}/a.png",
        "http://0:{P}/a.png",
        "http://[::]:{P}/a.png",
        // Credentials and tricks around the host.
        "http://user@127.0.0.1:{P}/a.png",
        "http://img.example@127.0.0.1:{P}/a.png",
        "http://user:pw@img.example/a.png",
        "http://127.0.0.1:{P}#@img.example/a.png",
        "http://127.0.0.1%2e:{P}/a.png",
        "http://%31%32%37.0.0.1:{P}/a.png",
        " http://img.example/a.png",
        "http://img.example/a.png\n",
        "http://img.exa\tmple/a.png",
        // Cloud metadata.
        "http://169.254.169.254/latest/meta-data/",
        "http://169.254.169.254.:80/",
        "http://0xa9fea9fe/",
        "http://2852039166/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
        "http://metadata.google.internal/computeMetadata/v1/",
        "http://metadata/computeMetadata/v1/",
        "http://100.100.100.200/latest/meta-data/",
        // Private and special-use IPv4.
        "http://10.0.0.1/a.png",
        "http://10.255.255.255/a.png",
        "http://172.16.0.1/a.png",
        "http://172.31.255.254/a.png",
        "http://192.168.0.1/a.png",
        "http://100.64.0.1/a.png",
        "http://198.18.0.1/a.png",
        "http://192.0.0.8/a.png",
        "http://192.0.2.1/a.png",
        "http://224.0.0.1/a.png",
        "http://240.0.0.1/a.png",
        "http://255.255.255.255/a.png",
        // Special IPv6 forms (issue 33).
        "http://[fc00::1]/a.png",
        "http://[fd12:3456::1]/a.png",
        "http://[fe80::1]/a.png",
        "http://[fec0::1]/a.png",
        "http://[ff02::1]/a.png",
        "http://[2002:a00:1::1]/a.png",
        "http://[2002:c0a8:101::1]/a.png",
        "http://[64:ff9b:1::a00:1]/a.png",
        "http://[::ffff:0:a00:1]/a.png",
        "http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/a.png",
        "http://[100::1]/a.png",
        "http://[2001:db8::1]/a.png",
        // Private-use names.
        "http://intranet/a.png",
        "http://printer.local/a.png",
        "http://router.home.arpa/a.png",
        "http://db.internal/a.png",
        // Schemes that are no web fetch.
        "file:///etc/passwd",
        "ftp://img.example/a.png",
        "gopher://127.0.0.1:{P}/_GET",
        "dict://127.0.0.1:{P}/info",
        "ldap://127.0.0.1:{P}/",
        "jar:http://127.0.0.1:{P}/a.jar!/",
        "data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==",
        "javascript:alert(1)",
        "blob:http://img.example/1",
        "//127.0.0.1:{P}/a.png",
        "/a.png",
    ];
    literal
        .iter()
        .map(|u| u.replace("{P}", &port.to_string()))
        .collect()
}

/// A loopback listener that counts connections: its port and the count.
async fn canary() -> Result<(u16, Arc<AtomicUsize>, tokio::task::JoinHandle<()>)> {
    let port = free_port()?;
    let canary = tokio::net::TcpListener::bind(("127.0.0.1", port)).await?;
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = hits.clone();
    let task = tokio::spawn(async move {
        while let Ok((stream, _)) = canary.accept().await {
            counted.fetch_add(1, Ordering::Relaxed);
            drop(stream);
        }
    });
    Ok((port, hits, task))
}

pub async fn run(suite: &Suite) -> Result<(String, bool)> {
    let (port, hits, canary_task) = canary().await?;
    let router = suite.router("ssrf", &suite.db_url, &[]).await?;
    let (_, key) = suite
        .customer(&router.base, 1_000_000_000_000, json!({}))
        .await?;
    let calls_before = suite.mock.call_count();
    let urls = corpus(port);
    let mut refused = 0usize;
    let mut escapes = Vec::new();
    let surfaces: [(&str, BodyFor); 3] = [
        ("/v1/chat/completions", |url| {
            json!({"model": "m-text", "messages": [{"role": "user", "content": [
                {"type": "text", "text": "what is this"},
                {"type": "image_url", "image_url": {"url": url}}]}]})
        }),
        ("/v1/responses", |url| {
            json!({"model": "m-text", "input": [{"role": "user", "content": [
                {"type": "input_image", "image_url": url}]}]})
        }),
        ("/v1/messages", |url| {
            json!({"model": "m-text", "max_tokens": 16, "messages": [{"role": "user", "content": [
                {"type": "image", "source": {"type": "url", "url": url}}]}]})
        }),
    ];
    for url in &urls {
        for (path, body) in &surfaces {
            let resp = suite
                .client
                .post(format!("{}{path}", router.base))
                .bearer_auth(&key)
                .header("anthropic-version", "2023-06-01")
                .json(&body(url))
                .send()
                .await?;
            if resp.status() == 400 {
                refused += 1;
            } else {
                escapes.push(format!("{path} {url:?}: {}", resp.status()));
            }
        }
    }
    let supplier_calls = suite.mock.call_count() - calls_before;
    router.stop().await?;
    canary_task.abort();
    let canary_hits = hits.load(Ordering::Relaxed);
    for escape in &escapes {
        eprintln!("ssrf: not refused: {escape}");
    }
    let cases = urls.len() * surfaces.len();
    let ok = escapes.is_empty() && canary_hits == 0 && supplier_calls == 0;
    let line = format!(
        "ssrf: corpus {} URLs x {} surfaces: {refused}/{cases} refused with 400, escapes {}, supplier calls {supplier_calls}, canary hits {canary_hits}",
        urls.len(),
        surfaces.len(),
        escapes.len()
    );
    Ok((line, ok))
}

/// The corpus as channel destinations: each URL as given and, when it is
/// `http`, in its `https` form too (the rules want https, so only that form
/// tests the address rules), as a Slack and a Discord webhook URL and a
/// Telegram `api_base`, provisioned by the operator.
pub async fn channels(suite: &Suite) -> Result<(String, bool)> {
    let (port, hits, canary_task) = canary().await?;
    let router = suite.router("ssrf-channels", &suite.db_url, &[]).await?;
    let (account, _) = suite.customer(&router.base, 0, json!({})).await?;
    let mut urls = corpus(port);
    let https: Vec<String> = urls
        .iter()
        .filter_map(|u| {
            u.strip_prefix("http://")
                .map(|rest| format!("https://{rest}"))
        })
        .collect();
    urls.extend(https);
    let path = format!("/admin/accounts/{account}/channels");
    let mut refused = 0usize;
    let mut escapes = Vec::new();
    for url in &urls {
        for body in [
            json!({"platform": "slack", "frequency": "daily", "webhook_url": url}),
            json!({"platform": "discord", "frequency": "daily", "webhook_url": url}),
            json!({"platform": "telegram", "frequency": "daily", "chat_id": "4242", "api_base": url}),
        ] {
            let (status, answer) = suite.admin(&router.base, &path, body.clone()).await?;
            if status == 400 {
                refused += 1;
            } else {
                escapes.push(format!("{} {url:?}: {status} {answer}", body["platform"]));
            }
        }
    }
    let stored = channels_of(suite, &account).await?;
    router.stop().await?;
    canary_task.abort();
    let canary_hits = hits.load(Ordering::Relaxed);
    for escape in &escapes {
        eprintln!("ssrf channels: not refused: {escape}");
    }
    let cases = urls.len() * 3;
    let ok = escapes.is_empty() && stored == 0 && canary_hits == 0;
    let line = format!(
        "ssrf channels: {} destinations (the corpus and its https forms) x 3 (Slack, Discord webhook, Telegram api_base): \
         {refused}/{cases} refused with 400, escapes {}, channels stored {stored}, canary hits {canary_hits}",
        urls.len(),
        escapes.len()
    );
    Ok((line, ok))
}

async fn channels_of(suite: &Suite, account: &str) -> Result<i64> {
    use diesel_async::RunQueryDsl;
    #[derive(diesel::QueryableByName)]
    struct N {
        #[diesel(sql_type = diesel::sql_types::BigInt)]
        n: i64,
    }
    let mut conn = suite.connection().await?;
    let n: N = diesel::sql_query(format!(
        "SELECT count(*) AS n FROM channels WHERE account_id = '{account}'"
    ))
    .get_result(&mut conn)
    .await?;
    Ok(n.n)
}

/// The corpus as the image URL a supplier answers: the router must not
/// download it (the canary is never hit), and the request ends without a
/// charge, never with a 500 and never a 200.
pub async fn image_downloads(suite: &Suite) -> Result<(String, bool)> {
    let (port, hits, canary_task) = canary().await?;
    let router = suite.router("ssrf-images", &suite.db_url, &[]).await?;
    let credits = 1_000_000_000_000i64;
    let (account, key) = suite.customer(&router.base, credits, json!({})).await?;
    let urls = corpus(port);
    let mut refused = 0usize;
    let mut escapes = Vec::new();
    for url in &urls {
        suite.mock.enqueue_for(
            "up-image",
            Script::Image(MockImage {
                answer: ImageAnswer::Url,
                url: Some(url.clone()),
                ..MockImage::default()
            }),
        );
        let resp = suite
            .client
            .post(format!("{}/v1/images/generations", router.base))
            .bearer_auth(&key)
            .json(&json!({"model": "m-image", "prompt": "a lighthouse"}))
            .send()
            .await?;
        let status = resp.status().as_u16();
        if (400..500).contains(&status) || (status > 500 && status < 600) {
            refused += 1;
        } else {
            escapes.push(format!("{url:?}: {status}"));
        }
    }
    let view = suite
        .admin_get(&router.base, &format!("/admin/accounts/{account}"))
        .await?;
    // With credit leases on, the account's active leases are held too.
    let leased = crate::harness::leased_of(suite, &account.to_string()).await?;
    router.stop().await?;
    canary_task.abort();
    let canary_hits = hits.load(Ordering::Relaxed);
    for escape in &escapes {
        eprintln!("ssrf images: not refused: {escape}");
    }
    let untouched = view["balance_nano_usd"].as_i64() == Some(credits)
        && view["held_nano_usd"].as_i64() == Some(leased);
    let ok = escapes.is_empty() && canary_hits == 0 && untouched;
    let line = format!(
        "ssrf image downloads: corpus {} URLs as the supplier's image URL: {refused}/{} failed without a download (no 200, no 500), \
         escapes {}, charged nothing: {}, canary hits {canary_hits}",
        urls.len(),
        urls.len(),
        escapes.len(),
        if untouched { "yes" } else { "NO" },
    );
    Ok((line, ok))
}
