//! The `router` binary: `router serve` (the default) runs the gateway;
//! `router migrate` applies the migrations; `router accounts|keys|requests`
//! are the operator's commands, straight against the database through the
//! admin API's own operations; `router catalog check` and `router config
//! check` validate before a deploy. Errors are one line and a non-zero exit.

mod checks;
mod commands;
mod config;
mod output;
mod serve;
mod settings;

use clap::{Parser, Subcommand};
use commands::{
    AccountsCommand, CatalogCommand, ConfigCommand, KeysCommand, RequestsCommand, SessionsCommand,
    VideosCommand,
};
use output::Output;
use router_store::Database;
use settings::{LogFormat, ServeArgs};
use std::process::ExitCode;

/// jemalloc: per-thread caches for the request path (malloc was about 17 %
/// of the router's profile), and with its background threads dirty pages
/// are purged after their decay time, so memory taken under load goes back
/// to the system once the load has passed (issue 34).
#[global_allocator]
static ALLOCATOR: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

#[derive(Parser)]
#[command(name = "router", about = "LLM inference gateway", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
    /// Print the admin API's JSON instead of human lines.
    #[arg(long, global = true)]
    json: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (the default).
    Serve,
    /// Apply database migrations and exit (`--status`: list them, apply none).
    Migrate {
        /// List the applied and pending migrations (and any newer than
        /// this binary) instead of applying them.
        #[arg(long)]
        status: bool,
    },
    /// Accounts and their wallets.
    #[command(subcommand)]
    Accounts(AccountsCommand),
    /// API keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Browser sessions.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Request history.
    #[command(subcommand)]
    Requests(RequestsCommand),
    /// Video jobs: show one, reconcile an unknown one.
    #[command(subcommand)]
    Videos(VideosCommand),
    /// Catalog files.
    #[command(subcommand)]
    Catalog(CatalogCommand),
    /// The whole configuration.
    #[command(subcommand)]
    Config(ConfigCommand),
}

/// Every failure is one line on stderr and status 1 (docs/operations.md):
/// a command line clap refuses too (clap alone would exit 2 with a
/// paragraph); help and version are printed and succeed.
fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            use clap::error::ErrorKind;
            if matches!(
                error.kind(),
                ErrorKind::DisplayHelp | ErrorKind::DisplayVersion
            ) {
                use std::io::Write;
                let mut stdout = std::io::stdout().lock();
                let written = write!(stdout, "{}", error.render()).and_then(|()| stdout.flush());
                return if written.is_ok() {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::FAILURE
                };
            }
            if error.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                // `router keys`: what the command takes, and a failure.
                let _ = error.print();
                return ExitCode::FAILURE;
            }
            let rendered = error.render().to_string();
            let first = rendered.lines().next().unwrap_or_default();
            output::fail(&format!(
                "{} (see `router --help`)",
                first.trim_start_matches("error: ")
            ));
        }
    };
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => output::fail(&format!("{error:#}")),
    }
}

fn run(cli: Cli) -> anyhow::Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let out = Output { json: cli.json };
    let command = cli.command.unwrap_or(Command::Serve);
    let serving = matches!(command, Command::Serve | Command::Migrate { status: false });
    // The gateway logs at info; an operator command only warns, so that its
    // output is what it printed.
    init_logging(
        cli.serve.log_format()?,
        cli.serve.log_filter(),
        if serving { "info" } else { "warn" },
    );
    if let Command::Catalog(command) = command {
        return commands::catalog(command, &out);
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match command {
            Command::Serve => {
                let config = cli.serve.server_config()?;
                let warnings = checks::of_settings(&cli.serve, &config);
                serve::serve(config, warnings).await
            }
            Command::Migrate { status: true } => commands::migration_status(&cli.serve, &out).await,
            Command::Migrate { status: false } => {
                let url = cli.serve.database_url()?;
                let db = Database::connect(&url, 2).await?;
                db.migrate().await?;
                tracing::info!("migrations applied");
                Ok(())
            }
            Command::Accounts(command) => commands::accounts(&cli.serve, command, &out).await,
            Command::Keys(command) => commands::keys(&cli.serve, command, &out).await,
            Command::Sessions(command) => commands::sessions(&cli.serve, command, &out).await,
            Command::Requests(command) => commands::requests(&cli.serve, command, &out).await,
            Command::Config(command) => commands::config(&cli.serve, command, &out).await,
            Command::Videos(command) => commands::videos(&cli.serve, command, &out).await,
            Command::Catalog(_) => Ok(()),
        }
    })
}

/// Libraries whose debug and trace lines carry secrets, held at info
/// whatever `ROUTER_LOG` asks (issue 33): tokio-postgres logs every SQL
/// parameter (webhook URLs with their tokens, emails, as byte arrays);
/// reqwest logs every URL it fetches, query string included (a supplier
/// image's signed URL, a Gemini key in `?key=`).
const SECRET_BEARING_LOGS: [&str; 2] = ["tokio_postgres=info", "reqwest=info"];

/// JSON lines or human text on stderr; `ROUTER_LOG` (`--log`) filters
/// (default `default_level`; one that cannot be read falls back to it, and
/// `config check` and the start of `serve` warn about it).
fn init_logging(format: LogFormat, filter: Option<&str>, default_level: &str) {
    let mut filter = filter
        .and_then(|f| tracing_subscriber::EnvFilter::try_new(f).ok())
        .unwrap_or_else(|| default_level.into());
    for cap in SECRET_BEARING_LOGS {
        if let Ok(directive) = cap.parse() {
            filter = filter.add_directive(directive);
        }
    }
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => {
            router_telemetry::request_log::write_json_lines();
            builder.json().init();
        }
        LogFormat::Text => builder.init(),
    }
    router_telemetry::panic::install_panic_hook();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// clap's own checks: no setting (a global flag) clashes with a
    /// command's flag of the same name.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
