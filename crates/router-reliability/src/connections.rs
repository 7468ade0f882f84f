//! Hostile clients at the socket: slow senders and idle connections
//! against every timeout, and a flood of idle connections against the
//! connection caps (RELIABILITY.md §3 e; issue 33's slowloris finding).
//! The router runs with short timeouts (2 s) so each is measured quickly.

use crate::harness::Suite;
use anyhow::Result;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

const TIMEOUT_SECS: u64 = 2;

async fn connect_from(local: IpAddr, to: SocketAddr) -> std::io::Result<TcpStream> {
    let socket = TcpSocket::new_v4()?;
    socket.bind(SocketAddr::new(local, 0))?;
    socket.connect(to).await
}

/// Reads until the router closes the connection (or `limit` passes); how
/// long that took and what was read.
async fn until_closed(stream: &mut TcpStream, limit: Duration) -> (Option<Duration>, String) {
    let started = Instant::now();
    let mut read = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let left = limit.saturating_sub(started.elapsed());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    Some(started.elapsed()),
                    String::from_utf8_lossy(&read).into_owned(),
                );
            }
            Ok(Ok(n)) => read.extend_from_slice(&buf[..n]),
            Err(_) => return (None, String::from_utf8_lossy(&read).into_owned()),
        }
    }
}

/// Whether a close after `took` fits a timeout of [`TIMEOUT_SECS`].
fn in_time(took: Option<Duration>) -> bool {
    took.is_some_and(|t| {
        t >= Duration::from_millis(TIMEOUT_SECS * 1000 - 300)
            && t <= Duration::from_secs(TIMEOUT_SECS + 3)
    })
}

/// Slow senders and idle connections: each must be closed (or answered
/// 408) at its timeout.
pub async fn slow_clients(suite: &Suite) -> Result<(String, bool)> {
    let secs = TIMEOUT_SECS.to_string();
    let router = suite
        .router(
            "slow-clients",
            &suite.db_url,
            &[
                ("ROUTER_HEADER_READ_TIMEOUT_SECS", &secs),
                ("ROUTER_BODY_IDLE_TIMEOUT_SECS", &secs),
                ("ROUTER_KEEP_ALIVE_IDLE_SECS", &secs),
            ],
        )
        .await?;
    let addr: SocketAddr = router.base.trim_start_matches("http://").parse()?;
    let local = IpAddr::from([127, 0, 0, 1]);
    let limit = Duration::from_secs(TIMEOUT_SECS + 5);
    let mut results: Vec<(&str, bool, String)> = Vec::new();

    // 1. Connects and sends nothing.
    let mut silent = connect_from(local, addr).await?;
    let (took, _) = until_closed(&mut silent, limit).await;
    results.push(("silent connection", in_time(took), format!("{took:?}")));

    // 2. Half a request line, then nothing.
    let mut partial = connect_from(local, addr).await?;
    partial.write_all(b"GET /heal").await?;
    let (took, _) = until_closed(&mut partial, limit).await;
    results.push(("partial request line", in_time(took), format!("{took:?}")));

    // 3. Headers trickled one byte every 300 ms: the head's time is counted
    // from its first byte, not reset by each byte.
    let mut trickle = connect_from(local, addr).await?;
    let head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n\r\n";
    let started = Instant::now();
    let mut closed_at = None;
    for byte in head {
        if trickle.write_all(&[*byte]).await.is_err() {
            closed_at = Some(started.elapsed());
            break;
        }
        let mut probe = [0u8; 1];
        if let Ok(Ok(0)) =
            tokio::time::timeout(Duration::from_millis(300), trickle.read(&mut probe)).await
        {
            closed_at = Some(started.elapsed());
            break;
        }
        if started.elapsed() > limit {
            break;
        }
    }
    results.push((
        "headers trickled",
        in_time(closed_at),
        format!("{closed_at:?}"),
    ));

    // 4. A POST that declares a body and sends none: 408.
    let mut bodiless = connect_from(local, addr).await?;
    bodiless
        .write_all(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer sk-x\r\n\
              Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"mo",
        )
        .await?;
    let (took, read) = until_closed(&mut bodiless, limit).await;
    let answered_408 = read.starts_with("HTTP/1.1 408") || read.starts_with("HTTP/1.1 401");
    results.push((
        "declared body never sent",
        in_time(took) || answered_408,
        format!("{took:?} {}", read.lines().next().unwrap_or("")),
    ));

    // 5. An idle keep-alive connection after one answer.
    let mut idle = connect_from(local, addr).await?;
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await?;
    let mut buf = [0u8; 2048];
    let _ = tokio::time::timeout(Duration::from_secs(5), idle.read(&mut buf)).await;
    let (took, _) = until_closed(&mut idle, limit).await;
    results.push(("idle keep-alive", in_time(took), format!("{took:?}")));

    // 6. Fresh clients are still answered while these were held.
    let fresh = suite
        .client
        .get(format!("{}/healthz", router.base))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0);
    results.push(("fresh client answered", fresh == 200, fresh.to_string()));
    router.stop().await?;

    let ok = results.iter().all(|(_, ok, _)| *ok);
    for (what, ok, detail) in &results {
        if !ok {
            eprintln!("slow clients: {what} failed: {detail}");
        }
    }
    let line = format!(
        "slow clients: {}/{} closed or refused at their {TIMEOUT_SECS} s timeout (silent, partial line, trickled head, bodiless POST, idle keep-alive) and a fresh client answered",
        results.iter().filter(|(_, ok, _)| *ok).count(),
        results.len()
    );
    Ok((line, ok))
}

