//! `cargo xtask browser`: the account dashboard in headless Chromium, driven over WebDriver
//! (chromedriver speaks plain JSON over HTTP, so a small HTTP/1.1 exchange here is enough),
//! against a local router and mock supplier whose SMTP sink captures the router's mail.
//!
//! Scenarios, in order, each a person's task: sign in through the mailed magic link (and see
//! a spent link refused plainly); see a charge made by an API request appear in usage, equal
//! to the ledger's; create a key, use it, change its policy, revoke it and see it refused;
//! connect the email digest and send a report that reaches the SMTP sink (and see the wait
//! of the one-a-minute limit); turn on zero data retention and see an upload refused; post a
//! form to the router from another origin and see it refused. Then
//! every page is photographed at desktop and phone width into
//! `target/dashboard-screenshots/`, and the person signs out.
//!
//! Chromium and chromedriver are Debian's `chromium` and `chromium-driver`; when missing,
//! they are installed with apt-get (as root; CI runs as root on a clean machine).

use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::thread::sleep;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use base64::Engine;
use serde_json::{Value, json};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::conformance::{Extras, start_local};
use crate::services::{
    Children, answers, file_form, free_loopback_port, http, http_with, provision_account,
    random_hex,
};
use crate::{run_checked, target_dir};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// Chromium's flags on a closed network: no sandbox (root in CI), no GPU, and none of its
/// own connections (which this network refuses, slowly).
const CHROMIUM_FLAGS: [&str; 9] = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
];
/// The WebDriver name of an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";
const WAIT: Duration = Duration::from_secs(20);
const DESKTOP: (u32, u32) = (1280, 900);
const PHONE: (u32, u32) = (390, 844);
/// $10.
const CREDITS_NANO_USD: i64 = 10_000_000_000;
/// A 1×1 PNG: an upload the router takes while zero data retention is off.
const PNG: [u8; 68] = [
    0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A, 0x00, 0x00, 0x00, 0x0D, 0x49, 0x48, 0x44, 0x52,
    0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1F, 0x15, 0xC4,
    0x89, 0x00, 0x00, 0x00, 0x0B, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9C, 0x63, 0x60, 0x00, 0x02, 0x00,
    0x00, 0x05, 0x00, 0x01, 0x7A, 0x5E, 0xAB, 0x3F, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4E, 0x44,
    0xAE, 0x42, 0x60, 0x82,
];

