//! The fault matrix (RELIABILITY.md §3 b): the 16 rows of the plan plus a
//! supplier answering 3xx, played by the mock supplier (scripted per route:
//! A `up-fault-a`, B `up-fault-b`) and, for faults below HTTP, by the
//! suite's TCP fault proxy in front of the mock (route `proxied-a`, with
//! `proxied-b` straight to the mock behind it). Each row is one request
//! from a fresh account; checked: the status (and for a started stream its
//! terminal event), the attempts per route in the request's record (and,
//! on the mock's routes, that they equal the calls the mock saw), charged
//! exactly when it succeeded, nothing left held, the time it took, and that
//! no supplier text reaches the client. Deadline 4 s.

use crate::fault_proxy::Path;
use crate::harness::Suite;
use anyhow::{Context, Result};
use router_mock_supplier::{MockReply, MockUsage, Script};
use serde_json::{Value, json};
use std::time::{Duration, Instant};

/// How a row's request ends.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Ends {
    /// 200 and charged once (a stream ends with `[DONE]`).
    Success,
    /// This error status and code, nothing charged.
    Error(&'static [u16], &'static str),
    /// A started stream (200) whose last event is the error `code`, nothing
    /// charged.
    StreamError(&'static str),
    /// The client leaves after `ms`: the hold released, nothing charged.
    ClientLeaves(u64),
}

struct Row {
    name: &'static str,
    /// Scripts for route A and B (or `proxied-b`), in order.
    a: Vec<Script>,
    b: Vec<Script>,
    /// Through the fault proxy, with its path set so for the request.
    proxy: Option<Path>,
    stream: bool,
    ends: Ends,
    /// Attempts on A and B.
    attempts: (usize, usize),
    /// The time the request may take.
    within: std::ops::Range<Duration>,
}

fn secs(from: f64, to: f64) -> std::ops::Range<Duration> {
    Duration::from_secs_f64(from)..Duration::from_secs_f64(to)
}

fn status(status: u16) -> Script {
    Script::status(status)
}

/// A chat completion body whose usage is `usage` (absent when `Null`).
fn completion_with_usage(usage: Value) -> Script {
    let mut body = json!({
        "id": "chatcmpl-fault", "object": "chat.completion", "created": 1,
        "model": "up-fault-a",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                     "finish_reason": "stop"}]
    });
    if !usage.is_null() {
        body["usage"] = usage;
    }
    Script::Status {
        status: 200,
        body: Some(body),
        retry_after: None,
    }
}

fn drip(chunk_delay_ms: u64) -> Script {
    Script::Reply(MockReply {
        chunk_delay_ms,
        usage: Some(MockUsage::tokens(5, 7)),
        ..MockReply::text("one two three four five six seven eight")
    })
}

