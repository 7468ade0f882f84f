//! A streaming client for what oha does not measure: the time to the first byte of the body
//! and to the end of a server-sent-event stream, over plain HTTP/1.1 on a `TcpStream` (one
//! connection per stream, `Connection: close`); and many streams held open at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::{self, sleep};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::Call;
use super::load::round3;

const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// Small stacks: up to a thousand of these threads run at once.
const THREAD_STACK: usize = 128 * 1024;

/// Times of one stream, from just before connecting.
#[derive(Clone, Copy, Debug)]
struct Timing {
    first_byte: Duration,
    total: Duration,
}

/// Percentiles over a sample of streams, in milliseconds.
#[derive(Clone, Debug)]
pub(crate) struct StreamFigures {
    pub(crate) ttfb_p50: f64,
    pub(crate) ttfb_p99: f64,
    pub(crate) total_p50: f64,
    pub(crate) total_p99: f64,
    pub(crate) ok: usize,
    pub(crate) failed: usize,
    pub(crate) first_error: Option<String>,
}

impl StreamFigures {
    pub(crate) fn to_json(&self) -> Value {
        json!({
            "ttfb_p50_ms": round3(self.ttfb_p50),
            "ttfb_p99_ms": round3(self.ttfb_p99),
            "total_p50_ms": round3(self.total_p50),
            "total_p99_ms": round3(self.total_p99),
            "ok": self.ok,
            "failed": self.failed,
            "first_error": self.first_error,
        })
    }
}

/// Runs `count` streams, `concurrency` at a time; each must answer 200 and carry `end_marker`.
pub(crate) fn sample(
    call: &Call,
    end_marker: &str,
    count: usize,
    concurrency: usize,
) -> Result<StreamFigures> {
    let concurrency = concurrency.clamp(1, count.max(1));
    let next = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for _ in 0..concurrency {
        let (call, marker, next) = (call.clone(), end_marker.to_owned(), Arc::clone(&next));
        threads.push(
            thread::Builder::new()
                .stack_size(THREAD_STACK)
                .spawn(move || {
                    let mut results = Vec::new();
                    while next.fetch_add(1, Ordering::SeqCst) < count {
                        results.push(one(&call, &marker, None));
                    }
                    results
                })?,
        );
    }
    let mut timings = Vec::new();
    let mut failed = 0;
    let mut first_error = None;
    for thread in threads {
        let results = thread
            .join()
            .map_err(|_| anyhow::anyhow!("a stream thread panicked"))?;
        for result in results {
            match result {
                Ok(timing) => timings.push(timing),
                Err(error) => {
                    failed += 1;
                    first_error.get_or_insert_with(|| format!("{error:#}"));
                }
            }
        }
    }
    if timings.is_empty() {
        bail!(
            "no stream succeeded: {}",
            first_error.unwrap_or_else(|| "none ran".to_owned())
        );
    }
    let mut first: Vec<f64> = timings.iter().map(|t| millis(t.first_byte)).collect();
    let mut total: Vec<f64> = timings.iter().map(|t| millis(t.total)).collect();
    Ok(StreamFigures {
        ttfb_p50: percentile(&mut first, 50.0),
        ttfb_p99: percentile(&mut first, 99.0),
        total_p50: percentile(&mut total, 50.0),
        total_p99: percentile(&mut total, 99.0),
        ok: timings.len(),
        failed,
        first_error,
    })
}

