//! A fresh, migrated database per test, cloned from a template (feature
//! `test-support`).
//!
//! The first test to run (in any process) creates and migrates
//! `router_test_template`; every test then gets
//! `CREATE DATABASE router_test_<time>_<uuid> TEMPLATE router_test_template`,
//! which copies files instead of replaying migrations. A pg advisory lock
//! serialises template work across parallel test processes. The template
//! carries a fingerprint of the migration files in its comment and is rebuilt
//! when they change.
//!
//! Test databases are left behind (useful when a test fails). They are not
//! free: the autovacuum launcher visits every database once a minute, a
//! backend start each. A passing `cargo xtask test` drops them, `cargo xtask
//! bench` drops them before it measures, and any run drops those older than
//! a day.

use crate::Database;
use crate::error::store_error;
use crate::migrations::{MIGRATIONS_FINGERPRINT, run_pending_migrations};
use diesel::sql_types::{BigInt, Nullable, Text};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use router_core::store::StoreError;
use std::ops::Deref;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use uuid::Uuid;

/// The migrated database every test database is cloned from.
pub const TEMPLATE_DATABASE: &str = "router_test_template";

/// Prefix of per-test database names.
const TEST_DATABASE_PREFIX: &str = "router_test_";

/// Advisory lock key serialising template checks and clones ("routertt").
const TEMPLATE_LOCK: i64 = 0x726f_7574_6572_7474;

/// Test databases older than this are dropped by later runs.
const STALE_AFTER: Duration = Duration::from_secs(24 * 60 * 60);

/// Pool size of [`TestDatabase::new`].
const DEFAULT_POOL_SIZE: usize = 8;

/// A fresh database for one test, with a connected [`Database`] (which it
/// derefs to) and its URL, e.g. for starting the router binary against it.
#[derive(Debug)]
pub struct TestDatabase {
    database: Database,
    url: String,
    name: String,
}

impl TestDatabase {
    /// A fresh migrated database with a pool of 8 connections.
    ///
    /// Reads the server from `DATABASE_URL` (set by `cargo xtask test`) and
    /// panics with instructions when it is unset or unusable: a test that
    /// cannot reach its database fails, it is never skipped.
    pub async fn new() -> TestDatabase {
        TestDatabase::with_pool_size(DEFAULT_POOL_SIZE).await
    }

    /// Like [`TestDatabase::new`] with a pool of `max_size` connections.
    pub async fn with_pool_size(max_size: usize) -> TestDatabase {
        TestDatabase::create_or_panic(max_size, Schema::Migrated).await
    }

    /// A fresh database with no schema at all, for testing migrations.
    pub async fn unmigrated() -> TestDatabase {
        TestDatabase::create_or_panic(DEFAULT_POOL_SIZE, Schema::Empty).await
    }

    /// A database on the server in `DATABASE_URL`; a test cannot go on without one.
    async fn create_or_panic(max_size: usize, schema: Schema) -> TestDatabase {
        let server_url = server_url();
        match TestDatabase::create(&server_url, max_size, schema).await {
            Ok(database) => database,
            Err(error) => panic!(
                "could not create a test database on the server in DATABASE_URL \
                 (run the tests through `cargo xtask test`): {error}"
            ),
        }
    }

    pub fn database(&self) -> &Database {
        &self.database
    }

    /// The URL of this test's database.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The name of this test's database.
    pub fn name(&self) -> &str {
        &self.name
    }

    async fn create(
        server_url: &str,
        max_size: usize,
        schema: Schema,
    ) -> Result<TestDatabase, StoreError> {
        let mut admin = AsyncPgConnection::establish(server_url)
            .await
            .map_err(|error| StoreError::Unavailable(error.to_string()))?;
        template_lock(&mut admin, LOCK).await?;
        let created = match schema {
            Schema::Migrated => clone_template(&mut admin, server_url).await,
            Schema::Empty => create_empty(&mut admin).await,
        };
        // Dropping the connection would release the lock as well.
        template_lock(&mut admin, UNLOCK).await?;
        drop(admin);
        let name = created?;
        let url = with_database(server_url, &name)?;
        let database = Database::connect(&url, max_size).await?;
        Ok(TestDatabase {
            database,
            url,
            name,
        })
    }
}

enum Schema {
    Migrated,
    Empty,
}

/// The server to create test databases on; panics with instructions when
/// `DATABASE_URL` is unset.
fn server_url() -> String {
    let Ok(url) = std::env::var("DATABASE_URL") else {
        panic!(
            "DATABASE_URL is not set. Run the tests through `cargo xtask test`, which starts \
             PostgreSQL and sets it (or export DATABASE_URL=postgres://user@host:port/postgres \
             pointing at a PostgreSQL 15+ server where the user may create databases)."
        );
    };
    url
}

impl Deref for TestDatabase {
    type Target = Database;

    fn deref(&self) -> &Database {
        &self.database
    }
}

const LOCK: &str = "SELECT pg_advisory_lock($1)";
const UNLOCK: &str = "SELECT pg_advisory_unlock($1)";

/// Runs [`LOCK`] or [`UNLOCK`] on the template lock.
async fn template_lock(admin: &mut AsyncPgConnection, sql: &'static str) -> Result<(), StoreError> {
    diesel::sql_query(sql)
        .bind::<BigInt, _>(TEMPLATE_LOCK)
        .execute(admin)
        .await
        .map(|_| ())
        .map_err(store_error)
}

#[derive(QueryableByName)]
struct DatabaseComment {
    #[diesel(sql_type = Nullable<Text>)]
    comment: Option<String>,
}

#[derive(QueryableByName)]
struct DatabaseName {
    #[diesel(sql_type = Text)]
    datname: String,
}

