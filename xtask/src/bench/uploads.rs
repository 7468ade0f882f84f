//! The upload case (issue 18): 50 concurrent 8 MiB image uploads through
//! `POST /v1/uploads`, against writing the same bytes straight into the same
//! object store folder. Targets: the router's resident memory grows by
//! under 64 MiB while they run (a body is spooled and copied in parts, never
//! held whole), and the uploads take at most twice as long as the direct
//! writes.
//!
//! Each upload comes from its own account: one account may keep only 64 MiB
//! and 20 uploads a minute (I-16, I-18), and the case measures the byte path,
//! not those limits.

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use super::{proc_stats, upstream};
use crate::services::{file_form, provision, random_hex};

/// Uploads in flight at once.
pub(crate) const CONCURRENT: usize = 50;
/// Bytes per upload.
pub(crate) const UPLOAD_BYTES: usize = 8 * 1024 * 1024;
/// The memory target: RSS growth while the uploads run.
pub(crate) const RSS_GROWTH_LIMIT_MIB: f64 = 64.0;
/// The throughput target: router time over direct time.
pub(crate) const SLOWDOWN_LIMIT: f64 = 2.0;
/// Rounds of the case; the report gives the median times.
const ROUNDS: usize = 3;
const BOUNDARY: &str = "xtask-bench-upload-6b0f";
const IO_TIMEOUT: Duration = Duration::from_secs(120);

/// What the upload case measured.
#[derive(Clone, Debug)]
pub(crate) struct Uploads {
    pub(crate) uploads: usize,
    pub(crate) bytes_each: usize,
    pub(crate) rounds: usize,
    /// Medians over the rounds.
    pub(crate) router_secs: f64,
    pub(crate) direct_secs: f64,
    pub(crate) rss_before_mib: f64,
    pub(crate) rss_peak_mib: f64,
}

impl Uploads {
    pub(crate) fn mib_per_sec(&self, secs: f64) -> f64 {
        (self.uploads * self.bytes_each) as f64 / (1024.0 * 1024.0) / secs.max(f64::EPSILON)
    }

    pub(crate) fn slowdown(&self) -> f64 {
        self.router_secs / self.direct_secs.max(f64::EPSILON)
    }

    pub(crate) fn rss_growth_mib(&self) -> f64 {
        (self.rss_peak_mib - self.rss_before_mib).max(0.0)
    }

    pub(crate) fn meets_targets(&self) -> bool {
        self.rss_growth_mib() < RSS_GROWTH_LIMIT_MIB && self.slowdown() <= SLOWDOWN_LIMIT
    }
}

/// A valid GIF of exactly `total` bytes: a 1×1 image after comment blocks
/// that pad it (GIF has no checksums, so padding is plain bytes).
pub(crate) fn padded_gif(total: usize) -> Vec<u8> {
    const HEADER: &[u8] = b"GIF89a\x01\x00\x01\x00\x00\x00\x00";
    // Image descriptor with a two-colour local table, the 1x1 pixel, trailer.
    const IMAGE: &[u8] =
        b"\x2c\x00\x00\x00\x00\x01\x00\x01\x00\x80\x00\x00\x00\xff\xff\xff\x02\x02\x44\x01\x00\x3b";
    let mut out = HEADER.to_vec();
    // The comment extension: 0x21 0xFE, sub-blocks of at most 255 bytes, 0.
    let mut pad = total - HEADER.len() - IMAGE.len() - 3;
    assert!(
        pad != 1,
        "a GIF of {total} bytes cannot be padded with sub-blocks"
    );
    out.extend_from_slice(b"\x21\xfe");
    while pad > 0 {
        // A sub-block costs one length byte more than it holds; never leave
        // a single byte behind (an empty sub-block would end the comment).
        let block: u8 = match pad {
            257 => 254,
            p if p > 256 => 255,
            p => u8::try_from(p - 1).unwrap_or(u8::MAX),
        };
        out.push(block);
        out.extend(std::iter::repeat_n(b'z', usize::from(block)));
        pad -= usize::from(block) + 1;
    }
    out.push(0);
    out.extend_from_slice(IMAGE);
    out
}

/// The multipart body of one upload.
fn multipart(file: &[u8]) -> Vec<u8> {
    file_form(BOUNDARY, "bench.gif", "image/gif", file).1
}

/// The congestion control of the client's sockets. Under BBR (this
/// machine's default) a sender's transmissions are paced by timers that run
/// on the core that handled the ACKs: on loopback, the router's. The
/// router's core would then pay for the client's sending, which on a real
/// network runs on the client's machine; Reno does not pace, so each
/// thread's sending stays on the client's core.
pub(crate) const CLIENT_CONGESTION_CONTROL: &str = "reno";

