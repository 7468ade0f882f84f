//! `cargo xtask demo`: the gateway and a mock supplier, running, with an account, credits and
//! an API key, for a person to try with curl. Stops both on ctrl-c.
//!
//! The admin calls are plain HTTP/1.1 over a `TcpStream`: three small JSON requests do not
//! need an HTTP client, and the xtask stays free of an async runtime.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::{cargo, db, display, run_checked, target_dir, workspace_root};

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
const SUPPLIER_LISTEN: &str = "127.0.0.1:9100";
const CATALOG: &str = "fixtures/demo-catalog.toml";
const DEMO_EMAIL: &str = "demo@example.com";
/// $10 in nano-USD.
const DEMO_CREDITS_NANO_USD: i64 = 10_000_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);

struct Options {
    listen: String,
    build: bool,
}

pub fn run(args: &[String]) -> Result<()> {
    let options = parse(args)?;
    // Set on ctrl-c, SIGTERM or SIGHUP; the loops below watch it and return, so the
    // children are stopped on the way out. A second ctrl-c exits at once.
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }

    // Fail before a long build on what the build cannot fix.
    let catalog = workspace_root().join(CATALOG);
    anyhow::ensure!(catalog.is_file(), "{} is missing", catalog.display());
    let router_addr = client_addr(&options.listen);
    // Something already there (an earlier demo, say) would answer in our place.
    for addr in [router_addr.as_str(), SUPPLIER_LISTEN] {
        anyhow::ensure!(
            !answers(addr),
            "something already listens on {addr}; stop it first (or pass --listen)"
        );
    }

    let database_url = db::ensure_postgres()?;
    if options.build {
        run_checked(&mut cargo([
            "build",
            "--release",
            "-p",
            "router-server",
            "-p",
            "router-mock-supplier",
        ]))?;
    }
    let release = target_dir().join("release");
    let router = release.join("router");
    let supplier = release.join("mock-supplier");
    for binary in [&router, &supplier] {
        anyhow::ensure!(
            binary.is_file(),
            "{} is missing; run without --no-build",
            binary.display()
        );
    }
    let admin_token = match std::env::var("ROUTER_ADMIN_TOKEN") {
        Ok(token) if !token.is_empty() => token,
        _ => random_hex(16)?,
    };

    // Dropping `children` stops them, on every way out of this function.
    let mut children = Children::default();
    let mut mock = Command::new(&supplier);
    mock.args(["--listen", SUPPLIER_LISTEN]);
    children.spawn("mock-supplier", mock)?;
    children.wait_until("mock-supplier", &stop, Duration::from_secs(30), || {
        answers(SUPPLIER_LISTEN)
    })?;

    let mut gateway = Command::new(&router);
    gateway
        .arg("serve")
        .env("DATABASE_URL", &database_url)
        .env("ROUTER_LISTEN", &options.listen)
        .env("ROUTER_CATALOG", &catalog)
        .env("ROUTER_ADMIN_TOKEN", &admin_token)
        // The demo catalog's supplier reads its key from this variable.
        .env("MOCK_SUPPLIER_API_KEY", "demo");
    children.spawn("router", gateway)?;
    children.wait_until("router", &stop, READY_TIMEOUT, || {
        matches!(http(&router_addr, "GET", "/readyz", None, None), Ok(response) if response.status == 200)
    })?;

    let api_key = provision(&router_addr, &admin_token)?;
    println!(
        "\nThe gateway is ready on http://{router_addr} (ctrl-c stops it).\n\n\
         API key:     {api_key}\n\
         Admin token: {admin_token}\n\n\
         curl http://{router_addr}/v1/chat/completions -H \"Authorization: Bearer {api_key}\" \
         -H 'content-type: application/json' \
         -d '{{\"model\":\"demo-chat\",\"messages\":[{{\"role\":\"user\",\"content\":\"Hello\"}}]}}'\n"
    );

    while !stop.load(Ordering::SeqCst) {
        if let Some((name, status)) = children.exited()? {
            bail!("{name} exited ({status})");
        }
        sleep(POLL);
    }
    eprintln!("xtask demo: stopping");
    Ok(())
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        listen: DEFAULT_LISTEN.to_owned(),
        build: true,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--no-build" => options.build = false,
            "--listen" => {
                options.listen = args.next().context("--listen needs an address")?.clone();
            }
            other => match other.strip_prefix("--listen=") {
                Some(listen) => options.listen = listen.to_owned(),
                None => bail!("unknown option `{other}`; expected --listen ADDR or --no-build"),
            },
        }
    }
    Ok(options)
}

