//! Shared state of one router process.

use router_core::Gateway;
use router_store::Database;
use router_supply::HttpSuppliers;

pub type RouterGateway = Gateway<Database, HttpSuppliers>;

pub struct App {
    pub gateway: RouterGateway,
    pub admin_token: Option<String>,
}

impl App {
    pub fn database(&self) -> &Database {
        self.gateway.store()
    }
}
