//! Shared state of one router process.

use crate::client_addr::TrustedProxies;
use crate::docs::Docs;
use crate::mail::Mailer;
use crate::public_url::PublicBaseUrl;
use router_core::Gateway;
use router_store::Database;
use router_supply::HttpSuppliers;
use std::sync::Arc;
use std::time::Duration;

pub type RouterGateway = Gateway<Database, HttpSuppliers>;

pub struct App {
    pub gateway: RouterGateway,
    pub admin_token: Option<String>,
    /// Proxies whose `X-Forwarded-For`/`Forwarded` are believed (`ROUTER_TRUSTED_PROXIES`).
    pub trusted_proxies: TrustedProxies,
    /// The user manual and its search index (`GET /v1/docs`).
    pub docs: Docs,
    /// Where browsers reach this router (`ROUTER_PUBLIC_BASE_URL`): sign-in
    /// links, cookie `Secure`, the same-origin rule.
    pub public_base: PublicBaseUrl,
    /// The SMTP transport (`ROUTER_SMTP_URL`); `None`: email is unavailable.
    pub mailer: Option<Arc<Mailer>>,
    /// How long a browser session lasts (`ROUTER_SESSION_TTL_SECS`).
    pub session_ttl: Duration,
    /// How often the hold reaper job runs (`ROUTER_REAPER_INTERVAL_SECS`).
    pub reaper_interval: Duration,
    /// `ROUTER_ADMIN_TEST_HOOKS=1`: the routes that bend time for tests
    /// exist (`jobs::require_test_hooks`); never in production.
    pub test_hooks: bool,
    /// Object storage, retention and spool of temporary uploads
    /// (`ROUTER_OBJECT_STORE`, `ROUTER_UPLOAD_TTL_SECS`,
    /// `ROUTER_UPLOAD_TOMBSTONE_SECS`).
    pub uploads: crate::uploads::UploadSettings,
}

impl App {
    pub fn database(&self) -> &Database {
        self.gateway.store()
    }
}