/// A connection to `addr` with [`CLIENT_CONGESTION_CONTROL`].
fn connect(addr: &str) -> Result<TcpStream> {
    let address: std::net::SocketAddr = addr.parse().with_context(|| format!("address {addr}"))?;
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(address),
        socket2::Type::STREAM,
        Some(socket2::Protocol::TCP),
    )?;
    socket
        .set_tcp_congestion(CLIENT_CONGESTION_CONTROL.as_bytes())
        .with_context(|| format!("setting TCP congestion control {CLIENT_CONGESTION_CONTROL}"))?;
    socket
        .connect(&address.into())
        .with_context(|| format!("connecting to {addr}"))?;
    Ok(socket.into())
}

/// One `POST /v1/uploads`; the status code.
fn upload(addr: &str, key: &str, body: &[u8]) -> Result<u16> {
    let mut stream = connect(addr)?;
    stream.set_read_timeout(Some(IO_TIMEOUT))?;
    stream.set_write_timeout(Some(IO_TIMEOUT))?;
    let head = format!(
        "POST /v1/uploads HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: multipart/form-data; boundary={BOUNDARY}\r\nContent-Length: {}\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    let mut reply = Vec::new();
    stream.read_to_end(&mut reply)?;
    let status = String::from_utf8_lossy(&reply)
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .context("the reply has no status line")?;
    Ok(status)
}

/// Runs `work` on `CONCURRENT` threads pinned to `core`, released
/// together once all are pinned; the wall time.
fn all_at_once(core: u32, work: impl Fn(usize) -> Result<()> + Sync) -> Result<Duration> {
    let go = AtomicBool::new(false);
    let pinned = std::sync::atomic::AtomicUsize::new(0);
    thread::scope(|scope| {
        let handles: Vec<_> = (0..CONCURRENT)
            .map(|i| {
                let (go, work, pinned) = (&go, &work, &pinned);
                scope.spawn(move || {
                    let pin = pin_this_thread(core);
                    pinned.fetch_add(1, Ordering::AcqRel);
                    pin?;
                    while !go.load(Ordering::Acquire) {
                        thread::yield_now();
                    }
                    work(i)
                })
            })
            .collect();
        while pinned.load(Ordering::Acquire) < CONCURRENT {
            thread::yield_now();
        }
        let started = Instant::now();
        go.store(true, Ordering::Release);
        for handle in handles {
            handle
                .join()
                .map_err(|_| anyhow::anyhow!("an upload thread panicked"))??;
        }
        Ok(started.elapsed())
    })
}

/// The case: `router_addr`'s router (pid `pid`, pinned to `core`) stores
/// uploads in the folder `store`, sent from threads on `client_core`; the
/// direct writes go to a sibling folder on the same disk, from `core`.
pub(crate) fn run(
    router_addr: &str,
    pid: u32,
    core: u32,
    client_core: u32,
    admin_token: &str,
    store: &Path,
    credits_nano_usd: i64,
) -> Result<Uploads> {
    let keys: Vec<String> = (0..CONCURRENT)
        .map(|i| {
            provision(
                router_addr,
                admin_token,
                &format!("bench-upload-{i}+{}", random_hex(4)?),
                credits_nano_usd,
            )
        })
        .collect::<Result<_>>()?;
    let gif = padded_gif(UPLOAD_BYTES);
    let body = multipart(&gif);

    // Warm the path once (a first upload creates folders and connections).
    let warm_key = provision(
        router_addr,
        admin_token,
        &format!("bench-upload-warm+{}", random_hex(4)?),
        credits_nano_usd,
    )?;
    let status = upload(router_addr, &warm_key, &multipart(&padded_gif(64 * 1024)))?;
    anyhow::ensure!(status == 201, "a warm-up upload answered {status}");

    let rss_before_mib = proc_stats::rss_mib(pid)?;
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = Arc::clone(&sampling);
        thread::spawn(move || {
            let mut peak = 0.0_f64;
            while sampling.load(Ordering::Acquire) {
                if let Ok(rss) = proc_stats::rss_mib(pid) {
                    peak = peak.max(rss);
                }
                thread::sleep(Duration::from_millis(20));
            }
            peak
        })
    };
    let direct_dir = direct_folder(store);
    let mut router_times = Vec::new();
    let mut direct_times = Vec::new();
    let mut failure = None;
    for _ in 0..ROUNDS {
        match round(
            router_addr,
            &keys,
            &body,
            &gif,
            store,
            &direct_dir,
            Cores {
                router: core,
                client: client_core,
            },
        ) {
            Ok((routed, direct)) => {
                router_times.push(routed.as_secs_f64());
                direct_times.push(direct.as_secs_f64());
            }
            Err(e) => {
                failure = Some(e);
                break;
            }
        }
    }
    sampling.store(false, Ordering::Release);
    let rss_peak_mib = sampler
        .join()
        .map_err(|_| anyhow::anyhow!("the RSS sampler panicked"))?
        .max(proc_stats::rss_mib(pid)?);
    // The uploads live an hour; the bench needs neither their bytes nor the
    // folders (the expiry job meets objects already gone as removed).
    let _ = fs::remove_dir_all(&direct_dir);
    let _ = fs::remove_dir_all(store);
    if let Some(e) = failure {
        return Err(e);
    }
    Ok(Uploads {
        uploads: CONCURRENT,
        bytes_each: UPLOAD_BYTES,
        rounds: ROUNDS,
        router_secs: median(&mut router_times),
        direct_secs: median(&mut direct_times),
        rss_before_mib,
        rss_peak_mib,
    })
}