/// Returns whether every scenario passed.
pub fn run(args: &[String]) -> Result<bool> {
    if !args.is_empty() {
        bail!("`browser` takes no arguments, got {args:?}");
    }
    let started = Instant::now();
    let stop = Arc::new(AtomicBool::new(false));
    for signal in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&stop))?;
        signal_hook::flag::register(signal, Arc::clone(&stop))?;
    }
    ensure_browser()?;
    let work = target_dir().join("browser");
    fs::create_dir_all(&work)?;
    let shots = target_dir().join("dashboard-screenshots");
    let _ = fs::remove_dir_all(&shots);
    fs::create_dir_all(&shots)?;

    let mut children = Children::default();
    let target = start_local(
        &work,
        &mut children,
        &stop,
        None,
        Extras {
            mail: true,
            folder_store: true,
            test_hooks: true,
        },
    )?;
    let admin_token = target
        .admin_token
        .clone()
        .context("the local router has an operator token")?;
    let router = target.base_url.trim_start_matches("http://").to_owned();
    let account = provision_account(
        &router,
        &admin_token,
        &format!("browser+{}", random_hex(4)?),
        CREDITS_NANO_USD,
        json!({}),
    )?;

    let driver_port = free_dual_stack_port()?;
    let mut chromedriver = Command::new(CHROMEDRIVER);
    chromedriver.args([&format!("--port={driver_port}"), "--allowed-ips=127.0.0.1"]);
    children.spawn_logged(
        "chromedriver",
        chromedriver,
        &work.join("logs").join("chromedriver.log"),
    )?;
    let driver_addr = format!("127.0.0.1:{driver_port}");
    children.wait_until("chromedriver", &stop, WAIT, || answers(&driver_addr))?;
    let profile = work.join(format!("profile-{}", random_hex(4)?));
    let browser = Browser::start(&driver_addr, &profile)?;

    let run = Run {
        browser,
        base: target.base_url.clone(),
        router,
        admin_token,
        email: account.email,
        api_key: account.api_key,
        mail_log: work.join("logs").join("mock-supplier.log"),
        shots,
    };
    let scenarios: [(&str, Scenario); 8] = [
        ("sign in through the mailed magic link", Run::sign_in),
        (
            "an API request's charge appears in usage",
            Run::charge_in_usage,
        ),
        (
            "create a key, use it, change its policy, revoke it",
            Run::key_lifecycle,
        ),
        ("connect the email digest and send a report", Run::digest),
        (
            "zero data retention refuses uploads",
            Run::zero_data_retention,
        ),
        ("a cross-origin form post is refused", Run::cross_origin),
        ("every page at desktop and phone width", Run::screenshots),
        ("sign out", Run::sign_out),
    ];
    let mut failed = Vec::new();
    for (name, scenario) in scenarios {
        let at = Instant::now();
        match scenario(&run) {
            Ok(()) => eprintln!("browser: ok   {name} ({} ms)", at.elapsed().as_millis()),
            Err(error) => {
                eprintln!("browser: FAIL {name}: {error:#}");
                let _ = run.shot(&format!("failed-{}", failed.len() + 1));
                failed.push(name);
            }
        }
    }
    drop(run.browser);
    drop(children);
    let _ = fs::remove_dir_all(&profile);
    println!(
        "browser: {} of {} scenarios passed in {}s (screenshots: {})",
        scenarios.len() - failed.len(),
        scenarios.len(),
        started.elapsed().as_secs(),
        run.shots.display()
    );
    Ok(failed.is_empty())
}

/// A loopback port free on IPv4 and IPv6 both: chromedriver listens on both and exits
/// when the IPv6 one is taken.
fn free_dual_stack_port() -> Result<u16> {
    for _ in 0..20 {
        let port = free_loopback_port()?;
        match std::net::TcpListener::bind(("::1", port)) {
            Err(error) if error.kind() == std::io::ErrorKind::AddrInUse => continue,
            _ => return Ok(port),
        }
    }
    bail!("no loopback port free on both IPv4 and IPv6 in 20 tries")
}

/// Installs Debian's Chromium and chromedriver when either is missing.
fn ensure_browser() -> Result<()> {
    if Path::new(CHROMIUM).is_file() && Path::new(CHROMEDRIVER).is_file() {
        return Ok(());
    }
    eprintln!("xtask browser: chromium or chromedriver is missing; installing them with apt-get");
    let install = || {
        run_checked(
            Command::new("apt-get")
                .args(["install", "-y", "-q", "chromium", "chromium-driver"])
                .env("DEBIAN_FRONTEND", "noninteractive"),
        )
    };
    install()
        .or_else(|_| {
            run_checked(Command::new("apt-get").args(["update", "-q"]))?;
            install()
        })
        .context("installing chromium and chromium-driver (as root)")
}

/// One WebDriver session.
struct Browser {
    driver: String,
    session: String,
}

