//! The published catalog (section L), without HTTP: what callers see of
//! the catalog, the releases that change it, and the feed of its price
//! changes.
//!
//! The HTTP edge decodes a request's query string and path, hands the wing
//! the values ([`Params`], typed queries) and renders the answer: a
//! precomputed body ([`Cached`], with its `ETag`), a JSON body, or a
//! [`CatalogError`] that converts into the client's `ApiError`.
//!
//! - `view.rs`: the model entries and pricing objects, their canonical JSON
//!   and `pricing_version` hash, built once per release ([`CatalogViews`])
//!   and swapped whole ([`CatalogCell`]).
//! - `release.rs`: record the catalog loaded at start, reload it (`SIGHUP`,
//!   the admin API), follow the releases other instances record
//!   (`NOTIFY catalog_release`).
//! - `models.rs`: the rules of `/v1/models/supply` and `/v1/models/compare`
//!   (filters, ranking, estimates) and of the public views' filter.
//! - `changes.rs`: the pricing change feed, its pages and its signed
//!   cursors.
//! - Rows: `router_store::catalog_releases`.
//!
//! No view ever names a supplier, a route, a host or a key (GP-30).

pub mod changes;
pub mod error;
pub mod models;
mod params;
pub mod release;
#[cfg(feature = "openapi")]
pub mod schema;
pub mod view;
mod viewer;

pub use changes::{ChangesQuery, Cursor};
pub use error::CatalogError;
pub use models::{CompareQuery, ListQuery, SupplyQuery};
pub use params::Params;
pub use release::{Described, Reloaded, record};
pub use view::{
    Cached, CatalogCell, CatalogEnv, CatalogViews, ReleaseInfo, canonical_json, process_env,
    sha256_hex,
};
pub use viewer::Viewer;

use router_core::store::Store;
use router_core::supplier::Suppliers;
use router_core::{Catalog, Gateway};
use router_store::Database;
use std::sync::Arc;

/// What serves requests from the catalog besides its views: the gateway's
/// routing. An installed release's catalog is handed here under the cell's
/// lock, so views and routing change together.
pub trait ServesCatalog: Send + Sync + 'static {
    fn serve(&self, catalog: Arc<Catalog>);
}

impl<S: Store, P: Suppliers> ServesCatalog for Gateway<S, P> {
    fn serve(&self, catalog: Arc<Catalog>) {
        self.set_catalog(catalog);
    }
}

/// The published catalog of one router process: the release in force and
/// its views, the file a reload reads, how supplier keys resolve, where
/// releases are recorded, and the key that signs pricing-feed cursors.
/// Cheap to clone: clones share one state (the follower and the `SIGHUP`
/// task hold one).
#[derive(Clone)]
pub struct PublishedCatalog {
    inner: Arc<Inner>,
}

struct Inner {
    cell: CatalogCell,
    /// `ROUTER_CATALOG`.
    path: String,
    env: CatalogEnv,
    database: Database,
    routing: Box<dyn ServesCatalog>,
    /// Signs pricing-feed cursors; loaded from PostgreSQL on first use.
    cursor_key: tokio::sync::OnceCell<ring::hmac::Key>,
}

impl PublishedCatalog {
    /// `views`: the release in force (from [`record`]); `path`: the catalog
    /// file a reload reads; `env`: resolves supplier key variables of a
    /// catalog being loaded; `routing`: what else serves an installed
    /// release (the gateway).
    pub fn new(
        views: CatalogViews,
        path: impl Into<String>,
        env: CatalogEnv,
        database: Database,
        routing: impl ServesCatalog,
    ) -> PublishedCatalog {
        PublishedCatalog {
            inner: Arc::new(Inner {
                cell: CatalogCell::new(views),
                path: path.into(),
                env,
                database,
                routing: Box::new(routing),
                cursor_key: tokio::sync::OnceCell::new(),
            }),
        }
    }

    /// The release in force's views; a reader keeps one release for as
    /// long as it holds them.
    pub fn current(&self) -> Arc<CatalogViews> {
        self.inner.cell.current()
    }

    /// The catalog file a reload reads.
    pub fn path(&self) -> &str {
        &self.inner.path
    }
}
