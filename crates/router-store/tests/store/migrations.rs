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
        25, // twenty-four tables and diesel's migration bookkeeping
    );
}

#[tokio::test]
async fn migrations_run_on_a_current_thread_runtime() {
    let db = TestDatabase::unmigrated().await;
    assert_eq!(db.migrate().await.unwrap().len(), embedded_migrations());
    db.ping().await.unwrap();
}