/// One round: the uploads through the router, then the same bytes written
/// straight beside the store by 50 processes at once on the router's core
/// (the router has that one core too): `dd` from a source file already in
/// the page cache, in 256 KiB writes (not `cat`, which may copy inside the
/// kernel). Dirty pages are flushed before each timed step, so neither pays
/// for the other's writeback. Each key uploads once per round.
fn round(
    router_addr: &str,
    keys: &[String],
    body: &[u8],
    file: &[u8],
    store: &Path,
    direct_dir: &Path,
    cores: Cores,
) -> Result<(Duration, Duration)> {
    sync()?;
    let routed = all_at_once(cores.client, |i| {
        let status = upload(router_addr, &keys[i], body)?;
        anyhow::ensure!(status == 201, "upload {i} answered {status}");
        Ok(())
    })?;

    fs::create_dir_all(direct_dir)?;
    let source = direct_dir.join("source");
    fs::write(&source, file)?;
    let _ = fs::read(&source)?;
    let script = format!(
        "for i in $(seq 1 {CONCURRENT}); do dd if=\"$0\" of=\"$1/direct-$i\" bs=256K status=none & done; wait"
    );
    sync()?;
    let started = Instant::now();
    let status = upstream::pinned(cores.router, "sh")
        .arg("-c")
        .arg(&script)
        .arg(&source)
        .arg(direct_dir)
        .status()
        .context("running the direct writes")?;
    let direct = started.elapsed();
    anyhow::ensure!(status.success(), "the direct writes failed: {status}");
    let _ = fs::remove_dir_all(direct_dir);
    let _ = fs::remove_dir_all(store);
    Ok((routed, direct))
}

/// Where the router runs (and the direct writes with it), and the client.
#[derive(Clone, Copy)]
struct Cores {
    router: u32,
    client: u32,
}

/// Pins the calling thread to `core` (`taskset -p` on its thread id), so
/// the uploading client stays off the router's core, as the bench's other
/// load does.
fn pin_this_thread(core: u32) -> Result<()> {
    let link = fs::read_link("/proc/thread-self")?;
    let tid = link
        .file_name()
        .and_then(|name| name.to_str())
        .context("no thread id in /proc/thread-self")?
        .to_owned();
    let status = std::process::Command::new("taskset")
        .args(["-p", "-c", &core.to_string(), &tid])
        .stdout(std::process::Stdio::null())
        .status()?;
    anyhow::ensure!(status.success(), "taskset -p {tid} failed: {status}");
    Ok(())
}

fn sync() -> Result<()> {
    let status = std::process::Command::new("sync").status()?;
    anyhow::ensure!(status.success(), "sync failed: {status}");
    Ok(())
}

fn median(values: &mut [f64]) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or_default()
}

fn direct_folder(store: &Path) -> PathBuf {
    let mut name = store.file_name().unwrap_or_default().to_os_string();
    name.push("-direct");
    store.with_file_name(name)
}

/// The JSON of the report.
pub(crate) fn to_json(u: &Uploads) -> serde_json::Value {
    json!({
        "uploads": u.uploads,
        "bytes_each": u.bytes_each,
        "rounds": u.rounds,
        "router_seconds": super::load::round3(u.router_secs),
        "direct_seconds": super::load::round3(u.direct_secs),
        "router_mib_per_sec": u.mib_per_sec(u.router_secs).round(),
        "direct_mib_per_sec": u.mib_per_sec(u.direct_secs).round(),
        "slowdown": super::load::round3(u.slowdown()),
        "client_congestion_control": CLIENT_CONGESTION_CONTROL,
        "rss_before_mib": u.rss_before_mib.round(),
        "rss_peak_mib": u.rss_peak_mib.round(),
        "rss_growth_mib": u.rss_growth_mib().round(),
        "meets_targets": u.meets_targets(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_padded_gif_has_the_exact_size_and_a_gif_frame() {
        for total in [100, 300, 296, 297, 298, 1024 * 1024, 8 * 1024 * 1024] {
            let gif = padded_gif(total);
            assert_eq!(gif.len(), total);
            assert!(gif.starts_with(b"GIF89a"));
            assert_eq!(gif.last(), Some(&0x3b));
        }
    }

    #[test]
    fn the_file_is_found_back_in_the_body() {
        let file = padded_gif(4096);
        let body = multipart(&file);
        let start = body.len() - file.len() - BOUNDARY.len() - 8;
        assert_eq!(&body[start..][..file.len()], &file[..]);
    }
}
