//! `router serve`: load the catalog, connect and migrate the database, and
//! serve until SIGTERM or ctrl-c, then drain.

use crate::config::ServerConfig;
use anyhow::Context;
use router_catalog::{CatalogViews, PublishedCatalog};
use router_core::{Catalog, Gateway, GatewayConfig, SealKey};
use router_server::App;
use router_server::admin_listener::Listener;
use router_store::Database;
use router_supply::HttpSuppliers;
use std::sync::Arc;
use std::time::Duration;

/// `warnings`: the settings' own (`checks::of_settings`); the catalog's and
/// the schema's are added here, and all are logged at start.
pub(crate) async fn serve(
    config: ServerConfig,
    mut warnings: Vec<crate::checks::Warning>,
) -> anyhow::Result<()> {
    // What can be refused is checked before the first log line, so that a
    // bad setting stops start-up with one line (printed by `main`).
    let (catalog, catalog_text) = load_catalog(&config.catalog_path)?;
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("ROUTER_LISTEN: cannot bind {}", config.listen))?;
    let db = match Database::connect_with(
        &config.database_url,
        config.database_pool_size,
        config.database_limits,
    )
    .await
    {
        Ok(db) => db,
        // A server that answers and refuses (no such role or database, a
        // wrong password) will not change its mind: one line, and stop.
        Err(error) if refused_by_the_server(&error.to_string()) => {
            return Err(anyhow::anyhow!("{error}")).context("DATABASE_URL: cannot connect");
        }
        Err(error) => {
            // Not an exit (a restart loop under an orchestrator): the
            // router listens, says it is not ready, and retries
            // (RELIABILITY.md D5).
            tracing::warn!(error = %error, listen = %listener.local_addr()?,
                "the database is unreachable at start; answering 503 until it is");
            router_server::starting::serve_until(
                &listener,
                &config.connections,
                connect_retrying(
                    &config.database_url,
                    config.database_pool_size,
                    config.database_limits,
                ),
            )
            .await
        }
    };
    tracing::info!(?config, "starting router");
    if config.metrics && router_telemetry::recorder::install() {
        router_telemetry::recorder::spawn_upkeep(router_telemetry::recorder::UPKEEP_PERIOD);
    }
    if let Some(base) = &config.otlp_endpoint {
        router_telemetry::otlp::install(base).context("ROUTER_OTLP_ENDPOINT")?;
        tracing::info!(endpoint = %base, "exporting spans over OTLP");
    }
    db.migrate().await.context("applying migrations")?;
    warnings.extend(crate::checks::of_catalog(
        &config.catalog_path,
        &catalog_text,
    ));
    match db.migration_status().await {
        Ok(status) => warnings.extend(crate::checks::of_database(&status)),
        Err(e) => tracing::warn!(error = %e, "could not read the applied migrations"),
    }
    crate::checks::log(&warnings);
    db.listen_for_changes()
        .await
        .context("listening for changes (API keys, response cache, experiments)")?;
    if let Some(settings) = &config.credit_leases {
        db.enable_credit_leases(settings.clone())
            .await
            .context("listening for credit lease recalls")?;
        tracing::info!(
            ttl_secs = settings.ttl.as_secs(),
            share_percent = settings.share_percent,
            "credit leases on"
        );
    }
    let catalog = Arc::new(catalog);
    let (views, recorded) =
        router_catalog::record(&db, catalog.clone(), &config.catalog_path, &catalog_text)
            .await
            .context("recording the catalog release")?;
    tracing::info!(
        release = recorded.release,
        new = recorded.created,
        "catalog release"
    );
    let app = Arc::new(app(&config, catalog, views, db.clone()).await?);
    app.catalog.spawn_follower();
    app.catalog.spawn_sighup_reload();
    router::jobs::spawn_all(app.clone(), format!("router-{}", uuid::Uuid::now_v7()));
    let leases_db = db.clone();
    spawn_pool_trimmer(db);
    // The tokenizer (~40 MB) is loaded by the first count_tokens call, on a
    // blocking thread: most deployments never pay for it.
    tracing::info!(listen = %listener.local_addr()?, "router listening");
    // `ROUTER_ADMIN_LISTEN`: the operator's routes on their own listener.
    let public_role = match config.admin_listen {
        Some(admin_listen) => {
            let admin = tokio::net::TcpListener::bind(admin_listen)
                .await
                .with_context(|| format!("ROUTER_ADMIN_LISTEN: cannot bind {admin_listen}"))?;
            tracing::info!(listen = %admin.local_addr()?, "admin API listening");
            tokio::spawn(router_server::serve_routes(
                admin,
                Listener::Admin,
                app.clone(),
                config.connections.clone(),
                shutdown_signal(),
            ));
            Listener::Public
        }
        None => Listener::Both,
    };
    // On a worker thread, not on this one (`block_on`): a connection's task
    // is then spawned where it will run, instead of waking a worker thread
    // for every accepted connection.
    tokio::spawn(router_server::serve_routes(
        listener,
        public_role,
        app,
        config.connections.clone(),
        shutdown_signal(),
    ))
    .await
    .context("the accept loop panicked")??;
    let returned = leases_db.return_credit_leases().await;
    if returned > 0 {
        tracing::info!(returned, "credit leases returned");
    }
    tracing::info!("router stopped");
    Ok(())
}