impl Browser {
    fn start(driver: &str, profile: &Path) -> Result<Browser> {
        let mut args: Vec<String> = CHROMIUM_FLAGS.iter().map(|f| (*f).to_owned()).collect();
        args.push(format!("--user-data-dir={}", profile.display()));
        args.push(format!("--window-size={},{}", DESKTOP.0, DESKTOP.1));
        let capabilities = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "unhandledPromptBehavior": "ignore",
            "goog:chromeOptions": {"binary": CHROMIUM, "args": args},
        }}});
        let answer = call(driver, "POST", "/session", Some(&capabilities))?;
        let session = answer["sessionId"]
            .as_str()
            .context("no session id from chromedriver")?
            .to_owned();
        Ok(Browser {
            driver: driver.to_owned(),
            session,
        })
    }

    fn cmd(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
        call(
            &self.driver,
            method,
            &format!("/session/{}{path}", self.session),
            body,
        )
    }

    fn goto(&self, url: &str) -> Result<()> {
        self.cmd("POST", "/url", Some(&json!({"url": url})))
            .map(drop)
    }

    fn find(&self, css: &str) -> Result<String> {
        let found = self
            .cmd(
                "POST",
                "/element",
                Some(&json!({"using": "css selector", "value": css})),
            )
            .with_context(|| format!("finding {css}"))?;
        found[ELEMENT]
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no element reference for {css}"))
    }

    fn click(&self, css: &str) -> Result<()> {
        let id = self.find(css)?;
        self.cmd("POST", &format!("/element/{id}/click"), Some(&json!({})))
            .with_context(|| format!("clicking {css}"))
            .map(drop)
    }

    fn clear(&self, css: &str) -> Result<()> {
        let id = self.find(css)?;
        self.cmd("POST", &format!("/element/{id}/clear"), Some(&json!({})))
            .map(drop)
    }

    fn type_into(&self, css: &str, text: &str) -> Result<()> {
        let id = self.find(css)?;
        self.cmd(
            "POST",
            &format!("/element/{id}/value"),
            Some(&json!({"text": text})),
        )
        .map(drop)
    }

    /// Runs `script` (a function body; `arguments` are `args`) and answers its value.
    fn script(&self, script: &str, args: Value) -> Result<Value> {
        self.cmd(
            "POST",
            "/execute/sync",
            Some(&json!({"script": script, "args": args})),
        )
    }

    /// Runs an async `script` whose last argument is the callback.
    fn script_async(&self, script: &str, args: Value) -> Result<Value> {
        self.cmd(
            "POST",
            "/execute/async",
            Some(&json!({"script": script, "args": args})),
        )
    }

    /// Polls `condition` (a JS expression) until it is truthy; fails after `WAIT`.
    fn wait(&self, condition: &str, what: &str) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        loop {
            let script = format!("return !!({condition});");
            if matches!(self.script(&script, json!([])), Ok(Value::Bool(true))) {
                return Ok(());
            }
            if Instant::now() >= deadline {
                let text = self
                    .script(
                        "return document.body ? document.body.innerText : ''",
                        json!([]),
                    )
                    .unwrap_or_default();
                bail!(
                    "waited {}s for {what}; the page says: {text}",
                    WAIT.as_secs()
                );
            }
            sleep(Duration::from_millis(100));
        }
    }

    fn text(&self, css: &str) -> Result<String> {
        let value = self.script(
            "const n = document.querySelector(arguments[0]); return n ? (n.value ?? n.textContent) : null;",
            json!([css]),
        )?;
        value
            .as_str()
            .map(str::to_owned)
            .with_context(|| format!("no {css} on the page"))
    }

    fn accept_alert(&self) -> Result<()> {
        let deadline = Instant::now() + WAIT;
        loop {
            match self.cmd("POST", "/alert/accept", Some(&json!({}))) {
                Ok(_) => return Ok(()),
                Err(error) if Instant::now() >= deadline => return Err(error),
                Err(_) => sleep(Duration::from_millis(100)),
            }
        }
    }

    fn resize(&self, (width, height): (u32, u32)) -> Result<()> {
        self.cmd(
            "POST",
            "/window/rect",
            Some(&json!({"width": width, "height": height})),
        )
        .map(drop)
    }

    fn screenshot(&self, path: &Path) -> Result<()> {
        let answer = self.cmd("GET", "/screenshot", None)?;
        let png = base64::engine::general_purpose::STANDARD
            .decode(answer.as_str().unwrap_or_default())
            .context("the screenshot is not base64")?;
        fs::write(path, png).with_context(|| format!("writing {}", path.display()))
    }

    fn quit(&self) {
        let _ = self.cmd("DELETE", "", None);
    }
}

/// Chromium outlives chromedriver's SIGTERM: the session is ended on every way out.
impl Drop for Browser {
    fn drop(&mut self) {
        self.quit();
    }
}