/// A flood of idle connections from many loopback addresses: the router
/// keeps answering a fresh client quickly, and its memory comes back down.
pub async fn flood(suite: &Suite) -> Result<(String, bool)> {
    let per_address = 256usize;
    let addresses: u8 = if suite.quick { 4 } else { 40 };
    let router = suite
        .router(
            "flood",
            &suite.db_url,
            &[("ROUTER_HEADER_READ_TIMEOUT_SECS", "5")],
        )
        .await?;
    let addr: SocketAddr = router.base.trim_start_matches("http://").parse()?;
    let rss_before = router.rss_kib().unwrap_or(0);
    let mut held = Vec::new();
    let mut opened = 0usize;
    // From each address its cap and a few more (those are closed at once).
    for a in 0..addresses {
        let local = IpAddr::from([127, 0, 1 + a / 200, 10 + a % 200]);
        for _ in 0..per_address + 8 {
            if let Ok(stream) = connect_from(local, addr).await {
                opened += 1;
                held.push(stream);
            }
        }
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    let rss_flood = router.rss_kib().unwrap_or(0);
    let fresh_client = reqwest::Client::builder()
        .local_address(IpAddr::from([127, 0, 2, 250]))
        .timeout(Duration::from_secs(10))
        .build()?;
    let started = Instant::now();
    let status = fresh_client
        .get(format!("{}/healthz", router.base))
        .send()
        .await
        .map(|r| r.status().as_u16())
        .unwrap_or(0);
    let answered_in = started.elapsed();
    drop(held);
    // The connections are closed; the memory they took goes back to the
    // system (jemalloc purges freed pages after its 10 s decay): RSS within
    // 10 % of where it started, waited for at most 30 s (a small flood's
    // pages take up to about 20 s: the purging thread sleeps longer when
    // little is dirty).
    let closed = Instant::now();
    let back_within = rss_before + rss_before / 10;
    let mut rss_after = router.rss_kib().unwrap_or(0);
    while rss_after > back_within && closed.elapsed() < Duration::from_secs(30) {
        tokio::time::sleep(Duration::from_millis(500)).await;
        rss_after = router.rss_kib().unwrap_or(0);
    }
    let came_back = rss_after <= back_within;
    router.stop().await?;
    let ok = status == 200 && answered_in < Duration::from_millis(500) && came_back;
    let line = format!(
        "flood: {opened} idle connections from {addresses} addresses, fresh client answered {status} in {} ms; \
         RSS {} -> {} -> {} MiB ({} within 10 % of the start {:.1} s after the connections closed)",
        answered_in.as_millis(),
        rss_before / 1024,
        rss_flood / 1024,
        rss_after / 1024,
        if came_back { "back" } else { "NOT back" },
        closed.elapsed().as_secs_f64(),
    );
    Ok((line, ok))
}
