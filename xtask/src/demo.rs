//! `cargo xtask demo`: the gateway and a mock supplier, running, with an account, credits and
//! an API key, for a person to try with curl, and the account dashboard with a ready sign-in
//! link. Stops both on ctrl-c.

use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::sleep;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use signal_hook::consts::signal::{SIGHUP, SIGINT, SIGTERM};

use crate::services::{
    Children, Provisioned, answers, client_addr, file_form, http, http_with, provision_account,
    random_hex, release_binaries,
};
use crate::{db, workspace_root};

const DEFAULT_LISTEN: &str = "127.0.0.1:8080";
const SUPPLIER_LISTEN: &str = "127.0.0.1:9100";
/// The mock supplier's SMTP sink: the router's emails (sign-in links) are
/// printed in this terminal instead of being delivered.
const SMTP_LISTEN: &str = "127.0.0.1:9125";
const CATALOG: &str = "fixtures/demo-catalog.toml";
/// The demo account is `demo@example.com` (or `demo+<hex>@...` when that one exists).
const DEMO_EMAIL_USER: &str = "demo";
/// $10 in nano-USD.
const DEMO_CREDITS_NANO_USD: i64 = 10_000_000_000;
const READY_TIMEOUT: Duration = Duration::from_secs(60);
const POLL: Duration = Duration::from_millis(200);

struct Options {
    listen: String,
    supplier_listen: String,
    smtp_listen: String,
    build: bool,
    /// The debug binaries instead of the release ones.
    debug: bool,
    /// Run every step, check where the demo's files went, stop, exit 0:
    /// `cargo xtask test` runs this with `CARGO_TARGET_DIR` set elsewhere.
    check: bool,
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
    let (supplier_listen, smtp_listen) = (&options.supplier_listen, &options.smtp_listen);
    // Something already there (an earlier demo, say) would answer in our place.
    for addr in [router_addr.as_str(), supplier_listen, smtp_listen] {
        anyhow::ensure!(
            !answers(addr),
            "something already listens on {addr}; stop it first (or pass --listen)"
        );
    }

    let database_url = db::ensure_postgres()?;
    let (router, supplier) = if options.debug {
        debug_binaries(options.build)?
    } else {
        release_binaries(options.build)?
    };
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
    mock.args(["--listen", supplier_listen, "--smtp-listen", smtp_listen]);
    // The mock prints each email it receives; the demo reads the first sign-in link from
    // this log and shows every later mail in the terminal as it arrives.
    let mock_log = crate::target_dir().join("demo-mock-supplier.log");
    children.spawn_logged("mock-supplier", mock, &mock_log)?;
    children.wait_until("mock-supplier", &stop, Duration::from_secs(30), || {
        answers(supplier_listen)
    })?;
    // The demo catalog names the mock at its default address.
    let catalog = if *supplier_listen == SUPPLIER_LISTEN {
        catalog
    } else {
        let moved = std::fs::read_to_string(&catalog)?.replace(SUPPLIER_LISTEN, supplier_listen);
        let path = crate::target_dir().join("demo-catalog.toml");
        std::fs::write(&path, moved)?;
        path
    };