/// One WebDriver command; a non-2xx answer is an error with WebDriver's message.
fn call(driver: &str, method: &str, path: &str, body: Option<&Value>) -> Result<Value> {
    let (status, text) = exchange(driver, method, path, body)
        .with_context(|| format!("WebDriver {method} {path}"))?;
    let value: Value = serde_json::from_str(&text)
        .with_context(|| format!("WebDriver {method} {path}: {text}"))?;
    if !(200..300).contains(&status) {
        bail!(
            "WebDriver {method} {path}: {} {}",
            value["value"]["error"],
            value["value"]["message"]
        );
    }
    Ok(value["value"].clone())
}

/// One HTTP/1.1 exchange with chromedriver, which keeps its connections open whatever the
/// request asks: the answer ends at its `Content-Length`, not at the connection's end.
fn exchange(addr: &str, method: &str, path: &str, body: Option<&Value>) -> Result<(u16, String)> {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(120)))?;
    let request = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut raw = Vec::new();
    let mut buffer = [0u8; 64 * 1024];
    loop {
        let read = stream.read(&mut buffer)?;
        raw.extend_from_slice(&buffer[..read]);
        if let Some(split) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&raw[..split]).into_owned();
            let length = head
                .lines()
                .filter_map(|line| line.split_once(':'))
                .find(|(name, _)| name.eq_ignore_ascii_case("content-length"))
                .and_then(|(_, value)| value.trim().parse::<usize>().ok());
            let status = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .context("no status line")?;
            let have = raw.len() - split - 4;
            match length {
                Some(length) if have >= length => {
                    let text = String::from_utf8_lossy(&raw[split + 4..split + 4 + length]);
                    return Ok((status, text.into_owned()));
                }
                None if read == 0 => {
                    return Ok((
                        status,
                        String::from_utf8_lossy(&raw[split + 4..]).into_owned(),
                    ));
                }
                _ => {}
            }
        }
        ensure!(read > 0, "the connection ended before the answer did");
    }
}

/// One scenario: a person's task in the signed-in browser.
type Scenario = fn(&Run) -> Result<()>;

/// What the scenarios share.
struct Run {
    browser: Browser,
    /// `http://127.0.0.1:port`: the router's public base URL.
    base: String,
    router: String,
    admin_token: String,
    email: String,
    api_key: String,
    mail_log: PathBuf,
    shots: PathBuf,
}

impl Run {
    fn shot(&self, name: &str) -> Result<()> {
        self.browser
            .screenshot(&self.shots.join(format!("{name}.png")))
    }

    /// Opens `path` of the dashboard and waits until its page is drawn.
    fn open(&self, path: &str, page: &str) -> Result<()> {
        self.browser.goto(&format!("{}{path}", self.base))?;
        self.browser.wait(
            &format!("document.body && document.body.dataset.ready === '{page}'"),
            &format!("the {page} page"),
        )
    }

    /// A JSON endpoint as the signed-in page calls it: `{status, body}`.
    fn fetch(&self, method: &str, path: &str) -> Result<Value> {
        self.fetch_with(method, path, None)
    }

    /// `fetch` from the page (same origin, the session's cookie), with a
    /// JSON body when one is given.
    fn fetch_with(&self, method: &str, path: &str, body: Option<Value>) -> Result<Value> {
        self.browser.script_async(
            "const done = arguments[arguments.length - 1];
             const init = {method: arguments[0], credentials: 'same-origin'};
             if (arguments[2] !== null) {
               init.headers = {'content-type': 'application/json'};
               init.body = JSON.stringify(arguments[2]);
             }
             fetch(arguments[1], init)
               .then(async (r) => done({status: r.status, body: await r.json().catch(() => null)}))
               .catch((e) => done({status: 0, body: String(e)}));",
            json!([method, path, body]),
        )
    }

    /// The mails the SMTP sink printed to `to`, oldest first (`--- email to` blocks).
    fn mails_to(&self, to: &str) -> Vec<String> {
        let log = fs::read_to_string(&self.mail_log).unwrap_or_default();
        log.split("--- email to ")
            .skip(1)
            .filter(|block| block.starts_with(to))
            .map(str::to_owned)
            .collect()
    }