fn rows(canary: &str) -> Vec<Row> {
    let up_to = |s: f64| secs(0.0, s);
    vec![
        Row {
            name: "1 429 Retry-After 1, then 200: waited, same route",
            a: vec![Script::Status {
                status: 429,
                body: None,
                retry_after: Some("1".into()),
            }],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (2, 0),
            within: secs(1.0, 4.0),
        },
        Row {
            name: "2 429 Retry-After 600: not waited, the next route",
            a: vec![Script::Status {
                status: 429,
                body: None,
                retry_after: Some("600".into()),
            }],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (1, 1),
            within: up_to(2.0),
        },
        Row {
            name: "3 503 twice on A, 200 on B",
            a: vec![status(503), status(503)],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (2, 1),
            within: up_to(2.0),
        },
        Row {
            name: "4 5xx everywhere",
            a: vec![status(500), status(502)],
            b: vec![status(503), status(500)],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[502, 503], ""),
            attempts: (2, 2),
            within: up_to(2.0),
        },
        Row {
            name: "5 reset before the headers",
            a: vec![Script::Reset],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (2, 0),
            within: up_to(2.0),
        },
        Row {
            name: "6 headers, then the body breaks",
            a: vec![Script::ResetAfterHeaders],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (2, 0),
            within: up_to(2.0),
        },
        Row {
            name: "7 a stream reset before its first event",
            a: vec![Script::Reset],
            b: vec![],
            proxy: None,
            stream: true,
            ends: Ends::Success,
            attempts: (2, 0),
            within: up_to(2.0),
        },
        Row {
            name: "8 3 events forwarded, then cut",
            a: vec![Script::TruncatedStream { after_chunks: 3 }],
            b: vec![],
            proxy: None,
            stream: true,
            ends: Ends::StreamError(""),
            attempts: (1, 0),
            within: up_to(2.0),
        },
        Row {
            name: "9 invalid JSON",
            a: vec![Script::InvalidJson],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[502], "invalid_upstream_response"),
            attempts: (1, 0),
            within: up_to(2.0),
        },
        Row {
            name: "10 an invalid SSE frame after output",
            a: vec![Script::MalformedStream { after_chunks: 2 }],
            b: vec![],
            proxy: None,
            stream: true,
            ends: Ends::StreamError("invalid_upstream_response"),
            attempts: (1, 0),
            within: up_to(2.0),
        },
        Row {
            name: "11a usage missing",
            a: vec![completion_with_usage(Value::Null)],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[502], "invalid_upstream_response"),
            attempts: (1, 0),
            within: up_to(2.0),
        },
        Row {
            name: "11b usage negative",
            a: vec![completion_with_usage(
                json!({"prompt_tokens": -5, "completion_tokens": 2, "total_tokens": -3}),
            )],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[502], "invalid_upstream_response"),
            attempts: (1, 0),
            within: up_to(2.0),
        },
        Row {
            name: "12 a slow drip that ends in time",
            a: vec![drip(150)],
            b: vec![],
            proxy: None,
            stream: true,
            ends: Ends::Success,
            attempts: (1, 0),
            within: secs(1.0, 4.0),
        },
        Row {
            name: "13 a reply slower than the deadline",
            a: vec![Script::Reply(MockReply {
                delay_ms: 8_000,
                ..MockReply::text("late")
            })],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[503], "upstream_unavailable"),
            attempts: (1, 0),
            within: secs(3.9, 5.5),
        },
        Row {
            name: "14 the client leaves mid-call",
            a: vec![Script::Reply(MockReply {
                delay_ms: 2_000,
                ..MockReply::text("unread")
            })],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::ClientLeaves(300),
            // The call the client's leaving cut is recorded (failed,
            // `client_cancelled`), as the mock saw it.
            attempts: (1, 0),
            within: up_to(1.0),
        },
        Row {
            name: "15 408, then 200 on the same route",
            a: vec![status(408)],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (2, 0),
            within: up_to(2.0),
        },
        Row {
            name: "16 400 from every route",
            a: vec![status(400)],
            b: vec![status(400)],
            proxy: None,
            stream: false,
            ends: Ends::Error(&[502], "upstream_error"),
            attempts: (1, 1),
            within: up_to(2.0),
        },
        Row {
            name: "17 a 307 redirect: not followed, the next route",
            a: vec![Script::Redirect {
                status: 307,
                location: canary.to_owned(),
            }],
            b: vec![],
            proxy: None,
            stream: false,
            ends: Ends::Success,
            attempts: (1, 1),
            within: up_to(2.0),
        },
        Row {
            name: "P1 the supplier's TCP path cut: retried, then the next route",
            a: vec![],
            b: vec![],
            proxy: Some(Path::Cut),
            stream: false,
            ends: Ends::Success,
            attempts: (2, 1),
            within: up_to(2.0),
        },
        Row {
            name: "P2 the supplier black-holed (accepted, no byte back)",
            a: vec![],
            b: vec![],
            proxy: Some(Path::BlackHole),
            stream: false,
            ends: Ends::Error(&[503], "upstream_unavailable"),
            attempts: (1, 0),
            within: secs(3.9, 5.5),
        },
    ]
}