/// Opens `count` streams at once, waits (at most `wait`) until all have their first byte,
/// runs `measure` while they are open, then lets them finish. Returns what `measure`
/// returned, how many streams were open when it ran, and how many completed.
pub(crate) fn hold_open<T>(
    call: &Call,
    end_marker: &str,
    count: usize,
    wait: Duration,
    measure: impl FnOnce() -> T,
) -> Result<(T, usize, usize)> {
    let open = Arc::new(AtomicUsize::new(0));
    let mut threads = Vec::new();
    for _ in 0..count {
        let (call, marker, open) = (call.clone(), end_marker.to_owned(), Arc::clone(&open));
        threads.push(
            thread::Builder::new()
                .stack_size(THREAD_STACK)
                .spawn(move || one(&call, &marker, Some(&open)))?,
        );
    }
    let deadline = Instant::now() + wait;
    while open.load(Ordering::SeqCst) < count && Instant::now() < deadline {
        sleep(Duration::from_millis(20));
    }
    let opened = open.load(Ordering::SeqCst);
    let measured = measure();
    let mut completed = 0;
    for thread in threads {
        if matches!(thread.join(), Ok(Ok(_))) {
            completed += 1;
        }
    }
    Ok((measured, opened, completed))
}

/// One stream; `opened` is bumped when its first body byte arrives.
fn one(call: &Call, end_marker: &str, opened: Option<&AtomicUsize>) -> Result<Timing> {
    let started = Instant::now();
    let mut stream = TcpStream::connect(&call.addr)
        .with_context(|| format!("could not connect to {}", call.addr))?;
    stream.set_nodelay(true)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let mut request = format!(
        "POST {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nAccept: text/event-stream\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n",
        call.path,
        call.addr,
        call.body.len()
    );
    for (name, value) in &call.headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&call.body);
    stream.write_all(request.as_bytes())?;

    let mut raw = Vec::with_capacity(8192);
    let mut buffer = [0_u8; 8192];
    let mut head_end = None;
    let mut first_byte = None;
    loop {
        let read = stream.read(&mut buffer).context("reading the stream")?;
        if read == 0 {
            break;
        }
        raw.extend_from_slice(&buffer[..read]);
        if head_end.is_none() {
            head_end = raw
                .windows(4)
                .position(|window| window == b"\r\n\r\n")
                .map(|at| at + 4);
            if let Some(end) = head_end {
                check_status(&raw[..end])?;
            }
        }
        if first_byte.is_none() && head_end.is_some_and(|end| raw.len() > end) {
            first_byte = Some(started.elapsed());
            if let Some(opened) = opened {
                opened.fetch_add(1, Ordering::SeqCst);
            }
        }
    }
    let total = started.elapsed();
    let (Some(end), Some(first_byte)) = (head_end, first_byte) else {
        bail!("the stream ended before its body began");
    };
    let body = String::from_utf8_lossy(&raw[end..]);
    if !body.contains(end_marker) {
        let tail: String = body
            .chars()
            .rev()
            .take(300)
            .collect::<Vec<_>>()
            .into_iter()
            .rev()
            .collect();
        bail!("the stream ended without `{end_marker}`: ...{tail}");
    }
    Ok(Timing { first_byte, total })
}

fn check_status(head: &[u8]) -> Result<()> {
    let head = String::from_utf8_lossy(head);
    let status = head.split_whitespace().nth(1).unwrap_or_default();
    if status != "200" {
        bail!("{}", head.lines().next().unwrap_or_default().trim());
    }
    Ok(())
}

fn millis(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// Nearest-rank percentile of `values` (sorted in place).
pub(crate) fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    let rank = ((p / 100.0) * values.len() as f64).ceil() as usize;
    values[rank.clamp(1, values.len()) - 1]
}

#[cfg(test)]
mod tests {
    use super::{check_status, percentile};

    #[test]
    fn nearest_rank_percentiles() {
        let mut values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&mut values, 50.0), 50.0);
        assert_eq!(percentile(&mut values, 99.0), 99.0);
        assert_eq!(percentile(&mut [3.0, 1.0, 2.0], 50.0), 2.0);
        assert!(percentile(&mut [], 50.0).is_nan());
    }

    #[test]
    fn only_200_starts_a_stream() {
        assert!(check_status(b"HTTP/1.1 200 OK\r\n\r\n").is_ok());
        assert!(check_status(b"HTTP/1.1 402 Payment Required\r\n\r\n").is_err());
    }
}
