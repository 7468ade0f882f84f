//! Client connections under their limits (issue 33, slowloris and
//! connection exhaustion): the head, keep-alive and body timeouts, the early
//! 413 of a declared length, and the caps in total and per address. Raw TCP
//! on loopback, so each test controls every byte and pause.

use crate::harness::*;
use router_http::body::BodyPace;
use router_http::connection::ConnectionLimits;
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn limits() -> ConnectionLimits {
    ConnectionLimits {
        header_read_timeout: Duration::from_secs(1),
        keep_alive_idle: Duration::from_secs(2),
        h2_keep_alive_interval: Duration::from_secs(30),
        max_connections: 64,
        max_connections_per_address: 16,
        body: BodyPace {
            idle: Duration::from_secs(1),
            min_bytes_per_sec: 0,
        },
        drain: Duration::from_secs(5),
    }
}

fn address(r: &TestRouter) -> SocketAddr {
    r.base.trim_start_matches("http://").parse().unwrap()
}

/// Connects from `source` (any 127/8 address is loopback on Linux).
async fn connect_from(source: &str, to: SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().unwrap();
    socket.bind(format!("{source}:0").parse().unwrap()).unwrap();
    socket.connect(to).await.unwrap()
}

/// Reads until the server closes the connection (or `limit` passes);
/// returns what was read and when the close came.
async fn read_until_closed(stream: &mut TcpStream, limit: Duration) -> (String, Option<Duration>) {
    let started = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        match tokio::time::timeout_at((started + limit).into(), stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => {
                return (
                    String::from_utf8_lossy(&seen).into_owned(),
                    Some(started.elapsed()),
                );
            }
            Ok(Ok(n)) => seen.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&seen).into_owned(), None),
        }
    }
}

/// Reads one whole response head and its `Content-Length` body.
async fn read_response(stream: &mut TcpStream) -> String {
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let text = String::from_utf8_lossy(&seen).into_owned();
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| {
                    l.to_ascii_lowercase()
                        .strip_prefix("content-length:")
                        .map(|v| v.trim().parse::<usize>().unwrap())
                })
                .unwrap_or(0);
            if seen.len() >= end + 4 + length {
                return text;
            }
        }
        let n = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf))
            .await
            .expect("a response within 10 s")
            .unwrap();
        assert!(n > 0, "closed before a whole response: {text}");
        seen.extend_from_slice(&buf[..n]);
    }
}

