//! What `demo`, `conformance` and `bench` share to run the gateway: command-line flags,
//! the release binaries, child processes that stop when dropped, a minimal HTTP/1.1 client,
//! free loopback ports, and provisioning an account with credits and an inference key
//! through the admin API.
//!
//! The HTTP calls are plain HTTP/1.1 over a `TcpStream`: a few small JSON requests do not
//! need an HTTP client, and the xtask stays free of an async runtime.

use std::fs::File;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream, ToSocketAddrs};
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use crate::{cargo, display, run_checked, target_dir, workspace_root};

const POLL: Duration = Duration::from_millis(200);

/// Walks `--flag value` and `--flag=value` options: `on_flag` gets each flag and a way to
/// take its value (which says `{flag} needs a value` when there is none).
pub(crate) fn for_each_flag(
    args: &[String],
    mut on_flag: impl FnMut(&str, &mut dyn FnMut() -> Result<String>) -> Result<()>,
) -> Result<()> {
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) if flag.starts_with("--") => (flag, Some(value.to_owned())),
            _ => (arg.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match &inline {
                Some(value) => Ok(value.clone()),
                None => args
                    .next()
                    .cloned()
                    .with_context(|| format!("{flag} needs a value")),
            }
        };
        on_flag(flag, &mut value)?;
    }
    Ok(())
}

/// The release `router` and `mock-supplier` binaries, built first unless `build` is false.
pub(crate) fn release_binaries(build: bool) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    if build {
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
    Ok((release.join("router"), release.join("mock-supplier")))
}

/// Creates an account (`{email_user}@example.com`, or a fresh variant of it when an earlier
/// run left that one behind), gives it `credits_nano_usd` and makes an inference key;
/// returns the key.
pub(crate) fn provision(
    router_addr: &str,
    admin_token: &str,
    email_user: &str,
    credits_nano_usd: i64,
) -> Result<String> {
    provision_account(
        router_addr,
        admin_token,
        email_user,
        credits_nano_usd,
        json!({}),
    )
    .map(|account| account.api_key)
}

/// What [`provision_account`] made.
pub(crate) struct Provisioned {
    pub(crate) account_id: String,
    pub(crate) email: String,
    pub(crate) api_key: String,
}

/// [`provision_account`]'s key.
pub(crate) fn provision_with_policy(
    router_addr: &str,
    admin_token: &str,
    email_user: &str,
    credits_nano_usd: i64,
    policy: Value,
) -> Result<String> {
    provision_account(
        router_addr,
        admin_token,
        email_user,
        credits_nano_usd,
        policy,
    )
    .map(|account| account.api_key)
}

