//! The `router` binary: `router serve` (default) and `router migrate`.

use anyhow::Context;
use clap::{Parser, Subcommand};
use router_core::{Catalog, Gateway, GatewayConfig, SealKey};
use router_server::catalog_release;
use router_server::catalog_view::CatalogCell;
use router_server::client_addr::TrustedProxies;
use router_server::{App, ServerConfig};
use router_store::Database;
use router_supply::HttpSuppliers;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[derive(Parser)]
#[command(name = "router", about = "LLM inference gateway")]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    serve: ServeArgs,
}

#[derive(Subcommand)]
enum Command {
    /// Run the gateway (the default).
    Serve,
    /// Apply database migrations and exit.
    Migrate,
}

#[derive(clap::Args)]
struct ServeArgs {
    #[arg(long, env = "ROUTER_LISTEN", default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    #[arg(long, env = "DATABASE_URL")]
    database_url: Option<String>,
    #[arg(
        long,
        env = "ROUTER_CATALOG",
        default_value = "fixtures/demo-catalog.toml"
    )]
    catalog: String,
    /// Routing deadline in seconds, shared by all attempts of a request.
    #[arg(long, env = "ROUTER_DEADLINE_SECS", default_value_t = 180)]
    deadline_secs: u64,
    /// Lifetime of a hold that is not extended, before the reaper releases it.
    #[arg(long, env = "ROUTER_HOLD_LEASE_SECS", default_value_t = 600)]
    hold_lease_secs: u64,
    #[arg(long, env = "ROUTER_REAPER_INTERVAL_SECS", default_value_t = 30)]
    reaper_interval_secs: u64,
    #[arg(long, env = "ROUTER_DB_POOL_SIZE", default_value_t = 32)]
    db_pool_size: usize,
    /// Proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-For
    /// and Forwarded headers name the client; none by default.
    #[arg(long, env = "ROUTER_TRUSTED_PROXIES", default_value = "")]
    trusted_proxies: String,
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let database_url = cli
        .serve
        .database_url
        .clone()
        .context("DATABASE_URL is not set (run `cargo xtask db` to get one)")?;
    let trusted_proxies = TrustedProxies::parse(&cli.serve.trusted_proxies)
        .map_err(|e| anyhow::anyhow!("ROUTER_TRUSTED_PROXIES: {e}"))?;
    let config = ServerConfig {
        listen: cli.serve.listen,
        database_url,
        catalog_path: cli.serve.catalog.clone(),
        admin_token: std::env::var("ROUTER_ADMIN_TOKEN")
            .ok()
            .filter(|t| !t.is_empty()),
        deadline: Duration::from_secs(cli.serve.deadline_secs),
        hold_lease: Duration::from_secs(cli.serve.hold_lease_secs),
        reaper_interval: Duration::from_secs(cli.serve.reaper_interval_secs.max(1)),
        database_pool_size: cli.serve.db_pool_size,
        trusted_proxies,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async move {
        match cli.command.unwrap_or(Command::Serve) {
            Command::Migrate => {
                let db = Database::connect(&config.database_url, 2).await?;
                db.migrate().await?;
                tracing::info!("migrations applied");
                Ok(())
            }
            Command::Serve => serve(config).await,
        }
    })
}

async fn serve(config: ServerConfig) -> anyhow::Result<()> {
    tracing::info!(?config, "starting router");
    let catalog_text = std::fs::read_to_string(&config.catalog_path)
        .with_context(|| format!("cannot read catalog {}", config.catalog_path))?;
    let catalog_env = catalog_release::process_env();
    let catalog = Catalog::parse(&catalog_text, &config.catalog_path, |name| {
        catalog_env(name)
    })
    .map_err(|e| anyhow::anyhow!("{e}"))?;
    let catalog = Arc::new(catalog);
    let db = Database::connect(&config.database_url, config.database_pool_size).await?;
    db.migrate().await.context("applying migrations")?;
    let (views, recorded) =
        catalog_release::record(&db, catalog.clone(), &config.catalog_path, &catalog_text)
            .await
            .context("recording the catalog release")?;
    tracing::info!(
        release = recorded.release,
        new = recorded.created,
        "catalog release"
    );
    db.listen_for_key_changes()
        .await
        .context("listening for API key changes")?;
    let suppliers = HttpSuppliers::new()?;
    let gateway_config = GatewayConfig {
        deadline: config.deadline,
        hold_lease: config.hold_lease,
        ..GatewayConfig::default()
    };
    let seal_key = SealKey::load(&db)
        .await
        .context("loading the thinking seal key")?;
    let gateway = Gateway::new(catalog, db.clone(), suppliers, gateway_config, seal_key);
    let app = Arc::new(App {
        gateway,
        admin_token: config.admin_token.clone(),
        trusted_proxies: config.trusted_proxies.clone(),
        catalog: CatalogCell::new(views),
        catalog_path: config.catalog_path.clone(),
        catalog_env,
        cursor_key: tokio::sync::OnceCell::new(),
    });
    catalog_release::spawn_follower(app.clone());
    catalog_release::spawn_sighup_reload(app.clone());
    spawn_reaper(db, config.reaper_interval);
    // The tokenizer (~40 MB) is loaded by the first count_tokens call, on a
    // blocking thread: most deployments never pay for it.
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("binding {}", config.listen))?;
    tracing::info!(listen = %listener.local_addr()?, "router listening");
    // On a worker thread, not on this one (`block_on`): a connection's task
    // is then spawned where it will run, instead of waking a worker thread
    // for every accepted connection.
    tokio::spawn(router_server::serve(listener, app, shutdown_signal()))
        .await
        .context("the accept loop panicked")??;
    tracing::info!("router stopped");
    Ok(())
}

/// How long a pooled database connection may stay unused before it is closed.
const DB_CONNECTION_MAX_IDLE: Duration = Duration::from_secs(60);

/// Release holds of requests that died with their process (crash, kill -9),
/// and close database connections a past burst left idle.
fn spawn_reaper(db: Database, interval: Duration) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(interval);
        loop {
            ticker.tick().await;
            match db.reap_expired_holds(std::time::SystemTime::now()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(released = n, "reaped expired holds"),
                Err(e) => tracing::warn!(error = %e, "reaper failed"),
            }
            let closed = db.close_idle_connections(DB_CONNECTION_MAX_IDLE);
            if closed > 0 {
                tracing::debug!(closed, "closed idle database connections");
            }
        }
    });
}

async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! { () = ctrl_c => {}, () = term => {} }
}

fn init_logging() {
    let filter =
        tracing_subscriber::EnvFilter::try_from_env("ROUTER_LOG").unwrap_or_else(|_| "info".into());
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .init();
}
