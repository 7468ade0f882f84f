//! The ledger is double-entry and append-only; accounts and grants.

use crate::seed::{assert_books_agree, count, funded_account};
use diesel_async::{AsyncConnection, RunQueryDsl, SimpleAsyncConnection};
use router_canonical::NanoUsd;
use router_store::AdminError;
use router_store::test_support::TestDatabase;
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread")]
async fn grants_are_double_entry() {
    let db = TestDatabase::new().await;
    let account = db
        .create_account("grant@example.test", false)
        .await
        .unwrap();
    assert_eq!(
        db.grant_credits(account.id, NanoUsd(1_500)).await.unwrap(),
        NanoUsd(1_500)
    );
    assert_eq!(
        db.grant_credits(account.id, NanoUsd(2_000)).await.unwrap(),
        NanoUsd(3_500)
    );

    let view = db.get_account(account.id).await.unwrap().unwrap();
    assert_eq!((view.balance_nano, view.held_nano), (3_500, 0));
    assert_eq!(view.email, "grant@example.test");
    assert!(!view.email_verified);
    assert_eq!(view.created_at, account.created_at);

    let wallet_sum = count(
        &db,
        &format!(
            "SELECT sum(amount_nano)::bigint AS n FROM ledger_entries
             WHERE ledger_account = 'wallet' AND account_id = '{}' AND kind = 'grant'",
            account.id
        ),
    )
    .await;
    assert_eq!(wallet_sum, 3_500);
    let grants_sum = count(
        &db,
        "SELECT sum(amount_nano)::bigint AS n FROM ledger_entries WHERE ledger_account = 'grants'",
    )
    .await;
    assert_eq!(grants_sum, -3_500);
    assert_eq!(
        count(
            &db,
            "SELECT count(DISTINCT txn_id) AS n FROM ledger_entries"
        )
        .await,
        2
    );
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn grants_and_accounts_fail_with_typed_errors() {
    let db = TestDatabase::new().await;
    let missing = Uuid::now_v7();
    assert_eq!(
        db.grant_credits(missing, NanoUsd(1)).await,
        Err(AdminError::AccountNotFound(missing))
    );
    let account = db.create_account("twice@example.test", true).await.unwrap();
    assert_eq!(
        db.grant_credits(account.id, NanoUsd(0)).await,
        Err(AdminError::NonPositiveAmount(0))
    );
    assert_eq!(
        db.grant_credits(account.id, NanoUsd(-5)).await,
        Err(AdminError::NonPositiveAmount(-5))
    );
    assert_eq!(
        db.create_account("twice@example.test", false).await,
        Err(AdminError::EmailTaken)
    );
    assert_eq!(db.get_account(missing).await.unwrap(), None);
    assert_eq!(
        count(&db, "SELECT count(*) AS n FROM ledger_entries").await,
        0
    );
    assert_eq!(count(&db, "SELECT count(*) AS n FROM accounts").await, 1);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM wallets").await, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ledger_is_append_only() {
    let db = TestDatabase::new().await;
    funded_account(&db, 1_000).await;
    let mut conn = db.connection().await.unwrap();

    for statement in [
        "UPDATE ledger_entries SET amount_nano = 0",
        "DELETE FROM ledger_entries",
        "TRUNCATE ledger_entries",
    ] {
        let error = diesel::sql_query(statement)
            .execute(&mut conn)
            .await
            .unwrap_err();
        assert!(
            error.to_string().contains("append-only"),
            "{statement}: {error}"
        );
    }
    assert_eq!(
        count(&db, "SELECT count(*) AS n FROM ledger_entries").await,
        2
    );
    assert_books_agree(&db).await;
}

/// Each statement balances the entries it inserts, per ledger transaction:
/// every writer inserts all the legs of a transaction together.
#[tokio::test(flavor = "multi_thread")]
async fn an_unbalanced_statement_is_rejected() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000).await;
    let mut conn = db.connection().await.unwrap();
    let txn = Uuid::now_v7();
    let wallet_leg = |amount: i64| {
        format!(
            "INSERT INTO ledger_entries (txn_id, account_id, ledger_account, amount_nano, kind)
             VALUES ('{txn}', '{}', 'wallet', {amount}, 'charge')",
            funded.account_id
        )
    };
    let revenue_leg = |amount: i64| {
        format!(
            "INSERT INTO ledger_entries (txn_id, ledger_account, amount_nano, kind)
             VALUES ('{txn}', 'revenue', {amount}, 'charge')"
        )
    };
    let entries = format!("SELECT count(*) AS n FROM ledger_entries WHERE txn_id = '{txn}'");

    // One leg alone, on its own or as the first of two statements in one
    // transaction: rejected, and nothing is written.
    let error = conn.batch_execute(&revenue_leg(5)).await.unwrap_err();
    assert!(error.to_string().contains("unbalanced"), "{error}");
    let result = conn
        .transaction::<(), diesel::result::Error, _>(async |conn| {
            conn.batch_execute(&wallet_leg(-5)).await?;
            conn.batch_execute(&revenue_leg(5)).await
        })
        .await;
    let error = result.unwrap_err();
    assert!(error.to_string().contains("unbalanced"), "{error}");
    assert_eq!(count(&db, &entries).await, 0);

    // Two transactions in one statement, one of them unbalanced: all rejected.
    let other = Uuid::now_v7();
    let error = conn
        .batch_execute(&format!(
            "INSERT INTO ledger_entries (txn_id, ledger_account, amount_nano, kind)
             VALUES ('{other}', 'revenue', 7, 'charge'), ('{other}', 'revenue', -7, 'charge'),
                    ('{txn}', 'revenue', 5, 'charge')"
        ))
        .await
        .unwrap_err();
    assert!(error.to_string().contains(&txn.to_string()), "{error}");
    assert_eq!(count(&db, &entries).await, 0);

    // Both legs in one statement commit. (A grant: a wallet charge must also
    // name a request whose settled hold covers it, see `ceiling.rs`.)
    conn.batch_execute(&format!(
        "INSERT INTO ledger_entries (txn_id, account_id, ledger_account, amount_nano, kind)
         VALUES ('{txn}', '{}', 'wallet', 5, 'grant'), ('{txn}', NULL, 'grants', -5, 'grant')",
        funded.account_id
    ))
    .await
    .unwrap();
    assert_eq!(count(&db, &entries).await, 2);
}
