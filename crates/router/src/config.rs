//! The process's configuration, from flags and the environment
//! (`settings.rs` reads and checks it): what the HTTP edge listens with and
//! what the wings, core and the store are built with (`serve.rs`).

use router_http::client_addr::TrustedProxies;
use router_http::public_url::PublicBaseUrl;
use router_notify::{Mailer, Transports};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

#[derive(Clone)]
pub(crate) struct ServerConfig {
    pub listen: SocketAddr,
    /// `ROUTER_ADMIN_LISTEN`: the admin API and `/metrics` on this address
    /// only (`admin_listener`); `None`: every route on `listen`.
    pub admin_listen: Option<SocketAddr>,
    pub database_url: String,
    pub catalog_path: String,
    /// The operator token guarding `/admin/`; `None` disables the admin API.
    pub admin_token: Option<String>,
    /// `ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE` (0: no limit).
    pub admin_auth_failures_per_minute: u32,
    /// `ROUTER_METRICS_TOKEN`: opens `/metrics` only (for a scraper).
    pub metrics_token: Option<String>,
    /// The routing deadline shared by all attempts (180 s in production).
    pub deadline: Duration,
    pub hold_lease: Duration,
    /// `ROUTER_IMAGE_DEADLINE_SECS`: the single image attempt's limit (408).
    pub image_deadline: Duration,
    /// `ROUTER_IMAGE_URL_ALLOW_LOOPBACK`: image URLs may point at loopback
    /// (tests and the local demo only; off by default).
    pub image_url_allow_loopback: bool,
    pub reaper_interval: Duration,
    pub database_pool_size: usize,
    /// `ROUTER_DB_CONNECT_TIMEOUT_MS`, `ROUTER_DB_CHECKOUT_TIMEOUT_MS`,
    /// `ROUTER_DB_STATEMENT_TIMEOUT_MS`, `ROUTER_DB_LOCK_TIMEOUT_MS`.
    pub database_limits: router_store::DatabaseLimits,
    /// `ROUTER_HEADER_READ_TIMEOUT_SECS`, `ROUTER_KEEP_ALIVE_IDLE_SECS`,
    /// `ROUTER_H2_KEEP_ALIVE_SECS`, `ROUTER_BODY_*`, `ROUTER_MAX_CONNECTIONS*`.
    pub connections: router_http::connection::ConnectionLimits,
    /// `ROUTER_TRUSTED_PROXIES`: whose forwarding headers name the client.
    pub trusted_proxies: TrustedProxies,
    /// `ROUTER_PUBLIC_BASE_URL` (default `http://{listen}`).
    pub public_base: PublicBaseUrl,
    /// The transport of `ROUTER_SMTP_URL`; `None` when unset.
    pub mailer: Option<Arc<Mailer>>,
    /// `ROUTER_TELEGRAM_BOT_TOKEN`, `ROUTER_TELEGRAM_API_BASE`,
    /// `ROUTER_CHANNEL_TIMEOUT_SECS`, `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK`:
    /// the chat transports of channels.
    pub channels: Transports,
    /// `ROUTER_SESSION_TTL_SECS`.
    pub session_ttl: Duration,
    /// `ROUTER_ADMIN_TEST_HOOKS`.
    pub test_hooks: bool,
    /// `ROUTER_PROMPT_CACHE_MIN_PREFIX_TOKENS`, `ROUTER_PROMPT_CACHE_AFFINITY_TTL_SECS`.
    pub prompt_cache: router_server::app::PromptCacheSettings,
    /// `ROUTER_METRICS`: record metrics for `/metrics`.
    pub metrics: bool,
    /// `ROUTER_OTLP_ENDPOINT`: the OpenTelemetry collector spans are
    /// exported to (`router_telemetry::otlp`); `None`: no export.
    pub otlp_endpoint: Option<String>,
    /// `ROUTER_OBJECT_STORE`, `ROUTER_UPLOAD_TTL_SECS`, `ROUTER_UPLOAD_TOMBSTONE_SECS`,
    /// `ROUTER_UPLOAD_CONCURRENCY_PER_ACCOUNT`, `ROUTER_UPLOAD_CONCURRENCY_TOTAL`.
    pub uploads: router_uploads::UploadSettings,
    /// `ROUTER_VIDEO_POLL_INTERVAL_MS`.
    pub videos: router_core::video_jobs::VideoSettings,
    /// `ROUTER_CREDIT_LEASES` and `ROUTER_CREDIT_LEASE_*`: per-instance
    /// credit leases (`router_store::lease_book`); `None`: off.
    pub credit_leases: Option<router_store::LeaseSettings>,
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("admin_listen", &self.admin_listen)
            .field("otlp_endpoint", &self.otlp_endpoint)
            .field("catalog_path", &self.catalog_path)
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "<redacted>"),
            )
            .field(
                "metrics_token",
                &self.metrics_token.as_ref().map(|_| "<redacted>"),
            )
            .field("deadline", &self.deadline)
            .field("hold_lease", &self.hold_lease)
            .field("image_deadline", &self.image_deadline)
            .field("image_url_allow_loopback", &self.image_url_allow_loopback)
            .field("database_limits", &self.database_limits)
            .field("connections", &self.connections)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("public_base", &self.public_base.origin())
            .field("email", &self.mailer.is_some())
            .field("channels", &self.channels)
            .field("session_ttl", &self.session_ttl)
            .finish_non_exhaustive()
    }
}
