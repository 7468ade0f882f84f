//! The bench's upstreams: nginx with a fixed reply per supplier path (the non-streaming load,
//! fast enough never to be the bottleneck), and the mock supplier with paced streams.

use std::fs;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use anyhow::{Context, Result};

use crate::run_checked;
use crate::services::{Children, answers, free_loopback_port};

use super::LOAD_CORE;

const READY_TIMEOUT: Duration = Duration::from_secs(30);

/// The fixed replies, one per route protocol, shaped like the mock supplier's own (with
/// usage, so the router settles every request).
pub(crate) const CHAT_REPLY: &str = r#"{"id":"chatcmpl-bench","object":"chat.completion","created":1700000000,"model":"bench-up-chat","choices":[{"index":0,"message":{"role":"assistant","content":"Hello from the bench upstream."},"logprobs":null,"finish_reason":"stop"}],"usage":{"prompt_tokens":8,"completion_tokens":7,"total_tokens":15}}"#;
pub(crate) const MESSAGES_REPLY: &str = r#"{"id":"msg_bench","type":"message","role":"assistant","model":"bench-up-messages","content":[{"type":"text","text":"Hello from the bench upstream."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":8,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":7}}"#;
pub(crate) const RESPONSES_REPLY: &str = r#"{"id":"resp_bench","object":"response","created_at":1700000000,"status":"completed","error":null,"incomplete_details":null,"model":"bench-up-responses","output":[{"id":"msg_bench","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Hello from the bench upstream.","annotations":[],"logprobs":[]}]}],"parallel_tool_calls":true,"tool_choice":"auto","tools":[],"usage":{"input_tokens":8,"input_tokens_details":{"cached_tokens":0},"output_tokens":7,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":15}}"#;

/// Where the upstreams listen (`host:port`).
pub(crate) struct Upstreams {
    /// nginx, fixed replies.
    pub(crate) fixed: String,
    /// Mock supplier: first event after 50 ms, then one every 20 ms.
    pub(crate) paced: String,
    /// Mock supplier: first event after 50 ms, then one a second (to hold streams open).
    pub(crate) slow: String,
    pub(crate) nginx_version: String,
}

/// Installs nginx with apt-get when it is missing.
pub(crate) fn ensure_nginx() -> Result<()> {
    if Command::new("nginx").arg("-v").output().is_ok() {
        return Ok(());
    }
    eprintln!("xtask bench: nginx is missing; installing it with apt-get");
    run_checked(Command::new("apt-get").args(["install", "-y", "-q", "nginx-light"]))
        .or_else(|_| run_checked(Command::new("apt-get").args(["install", "-y", "-q", "nginx"])))
        .context("installing nginx (try `apt-get update` first)")
}

fn nginx_version() -> String {
    Command::new("nginx")
        .arg("-v")
        .output()
        .map(|output| {
            String::from_utf8_lossy(&output.stderr)
                .trim()
                .trim_start_matches("nginx version: ")
                .to_owned()
        })
        .unwrap_or_else(|_| "unknown".to_owned())
}