/// The router closes `stream` within 5 s, and not before 0.9 s (`why`).
async fn assert_closed_after_a_second(stream: &mut TcpStream, why: &str) {
    let (_, closed) = read_until_closed(stream, Duration::from_secs(5)).await;
    let closed = closed.expect(why);
    assert!(closed >= Duration::from_millis(900), "{closed:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_connection_that_never_sends_a_head_is_closed() {
    let r = TestRouter::start_connections(limits()).await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    assert_closed_after_a_second(&mut stream, "closed by the header timeout").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_head_trickled_a_byte_at_a_time_is_cut_at_the_header_timeout() {
    let r = TestRouter::start_connections(limits()).await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    let started = Instant::now();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        .await
        .unwrap();
    // A header byte every 200 ms: always something new, never the end.
    let mut closed_at = None;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(200)).await;
        if stream.write_all(b"X").await.is_err() {
            closed_at = Some(started.elapsed());
            break;
        }
        let mut buf = [0u8; 64];
        if let Ok(Ok(0) | Err(_)) =
            tokio::time::timeout(Duration::from_millis(1), stream.read(&mut buf)).await
        {
            closed_at = Some(started.elapsed());
            break;
        }
    }
    let closed_at = closed_at.expect("the trickled head is cut");
    assert!(closed_at < Duration::from_secs(4), "{closed_at:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn an_idle_keep_alive_connection_is_closed_after_its_idle_time() {
    let r = TestRouter::start_connections(ConnectionLimits {
        // Longer than the keep-alive wait: the close is the keep-alive's.
        header_read_timeout: Duration::from_secs(30),
        keep_alive_idle: Duration::from_secs(1),
        ..limits()
    })
    .await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    send_healthz(&mut stream).await;
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 200"), "{response}");
    assert_closed_after_a_second(&mut stream, "closed after the keep-alive idle time").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_keep_alive_connection_in_use_stays_open() {
    let r = TestRouter::start_connections(limits()).await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    // Requests 600 ms apart, well past the 1 s head timeout in all.
    for _ in 0..4 {
        send_healthz(&mut stream).await;
        let response = read_response(&mut stream).await;
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        tokio::time::sleep(Duration::from_millis(600)).await;
    }
}

/// Writes a whole `GET /healthz` request.
async fn send_healthz(stream: &mut TcpStream) {
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        .await
        .unwrap();
}

fn chat_head(key: &str, length: usize) -> String {
    format!(
        "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {key}\r\n\
         Content-Type: application/json\r\nContent-Length: {length}\r\n\r\n"
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_that_stops_arriving_is_408_request_timeout() {
    let r = TestRouter::start_connections(limits()).await;
    let c = r.rich_customer().await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    let started = Instant::now();
    stream
        .write_all(format!("{}{{\"model\":", chat_head(&c.key, 200)).as_bytes())
        .await
        .unwrap();
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(
        response.contains("\"code\":\"request_timeout\""),
        "{response}"
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(r.mock.call_count(), 0);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_body_below_the_minimum_rate_is_408_request_timeout() {
    let r = TestRouter::start_connections(ConnectionLimits {
        body: BodyPace {
            idle: Duration::from_secs(1),
            min_bytes_per_sec: 1000,
        },
        ..limits()
    })
    .await;
    let c = r.rich_customer().await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    stream
        .write_all(chat_head(&c.key, 10_000).as_bytes())
        .await
        .unwrap();
    // A byte every 300 ms: never idle for a second, far below 1000 B/s.
    let (mut read, mut write) = stream.into_split();
    let writer = tokio::spawn(async move {
        for _ in 0..30 {
            tokio::time::sleep(Duration::from_millis(300)).await;
            if write.write_all(b" ").await.is_err() {
                break;
            }
        }
    });
    let mut seen = Vec::new();
    let mut buf = [0u8; 4096];
    while !String::from_utf8_lossy(&seen).contains("request_timeout") {
        let n = tokio::time::timeout(Duration::from_secs(6), read.read(&mut buf))
            .await
            .expect("an answer before the trickle ends")
            .unwrap();
        assert!(n > 0, "closed: {}", String::from_utf8_lossy(&seen));
        seen.extend_from_slice(&buf[..n]);
    }
    writer.abort();
    let response = String::from_utf8_lossy(&seen).into_owned();
    assert!(response.starts_with("HTTP/1.1 408"), "{response}");
    assert!(response.contains("request_timeout"), "{response}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_declared_length_over_the_limit_is_413_before_any_body_byte() {
    let r = TestRouter::start_connections(limits()).await;
    let c = r.rich_customer().await;
    let mut stream = TcpStream::connect(address(&r)).await.unwrap();
    // 3 MiB declared on a 2 MiB surface; not one body byte sent.
    stream
        .write_all(chat_head(&c.key, 3 * 1024 * 1024).as_bytes())
        .await
        .unwrap();
    let started = Instant::now();
    let response = read_response(&mut stream).await;
    assert!(response.starts_with("HTTP/1.1 413"), "{response}");
    assert!(response.contains("payload_too_large"), "{response}");
    // Well before the 1 s body idle timeout could have answered anything.
    assert!(
        started.elapsed() < Duration::from_millis(800),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn connections_past_an_address_share_are_closed_and_others_still_served() {
    let r = TestRouter::start_connections(ConnectionLimits {
        header_read_timeout: Duration::from_secs(30),
        max_connections_per_address: 3,
        ..limits()
    })
    .await;
    let to = address(&r);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connect_from("127.0.0.2", to).await);
    }
    // Let the accept loop take the three.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut fourth = connect_from("127.0.0.2", to).await;
    let (_, closed) = read_until_closed(&mut fourth, Duration::from_secs(2)).await;
    assert!(closed.is_some(), "the fourth from 127.0.0.2 is closed");
    // Another address is served at once.
    let mut fresh = connect_from("127.0.0.1", to).await;
    send_healthz(&mut fresh).await;
    assert!(read_response(&mut fresh).await.starts_with("HTTP/1.1 200"));
    // A freed place is taken again.
    drop(held.pop());
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut again = connect_from("127.0.0.2", to).await;
    send_healthz(&mut again).await;
    assert!(read_response(&mut again).await.starts_with("HTTP/1.1 200"));
}

#[tokio::test(flavor = "multi_thread")]
async fn past_the_total_new_connections_wait_until_a_place_frees() {
    let r = TestRouter::start_connections(ConnectionLimits {
        header_read_timeout: Duration::from_secs(30),
        max_connections: 2,
        ..limits()
    })
    .await;
    let to = address(&r);
    let first = connect_from("127.0.0.3", to).await;
    let _second = connect_from("127.0.0.4", to).await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut third = connect_from("127.0.0.1", to).await;
    send_healthz(&mut third).await;
    let mut buf = [0u8; 64];
    let waited = tokio::time::timeout(Duration::from_millis(500), third.read(&mut buf)).await;
    assert!(waited.is_err(), "no answer while both places are taken");
    drop(first);
    assert!(read_response(&mut third).await.starts_with("HTTP/1.1 200"));
}