/// Creates the demo account, gives it credits and makes an inference key; returns the key.
fn provision(router_addr: &str, admin_token: &str) -> Result<String> {
    let admin = |path: &str, body: Value| admin_post(router_addr, admin_token, path, &body);

    let account = json!({ "email": DEMO_EMAIL, "email_verified": true });
    let account = match admin("/admin/accounts", account)? {
        Ok(account) => account,
        // The cluster outlives the demo, so a second run meets the first run's account.
        Err(response) if response.status == 409 => {
            let email = format!("demo+{}@example.com", random_hex(4)?);
            eprintln!("xtask demo: {DEMO_EMAIL} exists from an earlier run; using {email}");
            let account = json!({ "email": email, "email_verified": true });
            admin("/admin/accounts", account)?.map_err(|response| response.error())?
        }
        Err(response) => return Err(response.error()),
    };
    let id = account
        .get("id")
        .filter(|id| id.is_string() || id.is_number())
        .with_context(|| format!("POST /admin/accounts answered without an id: {account}"))?
        .clone();
    let id_in_path = match &id {
        Value::String(id) => id.clone(),
        other => other.to_string(),
    };

    let credits = json!({ "amount_nano_usd": DEMO_CREDITS_NANO_USD });
    admin(&format!("/admin/accounts/{id_in_path}/credits"), credits)?
        .map_err(|response| response.error())?;

    let key = json!({ "account_id": id, "scopes": ["inference"] });
    let key = admin("/admin/api-keys", key)?.map_err(|response| response.error())?;
    let key = key
        .get("key")
        .and_then(Value::as_str)
        .with_context(|| "POST /admin/api-keys answered without a key")?;
    Ok(key.to_owned())
}

/// A POST to the admin API: `Ok(Ok(json))` on a 2xx, `Ok(Err(response))` on another status.
fn admin_post(
    addr: &str,
    token: &str,
    path: &str,
    body: &Value,
) -> Result<Result<Value, Response>> {
    let body = body.to_string();
    let response = http(addr, "POST", path, Some(token), Some(&body))
        .with_context(|| format!("POST {path}"))?;
    if !(200..300).contains(&response.status) {
        return Ok(Err(response));
    }
    let json = serde_json::from_str(&response.body)
        .with_context(|| format!("POST {path} answered with a body that is not JSON"))?;
    Ok(Ok(json))
}

/// The running children; dropping the set stops them.
#[derive(Default)]
struct Children(Vec<(&'static str, Child)>);

impl Children {
    fn spawn(&mut self, name: &'static str, mut command: Command) -> Result<()> {
        eprintln!("xtask demo: starting {name}: {}", display(&command));
        let child = command
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start {name}"))?;
        self.0.push((name, child));
        Ok(())
    }

    /// The first child that has exited, if any.
    fn exited(&mut self) -> Result<Option<(&'static str, ExitStatus)>> {
        for (name, child) in &mut self.0 {
            if let Some(status) = child.try_wait()? {
                return Ok(Some((*name, status)));
            }
        }
        Ok(None)
    }

    /// Polls `ready` until it holds; fails if a child exits, a signal comes, or time runs out.
    fn wait_until(
        &mut self,
        name: &str,
        stop: &AtomicBool,
        timeout: Duration,
        mut ready: impl FnMut() -> bool,
    ) -> Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            if ready() {
                return Ok(());
            }
            if let Some((child, status)) = self.exited()? {
                bail!("{child} exited ({status}) before {name} was ready");
            }
            if stop.load(Ordering::SeqCst) {
                bail!("interrupted while waiting for {name}");
            }
            if Instant::now() >= deadline {
                bail!("{name} was not ready within {}s", timeout.as_secs());
            }
            sleep(POLL);
        }
    }
}

