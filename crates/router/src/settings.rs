//! The serve settings: every `ROUTER_*` variable (and `DATABASE_URL`), each
//! mirrored by a flag, read as text and checked here so that a bad value
//! stops start-up with one line naming the variable (clap's own messages
//! name only the flag). `docs/operations.md` lists them all.

use crate::config::ServerConfig;
use anyhow::{Context, anyhow, bail};
use router_core::key_policy::parse_network;
use router_http::body::BodyPace;
use router_http::client_addr::TrustedProxies;
use router_http::connection::ConnectionLimits;
use router_http::public_url::PublicBaseUrl;
use router_notify::{Mailer, Transports};
use router_uploads::{ObjectStorage, UploadSettings};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

/// Every setting is a global flag: it works before or after the command
/// (`router serve --listen …`, the documented form, and `router --listen
/// … serve`), and `router serve --help` lists them with their defaults
/// and variables.
#[derive(clap::Args, Debug, Clone, serde::Serialize)]
#[command(next_help_heading = "Settings (each also its ROUTER_* variable)")]
pub(crate) struct ServeArgs {
    /// Listen address (HTTP/1.1 and h2c).
    #[arg(
        long,
        global = true,
        env = "ROUTER_LISTEN",
        default_value = "127.0.0.1:8080"
    )]
    listen: String,
    /// A second listen address for the admin API and `/metrics` only; when
    /// set, `ROUTER_LISTEN` no longer serves them. Unset: one listener.
    #[arg(long, global = true, env = "ROUTER_ADMIN_LISTEN")]
    admin_listen: Option<String>,
    /// PostgreSQL URL.
    #[arg(long, global = true, env = "DATABASE_URL", hide_env_values = true)]
    database_url: Option<String>,
    /// The catalog file.
    #[arg(
        long,
        global = true,
        env = "ROUTER_CATALOG",
        default_value = "fixtures/demo-catalog.toml"
    )]
    catalog: String,
    /// Routing deadline in seconds, shared by all attempts of a request.
    #[arg(
        long,
        global = true,
        env = "ROUTER_DEADLINE_SECS",
        default_value = "180"
    )]
    deadline_secs: String,
    /// Lifetime of a hold that is not extended, before the reaper releases it.
    #[arg(
        long,
        global = true,
        env = "ROUTER_HOLD_LEASE_SECS",
        default_value = "600"
    )]
    hold_lease_secs: String,
    /// How long the single supplier attempt of an image generation may take
    /// before the request ends with 408 and its hold is released.
    #[arg(
        long,
        global = true,
        env = "ROUTER_IMAGE_DEADLINE_SECS",
        default_value = "120"
    )]
    image_deadline_secs: String,
    /// `true` lets image URLs a supplier answers point at loopback
    /// (127.0.0.0/8, ::1): tests and the local demo only, never production.
    #[arg(
        long,
        global = true,
        env = "ROUTER_IMAGE_URL_ALLOW_LOOPBACK",
        default_value = "false"
    )]
    image_url_allow_loopback: String,
    /// Seconds between passes of the hold reaper (crash recovery).
    #[arg(
        long,
        global = true,
        env = "ROUTER_REAPER_INTERVAL_SECS",
        default_value = "30"
    )]
    reaper_interval_secs: String,
    /// Database connections per process.
    #[arg(long, global = true, env = "ROUTER_DB_POOL_SIZE", default_value = "32")]
    db_pool_size: String,
    /// Milliseconds a new database connection may take to be established
    /// (TCP, start-up, authentication).
    #[arg(
        long,
        global = true,
        env = "ROUTER_DB_CONNECT_TIMEOUT_MS",
        default_value = "5000"
    )]
    db_connect_timeout_ms: String,
    /// Milliseconds a request waits for a pooled database connection.
    #[arg(
        long,
        global = true,
        env = "ROUTER_DB_CHECKOUT_TIMEOUT_MS",
        default_value = "5000"
    )]
    db_checkout_timeout_ms: String,
    /// Milliseconds a request waits for the statements of one database
    /// operation; past it the connection is closed and the request answers
    /// 503 with Retry-After.
    #[arg(
        long,
        global = true,
        env = "ROUTER_DB_STATEMENT_TIMEOUT_MS",
        default_value = "5000"
    )]
    db_statement_timeout_ms: String,
    /// Milliseconds a statement waits for a row lock on the server
    /// (`lock_timeout`); below the statement timeout.
    #[arg(
        long,
        global = true,
        env = "ROUTER_DB_LOCK_TIMEOUT_MS",
        default_value = "2000"
    )]
    db_lock_timeout_ms: String,
    /// Seconds a client has to send a whole request head, from its first
    /// byte (or from connecting); an idle connection that starts none is closed.
    #[arg(
        long,
        global = true,
        env = "ROUTER_HEADER_READ_TIMEOUT_SECS",
        default_value = "10"
    )]
    header_read_timeout_secs: String,
    /// Seconds an idle keep-alive connection stays open after its last answer.
    #[arg(
        long,
        global = true,
        env = "ROUTER_KEEP_ALIVE_IDLE_SECS",
        default_value = "75"
    )]
    keep_alive_idle_secs: String,
    /// Seconds between HTTP/2 PINGs; a PING unanswered as long closes the connection.
    #[arg(
        long,
        global = true,
        env = "ROUTER_H2_KEEP_ALIVE_SECS",
        default_value = "30"
    )]
    h2_keep_alive_secs: String,
    /// Seconds requests in flight may run on after SIGTERM (the listener
    /// closes at once); those still running then get an error and their
    /// holds are voided. At least the routing deadline is advised.
    #[arg(long, global = true, env = "ROUTER_DRAIN_SECS", default_value = "190")]
    drain_secs: String,
    /// Seconds a request body may send nothing before it is refused (408).
    #[arg(
        long,
        global = true,
        env = "ROUTER_BODY_IDLE_TIMEOUT_SECS",
        default_value = "30"
    )]
    body_idle_timeout_secs: String,
    /// The least average rate of a request body, in bytes a second, once it
    /// has been arriving longer than the idle timeout (408); 0: none.
    #[arg(
        long,
        global = true,
        env = "ROUTER_BODY_MIN_BYTES_PER_SEC",
        default_value = "1024"
    )]
    body_min_bytes_per_sec: String,
    /// Client connections open at once; past it new ones wait in the
    /// listen backlog. `auto`: 16384, or less below the descriptor limit.
    #[arg(
        long,
        global = true,
        env = "ROUTER_MAX_CONNECTIONS",
        default_value = "auto"
    )]
    max_connections: String,
    /// Client connections from one address (IPv6: one /64) at once; past it
    /// new ones are closed. 0: no limit (behind a load balancer).
    #[arg(
        long,
        global = true,
        env = "ROUTER_MAX_CONNECTIONS_PER_ADDRESS",
        default_value = "256"
    )]
    max_connections_per_address: String,
    /// Proxies (addresses or CIDRs, comma-separated) whose X-Forwarded-For
    /// and Forwarded headers name the client; none by default.
    #[arg(
        long,
        global = true,
        env = "ROUTER_TRUSTED_PROXIES",
        default_value = ""
    )]
    trusted_proxies: String,
    /// Where people and browsers reach this router; default http://{listen}.
    #[arg(long, global = true, env = "ROUTER_PUBLIC_BASE_URL")]
    public_base_url: Option<String>,
    /// SMTP server for sign-in links (smtp://, smtps://); unset: no email.
    #[arg(long, global = true, env = "ROUTER_SMTP_URL", hide_env_values = true)]
    smtp_url: Option<String>,
    /// The sender of the router's emails.
    #[arg(
        long,
        global = true,
        env = "ROUTER_EMAIL_FROM",
        default_value = "Router <router@localhost>"
    )]
    email_from: String,
    /// The Telegram bot's token for Telegram channels; unset: Telegram
    /// channels are unavailable.
    #[arg(
        long,
        global = true,
        env = "ROUTER_TELEGRAM_BOT_TOKEN",
        hide_env_values = true
    )]
    telegram_bot_token: Option<String>,
    /// The Telegram Bot API base URL.
    #[arg(
        long,
        global = true,
        env = "ROUTER_TELEGRAM_API_BASE",
        default_value = "https://api.telegram.org"
    )]
    telegram_api_base: String,
    /// How long one channel delivery (webhook or Bot API call) may take.
    #[arg(
        long,
        global = true,
        env = "ROUTER_CHANNEL_TIMEOUT_SECS",
        default_value = "10"
    )]
    channel_timeout_secs: String,
    /// `true` lets channel destinations (webhook URLs, Telegram API bases)
    /// be loopback hosts, over plain http too: tests and the local demo
    /// only, never production.
    #[arg(
        long,
        global = true,
        env = "ROUTER_CHANNEL_URL_ALLOW_LOOPBACK",
        default_value = "false"
    )]
    channel_url_allow_loopback: String,
    /// How long a browser session lasts, in seconds.
    #[arg(
        long,
        global = true,
        env = "ROUTER_SESSION_TTL_SECS",
        default_value = "604800"
    )]
    session_ttl_secs: String,
    /// A prompt without cache markers takes part in prompt-cache routing
    /// affinity from this many estimated tokens of prefix.
    #[arg(
        long,
        global = true,
        env = "ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS",
        default_value = "1024"
    )]
    prompt_cache_min_prefix_tokens: String,
    /// How long the route that served a prompt prefix stays preferred.
    #[arg(
        long,
        global = true,
        env = "ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS",
        default_value = "300"
    )]
    prompt_cache_affinity_ttl_secs: String,
    /// Credit leases: `1` to admit requests of keys without limits from a
    /// per-instance lease of the account's balance, in memory (issue 34).
    #[arg(long, global = true, env = "ROUTER_CREDIT_LEASES", default_value = "0")]
    credit_leases: String,
    /// Seconds a credit lease lives without renewal (a dead instance's
    /// leases return within it).
    #[arg(
        long,
        global = true,
        env = "ROUTER_CREDIT_LEASE_TTL_SECS",
        default_value = "30"
    )]
    credit_lease_ttl_secs: String,
    /// The share of an account's available balance one lease takes, in percent (1-100).
    #[arg(
        long,
        global = true,
        env = "ROUTER_CREDIT_LEASE_SHARE_PERCENT",
        default_value = "25"
    )]
    credit_lease_share_percent: String,
    /// Seconds a lease unused with nothing in flight is kept before it is returned.
    #[arg(
        long,
        global = true,
        env = "ROUTER_CREDIT_LEASE_IDLE_SECS",
        default_value = "10"
    )]
    credit_lease_idle_secs: String,
    /// Test-only admin routes (backdating, `as_of`): `1` to enable; never in production.
    #[arg(
        long,
        global = true,
        env = "ROUTER_ADMIN_TEST_HOOKS",
        default_value = "0"
    )]
    admin_test_hooks: String,
    /// Export each request's spans over OTLP/HTTP to this collector
    /// (`http://host:4318`; spans go to `/v1/traces`). Unset: no export.
    #[arg(long, global = true, env = "ROUTER_OTLP_ENDPOINT")]
    otlp_endpoint: Option<String>,
    /// Record metrics for `GET /metrics`: `1` (default) or `0`.
    #[arg(long, global = true, env = "ROUTER_METRICS", default_value = "1")]
    metrics: String,
    /// Where uploads are stored: file:///absolute/path or s3://bucket/prefix
    /// (with the AWS_* variables); unset: uploads answer 503.
    #[arg(long, global = true, env = "ROUTER_OBJECT_STORE")]
    object_store: Option<String>,
    /// How long an upload is readable, in seconds.
    #[arg(
        long,
        global = true,
        env = "ROUTER_UPLOAD_TTL_SECS",
        default_value = "3600"
    )]
    upload_ttl_secs: String,
    /// How long a removed upload's tombstone keeps counting, in seconds.
    #[arg(
        long,
        global = true,
        env = "ROUTER_UPLOAD_TOMBSTONE_SECS",
        default_value = "86400"
    )]
    upload_tombstone_secs: String,
    /// Uploads of one account in progress at once on this instance (at
    /// least 1); more are 429 upload_rate_limit.
    #[arg(
        long,
        global = true,
        env = "ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT",
        default_value = "4"
    )]
    upload_concurrency_per_account: String,
    /// Uploads in progress at once on this instance (at least 1); more are
    /// 503 uploads_unavailable.
    #[arg(
        long,
        global = true,
        env = "ROUTER_UPLOAD_CONCURRENCY_TOTAL",
        default_value = "64"
    )]
    upload_concurrency_total: String,
    /// Failed operator authentications a client address may make in a
    /// minute before every operator route answers it 429 until the minute
    /// ends; 0: no limit.
    #[arg(
        long,
        global = true,
        env = "ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE",
        default_value = "30"
    )]
    admin_auth_failures_per_minute: String,
    /// How often each active video job is polled, in milliseconds (100 to
    /// 3600000), across all instances.
    #[arg(
        long,
        global = true,
        env = "ROUTER_VIDEO_POLL_INTERVAL_MS",
        default_value = "5000"
    )]
    video_poll_interval_ms: String,
    /// Log filter (`tracing` EnvFilter syntax, e.g. `info,router_store=debug`);
    /// default `info` (`warn` for the operator commands).
    #[arg(long, global = true, env = "ROUTER_LOG")]
    log: Option<String>,
    /// Log lines as `json`, `text`, or `auto` (text on a terminal, else JSON).
    #[arg(long, global = true, env = "ROUTER_LOG_FORMAT", default_value = "auto")]
    log_format: String,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum LogFormat {
    Json,
    Text,
}

