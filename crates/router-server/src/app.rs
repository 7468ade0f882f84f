//! Shared state of one router process.

/// Prompt-cache routing affinity's settings, read by core's pipeline.
pub use router_core::affinity::PromptCacheSettings;
use router_core::{Gateway, LiveStream};
use router_http::client_addr::TrustedProxies;
use router_http::public_url::PublicBaseUrl;
use router_store::Database;
use router_supply::HttpSuppliers;
use std::time::Duration;

/// The gateway over this process's store and suppliers: the one place the
/// server names them.
pub type RouterGateway = Gateway<Database, HttpSuppliers>;

/// A live stream of [`RouterGateway`].
pub type RouterStream = LiveStream<Database, HttpSuppliers>;

pub struct App {
    pub gateway: RouterGateway,
    pub admin_token: Option<String>,
    /// Failed operator authentication per client address
    /// (`ROUTER_ADMIN_AUTH_FAILURES_PER_MINUTE`).
    pub admin_failures: router_http::admin_throttle::AdminAuthThrottle,
    /// `ROUTER_METRICS_TOKEN`: a token that opens `/metrics` only.
    pub metrics_token: Option<String>,
    /// Proxies whose `X-Forwarded-For`/`Forwarded` are believed (`ROUTER_TRUSTED_PROXIES`).
    pub trusted_proxies: TrustedProxies,
    /// The published catalog: the release in force and its precomputed
    /// views, the file a reload reads (`ROUTER_CATALOG`), the pricing
    /// feed's cursor key.
    pub catalog: router_catalog::PublishedCatalog,
    /// The user manual and its search index (`GET /v1/docs`).
    pub docs: router_docs::Manual,
    /// Where browsers reach this router (`ROUTER_PUBLIC_BASE_URL`): sign-in
    /// links, cookie `Secure`, the same-origin rule.
    pub public_base: PublicBaseUrl,
    /// Notifications: digest channels, their delivery (`ROUTER_SMTP_URL`,
    /// Slack, Discord, Telegram) and the SMTP transport of sign-in links.
    pub notify: router_notify::Notifier,
    /// The operator's operations (accounts, keys, sessions, sign-in,
    /// experiments, data protection), shared with the CLI; `admin.rs`,
    /// `sign_in.rs` and `data_protection.rs` are their HTTP side. It holds
    /// the session lifetime (`ROUTER_SESSION_TTL_SECS`).
    pub operator: router_operator::Operator,
    /// How often the hold reaper job runs (`ROUTER_REAPER_INTERVAL_SECS`).
    pub reaper_interval: Duration,
    /// Prompt-cache routing affinity (`ROUTER_PROMPT_CACHE_*`).
    pub prompt_cache: PromptCacheSettings,
    /// `ROUTER_ADMIN_TEST_HOOKS=1`: the routes that bend time for tests
    /// exist (`jobs::require_test_hooks`); never in production.
    pub test_hooks: bool,
    /// Temporary uploads: object storage, retention and spool
    /// (`ROUTER_OBJECT_STORE`, `ROUTER_UPLOAD_TTL_SECS`,
    /// `ROUTER_UPLOAD_TOMBSTONE_SECS`, `ROUTER_UPLOAD_CONCURRENCY_*`) and
    /// the uploads in progress on this instance.
    pub uploads: router_uploads::Uploads,
    /// Video jobs (`ROUTER_VIDEO_POLL_INTERVAL_MS`); their content goes to
    /// the uploads' object store.
    pub videos: router_core::video_jobs::VideoSettings,
    /// The background jobs this process knows (`router::jobs::REGISTRY`):
    /// `POST /admin/jobs/{name}/run` runs one pass of one of them.
    pub jobs: &'static [router_core::jobs::JobSpec<App>],
}
