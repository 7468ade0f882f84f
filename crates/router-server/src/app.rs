//! Shared state of one router process.

use crate::client_addr::TrustedProxies;
use crate::docs::Docs;
use router_core::Gateway;
use router_store::Database;
use router_supply::HttpSuppliers;

pub type RouterGateway = Gateway<Database, HttpSuppliers>;

pub struct App {
    pub gateway: RouterGateway,
    pub admin_token: Option<String>,
    /// Proxies whose `X-Forwarded-For`/`Forwarded` are believed (`ROUTER_TRUSTED_PROXIES`).
    pub trusted_proxies: TrustedProxies,
    /// The user manual and its search index (`GET /v1/docs`).
    pub docs: Docs,
}

impl App {
    pub fn database(&self) -> &Database {
        self.gateway.store()
    }
}
