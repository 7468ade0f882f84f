//! One account per address whatever its case (issue 33), and the
//! migration that makes it so on a database that already holds case-only
//! duplicates.

use crate::seed::count;
use diesel_async::RunQueryDsl;
use router_store::AdminError;
use router_store::test_support::TestDatabase;

const MIGRATION: &str =
    include_str!("../../migrations/2026-11-29-010000_account_email_case/up.sql");

#[tokio::test(flavor = "multi_thread")]
async fn an_address_in_another_case_is_taken() {
    let db = TestDatabase::new().await;
    db.create_account("Case@Example.com", true).await.unwrap();
    for other in ["case@example.com", "CASE@EXAMPLE.COM"] {
        let error = db.create_account(other, true).await.unwrap_err();
        assert!(
            matches!(error, AdminError::EmailTaken),
            "{other}: {error:?}"
        );
    }
    db.create_account("case2@example.com", true).await.unwrap();
}

/// On a database from before the index, case-only duplicates keep the
/// oldest account's address; the later ones are tagged with their id, and
/// the index then holds.
#[tokio::test(flavor = "multi_thread")]
async fn the_migration_tags_existing_case_duplicates_and_keeps_the_oldest() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    diesel::sql_query("DROP INDEX accounts_email_lower_key")
        .execute(&mut conn)
        .await
        .unwrap();
    let oldest = db.create_account("Dup@Example.com", true).await.unwrap();
    let second = db.create_account("dup@example.com", true).await.unwrap();
    let third = db.create_account("DUP@example.COM", false).await.unwrap();
    let alone = db.create_account("alone@example.com", true).await.unwrap();
    diesel::sql_query(
        "INSERT INTO accounts (id, email, email_verified) VALUES (gen_random_uuid(), 'NoAt', false), (gen_random_uuid(), 'noat', false)",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    diesel_async::SimpleAsyncConnection::batch_execute(&mut *conn, MIGRATION)
        .await
        .unwrap();
    let email_of = |id: uuid::Uuid| {
        let db = &db;
        async move { db.get_account(id).await.unwrap().unwrap().email }
    };
    assert_eq!(email_of(oldest.id).await, "Dup@Example.com");
    assert_eq!(email_of(alone.id).await, "alone@example.com");
    let tag = |id: uuid::Uuid| id.to_string()[24..].to_owned();
    assert_eq!(
        email_of(second.id).await,
        format!("dup+duplicate-{}@example.com", tag(second.id))
    );
    assert_eq!(
        email_of(third.id).await,
        format!("DUP+duplicate-{}@example.COM", tag(third.id))
    );
    assert_eq!(
        count(
            &db,
            "SELECT count(*) AS n FROM (SELECT lower(email) FROM accounts GROUP BY 1 HAVING count(*) > 1) d"
        )
        .await,
        0
    );
    let error = db
        .create_account("dup@EXAMPLE.com", true)
        .await
        .unwrap_err();
    assert!(matches!(error, AdminError::EmailTaken), "{error:?}");
}
