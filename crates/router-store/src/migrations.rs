//! The embedded, forward-only migrations, and running them safely when
//! several router instances boot at once.

use crate::error::store_error;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncConnection, AsyncMigrationHarness, AsyncPgConnection, RunQueryDsl};
use diesel_migrations::{EmbeddedMigrations, MigrationHarness, embed_migrations};
use router_core::store::StoreError;

/// Every migration in `migrations/`, compiled in.
pub const MIGRATIONS: EmbeddedMigrations = embed_migrations!("migrations");

/// A fingerprint of the migration files (computed by `build.rs`), so test
/// support can tell when a migrated template database is stale.
pub const MIGRATIONS_FINGERPRINT: &str = env!("ROUTER_STORE_MIGRATIONS_FINGERPRINT");

/// The advisory lock key that serialises migration runs ("routermg").
const MIGRATION_LOCK: i64 = 0x726f_7574_6572_6d67;

/// Applies pending migrations to the database at `url` and returns the
/// versions applied (empty when the schema was current).
///
/// Uses its own connection, which holds a session advisory lock for the
/// whole run: instances booting together wait for the first one and then
/// find nothing to do. Diesel runs each migration in its own transaction.
///
/// The harness drives async diesel from blocking code, so it runs on the
/// blocking pool: this works on both the multi-thread and the
/// current-thread tokio runtime.
pub async fn run_pending_migrations(url: &str) -> Result<Vec<String>, StoreError> {
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .map_err(|error| StoreError::Unavailable(error.to_string()))?;
    diesel::sql_query("SELECT pg_advisory_lock($1)")
        .bind::<BigInt, _>(MIGRATION_LOCK)
        .execute(&mut conn)
        .await
        .map_err(store_error)?;
    let (mut conn, applied) = tokio::task::spawn_blocking(move || {
        let mut harness = AsyncMigrationHarness::new(conn);
        let applied = harness
            .run_pending_migrations(MIGRATIONS)
            .map(|versions| versions.iter().map(ToString::to_string).collect::<Vec<_>>())
            .map_err(|error| StoreError::Query(format!("migration failed: {error}")));
        (harness.into_inner(), applied)
    })
    .await
    .map_err(|error| StoreError::Query(format!("migration task failed: {error}")))?;
    // Closing the connection would release the lock too; unlocking first
    // lets a waiting instance proceed without waiting for the disconnect.
    diesel::sql_query("SELECT pg_advisory_unlock($1)")
        .bind::<BigInt, _>(MIGRATION_LOCK)
        .execute(&mut conn)
        .await
        .map_err(store_error)?;
    let applied = applied?;
    if !applied.is_empty() {
        tracing::info!(?applied, "applied database migrations");
    }
    Ok(applied)
}

/// Which migrations a database has, against the ones this binary carries.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct MigrationStatus {
    /// Applied, and known to this binary (oldest first).
    pub applied: Vec<String>,
    /// Known to this binary and not applied yet (`router migrate` applies them).
    pub pending: Vec<String>,
    /// Applied, but unknown to this binary: the schema is newer than the
    /// binary (a newer release migrated it). This binary keeps working on
    /// a schema one release ahead only as far as that release allows; see
    /// docs/operations.md (upgrades).
    pub unknown: Vec<String>,
}

/// The versions of the embedded migrations, oldest first (`2026-11-26-000700`
/// of `2026-11-26-000700_videos` is stored as `20261126000700`).
pub fn embedded_versions() -> Vec<String> {
    use diesel::migration::MigrationSource;
    let mut versions: Vec<String> = MigrationSource::<diesel::pg::Pg>::migrations(&MIGRATIONS)
        .map(|all| all.iter().map(|m| m.name().version().to_string()).collect())
        .unwrap_or_default();
    versions.sort();
    versions
}

/// Reads (never writes) which migrations the database at `conn` has.
pub async fn status(conn: &mut AsyncPgConnection) -> Result<MigrationStatus, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Version {
        #[diesel(sql_type = diesel::sql_types::Text)]
        version: String,
    }
    let applied: Vec<Version> =
        diesel::sql_query("SELECT version FROM __diesel_schema_migrations ORDER BY version")
            .load(conn)
            .await
            .or_else(|e| match e {
                // No table at all: nothing applied.
                diesel::result::Error::DatabaseError(_, ref info)
                    if info.message().contains("does not exist") =>
                {
                    Ok(Vec::new())
                }
                other => Err(other),
            })
            .map_err(store_error)?;
    let applied: Vec<String> = applied.into_iter().map(|v| v.version).collect();
    let known = embedded_versions();
    Ok(MigrationStatus {
        pending: known
            .iter()
            .filter(|v| !applied.contains(v))
            .cloned()
            .collect(),
        unknown: applied
            .iter()
            .filter(|v| !known.contains(v))
            .cloned()
            .collect(),
        applied: applied.into_iter().filter(|v| known.contains(v)).collect(),
    })
}
