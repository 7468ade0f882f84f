//! Catalog releases in a running router: record the catalog loaded at
//! start, reload it (`SIGHUP`, `POST /admin/catalog/reload`), and follow
//! the releases other instances record (`NOTIFY catalog_release`).
//!
//! A release is installed whole: the gateway's catalog and the views are
//! swapped together under the cell's lock, and only forwards, so an older
//! release arriving late never replaces a newer one.

use crate::view::{CatalogViews, ReleaseInfo, canonical_json, pricing_object, rfc3339, sha256_hex};
use crate::{CatalogError, PublishedCatalog};
use router_core::Catalog;
use router_core::store::StoreError;
use router_store::Database;
use router_store::catalog_releases::{self, ModelSnapshot, Recorded};
use serde::Serialize;
use std::sync::Arc;

/// The views of `catalog` as release `release` (observed at `observed_at`).
async fn views_for(
    db: &Database,
    catalog: Arc<Catalog>,
    release: i64,
    observed_at: chrono::DateTime<chrono::Utc>,
) -> Result<CatalogViews, StoreError> {
    let mut conn = db.connection().await?;
    let changed = catalog_releases::price_changed_at(&mut conn, release).await?;
    let info = ReleaseInfo {
        release,
        observed_at: rfc3339(observed_at),
        price_changed_at: changed
            .into_iter()
            .map(|(model, at)| (model, rfc3339(at)))
            .collect(),
    };
    Ok(CatalogViews::build(catalog, info))
}

/// Record `catalog` (parsed from `source`, read at `path`) as a release,
/// unless it equals the latest one, and build its views.
pub async fn record(
    db: &Database,
    catalog: Arc<Catalog>,
    path: &str,
    source: &str,
) -> Result<(CatalogViews, Recorded), StoreError> {
    let provisional = CatalogViews::build(catalog.clone(), ReleaseInfo::default());
    let models: Vec<ModelSnapshot> = provisional
        .entries()
        .map(|(model, entry)| ModelSnapshot {
            model_id: model.id.clone(),
            entry: canonical_json(entry),
            pricing: canonical_json(&pricing_object(&catalog, model)),
        })
        .collect();
    let digest = sha256_hex(source.as_bytes());
    let recorded = {
        let mut conn = db.connection().await?;
        catalog_releases::record(&mut conn, path, source, &digest, &models).await?
    };
    let views = views_for(db, catalog, recorded.release, recorded.observed_at).await?;
    Ok((views, recorded))
}

/// What a reload answers (`POST /admin/catalog/reload`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Reloaded {
    pub release: i64,
    /// Pricing-change rows the release appended (0: the file was unchanged).
    pub changed: i64,
    pub pricing_version: String,
    /// RFC 3339.
    pub observed_at: String,
}

/// The release in force (`GET /admin/catalog`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Described {
    pub release: i64,
    /// RFC 3339.
    pub observed_at: String,
    /// The catalog file a reload reads.
    pub path: String,
    pub pricing_version: String,
    /// Visible models.
    pub models: usize,
}

impl PublishedCatalog {
    /// Make `views` the release in force unless a newer one already is;
    /// the gateway serves its catalog from the same moment.
    pub fn install(&self, views: CatalogViews) -> bool {
        let routing = &self.inner.routing;
        self.inner
            .cell
            .install_forward(Arc::new(views), |catalog| routing.serve(catalog.clone()))
    }

    /// Parse a catalog text as this process would load it.
    fn parse(&self, text: &str, path: &str) -> Result<Catalog, router_core::catalog::CatalogError> {
        let env = &self.inner.env;
        Catalog::parse(text, path, |name| env(name))
    }

    /// Re-read the catalog file, record it and serve it (L, issue 17 item 2).
    /// An invalid file is refused ([`CatalogError::Unreadable`],
    /// [`CatalogError::Invalid`]: the file and line) and the old catalog
    /// keeps serving.
    pub async fn reload(&self) -> Result<Reloaded, CatalogError> {
        let path = self.path();
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Unreadable {
            path: path.to_owned(),
            source,
        })?;
        let catalog = self.parse(&text, path)?;
        let (views, recorded) = record(&self.inner.database, Arc::new(catalog), path, &text)
            .await
            .map_err(|e| {
                tracing::error!(error = %e, "recording a catalog release failed");
                CatalogError::NotRecorded(e)
            })?;
        let pricing_version = views.pricing_version();
        self.install(views);
        tracing::info!(
            release = recorded.release,
            changed = recorded.changed,
            "catalog reloaded"
        );
        Ok(Reloaded {
            release: recorded.release,
            changed: recorded.changed,
            pricing_version,
            observed_at: rfc3339(recorded.observed_at),
        })
    }

    /// The release in force.
    pub fn describe(&self) -> Described {
        let views = self.current();
        Described {
            release: views.info.release,
            observed_at: views.info.observed_at.clone(),
            path: self.inner.path.clone(),
            pricing_version: views.pricing_version(),
            models: views.entries().count(),
        }
    }

    /// Load release `number` recorded by another instance and serve it, if
    /// it is newer than the one in force.
    async fn adopt(&self, number: i64) -> Result<(), StoreError> {
        if number <= self.current().info.release {
            return Ok(());
        }
        let database = &self.inner.database;
        let stored = {
            let mut conn = database.connection().await?;
            catalog_releases::release(&mut conn, number).await?
        };
        let Some(stored) = stored else {
            return Ok(());
        };
        let catalog = match self.parse(&stored.source, &stored.path) {
            Ok(catalog) => catalog,
            Err(error) => {
                tracing::error!(release = number, error = %error, "a recorded catalog release does not load here");
                return Ok(());
            }
        };
        let views = views_for(
            database,
            Arc::new(catalog),
            stored.release,
            stored.observed_at,
        )
        .await?;
        if self.install(views) {
            tracing::info!(release = number, "catalog release adopted");
        }
        Ok(())
    }

    /// Follow releases recorded by any instance for as long as the process
    /// runs.
    pub fn spawn_follower(&self) {
        let mut releases = self.inner.database.follow_catalog_releases();
        let published = self.clone();
        tokio::spawn(async move {
            while let Some(number) = releases.recv().await {
                if let Err(error) = published.adopt(number).await {
                    tracing::warn!(release = number, error = %error, "adopting a catalog release failed");
                }
            }
        });
    }

    /// Reload on every `SIGHUP`.
    #[cfg(unix)]
    pub fn spawn_sighup_reload(&self) {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut hangups) = signal(SignalKind::hangup()) else {
            tracing::warn!("cannot listen for SIGHUP; reload with POST /admin/catalog/reload");
            return;
        };
        let published = self.clone();
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                if let Err(error) = published.reload().await {
                    tracing::error!(error = %error, "catalog reload refused; the old catalog keeps serving");
                }
            }
        });
    }

    #[cfg(not(unix))]
    pub fn spawn_sighup_reload(&self) {}
}