    fn wait_for_mail(&self, to: &str, count: usize) -> Result<Vec<String>> {
        let deadline = Instant::now() + WAIT;
        loop {
            let mails = self.mails_to(to);
            if mails.len() >= count {
                return Ok(mails);
            }
            ensure!(
                Instant::now() < deadline,
                "no mail #{count} to {to} within {}s",
                WAIT.as_secs()
            );
            sleep(Duration::from_millis(200));
        }
    }

    fn chat(&self, key: &str) -> Result<crate::services::Response> {
        http(
            &self.router,
            "POST",
            "/v1/chat/completions",
            Some(key),
            Some(
                r#"{"model":"conf-chat","messages":[{"role":"user","content":"Hello from the browser test"}]}"#,
            ),
        )
    }

    fn sign_in(&self) -> Result<()> {
        let b = &self.browser;
        for (size, name) in [(PHONE, "phone"), (DESKTOP, "desktop")] {
            b.resize(size)?;
            self.open("/", "sign-in")?;
            self.shot(&format!("sign-in-{name}"))?;
        }
        let before = self.mails_to(&self.email).len();
        b.type_into("#email-input", &self.email)?;
        b.click("#sign-in-form button")?;
        b.wait(
            "document.querySelector('[role=status]').textContent.includes('on its way')",
            "the link-sent note",
        )?;
        let mail = self.wait_for_mail(&self.email, before + 1)?;
        let mail = mail.last().context("the sign-in mail")?;
        let link = mail
            .split_whitespace()
            .find(|word| word.contains("/api/auth/sign-in?token="))
            .with_context(|| format!("no sign-in link in the mail: {mail}"))?
            .to_owned();
        ensure!(
            link.starts_with(&self.base),
            "the link {link} is not this router's"
        );
        b.goto(&link)?;
        b.wait("document.getElementById('redeem')", "the sign-in button")?;
        self.shot("sign-in-link-desktop")?;
        b.click("#redeem button")?;
        b.wait(
            "location.pathname === '/account/usage' && document.body.dataset.ready === 'usage'",
            "the usage page after signing in",
        )?;
        let shown = b.text("#email")?;
        ensure!(
            shown == self.email,
            "signed in as {shown}, not {}",
            self.email
        );

        // The same link again: spent, and its page says so plainly (it is
        // looked up before any button is shown).
        b.goto(&link)?;
        b.wait(
            "document.querySelector('h1').textContent.includes('expired or was already used')",
            "the spent-link page",
        )?;
        self.shot("sign-in-link-used-desktop")?;
        // Still signed in with the first redemption.
        let session = self.fetch("GET", "/api/auth/session")?;
        ensure!(session["status"] == 200, "the session: {session}");
        Ok(())
    }

    fn charge_in_usage(&self) -> Result<()> {
        let b = &self.browser;
        self.open("/account/usage", "usage")?;
        let before = self.fetch("GET", "/api/usage")?;
        let before_total = before["body"]["total"]["nano_usd"].as_i64().unwrap_or(-1);
        let answer = self.chat(&self.api_key)?;
        ensure!(answer.status == 200, "the API request: {}", answer.body);
        self.open("/account/usage", "usage")?;
        let requests = self.fetch("GET", "/api/requests?limit=1")?;
        let id = requests["body"]["data"][0]["id"]
            .as_str()
            .context("the request in the list")?
            .to_owned();
        let record = http(
            &self.router,
            "GET",
            &format!("/admin/requests/{id}"),
            Some(&self.admin_token),
            None,
        )?;
        let record: Value = serde_json::from_str(&record.body)?;
        let charged = record["charged_nano_usd"].as_i64().context("the charge")?;
        ensure!(charged > 0, "the request was not charged: {record}");
        let after = self.fetch("GET", "/api/usage")?;
        let total = after["body"]["total"]["nano_usd"].as_i64().unwrap_or(-1);
        ensure!(
            total == before_total + charged,
            "usage went from {before_total} to {total}, the ledger charged {charged}"
        );
        let shown = b.text("#total")?;
        let expected = after["body"]["total"]["usd"].as_str().unwrap_or_default();
        ensure!(
            shown == expected,
            "the page shows {shown}, the API {expected}"
        );
        ensure!(shown != "$0.00", "the charge does not show: {shown}");

        // The request's page: its charge, and no supplier or route named.
        self.open(&format!("/account/requests/{id}"), "requests")?;
        let page = b.script("return document.body.innerText", json!([]))?;
        let page = page.as_str().unwrap_or_default();
        for private in ["conformance-mock", "conf-chat-only", "supplier"] {
            ensure!(!page.contains(private), "the request page names {private}");
        }
        ensure!(
            b.text("#charge")? == crate::browser::usd(charged),
            "the request page's charge"
        );
        Ok(())
    }