impl ServeArgs {
    /// `ROUTER_LOG_FORMAT`, with `auto` decided by whether stderr is a terminal.
    pub(crate) fn log_format(&self) -> anyhow::Result<LogFormat> {
        use std::io::IsTerminal;
        match self.log_format.as_str() {
            "json" => Ok(LogFormat::Json),
            "text" => Ok(LogFormat::Text),
            "auto" if std::io::stderr().is_terminal() => Ok(LogFormat::Text),
            "auto" => Ok(LogFormat::Json),
            other => bail!("ROUTER_LOG_FORMAT: `{other}` is not json, text or auto"),
        }
    }

    /// Every setting by its variable, as this process reads it (from its
    /// flag, its variable or its default), secrets masked: the passwords
    /// of URLs, the Telegram bot token, the admin token (only its length).
    pub(crate) fn effective(&self) -> serde_json::Map<String, serde_json::Value> {
        use clap::Args;
        let values = serde_json::to_value(self).unwrap_or_default();
        let command = ServeArgs::augment_args(clap::Command::new("router"));
        let mut settings = serde_json::Map::new();
        for arg in command.get_arguments() {
            let Some(variable) = arg.get_env().and_then(|v| v.to_str()) else {
                continue;
            };
            let value = values
                .get(arg.get_id().as_str())
                .cloned()
                .unwrap_or_default();
            settings.insert(variable.to_owned(), mask(variable, value));
        }
        let admin_token = std::env::var("ROUTER_ADMIN_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
            .map(|t| format!("set ({} characters)", t.chars().count()));
        settings.insert("ROUTER_ADMIN_TOKEN".to_owned(), admin_token.into());
        settings
    }

    /// `ROUTER_LOG`, when set and not empty.
    pub(crate) fn log_filter(&self) -> Option<&str> {
        self.log.as_deref().filter(|f| !f.trim().is_empty())
    }

    /// `DATABASE_URL`, required and a `postgres://` URL.
    pub(crate) fn database_url(&self) -> anyhow::Result<String> {
        let url = self
            .database_url
            .as_deref()
            .filter(|u| !u.is_empty())
            .context("DATABASE_URL is not set (run `cargo xtask db` to get one)")?;
        let parsed = url::Url::parse(url).map_err(|e| anyhow!("DATABASE_URL: not a URL ({e})"))?;
        if !matches!(parsed.scheme(), "postgres" | "postgresql") || parsed.host().is_none() {
            bail!("DATABASE_URL: expected postgres://user@host:port/database");
        }
        Ok(url.to_owned())
    }

    /// `ROUTER_DB_*_TIMEOUT_MS`: the bounds of every database wait.
    fn database_limits(&self) -> anyhow::Result<router_store::DatabaseLimits> {
        let limits = router_store::DatabaseLimits {
            connect_timeout: millis("ROUTER_DB_CONNECT_TIMEOUT_MS", &self.db_connect_timeout_ms)?,
            checkout_timeout: millis(
                "ROUTER_DB_CHECKOUT_TIMEOUT_MS",
                &self.db_checkout_timeout_ms,
            )?,
            statement_timeout: millis(
                "ROUTER_DB_STATEMENT_TIMEOUT_MS",
                &self.db_statement_timeout_ms,
            )?,
            lock_timeout: millis("ROUTER_DB_LOCK_TIMEOUT_MS", &self.db_lock_timeout_ms)?,
        };
        limits.check().map_err(|e| {
            anyhow!("ROUTER_DB_LOCK_TIMEOUT_MS: {e} (ROUTER_DB_STATEMENT_TIMEOUT_MS)")
        })?;
        Ok(limits)
    }

    /// Every setting checked; the database and the catalog file are not
    /// touched here.
    pub(crate) fn server_config(&self) -> anyhow::Result<ServerConfig> {
        let listen: SocketAddr = self.listen.parse().map_err(|_| {
            anyhow!(
                "ROUTER_LISTEN: `{}` is not an address:port (e.g. 127.0.0.1:8080)",
                self.listen
            )
        })?;
        let public_base = match self.public_base_url.as_deref().filter(|u| !u.is_empty()) {
            Some(text) => {
                PublicBaseUrl::parse(text).map_err(|e| anyhow!("ROUTER_PUBLIC_BASE_URL: {e}"))?
            }
            None => PublicBaseUrl::for_listen(listen),
        };
        // `ROUTER_MAIL_FROM` (the channels issue's name) is an alias, read
        // only when `ROUTER_EMAIL_FROM` is not set.
        let email_from = match (
            std::env::var_os("ROUTER_EMAIL_FROM"),
            std::env::var("ROUTER_MAIL_FROM"),
        ) {
            (None, Ok(alias)) if !alias.is_empty() => alias,
            _ => self.email_from.clone(),
        };
        router_notify::mail::check_sender(&email_from).map_err(|e| anyhow!("{e}"))?;
        let mailer = match self.smtp_url.as_deref().filter(|u| !u.is_empty()) {
            Some(url) => Some(Arc::new(
                Mailer::from_url(url, &email_from).map_err(|e| anyhow!("{e}"))?,
            )),
            None => None,
        };
        let trusted_proxies = trusted_proxies(&self.trusted_proxies)?;
        let channel_timeout = seconds("ROUTER_CHANNEL_TIMEOUT_SECS", &self.channel_timeout_secs)?;
        let channels = Transports::new(
            self.telegram_bot_token.clone(),
            Some(self.telegram_api_base.clone()),
            channel_timeout,
        )
        .allow_loopback(switch(
            "ROUTER_CHANNEL_URL_ALLOW_LOOPBACK",
            &self.channel_url_allow_loopback,
        )?);
        telegram_api_base(&self.telegram_api_base, &channels)?;
        Ok(ServerConfig {
            listen,
            admin_listen: self.admin_listen(listen)?,
            metrics_token: metrics_token()?,
            database_url: self.database_url()?,
            catalog_path: self.catalog.clone(),
            admin_token: admin_token()?,
            admin_auth_failures_per_minute: match self
                .admin_auth_failures_per_minute
                .trim()
                .parse::<u32>()
            {
                Ok(n) => n,
                Err(_) => bail!(
                    "ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE: `{}` is not a whole number (0: no limit)",
                    self.admin_auth_failures_per_minute
                ),
            },
            deadline: seconds("ROUTER_DEADLINE_SECS", &self.deadline_secs)?,
            hold_lease: seconds("ROUTER_HOLD_LEASE_SECS", &self.hold_lease_secs)?,
            image_deadline: image_deadline(&self.image_deadline_secs)?,
            image_url_allow_loopback: switch(
                "ROUTER_IMAGE_URL_ALLOW_LOOPBACK",
                &self.image_url_allow_loopback,
            )?,
            reaper_interval: seconds("ROUTER_REAPER_INTERVAL_SECS", &self.reaper_interval_secs)?,
            database_pool_size: count("ROUTER_DB_POOL_SIZE", &self.db_pool_size)?,
            database_limits: self.database_limits()?,
            connections: self.connections()?,
            trusted_proxies,
            public_base,
            mailer,
            channels,
            session_ttl: seconds("ROUTER_SESSION_TTL_SECS", &self.session_ttl_secs)?,
            test_hooks: switch("ROUTER_ADMIN_TEST_HOOKS", &self.admin_test_hooks)?,
            credit_leases: self.credit_leases()?,
            prompt_cache: router_server::app::PromptCacheSettings {
                min_prefix_tokens: count(
                    "ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS",
                    &self.prompt_cache_min_prefix_tokens,
                )? as u64,
                affinity_ttl: affinity_ttl(&self.prompt_cache_affinity_ttl_secs)?,
            },
            metrics: switch("ROUTER_METRICS", &self.metrics)?,
            otlp_endpoint: match self
                .otlp_endpoint
                .as_deref()
                .filter(|e| !e.trim().is_empty())
            {
                Some(base) => {
                    router_telemetry::otlp::traces_url(base)
                        .map_err(|e| anyhow!("ROUTER_OTLP_ENDPOINT: {e}"))?;
                    Some(base.trim().to_owned())
                }
                None => None,
            },
            uploads: self.uploads()?,
            videos: router_server::videos::VideoSettings {
                poll_interval: video_poll_interval(&self.video_poll_interval_ms)?,
            },
        })
    }

    /// `ROUTER_ADMIN_LISTEN`: an address:port other than `listen`.
    fn admin_listen(&self, listen: SocketAddr) -> anyhow::Result<Option<SocketAddr>> {
        let Some(text) = self
            .admin_listen
            .as_deref()
            .filter(|t| !t.trim().is_empty())
        else {
            return Ok(None);
        };
        let admin: SocketAddr = text.trim().parse().map_err(|_| {
            anyhow!("ROUTER_ADMIN_LISTEN: `{text}` is not an address:port (e.g. 127.0.0.1:9090)")
        })?;
        if admin == listen {
            bail!(
                "ROUTER_ADMIN_LISTEN: `{text}` is ROUTER_LISTEN's address; give the admin API its own"
            );
        }
        Ok(Some(admin))
    }

    /// The client connection limits.
    fn connections(&self) -> anyhow::Result<ConnectionLimits> {
        let max_connections = match self.max_connections.trim() {
            "auto" => ConnectionLimits::default_max_connections(),
            text => count("ROUTER_MAX_CONNECTIONS", text)?,
        };
        let per_address = match self.max_connections_per_address.trim().parse::<usize>() {
            Ok(n) => n,
            Err(_) => bail!(
                "ROUTER_MAX_CONNECTIONS_PER_ADDRESS: `{}` is not a whole number (0: no limit)",
                self.max_connections_per_address
            ),
        };
        let min_rate = match self.body_min_bytes_per_sec.trim().parse::<u64>() {
            Ok(n) => n,
            Err(_) => bail!(
                "ROUTER_BODY_MIN_BYTES_PER_SEC: `{}` is not a whole number (0: no minimum)",
                self.body_min_bytes_per_sec
            ),
        };
        Ok(ConnectionLimits {
            header_read_timeout: seconds(
                "ROUTER_HEADER_READ_TIMEOUT_SECS",
                &self.header_read_timeout_secs,
            )?,
            keep_alive_idle: seconds("ROUTER_KEEP_ALIVE_IDLE_SECS", &self.keep_alive_idle_secs)?,
            h2_keep_alive_interval: seconds("ROUTER_H2_KEEP_ALIVE_SECS", &self.h2_keep_alive_secs)?,
            max_connections,
            max_connections_per_address: per_address,
            body: BodyPace {
                idle: seconds(
                    "ROUTER_BODY_IDLE_TIMEOUT_SECS",
                    &self.body_idle_timeout_secs,
                )?,
                min_bytes_per_sec: min_rate,
            },
            drain: seconds("ROUTER_DRAIN_SECS", &self.drain_secs)?,
        })
    }

    /// `ROUTER_CREDIT_LEASES` and its sizes; `None` when leases are off.
    fn credit_leases(&self) -> anyhow::Result<Option<router_store::LeaseSettings>> {
        if !switch("ROUTER_CREDIT_LEASES", &self.credit_leases)? {
            return Ok(None);
        }
        let share_percent = match self.credit_lease_share_percent.trim().parse::<i64>() {
            Ok(n) if (1..=100).contains(&n) => n,
            _ => bail!(
                "ROUTER_CREDIT_LEASE_SHARE_PERCENT: `{}` is not a whole number from 1 to 100",
                self.credit_lease_share_percent
            ),
        };
        Ok(Some(router_store::LeaseSettings {
            ttl: seconds("ROUTER_CREDIT_LEASE_TTL_SECS", &self.credit_lease_ttl_secs)?,
            share_percent,
            idle: seconds(
                "ROUTER_CREDIT_LEASE_IDLE_SECS",
                &self.credit_lease_idle_secs,
            )?,
            ..router_store::LeaseSettings::default()
        }))
    }

    /// The upload settings; a store that cannot be used stops start-up.
    fn uploads(&self) -> anyhow::Result<UploadSettings> {
        let storage = match self.object_store.as_deref().filter(|s| !s.is_empty()) {
            Some(url) => Some(
                ObjectStorage::from_url(url).map_err(|e| anyhow!("ROUTER_OBJECT_STORE: {e}"))?,
            ),
            None => None,
        };
        Ok(UploadSettings {
            storage,
            ttl: seconds("ROUTER_UPLOAD_TTL_SECS", &self.upload_ttl_secs)?,
            tombstone: seconds("ROUTER_UPLOAD_TOMBSTONE_SECS", &self.upload_tombstone_secs)?,
            concurrency_per_account: count(
                "ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT",
                &self.upload_concurrency_per_account,
            )?,
            concurrency_total: count(
                "ROUTER_UPLOAD_CONCURRENCY_TOTAL",
                &self.upload_concurrency_total,
            )?,
            ..UploadSettings::default()
        })
    }
}

/// A secret setting's value as `config check` may show it.
fn mask(variable: &str, value: serde_json::Value) -> serde_json::Value {
    let Some(text) = value.as_str() else {
        return value;
    };
    match variable {
        "ROUTER_TELEGRAM_BOT_TOKEN" => "***".into(),
        "DATABASE_URL" | "ROUTER_SMTP_URL" if url::Url::parse(text).is_err() => {
            "(unreadable, not shown)".into()
        }
        // Any URL's password (an object store's too), and the SMTP user.
        _ => match url::Url::parse(text) {
            Ok(mut url) if url.password().is_some() || variable == "ROUTER_SMTP_URL" => {
                if url.password().is_some() {
                    let _ = url.set_password(Some("***"));
                }
                if variable == "ROUTER_SMTP_URL" && !url.username().is_empty() {
                    let _ = url.set_username("***");
                }
                url.to_string().into()
            }
            _ => value,
        },
    }
}

/// `ROUTER_METRICS_TOKEN` (environment only, like the operator token): at
/// least 16 characters, never the operator token itself.
fn metrics_token() -> anyhow::Result<Option<String>> {
    let Some(token) = std::env::var("ROUTER_METRICS_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    if token.chars().count() < 16 || token.chars().any(|c| c.is_whitespace() || c.is_control()) {
        bail!("ROUTER_METRICS_TOKEN: must be at least 16 characters, without spaces");
    }
    if std::env::var("ROUTER_ADMIN_TOKEN").ok().as_deref() == Some(token.as_str()) {
        bail!(
            "ROUTER_METRICS_TOKEN: must differ from ROUTER_ADMIN_TOKEN (a scraper must not hold the operator token)"
        );
    }
    Ok(Some(token))
}

/// The fewest characters an operator token may have: a one-character
/// token was accepted once (issue 33). `config check` still warns below
/// [`crate::checks::MIN_ADMIN_TOKEN_CHARS`].
pub(crate) const ADMIN_TOKEN_FLOOR_CHARS: usize = 16;

/// `ROUTER_ADMIN_TOKEN`, when set: at least [`ADMIN_TOKEN_FLOOR_CHARS`]
/// characters, without spaces.
fn admin_token() -> anyhow::Result<Option<String>> {
    let Some(token) = std::env::var("ROUTER_ADMIN_TOKEN")
        .ok()
        .filter(|t| !t.is_empty())
    else {
        return Ok(None);
    };
    let chars = token.chars().count();
    if chars < ADMIN_TOKEN_FLOOR_CHARS || token.chars().any(|c| c.is_whitespace() || c.is_control())
    {
        bail!(
            "ROUTER_ADMIN_TOKEN: {chars} characters; at least {ADMIN_TOKEN_FLOOR_CHARS} are required, without spaces (use `openssl rand -hex 32`)"
        );
    }
    Ok(Some(token))
}

/// A whole number of milliseconds, 1 to 600,000.
fn millis(name: &str, text: &str) -> anyhow::Result<Duration> {
    match text.trim().parse::<u64>() {
        Ok(ms) if (1..=600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => bail!("{name}: `{text}` is not a whole number of milliseconds from 1 to 600000"),
    }
}

/// `ROUTER_TRUSTED_PROXIES`: comma- or space-separated addresses and CIDR
/// networks (a key allowlist's entry rule); empty trusts no proxy.
fn trusted_proxies(text: &str) -> anyhow::Result<TrustedProxies> {
    let networks = text
        .split(|c: char| c == ',' || c.is_whitespace())
        .filter(|entry| !entry.is_empty())
        .map(|entry| {
            parse_network(entry).ok_or_else(|| {
                anyhow!("ROUTER_TRUSTED_PROXIES: `{entry}` is not an IP address or CIDR network")
            })
        })
        .collect::<anyhow::Result<_>>()?;
    Ok(TrustedProxies::new(networks))
}

/// A whole number of seconds, at least 1.
fn seconds(name: &str, text: &str) -> anyhow::Result<Duration> {
    match text.trim().parse::<u64>() {
        Ok(secs) if secs >= 1 => Ok(Duration::from_secs(secs)),
        _ => bail!("{name}: `{text}` is not a whole number of seconds (at least 1)"),
    }
}

/// `ROUTER_VIDEO_POLL_INTERVAL_MS`: whole milliseconds, 100 to 3,600,000.
fn video_poll_interval(text: &str) -> anyhow::Result<Duration> {
    const NAME: &str = "ROUTER_VIDEO_POLL_INTERVAL_MS";
    match text.trim().parse::<u64>() {
        Ok(ms) if (100..=3_600_000).contains(&ms) => Ok(Duration::from_millis(ms)),
        _ => bail!("{NAME}: `{text}` is not a whole number of milliseconds from 100 to 3600000"),
    }
}

/// `ROUTER_TELEGRAM_API_BASE`: the bot token travels in its path, so it
/// follows the channel destination rules (https to a public host; loopback
/// only with `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK`).
fn telegram_api_base(text: &str, channels: &Transports) -> anyhow::Result<()> {
    router_notify::destination::check(text, channels.url_policy())
        .map(drop)
        .map_err(|e| anyhow!("ROUTER_TELEGRAM_API_BASE: `{text}` {e}"))
}

/// `ROUTER_IMAGE_DEADLINE_SECS`: whole seconds, 1 to 3600.
fn image_deadline(text: &str) -> anyhow::Result<Duration> {
    const NAME: &str = "ROUTER_IMAGE_DEADLINE_SECS";
    let deadline = seconds(NAME, text)?;
    if deadline > Duration::from_secs(3600) {
        bail!("{NAME}: `{text}` is more than 3600 seconds");
    }
    Ok(deadline)
}

/// `ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS`: whole seconds, 1 to 86400.
fn affinity_ttl(text: &str) -> anyhow::Result<Duration> {
    const NAME: &str = "ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS";
    let ttl = seconds(NAME, text)?;
    if ttl > Duration::from_secs(86_400) {
        bail!("{NAME}: `{text}` is more than 86400 seconds");
    }
    Ok(ttl)
}

/// `true`/`1` or `false`/`0` (empty: false).
fn switch(name: &str, text: &str) -> anyhow::Result<bool> {
    match text.trim() {
        "true" | "1" => Ok(true),
        "false" | "0" | "" => Ok(false),
        _ => bail!("{name}: `{text}` is not true or false (1 or 0)"),
    }
}

/// A positive count.
fn count(name: &str, text: &str) -> anyhow::Result<usize> {
    match text.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => bail!("{name}: `{text}` is not a positive whole number"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trusted_proxies_are_networks_and_a_bad_entry_is_named() {
        let proxies = trusted_proxies("10.0.0.0/8, 192.0.2.7 2001:db8::/32").unwrap();
        let expected = ["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"];
        assert_eq!(
            proxies,
            TrustedProxies::new(expected.iter().map(|n| n.parse().unwrap()).collect())
        );
        assert_eq!(trusted_proxies("").unwrap(), TrustedProxies::default());
        let error = |text| trusted_proxies(text).unwrap_err().to_string();
        assert_eq!(
            error("10.0.0.0/8,nonsense"),
            "ROUTER_TRUSTED_PROXIES: `nonsense` is not an IP address or CIDR network"
        );
        assert!(error("10.0.0.0/33").contains("`10.0.0.0/33`"));
        assert_eq!(
            trusted_proxies("10.1.2.3/8").unwrap(),
            TrustedProxies::new(vec!["10.0.0.0/8".parse().unwrap()]),
            "host bits are cleared"
        );
    }

    #[test]
    fn numbers_are_checked_and_named() {
        assert_eq!(seconds("X", "5").unwrap(), Duration::from_secs(5));
        for bad in ["0", "-1", "1.5", "ten", ""] {
            let e = seconds("ROUTER_DEADLINE_SECS", bad)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("ROUTER_DEADLINE_SECS: "), "{e}");
        }
        assert!(count("ROUTER_DB_POOL_SIZE", "0").is_err());
        assert_eq!(image_deadline("120").unwrap(), Duration::from_secs(120));
        for bad in ["0", "3601", "soon"] {
            let e = image_deadline(bad).unwrap_err().to_string();
            assert!(e.starts_with("ROUTER_IMAGE_DEADLINE_SECS: "), "{e}");
        }
        assert!(switch("X", "true").unwrap());
        assert!(!switch("X", "false").unwrap());
        let e = switch("ROUTER_IMAGE_URL_ALLOW_LOOPBACK", "yes").unwrap_err();
        assert!(
            e.to_string()
                .starts_with("ROUTER_IMAGE_URL_ALLOW_LOOPBACK: ")
        );
        assert_eq!(count("X", "4").unwrap(), 4);
    }

    #[test]
    fn the_telegram_api_base_must_be_https_to_a_public_host() {
        let strict = Transports::new(None, None, Duration::from_secs(1));
        let loopback = strict.clone().allow_loopback(true);
        assert!(telegram_api_base("https://api.telegram.org", &strict).is_ok());
        for bad in [
            "http://api.telegram.org",
            "https://127.0.0.1:8081",
            "https://169.254.169.254",
            "https://user:pw@api.telegram.org",
            "api.telegram.org",
        ] {
            let e = telegram_api_base(bad, &strict).unwrap_err().to_string();
            assert!(e.starts_with("ROUTER_TELEGRAM_API_BASE: "), "{e}");
        }
        assert!(telegram_api_base("http://127.0.0.1:8081", &loopback).is_ok());
        assert!(telegram_api_base("http://api.telegram.org", &loopback).is_err());
    }
}