impl Drop for Children {
    /// SIGTERM, so the gateway drains and closes its connections; SIGKILL after 10 s.
    fn drop(&mut self) {
        for (_, child) in self.0.iter_mut().rev() {
            if matches!(child.try_wait(), Ok(None)) {
                // std can only SIGKILL; `kill` sends the polite signal without unsafe code.
                let _ = Command::new("kill")
                    .args(["-TERM", &child.id().to_string()])
                    .stderr(Stdio::null())
                    .status();
            }
        }
        let deadline = Instant::now() + Duration::from_secs(10);
        for (name, child) in self.0.iter_mut().rev() {
            while matches!(child.try_wait(), Ok(None)) && Instant::now() < deadline {
                sleep(Duration::from_millis(50));
            }
            if matches!(child.try_wait(), Ok(None)) {
                eprintln!("xtask demo: {name} did not stop on SIGTERM; killing it");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// `host:port` to connect to for a listen address; a wildcard becomes loopback.
fn client_addr(listen: &str) -> String {
    if let Some(port) = listen.strip_prefix("0.0.0.0:") {
        format!("127.0.0.1:{port}")
    } else if let Some(port) = listen.strip_prefix("[::]:") {
        format!("[::1]:{port}")
    } else {
        listen.to_owned()
    }
}

fn answers(addr: &str) -> bool {
    connect(addr).is_ok()
}

fn connect(addr: &str) -> Result<TcpStream> {
    let mut last_error = None;
    for socket_addr in addr.to_socket_addrs()? {
        match TcpStream::connect_timeout(&socket_addr, Duration::from_secs(2)) {
            Ok(stream) => return Ok(stream),
            Err(error) => last_error = Some(error),
        }
    }
    match last_error {
        Some(error) => Err(error).with_context(|| format!("could not connect to {addr}")),
        None => bail!("{addr} resolves to no address"),
    }
}

struct Response {
    status: u16,
    body: String,
}

impl Response {
    fn error(&self) -> anyhow::Error {
        let body: String = self.body.chars().take(2000).collect();
        anyhow::anyhow!("HTTP {}: {body}", self.status)
    }
}

/// One HTTP/1.1 request with `Connection: close`; the body, if any, is JSON.
fn http(
    addr: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<&str>,
) -> Result<Response> {
    let mut stream = connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;

    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\n"
    );
    if let Some(token) = bearer {
        request.push_str(&format!("Authorization: Bearer {token}\r\n"));
    }
    if let Some(body) = body {
        request.push_str(&format!(
            "Content-Type: application/json\r\nContent-Length: {}\r\n",
            body.len()
        ));
    } else if method != "GET" {
        request.push_str("Content-Length: 0\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body.unwrap_or_default());
    stream.write_all(request.as_bytes())?;

    let mut raw = Vec::new();
    stream.read_to_end(&mut raw)?;
    parse_response(&raw)
}

fn parse_response(raw: &[u8]) -> Result<Response> {
    let split = raw
        .windows(4)
        .position(|window| window == b"\r\n\r\n")
        .context("the response has no end of headers")?;
    let head = String::from_utf8_lossy(&raw[..split]);
    let mut body = &raw[split + 4..];
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|status| status.parse().ok())
        .context("the response has no status line")?;
    let mut chunked = false;
    for line in lines {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        if name.eq_ignore_ascii_case("transfer-encoding") {
            chunked = value.to_ascii_lowercase().contains("chunked");
        } else if name.eq_ignore_ascii_case("content-length") {
            let length: usize = value.parse().context("bad Content-Length")?;
            body = body
                .get(..length)
                .context("the response body is cut short")?;
        }
    }
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    Ok(Response {
        status,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Decodes a `Transfer-Encoding: chunked` body (trailers ignored).
fn dechunk(mut raw: &[u8]) -> Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let line_end = raw
            .windows(2)
            .position(|window| window == b"\r\n")
            .context("a chunk has no size line")?;
        let size_line = String::from_utf8_lossy(&raw[..line_end]);
        let size_hex = size_line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size_hex, 16).context("bad chunk size")?;
        raw = &raw[line_end + 2..];
        if size == 0 {
            return Ok(body);
        }
        body.extend_from_slice(raw.get(..size).context("a chunk is cut short")?);
        raw = raw.get(size + 2..).context("a chunk is cut short")?;
    }
}

fn random_hex(bytes: usize) -> Result<String> {
    let mut random = vec![0; bytes];
    File::open(Path::new("/dev/urandom"))
        .and_then(|mut urandom| urandom.read_exact(&mut random))
        .context("could not read /dev/urandom")?;
    Ok(random.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::{client_addr, parse_response};

    #[test]
    fn parses_a_response_with_content_length() {
        let raw = b"HTTP/1.1 201 Created\r\ncontent-length: 11\r\n\r\n{\"id\":\"a\"}\nextra";
        let response = parse_response(raw).unwrap();
        assert_eq!(response.status, 201);
        assert_eq!(response.body, "{\"id\":\"a\"}\n");
    }

    #[test]
    fn parses_a_chunked_response() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\n{\"ke\r\n6;x=y\r\ny\":\"k\"\r\n1\r\n}\r\n0\r\n\r\n";
        let response = parse_response(raw).unwrap();
        assert_eq!(response.status, 200);
        assert_eq!(response.body, "{\"key\":\"k\"}");
    }

    #[test]
    fn wildcard_listen_addresses_become_loopback() {
        assert_eq!(client_addr("0.0.0.0:8080"), "127.0.0.1:8080");
        assert_eq!(client_addr("[::]:8080"), "[::1]:8080");
        assert_eq!(client_addr("127.0.0.1:9000"), "127.0.0.1:9000");
    }
}