/// Under the template lock: (re)builds the template if its fingerprint is
/// not current, drops stale test databases, and clones a new one.
async fn clone_template(
    admin: &mut AsyncPgConnection,
    server_url: &str,
) -> Result<String, StoreError> {
    let expected = format!("router-store migrations {MIGRATIONS_FINGERPRINT}");
    let comment = diesel::sql_query(
        "SELECT shobj_description(oid, 'pg_database') AS comment FROM pg_database WHERE datname = $1",
    )
    .bind::<Text, _>(TEMPLATE_DATABASE)
    .get_result::<DatabaseComment>(admin)
    .await
    .optional()
    .map_err(store_error)?
    .and_then(|row| row.comment);

    if comment.as_deref() != Some(expected.as_str()) {
        tracing::info!(
            template = TEMPLATE_DATABASE,
            "building the test template database"
        );
        admin
            .batch_execute(&format!(
                "DROP DATABASE IF EXISTS {TEMPLATE_DATABASE} WITH (FORCE)"
            ))
            .await
            .map_err(store_error)?;
        admin
            .batch_execute(&format!("CREATE DATABASE {TEMPLATE_DATABASE}"))
            .await
            .map_err(store_error)?;
        run_pending_migrations(&with_database(server_url, TEMPLATE_DATABASE)?).await?;
        // Written last: a half-built template has no fingerprint and is rebuilt.
        admin
            .batch_execute(&format!(
                "COMMENT ON DATABASE {TEMPLATE_DATABASE} IS '{expected}'"
            ))
            .await
            .map_err(store_error)?;
    }

    drop_stale_databases(admin).await?;

    let name = new_database_name();
    admin
        .batch_execute(&format!(
            "CREATE DATABASE {name} TEMPLATE {TEMPLATE_DATABASE}"
        ))
        .await
        .map_err(store_error)?;
    Ok(name)
}

async fn create_empty(admin: &mut AsyncPgConnection) -> Result<String, StoreError> {
    let name = new_database_name();
    admin
        .batch_execute(&format!("CREATE DATABASE {name}"))
        .await
        .map_err(store_error)?;
    Ok(name)
}

/// `router_test_<unix seconds>_<uuid>`: unique, and dated for clean-up.
fn new_database_name() -> String {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs();
    format!("{TEST_DATABASE_PREFIX}{now}_{}", Uuid::new_v4().simple())
}

/// Drops test databases created more than [`STALE_AFTER`] ago (the creation
/// time is in the name). One still in use refuses to drop and is kept.
async fn drop_stale_databases(admin: &mut AsyncPgConnection) -> Result<(), StoreError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    let names = diesel::sql_query("SELECT datname FROM pg_database WHERE starts_with(datname, $1)")
        .bind::<Text, _>(TEST_DATABASE_PREFIX)
        .load::<DatabaseName>(admin)
        .await
        .map_err(store_error)?;
    for DatabaseName { datname } in names {
        let Some(created) = created_at(&datname) else {
            continue;
        };
        if now.saturating_sub(Duration::from_secs(created)) <= STALE_AFTER {
            continue;
        }
        if let Err(error) = admin
            .batch_execute(&format!("DROP DATABASE IF EXISTS {datname}"))
            .await
        {
            tracing::debug!(database = %datname, %error, "keeping a stale test database");
        }
    }
    Ok(())
}

/// The creation time (Unix seconds) in a test database's name, or `None`
/// for anything that is not a test database (the template included).
fn created_at(name: &str) -> Option<u64> {
    let rest = name.strip_prefix(TEST_DATABASE_PREFIX)?;
    let (seconds, id) = rest.split_once('_')?;
    let valid_id = id.len() == 32 && id.bytes().all(|b| b.is_ascii_hexdigit());
    if valid_id { seconds.parse().ok() } else { None }
}

/// `url` with its database name replaced by `database`. Accepts
/// `postgres://` and `postgresql://` URLs, with or without a path or query.
fn with_database(url: &str, database: &str) -> Result<String, StoreError> {
    let authority_start = url
        .find("://")
        .map(|index| index + 3)
        .ok_or_else(|| StoreError::Query("DATABASE_URL must be a postgres:// URL".to_owned()))?;
    let authority_end = url[authority_start..]
        .find(['/', '?'])
        .map_or(url.len(), |index| authority_start + index);
    let query = url[authority_end..]
        .find('?')
        .map_or("", |index| &url[authority_end + index..]);
    Ok(format!("{}/{database}{query}", &url[..authority_end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn database_names_are_replaced_in_urls() {
        let cases = [
            ("postgres://u@h:5432/postgres", "postgres://u@h:5432/x"),
            (
                "postgres://u:p@h/postgres?sslmode=disable",
                "postgres://u:p@h/x?sslmode=disable",
            ),
            ("postgresql://h:1", "postgresql://h:1/x"),
            (
                "postgres://h?application_name=t",
                "postgres://h/x?application_name=t",
            ),
        ];
        for (url, expected) in cases {
            assert_eq!(with_database(url, "x").unwrap(), expected, "{url}");
        }
        assert!(with_database("host=h dbname=d", "x").is_err());
    }

    #[test]
    fn only_test_database_names_carry_a_creation_time() {
        let id = Uuid::new_v4().simple().to_string();
        assert_eq!(
            created_at(&format!("router_test_1700000000_{id}")),
            Some(1_700_000_000)
        );
        assert_eq!(created_at(TEMPLATE_DATABASE), None);
        assert_eq!(created_at("router_test_12_notahexid"), None);
        assert_eq!(created_at("postgres"), None);
    }
}