    let mut gateway = Command::new(&router);
    gateway
        .arg("serve")
        .env("DATABASE_URL", &database_url)
        .env("ROUTER_LISTEN", &options.listen)
        .env("ROUTER_CATALOG", &catalog)
        .env("ROUTER_ADMIN_TOKEN", &admin_token)
        .env("ROUTER_SMTP_URL", format!("smtp://{smtp_listen}"))
        // The demo catalog's supplier reads its key from this variable.
        .env("MOCK_SUPPLIER_API_KEY", "demo")
        // Its Bedrock supplier signs with the credentials the mock checks
        // (router_mock_supplier::MOCK_AWS_ACCESS_KEY_ID and _SECRET_ACCESS_KEY;
        // xtask stays free of the router's crates).
        .env("MOCK_AWS_ACCESS_KEY_ID", "AKIDMOCKSUPPLIER")
        .env(
            "MOCK_AWS_SECRET_ACCESS_KEY",
            "mock/supplier/secret/EXAMPLEKEY",
        )
        // The mock supplier serves image URLs on 127.0.0.1; a real
        // deployment never allows loopback (docs/operations.md).
        .env("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "true")
        // Video jobs: the mock completes one on its second poll.
        .env("ROUTER_VIDEO_POLL_INTERVAL_MS", "1000")
        // The embedded object store: uploads and videos in a folder under target/.
        .env(
            "ROUTER_OBJECT_STORE",
            format!(
                "file://{}",
                crate::target_dir().join("demo-uploads").display()
            ),
        );
    children.spawn("router", gateway)?;
    children.wait_until("router", &stop, READY_TIMEOUT, || {
        matches!(http(&router_addr, "GET", "/readyz", None, None), Ok(response) if response.status == 200)
    })?;

    let Provisioned { email, api_key, .. } = provision_account(
        &router_addr,
        &admin_token,
        DEMO_EMAIL_USER,
        DEMO_CREDITS_NANO_USD,
        serde_json::json!({}),
    )?;
    let sign_in_link = sign_in_link(&router_addr, &email, &mock_log)?;
    let (image, png_path) = first_image(&router_addr, &api_key)?;
    let upload = first_upload(&router_addr, &api_key, &png_path)?;
    println!(
        "\nThe gateway is ready on http://{router_addr} (ctrl-c stops it).\n\n\
         API key:     {api_key}\n\
         Admin token: {admin_token}\n\n\
         curl http://{router_addr}/v1/chat/completions -H \"Authorization: Bearer {api_key}\" \
         -H 'content-type: application/json' \
         -d '{{\"model\":\"demo-chat\",\"messages\":[{{\"role\":\"user\",\"content\":\"Hello\"}}]}}'\n\
         (the same with \"demo-azure\", \"demo-gemini\", \"demo-bedrock-claude\", \"demo-bedrock-converse\" or \"demo-local\": one model per supplier kind)\n\n\
         {image}\n\
         curl http://{router_addr}/v1/images/generations -H \"Authorization: Bearer {api_key}\" \
         -H 'content-type: application/json' -d '{{\"model\":\"demo-image\",\"prompt\":\"a cat\"}}' \
         | python3 -c 'import sys,json,base64; open(\"cat.png\",\"wb\").write(base64.b64decode(json.load(sys.stdin)[\"data\"][0][\"b64_json\"]))'\n\n\
         {upload}\n\
         curl http://{router_addr}/v1/uploads -H \"Authorization: Bearer {api_key}\" -F \"file=@{png};type=image/png\"\n\
         curl http://{router_addr}/v1/chat/completions -H \"Authorization: Bearer {api_key}\" \
         -H 'content-type: application/json' -d '{{\"model\":\"demo-chat\",\"messages\":[{{\"role\":\"user\",\"content\":\
         [{{\"type\":\"text\",\"text\":\"What is in this image?\"}},{{\"type\":\"input_image\",\"file_id\":\"UPLOAD_ID\"}}]}}]}}'\n\n\
         A video: create it, poll it (completed after a few seconds), download it:\n\
         curl http://{router_addr}/v1/videos -H \"Authorization: Bearer {api_key}\" \
         -H 'content-type: application/json' -d '{{\"model\":\"demo-video\",\"prompt\":\"a cat surfing\",\
         \"mode\":\"references\",\"resolution\":\"720p\",\"duration\":5,\"client_task_id\":\"cat-1\"}}'\n\
         curl http://{router_addr}/v1/videos/VIDEO_ID -H \"Authorization: Bearer {api_key}\"\n\
         curl -o cat.mp4 http://{router_addr}/v1/videos/VIDEO_ID/content -H \"Authorization: Bearer {api_key}\"\n\n\
         The account dashboard (usage, requests, API keys, data protection, digests):\n\
         http://{router_addr}/\n\
         Sign in as {email} with this link (it works once, within 15 minutes):\n\
         {sign_in_link}\n\
         For another link, ask on the page or with curl; the mock supplier stands in for a mail\n\
         server, and every mail it receives is printed here:\n\
         curl http://{router_addr}/api/auth/magic-link -H 'content-type: application/json' \
         -d '{{\"email\":\"{email}\"}}'\n",
        png = png_path.display(),
    );

    if options.check {
        return check_files(&png_path);
    }
    let mut shown = std::fs::metadata(&mock_log).map_or(0, |m| m.len());
    while !stop.load(Ordering::SeqCst) {
        if let Some((name, status)) = children.exited()? {
            bail!("{name} exited ({status})");
        }
        shown = show_new_mail(&mock_log, shown);
        sleep(POLL);
    }
    eprintln!("xtask demo: stopping");
    Ok(())
}

/// `--check`: the demo's files are under the target directory cargo uses
/// (`CARGO_TARGET_DIR` when set), which need not be the workspace's
/// `target/` (issue 30: the demo once wrote there and failed).
fn check_files(png: &std::path::Path) -> Result<()> {
    let target = crate::target_dir();
    anyhow::ensure!(
        png.starts_with(&target) && png.is_file(),
        "the demo image is at {}, not under the target directory {}",
        png.display(),
        target.display()
    );
    if let Some(dir) = std::env::var_os("CARGO_TARGET_DIR").filter(|d| !d.is_empty()) {
        anyhow::ensure!(
            png.starts_with(workspace_root().join(dir)),
            "the demo image is at {}, not under CARGO_TARGET_DIR",
            png.display()
        );
    }
    eprintln!(
        "xtask demo: every step ran; its files are under {}",
        target.display()
    );
    Ok(())
}

/// The debug binaries of the router and the mock supplier, built first
/// unless `build` is false.
fn debug_binaries(build: bool) -> Result<(std::path::PathBuf, std::path::PathBuf)> {
    if build {
        crate::build_debug_binaries(&["router", "mock-supplier"])?;
    }
    let debug = crate::target_dir().join("debug");
    Ok((debug.join("router"), debug.join("mock-supplier")))
}

/// Asks the router to mail `email` a sign-in link and reads it from the mock's log.
fn sign_in_link(router_addr: &str, email: &str, mock_log: &std::path::Path) -> Result<String> {
    let body = serde_json::json!({ "email": email }).to_string();
    let response = http(
        router_addr,
        "POST",
        "/api/auth/magic-link",
        None,
        Some(&body),
    )?;
    if response.status != 202 {
        return Err(response
            .error()
            .context("asking for the demo's sign-in link"));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    loop {
        let log = std::fs::read_to_string(mock_log).unwrap_or_default();
        let link = log
            .split_whitespace()
            .rfind(|word| word.contains("/api/auth/sign-in?token="));
        if let Some(link) = link {
            return Ok(link.to_owned());
        }
        anyhow::ensure!(
            std::time::Instant::now() < deadline,
            "no sign-in mail in {} within 15 s",
            mock_log.display()
        );
        sleep(POLL);
    }
}

/// Prints what the mock wrote to `log` after byte `from` (the mails it received); answers
/// where it stopped.
fn show_new_mail(log: &std::path::Path, from: u64) -> u64 {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut file) = std::fs::File::open(log) else {
        return from;
    };
    let mut text = String::new();
    if file.seek(SeekFrom::Start(from)).is_err() || file.read_to_string(&mut text).is_err() {
        return from;
    }
    if !text.is_empty() {
        print!("{text}");
    }
    from + text.len() as u64
}

/// Generate one image with `demo-image`, save it, and say what came back:
/// a newcomer sees a PNG and its receipt. Also where the PNG is.
fn first_image(router_addr: &str, api_key: &str) -> Result<(String, std::path::PathBuf)> {
    use base64::Engine;
    let response = http(
        router_addr,
        "POST",
        "/v1/images/generations",
        Some(api_key),
        Some(r#"{"model":"demo-image","prompt":"a cat"}"#),
    )?;
    if response.status != 200 {
        return Err(response.error().context("the demo image generation failed"));
    }
    let body: serde_json::Value = serde_json::from_str(&response.body)?;
    let png = base64::engine::general_purpose::STANDARD
        .decode(body["data"][0]["b64_json"].as_str().unwrap_or_default())
        .context("the demo image is not base64")?;
    anyhow::ensure!(png.starts_with(b"\x89PNG"), "the demo image is not a PNG");
    let path = crate::target_dir().join("demo-image.png");
    std::fs::write(&path, &png)?;
    let said = format!(
        "Image generation: a {}-byte PNG saved to {}, receipt {}",
        png.len(),
        path.display(),
        body["receipt"]
    );
    Ok((said, path))
}

/// Upload the generated PNG and ask `demo-chat` about it by reference:
/// the upload's id, and what the Chat request answered.
fn first_upload(router_addr: &str, api_key: &str, png: &std::path::Path) -> Result<String> {
    let (content_type, body) = file_form(
        "xtask-demo-upload",
        "demo-image.png",
        "image/png",
        &std::fs::read(png)?,
    );
    let response = http_with(
        router_addr,
        "POST",
        "/v1/uploads",
        Some(api_key),
        Some((&content_type, &body)),
    )?;
    if response.status != 201 {
        return Err(response.error().context("the demo upload failed"));
    }
    let upload: serde_json::Value = serde_json::from_str(&response.body)?;
    let id = upload["id"].as_str().unwrap_or_default();
    let chat = serde_json::json!({
        "model": "demo-chat",
        "messages": [{"role": "user", "content": [
            {"type": "text", "text": "What is in this image?"},
            {"type": "input_image", "file_id": id},
        ]}],
    });
    let response = http(
        router_addr,
        "POST",
        "/v1/chat/completions",
        Some(api_key),
        Some(&chat.to_string()),
    )?;
    if response.status != 200 {
        return Err(response
            .error()
            .context("the demo Chat request about the upload failed"));
    }
    Ok(format!(
        "An upload: that PNG is {id} for an hour (uploading is free); a Chat request that \
         references it by `file_id` answered {} (the supplier got the image's bytes). \
         Upload one, then ask about it:",
        response.status
    ))
}

fn parse(args: &[String]) -> Result<Options> {
    let mut options = Options {
        listen: DEFAULT_LISTEN.to_owned(),
        supplier_listen: SUPPLIER_LISTEN.to_owned(),
        smtp_listen: SMTP_LISTEN.to_owned(),
        build: true,
        debug: false,
        check: false,
    };
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((name, value)) => (name, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        let mut value = || -> Result<String> {
            match &inline {
                Some(value) => Ok(value.clone()),
                None => args
                    .next()
                    .cloned()
                    .with_context(|| format!("{name} needs an address")),
            }
        };
        match name {
            "--no-build" => options.build = false,
            "--debug" => options.debug = true,
            "--check" => options.check = true,
            "--listen" => options.listen = value()?,
            "--supplier-listen" => options.supplier_listen = value()?,
            "--smtp-listen" => options.smtp_listen = value()?,
            other => bail!(
                "unknown option `{other}`; expected --listen ADDR, --supplier-listen ADDR, \
                 --smtp-listen ADDR, --no-build, --debug or --check"
            ),
        }
    }
    Ok(options)
}