/// [`provision`], with the key's policy fields (`allowed_models`, `ip_allowlist`, ...)
/// taken from the object `policy`; returns the account's email with the key.
pub(crate) fn provision_account(
    router_addr: &str,
    admin_token: &str,
    email_user: &str,
    credits_nano_usd: i64,
    policy: Value,
) -> Result<Provisioned> {
    let admin = |path: &str, body: Value| admin_post(router_addr, admin_token, path, &body);

    let email = format!("{email_user}@example.com");
    let account = json!({ "email": email, "email_verified": true });
    let account = match admin("/admin/accounts", account)? {
        Ok(account) => account,
        // The cluster outlives each run, so a second run meets the first run's account.
        Err(response) if response.status == 409 => {
            let fresh = format!("{email_user}+{}@example.com", random_hex(4)?);
            eprintln!("xtask: {email} exists from an earlier run; using {fresh}");
            let account = json!({ "email": fresh, "email_verified": true });
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

    // An account with no credit is a valid customer too (GET /v1/docs needs none).
    if credits_nano_usd > 0 {
        let credits = json!({ "amount_nano_usd": credits_nano_usd });
        admin(&format!("/admin/accounts/{id_in_path}/credits"), credits)?
            .map_err(|response| response.error())?;
    }

    let mut key = json!({ "account_id": id, "scopes": ["inference"] });
    if let (Some(key), Value::Object(policy)) = (key.as_object_mut(), policy) {
        key.extend(policy);
    }
    let key = admin("/admin/api-keys", key)?.map_err(|response| response.error())?;
    let key = key
        .get("key")
        .and_then(Value::as_str)
        .with_context(|| "POST /admin/api-keys answered without a key")?;
    let email = account
        .get("email")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned();
    Ok(Provisioned {
        account_id: id_in_path,
        email,
        api_key: key.to_owned(),
    })
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
pub(crate) struct Children(Vec<(&'static str, Child)>);

impl Children {
    /// Starts a child that shares our terminal.
    pub(crate) fn spawn(&mut self, name: &'static str, command: Command) -> Result<()> {
        self.start(name, command, None)
    }

    /// Starts a child whose stdout and stderr go to `log` (truncated first).
    pub(crate) fn spawn_logged(
        &mut self,
        name: &'static str,
        command: Command,
        log: &Path,
    ) -> Result<()> {
        self.start(name, command, Some(log))
    }

    fn start(
        &mut self,
        name: &'static str,
        mut command: Command,
        log: Option<&Path>,
    ) -> Result<()> {
        eprintln!("xtask: starting {name}: {}", display(&command));
        if let Some(log) = log {
            let out = File::create(log).with_context(|| format!("creating {}", log.display()))?;
            let err = out.try_clone()?;
            command.stdout(out).stderr(err);
        }
        let child = command
            .current_dir(workspace_root())
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("could not start {name}"))?;
        self.0.push((name, child));
        Ok(())
    }

    /// The process id of the child started as `name` (the last one, if several were).
    pub(crate) fn pid(&self, name: &str) -> Option<u32> {
        self.0
            .iter()
            .rev()
            .find(|(child_name, _)| *child_name == name)
            .map(|(_, child)| child.id())
    }

    /// The first child that has exited, if any.
    pub(crate) fn exited(&mut self) -> Result<Option<(&'static str, ExitStatus)>> {
        for (name, child) in &mut self.0 {
            if let Some(status) = child.try_wait()? {
                return Ok(Some((*name, status)));
            }
        }
        Ok(None)
    }

    /// Polls `ready` until it holds; fails if a child exits, a signal comes, or time runs out.
    pub(crate) fn wait_until(
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
                eprintln!("xtask: {name} did not stop on SIGTERM; killing it");
                let _ = child.kill();
                let _ = child.wait();
            }
        }
    }
}

/// A loopback port nothing listens on right now (the OS picks it; it is free again as soon
/// as we let go of it, so a child can bind it a moment later).
pub(crate) fn free_loopback_port() -> Result<u16> {
    let listener = TcpListener::bind("127.0.0.1:0").context("binding a loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// `host:port` to connect to for a listen address; a wildcard becomes loopback.
pub(crate) fn client_addr(listen: &str) -> String {
    if let Some(port) = listen.strip_prefix("0.0.0.0:") {
        format!("127.0.0.1:{port}")
    } else if let Some(port) = listen.strip_prefix("[::]:") {
        format!("[::1]:{port}")
    } else {
        listen.to_owned()
    }
}

pub(crate) fn answers(addr: &str) -> bool {
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

pub(crate) struct Response {
    pub(crate) status: u16,
    pub(crate) body: String,
}

impl Response {
    pub(crate) fn error(&self) -> anyhow::Error {
        let body: String = self.body.chars().take(2000).collect();
        anyhow::anyhow!("HTTP {}: {body}", self.status)
    }
}

/// One HTTP/1.1 request with `Connection: close`; the body, if any, is JSON.
pub(crate) fn http(
    addr: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<&str>,
) -> Result<Response> {
    http_with(
        addr,
        method,
        path,
        bearer,
        body.map(|body| ("application/json", body.as_bytes())),
    )
}

/// A `multipart/form-data` body of one part named `file`: its
/// `Content-Type` header value and its bytes.
pub(crate) fn file_form(
    boundary: &str,
    filename: &str,
    content_type: &str,
    data: &[u8],
) -> (String, Vec<u8>) {
    let mut body = format!(
        "--{boundary}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\nContent-Type: {content_type}\r\n\r\n"
    )
    .into_bytes();
    body.extend_from_slice(data);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// [`http`] with a body of any type: `(content type, bytes)`.
pub(crate) fn http_with(
    addr: &str,
    method: &str,
    path: &str,
    bearer: Option<&str>,
    body: Option<(&str, &[u8])>,
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
    if let Some((content_type, body)) = body {
        request.push_str(&format!(
            "Content-Type: {content_type}\r\nContent-Length: {}\r\n",
            body.len()
        ));
    } else if method != "GET" {
        request.push_str("Content-Length: 0\r\n");
    }
    request.push_str("\r\n");
    let mut request = request.into_bytes();
    request.extend_from_slice(body.map(|(_, body)| body).unwrap_or_default());
    stream.write_all(&request)?;

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

pub(crate) fn random_hex(bytes: usize) -> Result<String> {
    let mut random = vec![0; bytes];
    File::open(Path::new("/dev/urandom"))
        .and_then(|mut urandom| urandom.read_exact(&mut random))
        .context("could not read /dev/urandom")?;
    Ok(random.iter().map(|byte| format!("{byte:02x}")).collect())
}

#[cfg(test)]
mod tests {
    use super::{client_addr, free_loopback_port, parse_response};

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

    #[test]
    fn free_loopback_ports_are_bindable() {
        let port = free_loopback_port().unwrap();
        assert_ne!(port, 0);
        std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    }
}
