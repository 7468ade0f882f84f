//! Embedded migrations: applied once when instances boot together, and
//! runnable from either tokio runtime flavour.

use crate::seed::count;
use diesel::migration::MigrationSource;
use diesel::pg::Pg;
use router_store::migrations::MIGRATIONS;
use router_store::test_support::TestDatabase;

fn embedded_migrations() -> usize {
    MigrationSource::<Pg>::migrations(&MIGRATIONS)
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_booting_together_apply_each_migration_once() {
    let db = TestDatabase::unmigrated().await;
    let instances = (0..4).map(|_| {
        let db = db.database().clone();
        tokio::spawn(async move { db.migrate().await })
    });
    let applied: Vec<Vec<String>> = futures::future::join_all(instances)
        .await
        .into_iter()
        .map(|result| result.unwrap().unwrap())
        .collect();

    assert_eq!(
        applied.iter().map(Vec::len).sum::<usize>(),
        embedded_migrations()
    );
    assert_eq!(
        applied
            .iter()
            .filter(|versions| !versions.is_empty())
            .count(),
        1
    );
    assert_eq!(db.migrate().await.unwrap(), Vec::<String>::new());
    assert_eq!(
        count(
            &db,
            "SELECT count(*) AS n FROM information_schema.tables WHERE table_schema = 'public'"
        )
        .await,
        26, // twenty-five tables and diesel's migration bookkeeping
    );
}

#[tokio::test]
async fn migrations_run_on_a_current_thread_runtime() {
    let db = TestDatabase::unmigrated().await;
    assert_eq!(db.migrate().await.unwrap().len(), embedded_migrations());
    db.ping().await.unwrap();
}

/// `router migrate --status` and `config check` read this: an unmigrated
/// database has every migration pending, a migrated one none, and a
/// version this binary does not know is reported as a newer schema.
#[tokio::test(flavor = "multi_thread")]
async fn migration_status_tells_pending_applied_and_unknown_versions() {
    let db = TestDatabase::unmigrated().await;
    let before = db.database().migration_status().await.unwrap();
    assert!(before.applied.is_empty());
    assert_eq!(before.pending.len(), embedded_migrations());
    assert!(before.unknown.is_empty());

    db.database().migrate().await.unwrap();
    let after = db.database().migration_status().await.unwrap();
    assert_eq!(after.applied.len(), embedded_migrations());
    assert!(after.pending.is_empty());

    let mut conn = db.database().connection().await.unwrap();
    diesel_async::RunQueryDsl::execute(
        diesel::sql_query(
            "INSERT INTO __diesel_schema_migrations (version) VALUES ('29990101000000')",
        ),
        &mut conn,
    )
    .await
    .unwrap();
    let newer = db.database().migration_status().await.unwrap();
    assert_eq!(newer.unknown, ["29990101000000"]);
}
