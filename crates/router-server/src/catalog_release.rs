//! Catalog releases in a running router: record the catalog loaded at
//! start, reload it (`SIGHUP`, `POST /admin/catalog/reload`), and follow
//! the releases other instances record (`NOTIFY catalog_release`).
//!
//! A release is installed whole: the gateway's catalog and the views are
//! swapped together under the cell's lock, and only forwards, so an older
//! release arriving late never replaces a newer one.

use crate::app::App;
use crate::catalog_view::{CatalogViews, ReleaseInfo, canonical_json, pricing_object, sha256_hex};
use router_canonical::{ApiError, ErrorCode};
use router_core::Catalog;
use router_core::store::StoreError;
use router_store::Database;
use router_store::catalog_releases::{self, ModelSnapshot, Recorded};
use serde_json::{Value, json};
use std::sync::Arc;

fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// The views of `catalog` as release `release` (observed at `observed_at`).
pub async fn views_for(
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

/// Make `views` the release in force unless a newer one already is.
pub fn install(app: &App, views: CatalogViews) -> bool {
    let views = Arc::new(views);
    app.catalog
        .install_forward(views, |catalog| app.gateway.set_catalog(catalog.clone()))
}

/// Re-read the catalog file, record it and serve it (L, issue 17 item 2).
/// An invalid file is refused (400 naming the file and line) and the old
/// catalog keeps serving.
pub async fn reload(app: &App) -> Result<Value, ApiError> {
    let path = app.catalog_path.as_str();
    let text = std::fs::read_to_string(path).map_err(|e| {
        ApiError::new(
            ErrorCode::InvalidParameter,
            format!("cannot read catalog {path}: {e}"),
        )
    })?;
    let env = app.catalog_env.clone();
    let catalog = Catalog::parse(&text, path, |name| env(name))
        .map_err(|e| ApiError::new(ErrorCode::InvalidParameter, e.to_string()))?;
    let (views, recorded) = record(app.database(), Arc::new(catalog), path, &text)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "recording a catalog release failed");
            ApiError::new(
                ErrorCode::InternalError,
                "The catalog release could not be recorded; the old catalog keeps serving.",
            )
        })?;
    let version = views.pricing_version();
    install(app, views);
    tracing::info!(
        release = recorded.release,
        changed = recorded.changed,
        "catalog reloaded"
    );
    Ok(json!({
        "release": recorded.release,
        "changed": recorded.changed,
        "pricing_version": version,
        "observed_at": rfc3339(recorded.observed_at),
    }))
}

/// `GET /admin/catalog`: the release in force.
pub fn describe(app: &App) -> Value {
    let views = app.catalog.current();
    json!({
        "release": views.info.release,
        "observed_at": views.info.observed_at,
        "path": app.catalog_path,
        "pricing_version": views.pricing_version(),
        "models": views.entries().count(),
    })
}

/// Load release `number` recorded by another instance and serve it, if it
/// is newer than the one in force.
async fn adopt(app: &App, number: i64) -> Result<(), StoreError> {
    if number <= app.catalog.current().info.release {
        return Ok(());
    }
    let stored = {
        let mut conn = app.database().connection().await?;
        catalog_releases::release(&mut conn, number).await?
    };
    let Some(stored) = stored else {
        return Ok(());
    };
    let env = app.catalog_env.clone();
    let catalog = match Catalog::parse(&stored.source, &stored.path, |name| env(name)) {
        Ok(catalog) => catalog,
        Err(error) => {
            tracing::error!(release = number, error = %error, "a recorded catalog release does not load here");
            return Ok(());
        }
    };
    let views = views_for(
        app.database(),
        Arc::new(catalog),
        stored.release,
        stored.observed_at,
    )
    .await?;
    if install(app, views) {
        tracing::info!(release = number, "catalog release adopted");
    }
    Ok(())
}

/// Follow releases recorded by any instance for as long as the process runs.
pub fn spawn_follower(app: Arc<App>) {
    let mut releases = app.database().follow_catalog_releases();
    tokio::spawn(async move {
        while let Some(number) = releases.recv().await {
            if let Err(error) = adopt(&app, number).await {
                tracing::warn!(release = number, error = %error, "adopting a catalog release failed");
            }
        }
    });
}

/// Reload on every `SIGHUP`.
#[cfg(unix)]
pub fn spawn_sighup_reload(app: Arc<App>) {
    use tokio::signal::unix::{SignalKind, signal};
    let Ok(mut hangups) = signal(SignalKind::hangup()) else {
        tracing::warn!("cannot listen for SIGHUP; reload with POST /admin/catalog/reload");
        return;
    };
    tokio::spawn(async move {
        while hangups.recv().await.is_some() {
            if let Err(error) = reload(&app).await {
                tracing::error!(error = %error.message, "catalog reload refused; the old catalog keeps serving");
            }
        }
    });
}

#[cfg(not(unix))]
pub fn spawn_sighup_reload(_app: Arc<App>) {}