    fn key_lifecycle(&self) -> Result<()> {
        let b = &self.browser;
        self.open("/account/keys", "keys")?;
        b.type_into("#new-rpm", "100")?;
        b.type_into("#new-budget", "5.25")?;
        b.click("#create-key button[type=submit]")?;
        b.wait("document.getElementById('new-key')", "the new key")?;
        let secret = b.text("#new-key")?;
        ensure!(secret.len() > 20, "the key shown: {secret}");
        self.shot("keys-created-desktop")?;
        let answer = self.chat(&secret)?;
        ensure!(
            answer.status == 200,
            "the new key was refused: {}",
            answer.body
        );

        let keys = self.fetch("GET", "/api/keys")?;
        let new = keys["body"]["data"]
            .as_array()
            .and_then(|keys| {
                keys.iter()
                    .find(|k| secret.starts_with(k["prefix"].as_str().unwrap_or("-")))
            })
            .cloned()
            .context("the new key in the list")?;
        // USD typed on the page becomes exact nano-USD (no float on the way).
        ensure!(
            new["policy"]["requests_per_minute"] == 100
                && new["policy"]["monthly_budget_nano_usd"] == 5_250_000_000_i64,
            "the policy: {new}"
        );
        let prefix = new["prefix"].as_str().unwrap_or_default().to_owned();
        let id = new["id"].as_str().unwrap_or_default().to_owned();

        // Two spend windows (the form edits the first): a change through the
        // page keeps the second as it is.
        let windows = json!({"spend_limits": [
            {"amount_nano_usd": 1_000_000_000_i64, "window_seconds": 3600},
            {"amount_nano_usd": 9_000_000_000_i64, "window_seconds": 86400},
        ]});
        let set = self.fetch_with("PATCH", &format!("/api/keys/{id}"), Some(windows.clone()))?;
        ensure!(set["status"] == 200, "setting two spend windows: {set}");

        // A policy change: requests per minute from 100 to 50, an allowed model.
        self.open("/account/keys", "keys")?;
        b.click(&format!("button[data-edit='{prefix}']"))?;
        b.wait("document.getElementById('edit-key')", "the policy form")?;
        b.clear("#edit-key input[name=rpm]")?;
        b.type_into("#edit-key input[name=rpm]", "50")?;
        b.type_into("#edit-key input[name=models]", "conf-chat")?;
        self.shot("keys-change-policy-desktop")?;
        b.click("#edit-key button[type=submit]")?;
        b.wait(
            "!document.getElementById('edit-key') && document.getElementById('toast').textContent === 'Saved.'",
            "the saved policy",
        )?;
        let keys = self.fetch("GET", "/api/keys")?;
        let changed = keys["body"]["data"]
            .as_array()
            .and_then(|keys| keys.iter().find(|k| k["id"] == id.as_str()))
            .cloned()
            .context("the changed key")?;
        ensure!(
            changed["policy"]["requests_per_minute"] == 50
                && changed["policy"]["allowed_models"] == json!(["conf-chat"]),
            "the changed policy: {changed}"
        );
        ensure!(
            changed["policy"]["spend_limits"] == windows["spend_limits"],
            "the spend windows after the page's change: {changed}"
        );

        self.open("/account/keys", "keys")?;
        b.click(&format!("button[data-revoke='{prefix}']"))?;
        b.accept_alert()?;
        b.wait(
            "document.getElementById('toast').textContent.startsWith('Revoked')",
            "the revocation",
        )?;
        let answer = self.chat(&secret)?;
        ensure!(
            answer.status == 401,
            "the revoked key answered {}: {}",
            answer.status,
            answer.body
        );
        Ok(())
    }