#[derive(diesel::QueryableByName)]
struct Record {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    charged: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    held: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    on_a: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    on_b: i64,
}

/// The account's one request: status, charge, holds still held, attempts
/// on A and B.
async fn record_of(suite: &Suite, account: &str, a: &str, b: &str) -> Result<Option<Record>> {
    use diesel_async::RunQueryDsl;
    let mut conn = suite.connection().await?;
    Ok(diesel::sql_query(format!(
        "SELECT r.status::text AS status, coalesce(r.charged_nano, 0)::bigint AS charged,
                (SELECT count(*) FROM holds h WHERE h.request_id = r.id AND h.status = 'held') AS held,
                (SELECT count(*) FROM attempts t WHERE t.request_id = r.id AND t.route_id = '{a}') AS on_a,
                (SELECT count(*) FROM attempts t WHERE t.request_id = r.id AND t.route_id = '{b}') AS on_b
           FROM requests r WHERE r.account_id = '{account}'"
    ))
    .get_results(&mut conn)
    .await?
    .pop())
}

pub async fn run(suite: &Suite) -> Result<(String, bool)> {
    let canary_port = crate::harness::free_port()?;
    let canary_listener = tokio::net::TcpListener::bind(("127.0.0.1", canary_port)).await?;
    let canary_hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counted = canary_hits.clone();
    let canary_task = tokio::spawn(async move {
        while let Ok((stream, _)) = canary_listener.accept().await {
            counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            drop(stream);
        }
    });
    let canary = format!("http://127.0.0.1:{canary_port}/v1/chat/completions");
    let router = suite
        .router(
            "faults",
            &suite.db_url,
            &[
                ("ROUTER_DEADLINE_SECS", "4"),
                ("ROUTER_REAPER_INTERVAL_SECS", "1"),
            ],
        )
        .await?;
    let rows = rows(&canary);
    let total = rows.len();
    let mut failures = Vec::new();
    for row in rows {
        if let Err(e) = play(suite, &router.base, &row).await {
            failures.push(format!("{}: {e:#}", row.name));
        }
    }
    suite.supplier_proxy.set(Path::Up);
    router.stop().await?;
    canary_task.abort();
    let hits = canary_hits.load(std::sync::atomic::Ordering::Relaxed);
    for failure in &failures {
        eprintln!("faults: {failure}");
    }
    let held = total - failures.len();
    let ok = failures.is_empty() && hits == 0;
    let line = format!(
        "faults: survived {held}/{total} (the 16 rows of the plan, usage missing and negative, a 307, and the supplier's TCP path cut and black-holed): \
         attempts as specified and equal to the mock's calls, charged once exactly on success, nothing held, no supplier text to the client; redirect target hits {hits}"
    );
    Ok((line, ok))
}