/// The catalog file and its text, its failure named by the variable that
/// points at it (and by the file, line and field).
pub(crate) fn load_catalog(path: &str) -> anyhow::Result<(Catalog, String)> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("ROUTER_CATALOG: cannot read catalog {path}: {e}"))?;
    let env = router_catalog::process_env();
    let catalog = Catalog::parse(&text, path, |name| env(name))
        .map_err(|e| anyhow::anyhow!("ROUTER_CATALOG: {e}"))?;
    Ok((catalog, text))
}

/// The shared state of a router process (also what the operator commands
/// run their operations against).
pub(crate) async fn app(
    config: &ServerConfig,
    catalog: Arc<Catalog>,
    views: CatalogViews,
    db: Database,
) -> anyhow::Result<App> {
    // The loopback switches are warned about with the rest of the
    // configuration (`checks::of_settings`), at the start of `serve`.
    let suppliers =
        HttpSuppliers::new()?.with_image_url_policy(router_supply::url_guard::UrlPolicy {
            allow_loopback: config.image_url_allow_loopback,
        });
    let gateway_config = GatewayConfig {
        deadline: config.deadline,
        hold_lease: config.hold_lease,
        image_deadline: config.image_deadline,
        ..GatewayConfig::default()
    };
    let seal_key = SealKey::load(&db)
        .await
        .context("loading the thinking seal key")?;
    let uploads = router_uploads::Uploads::new(config.uploads.clone(), db.clone());
    let notify =
        router_notify::Notifier::new(db.clone(), config.mailer.clone(), config.channels.clone());
    let operator = router_operator::Operator::new(db.clone(), config.session_ttl);
    let gateway = Gateway::new(catalog, db.clone(), suppliers, gateway_config, seal_key);
    let catalog = PublishedCatalog::new(
        views,
        config.catalog_path.clone(),
        router_catalog::process_env(),
        db,
        gateway.clone(),
    );
    let docs = router_docs::Manual::new(|path| config.public_base.join(path))
        .context("indexing the user manual")?;
    Ok(App {
        gateway,
        admin_token: config.admin_token.clone(),
        admin_failures: router_http::admin_throttle::AdminAuthThrottle::new(
            config.admin_auth_failures_per_minute,
        ),
        metrics_token: config.metrics_token.clone(),
        trusted_proxies: config.trusted_proxies.clone(),
        docs,
        public_base: config.public_base.clone(),
        notify,
        operator,
        catalog,
        reaper_interval: config.reaper_interval,
        prompt_cache: config.prompt_cache,
        test_hooks: config.test_hooks,
        uploads,
        videos: config.videos,
        jobs: router::jobs::REGISTRY,
    })
}

/// The first pause between two attempts to reach the database at start;
/// doubled up to [`CONNECT_RETRY_MAX`].
const CONNECT_RETRY_FIRST: Duration = Duration::from_millis(250);
/// At most this after the database returns, the router starts (D5 wants it
/// serving within 5 s); an attempt every 2 s costs a down database nothing.
const CONNECT_RETRY_MAX: Duration = Duration::from_secs(2);

/// Whether a failed connection was refused by a PostgreSQL server that
/// answered (the settings are wrong), rather than the server being away.
fn refused_by_the_server(error: &str) -> bool {
    [
        "does not exist",
        "password authentication failed",
        "no pg_hba.conf entry",
        "authentication",
    ]
    .iter()
    .any(|refusal| error.contains(refusal))
}

/// Connects to the database, retrying until it answers; a line once a
/// minute says why it still cannot.
async fn connect_retrying(
    url: &str,
    pool_size: usize,
    limits: router_store::DatabaseLimits,
) -> Database {
    let mut pause = CONNECT_RETRY_FIRST;
    loop {
        tokio::time::sleep(pause).await;
        match Database::connect_with(url, pool_size, limits).await {
            Ok(db) => {
                tracing::info!("the database is reachable; starting");
                return db;
            }
            Err(error) if refused_by_the_server(&error.to_string()) => {
                // Reachable now, but refusing: say so each time, at most
                // once a minute (the operator must fix the setting).
                static REFUSED: router_core::throttle::Throttle =
                    router_core::throttle::Throttle::new();
                if let Some(held_back) = REFUSED.allow(Duration::from_secs(60)) {
                    tracing::error!(error = %error, held_back, "DATABASE_URL: the database refuses the connection");
                }
                pause = CONNECT_RETRY_MAX;
            }
            Err(error) => {
                static UNREACHABLE: router_core::throttle::Throttle =
                    router_core::throttle::Throttle::new();
                if let Some(held_back) = UNREACHABLE.allow(Duration::from_secs(60)) {
                    tracing::warn!(error = %error, held_back, "the database is still unreachable");
                }
                pause = (pause * 2).min(CONNECT_RETRY_MAX);
            }
        }
    }
}

/// How long a pooled database connection may stay unused before it is closed.
const DB_CONNECTION_MAX_IDLE: Duration = Duration::from_secs(60);

/// Close database connections a past burst left idle (per process; the
/// hold reaper is a job, `router::jobs`).
fn spawn_pool_trimmer(db: Database) {
    tokio::spawn(async move {
        let mut ticker = tokio::time::interval(DB_CONNECTION_MAX_IDLE / 2);
        loop {
            ticker.tick().await;
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