    fn digest(&self) -> Result<()> {
        let b = &self.browser;
        self.open("/account/digests", "digests")?;
        b.script(
            "document.getElementById('email-frequency').value = 'daily';",
            json!([]),
        )?;
        b.click("#consent")?;
        b.click("#connect-email button[type=submit]")?;
        b.wait(
            "document.getElementById('email-settings')",
            "the connected email channel",
        )?;
        // The report covers yesterday (UTC): move this account's requests there.
        let requests = self.fetch("GET", "/api/requests")?;
        let ids: Vec<Value> = requests["body"]["data"]
            .as_array()
            .map(|list| list.iter().map(|r| r["id"].clone()).collect())
            .unwrap_or_default();
        let yesterday = yesterday_noon()?;
        let moved = http(
            &self.router,
            "POST",
            "/admin/requests/backdate",
            Some(&self.admin_token),
            Some(&json!({"request_ids": ids, "finished_at": yesterday}).to_string()),
        )?;
        ensure!(moved.status == 200, "backdating: {}", moved.body);
        let before = self.mails_to(&self.email).len();
        b.click("#send-report")?;
        b.wait(
            "document.getElementById('digest-status').textContent.startsWith('Report sent')",
            "the report sent",
        )?;
        let mails = self.wait_for_mail(&self.email, before + 1)?;
        let report = mails.last().context("the report")?;
        ensure!(
            report.contains("conf-chat"),
            "the report does not list the model: {report}"
        );
        self.shot("digests-sent-desktop")?;
        // At once again: one report a minute, and the page says how long to wait.
        b.click("#send-report")?;
        b.wait(
            "/Try again in [0-9]+ seconds/.test(document.getElementById('digest-status').textContent)",
            "the rate limit's wait",
        )?;
        self.shot("digests-rate-limited-desktop")?;
        ensure!(
            self.mails_to(&self.email).len() == before + 1,
            "a rate-limited report was sent"
        );
        Ok(())
    }

    fn zero_data_retention(&self) -> Result<()> {
        let b = &self.browser;
        let upload = || {
            let (content_type, body) = file_form("xtask-browser", "dot.png", "image/png", &PNG);
            http_with(
                &self.router,
                "POST",
                "/v1/uploads",
                Some(&self.api_key),
                Some((&content_type, &body)),
            )
        };
        let taken = upload()?;
        ensure!(
            taken.status == 201,
            "an upload before ZDR: {} {}",
            taken.status,
            taken.body
        );
        self.open("/account/data-protection", "data-protection")?;
        b.click("#zdr-switch")?;
        b.wait(
            "document.getElementById('zdr-confirm').open",
            "the confirmation",
        )?;
        self.shot("data-protection-confirm-desktop")?;
        b.click("#zdr-confirm-yes")?;
        b.wait(
            "document.getElementById('zdr-state').textContent === 'On'",
            "zero data retention on",
        )?;
        let refused = upload()?;
        ensure!(
            refused.status == 403 && refused.body.contains("data_protection_restriction"),
            "an upload under ZDR: {} {}",
            refused.status,
            refused.body
        );
        self.shot("data-protection-on-desktop")?;
        // Off again (no confirmation needed), so the pages below show the default.
        b.click("#zdr-switch")?;
        b.wait(
            "document.getElementById('zdr-state').textContent === 'Off'",
            "zero data retention off",
        )
    }