async fn play(suite: &Suite, base: &str, row: &Row) -> Result<()> {
    let (account, key) = suite.customer(base, 1_000_000_000_000, json!({})).await?;
    let (model, route_a, route_b, up_a, up_b) = match row.proxy {
        Some(_) => (
            "m-proxied",
            "proxied-a",
            "proxied-b",
            "up-proxied-a",
            "up-proxied-b",
        ),
        None => ("m-fault", "fault-a", "fault-b", "up-fault-a", "up-fault-b"),
    };
    let calls = |up: &str| suite.mock.calls_for(up).len();
    let (a_before, b_before) = (calls(up_a), calls(up_b));
    for script in &row.a {
        suite.mock.enqueue_for(up_a, script.clone());
    }
    for script in &row.b {
        suite.mock.enqueue_for(up_b, script.clone());
    }
    if let Some(path) = row.proxy {
        suite.supplier_proxy.set(path);
    }
    let mut body = json!({"model": model, "max_tokens": 50,
        "messages": [{"role": "user", "content": "hello"}]});
    if row.stream {
        body["stream"] = json!(true);
    }
    let started = Instant::now();
    let mut request = suite
        .client
        .post(format!("{base}/v1/chat/completions"))
        .bearer_auth(&key)
        .json(&body);
    if let Ends::ClientLeaves(ms) = row.ends {
        request = request.timeout(Duration::from_millis(ms));
    }
    let sent = request.send().await;
    let answer = match sent {
        Ok(resp) => {
            let status = resp.status().as_u16();
            let text = resp.text().await.unwrap_or_default();
            Some((status, text))
        }
        Err(_) => None,
    };
    let took = started.elapsed();
    suite.supplier_proxy.set(Path::Up);
    let mut problems = Vec::new();
    if !row.within.contains(&took) {
        problems.push(format!("took {} ms", took.as_millis()));
    }
    let success = match (&row.ends, &answer) {
        (Ends::Success, Some((200, text))) => {
            if row.stream && !text.contains("data: [DONE]") {
                problems.push(format!("the stream did not end cleanly: {text}"));
            }
            true
        }
        (Ends::Error(statuses, code), Some((status, text))) => {
            if !statuses.contains(status) || !text.contains(code) {
                problems.push(format!("answered {status} {text}"));
            }
            false
        }
        (Ends::StreamError(code), Some((200, text))) => {
            let last = text
                .lines()
                .filter_map(|l| l.strip_prefix("data: "))
                .next_back()
                .unwrap_or_default();
            if !last.contains("\"error\"") || !last.contains(code) || text.contains("[DONE]") {
                problems.push(format!("the stream's end: {last}"));
            }
            false
        }
        (Ends::ClientLeaves(_), None) => false,
        (_, answer) => {
            problems.push(format!("answered {answer:?}"));
            false
        }
    };
    // An error or an error event never carries the supplier's own text
    // (its messages all name the mock).
    if let Some((_, text)) = &answer
        && !success
        && text.to_ascii_lowercase().contains("mock")
    {
        problems.push(format!("supplier text reached the client: {text}"));
    }
    // The books, once the request is final (a client that left: once the
    // router noticed and released).
    let until = Instant::now() + Duration::from_secs(10);
    let record = loop {
        let record = record_of(suite, &account, route_a, route_b).await?;
        match record {
            Some(r) if r.status != "reserved" && r.held == 0 => break Some(r),
            _ if Instant::now() >= until => break record,
            _ => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    };
    let record = record.context("no request recorded")?;
    if record.held != 0 || record.status == "reserved" {
        problems.push(format!("left {} ({} held)", record.status, record.held));
    }
    if success != (record.charged > 0) || success != (record.status == "succeeded") {
        problems.push(format!(
            "{} and charged {} although the client {}",
            record.status,
            record.charged,
            if success { "succeeded" } else { "did not" }
        ));
    }
    let attempts = (usize::try_from(record.on_a)?, usize::try_from(record.on_b)?);
    if attempts != row.attempts {
        problems.push(format!(
            "attempts A={} B={}, expected A={} B={}",
            attempts.0, attempts.1, row.attempts.0, row.attempts.1
        ));
    }
    // I5: the attempts the router recorded are the calls the mock saw (the
    // proxy's route: a cut or black-holed call may never reach it).
    let seen = (calls(up_a) - a_before, calls(up_b) - b_before);
    if row.proxy.is_none() && seen != attempts {
        problems.push(format!(
            "the mock saw A={} B={}, the router recorded A={} B={}",
            seen.0, seen.1, attempts.0, attempts.1
        ));
    }
    // Scripts a row did not use would leak into the next.
    suite.mock.reset();
    if problems.is_empty() {
        Ok(())
    } else {
        anyhow::bail!("{}", problems.join("; "))
    }
}