/// Starts nginx and two mock suppliers, all pinned to the load core.
pub(crate) fn start(
    work: &Path,
    mock_supplier: &Path,
    children: &mut Children,
    stop: &AtomicBool,
) -> Result<Upstreams> {
    let fixed = format!("127.0.0.1:{}", free_loopback_port()?);
    let nginx_dir = work.join("nginx");
    fs::create_dir_all(nginx_dir.join("tmp"))?;
    let config = nginx_dir.join("nginx.conf");
    fs::write(&config, nginx_config(&nginx_dir, &fixed)?)?;
    let mut nginx = pinned(LOAD_CORE, "nginx");
    nginx
        .arg("-p")
        .arg(&nginx_dir)
        .arg("-e")
        .arg(nginx_dir.join("error.log"))
        .arg("-c")
        .arg(&config);
    children.spawn_logged("nginx", nginx, &work.join("logs/nginx.log"))?;
    children.wait_until("nginx", stop, READY_TIMEOUT, || answers(&fixed))?;

    let mut start_mock = |name: &'static str, first_ms: u64, every_ms: u64| -> Result<String> {
        let addr = format!("127.0.0.1:{}", free_loopback_port()?);
        let mut mock = pinned(LOAD_CORE, mock_supplier);
        mock.args(["--listen", &addr])
            .args(["--first-chunk-delay-ms", &first_ms.to_string()])
            .args(["--chunk-delay-ms", &every_ms.to_string()]);
        children.spawn_logged(name, mock, &work.join(format!("logs/{name}.log")))?;
        children.wait_until(name, stop, READY_TIMEOUT, || answers(&addr))?;
        Ok(addr)
    };
    let paced = start_mock("mock-paced", 50, 20)?;
    let slow = start_mock("mock-slow", 50, 1000)?;
    Ok(Upstreams {
        fixed,
        paced,
        slow,
        nginx_version: nginx_version(),
    })
}

/// `taskset -c CORE program`: taskset execs the program, so the child's pid is its own.
pub(crate) fn pinned(core: u32, program: impl AsRef<std::ffi::OsStr>) -> Command {
    let mut command = Command::new("taskset");
    command.arg("-c").arg(core.to_string()).arg(program);
    command
}

/// One worker, no logs, keep-alive connections that last the whole run.
fn nginx_config(dir: &Path, listen: &str) -> Result<String> {
    let dir = dir.to_str().context("the nginx dir is not UTF-8")?;
    let location = |path: &str, reply: &str| {
        format!("        location = {path} {{ return 200 '{reply}'; }}\n")
    };
    Ok(format!(
        "daemon off;\n\
         worker_processes 1;\n\
         pid {dir}/nginx.pid;\n\
         error_log {dir}/error.log warn;\n\
         events {{ worker_connections 8192; }}\n\
         http {{\n\
         \x20   access_log off;\n\
         \x20   client_body_temp_path {dir}/tmp/body;\n\
         \x20   proxy_temp_path {dir}/tmp/proxy;\n\
         \x20   fastcgi_temp_path {dir}/tmp/fastcgi;\n\
         \x20   uwsgi_temp_path {dir}/tmp/uwsgi;\n\
         \x20   scgi_temp_path {dir}/tmp/scgi;\n\
         \x20   keepalive_requests 10000000;\n\
         \x20   keepalive_timeout 600s;\n\
         \x20   default_type application/json;\n\
         \x20   server {{\n\
         \x20       listen {listen} backlog=4096;\n\
         {}{}{}\
         \x20       location / {{ return 404 '{{\"error\":\"not found\"}}'; }}\n\
         \x20   }}\n\
         }}\n",
        location("/v1/chat/completions", CHAT_REPLY),
        location("/v1/messages", MESSAGES_REPLY),
        location("/v1/responses", RESPONSES_REPLY),
    ))
}

#[cfg(test)]
mod tests {
    use super::{CHAT_REPLY, MESSAGES_REPLY, RESPONSES_REPLY, nginx_config};

    #[test]
    fn fixed_replies_are_json_with_usage_and_fit_in_single_quotes() {
        for reply in [CHAT_REPLY, MESSAGES_REPLY, RESPONSES_REPLY] {
            let value: serde_json::Value = serde_json::from_str(reply).unwrap();
            assert!(value.get("usage").is_some(), "{reply}");
            assert!(!reply.contains('\''), "{reply}");
        }
    }

    #[test]
    fn the_nginx_config_answers_every_supplier_path() {
        let config = nginx_config(std::path::Path::new("/tmp/x"), "127.0.0.1:1").unwrap();
        for path in ["/v1/chat/completions", "/v1/messages", "/v1/responses"] {
            assert!(config.contains(&format!("location = {path} ")), "{config}");
        }
        assert!(config.contains("listen 127.0.0.1:1 "));
    }
}