    /// The signed-in browser on another origin of the same host (`localhost` for
    /// `127.0.0.1`), its session cookie carried: a form post to `/api/keys` is refused.
    fn cross_origin(&self) -> Result<()> {
        let b = &self.browser;
        self.open("/account/keys", "keys")?;
        let before = self.fetch("GET", "/api/keys")?["body"]["data"]
            .as_array()
            .map_or(0, Vec::len);
        let cookies = b.cmd("GET", "/cookie", None)?;
        let session = cookies
            .as_array()
            .and_then(|all| all.iter().find(|c| c["name"] == "router_session"))
            .cloned()
            .context("the session cookie")?;
        let other = self.base.replace("127.0.0.1", "localhost");
        b.goto(&format!("{other}/dashboard/assets/app.css"))?;
        b.cmd(
            "POST",
            "/cookie",
            Some(&json!({"cookie": {"name": "router_session", "value": session["value"], "path": "/", "httpOnly": true}})),
        )?;
        b.script(
            "const f = document.createElement('form');
             f.method = 'post'; f.action = arguments[0];
             const i = document.createElement('input');
             i.name = 'scopes'; i.value = 'inference'; f.append(i);
             document.documentElement.append(f); f.submit();",
            json!([format!("{other}/api/keys")]),
        )?;
        b.wait(
            "document.body && document.body.innerText.includes('cross_origin_forbidden')",
            "the refusal",
        )?;
        self.shot("cross-origin-refused-desktop")?;
        self.open("/account/keys", "keys")?;
        let after = self.fetch("GET", "/api/keys")?["body"]["data"]
            .as_array()
            .map_or(0, Vec::len);
        ensure!(after == before, "a key was created: {before} → {after}");
        Ok(())
    }

    fn screenshots(&self) -> Result<()> {
        let b = &self.browser;
        let id = self.fetch("GET", "/api/requests?limit=1")?["body"]["data"][0]["id"]
            .as_str()
            .map(str::to_owned)
            .context("a request to show")?;
        let detail = format!("/account/requests/{id}");
        let pages = [
            ("/account/usage", "usage", "usage"),
            ("/account/requests", "requests", "requests"),
            (detail.as_str(), "requests", "request-detail"),
            ("/account/keys", "keys", "keys"),
            (
                "/account/data-protection",
                "data-protection",
                "data-protection",
            ),
            ("/account/digests", "digests", "digests"),
        ];
        for (size, width) in [(DESKTOP, "desktop"), (PHONE, "phone")] {
            b.resize(size)?;
            for (path, page, name) in pages {
                self.open(path, page)?;
                // Nothing may be wider than the screen; at phone width the tables are
                // stacked, so not even a table scrolls sideways.
                let overflow = b.script(
                    "return document.documentElement.scrollWidth > document.documentElement.clientWidth
                        || (arguments[0] && [...document.querySelectorAll('.table-wrap')]
                              .some((w) => w.scrollWidth > w.clientWidth + 1))",
                    json!([width == "phone"]),
                )?;
                ensure!(overflow == false, "{name} is wider than a {width} screen");
                self.shot(&format!("{name}-{width}"))?;
            }
        }
        b.resize(DESKTOP)
    }

    fn sign_out(&self) -> Result<()> {
        let b = &self.browser;
        self.open("/account/usage", "usage")?;
        b.click("#sign-out")?;
        b.wait(
            "location.pathname === '/account/sign-in' && document.body.dataset.ready === 'sign-in'",
            "the sign-in page after signing out",
        )?;
        let session = self.fetch("GET", "/api/auth/session")?;
        ensure!(session["status"] == 401, "still signed in: {session}");
        // Every page is the sign-in form now.
        self.open("/account/keys", "sign-in")
    }
}

/// Yesterday 12:00 UTC, RFC 3339 (within a daily report's period).
fn yesterday_noon() -> Result<String> {
    let output = Command::new("date")
        .args(["-u", "-d", "yesterday 12:00", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .context("running date")?;
    ensure!(output.status.success(), "date failed");
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Nano-USD as the dashboard writes USD (router-dashboard's `money::usd`; the xtask stays
/// free of the router's crates).
fn usd(nano: i64) -> String {
    let sign = if nano < 0 { "-" } else { "" };
    let magnitude = nano.unsigned_abs();
    let fraction = format!("{:09}", magnitude % 1_000_000_000);
    let kept = fraction.trim_end_matches('0');
    let decimals = if kept.len() < 2 { &fraction[..2] } else { kept };
    format!("{sign}${}.{decimals}", magnitude / 1_000_000_000)
}

#[cfg(test)]
mod tests {
    use super::usd;

    #[test]
    fn usd_matches_the_dashboards() {
        assert_eq!(usd(0), "$0.00");
        assert_eq!(usd(1_500_000_000), "$1.50");
        assert_eq!(usd(1_234), "$0.000001234");
    }
}
