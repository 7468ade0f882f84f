//! `mock-supplier`: runs a [`MockSupplier`] (Chat Completions, Messages and
//! Responses) until SIGTERM or ctrl-c, for demos, benchmarks and tests in
//! other languages.

use std::io::Write;
use std::net::SocketAddr;

use anyhow::Context;
use clap::Parser;
use router_mock_supplier::smtp_sink::SmtpSink;
use router_mock_supplier::{MockReply, MockSupplier, Script};

/// A fake LLM supplier speaking OpenAI Chat Completions
/// (`POST /v1/chat/completions`), Anthropic Messages (`POST /v1/messages`)
/// and OpenAI Responses (`POST /v1/responses`), scriptable over `/_mock/*`.
///
/// Every request to a protocol endpoint is recorded and answered by the next
/// script: the queue of its `model`, else the global queue, else the
/// default. Control endpoints: `POST /_mock/scripts` with
/// `{"model": "m"?, "script": {"kind": ...}}`; `PUT /_mock/default`;
/// `GET /_mock/calls`; `POST /_mock/reset`. Script kinds: reply, status,
/// reset, reset_after_headers, stall, invalid_json, truncated_stream,
/// malformed_stream, stream_error.
#[derive(Debug, Parser)]
#[command(name = "mock-supplier", version)]
struct Args {
    /// Address to listen on.
    #[arg(long, env = "MOCK_SUPPLIER_LISTEN", default_value = "127.0.0.1:9100")]
    listen: SocketAddr,
    /// Text of the default reply (used when no script is queued), on every
    /// protocol.
    #[arg(long, default_value = "Hello from the mock supplier.")]
    default_reply: String,
    /// Default reply, streaming: milliseconds before the first event.
    #[arg(long, default_value_t = 0)]
    first_chunk_delay_ms: u64,
    /// Default reply, streaming: milliseconds between events.
    #[arg(long, default_value_t = 0)]
    chunk_delay_ms: u64,
    /// Also accept email over SMTP here (for the router's ROUTER_SMTP_URL)
    /// and print every message received, e.g. sign-in links.
    #[arg(long, env = "MOCK_SMTP_LISTEN")]
    smtp_listen: Option<SocketAddr>,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mock = MockSupplier::start(args.listen)
        .await
        .with_context(|| format!("binding {}", args.listen))?;
    mock.set_default(Script::Reply(MockReply {
        text: args.default_reply,
        first_chunk_delay_ms: args.first_chunk_delay_ms,
        chunk_delay_ms: args.chunk_delay_ms,
        ..MockReply::default()
    }));
    let mut stdout = std::io::stdout();
    writeln!(stdout, "mock-supplier listening on {}", mock.base_url())?;
    stdout.flush()?;
    let _smtp = match args.smtp_listen {
        Some(addr) => {
            let sink = std::sync::Arc::new(
                SmtpSink::start(addr)
                    .await
                    .with_context(|| format!("binding {addr} for SMTP"))?,
            );
            writeln!(stdout, "mock-supplier accepting email on {}", sink.url())?;
            stdout.flush()?;
            Some(tokio::spawn(print_mail(sink)))
        }
        None => None,
    };
    wait_for_termination().await?;
    mock.shutdown();
    Ok(())
}

/// Prints each message the SMTP sink receives, as it arrives.
async fn print_mail(sink: std::sync::Arc<SmtpSink>) {
    let mut printed = 0;
    loop {
        let mail = sink
            .wait_for(printed + 1, std::time::Duration::from_secs(3600))
            .await;
        for message in &mail[printed..] {
            println!(
                "--- email to {} ({})\n{}",
                message.to.join(", "),
                message.header("subject").unwrap_or_default(),
                message.body_text().trim_end()
            );
        }
        printed = mail.len();
    }
}

#[cfg(unix)]
async fn wait_for_termination() -> anyhow::Result<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut terminate = signal(SignalKind::terminate()).context("listening for SIGTERM")?;
    tokio::select! {
        result = tokio::signal::ctrl_c() => result.context("listening for ctrl-c")?,
        _ = terminate.recv() => {}
    }
    Ok(())
}

#[cfg(not(unix))]
async fn wait_for_termination() -> anyhow::Result<()> {
    tokio::signal::ctrl_c()
        .await
        .context("listening for ctrl-c")
}
