//! The hold is a ceiling (RELIABILITY.md I4: posted => one debit with
//! 0 < debit <= hold), enforced by the database for every writer, not only
//! by the settle statement (migration `hold_is_a_ceiling`).

use crate::seed::{assert_books_agree, count, funded_account, new_request, settlement};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use router_core::store::Store;
use router_store::test_support::TestDatabase;
use uuid::Uuid;

/// Runs `sql` and returns its error message, failing the test if it succeeds.
async fn rejected(conn: &mut AsyncPgConnection, sql: &str) -> String {
    match conn.batch_execute(sql).await {
        Ok(()) => panic!("accepted: {sql}"),
        Err(error) => error.to_string(),
    }
}

/// Both legs of a charge of `amount` to `request` on `account`'s wallet.
fn charge(request: Uuid, account: Uuid, amount: i64) -> String {
    let txn = Uuid::now_v7();
    format!(
        "INSERT INTO ledger_entries (txn_id, request_id, account_id, ledger_account,
                                     amount_nano, kind)
         VALUES ('{txn}', '{request}', '{account}', 'wallet', {debit}, 'charge'),
                ('{txn}', '{request}', NULL, 'revenue', {amount}, 'charge')",
        debit = -amount
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn a_direct_debit_above_the_hold_is_refused() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let account = funded.account_id;
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();
    let mut conn = db.connection().await.unwrap();
    let debits = format!(
        "SELECT count(*) AS n FROM ledger_entries WHERE request_id = '{id}' AND kind = 'charge'"
    );

    // While the hold is still held, no charge may post against it.
    let error = rejected(&mut conn, &charge(id, account, 10)).await;
    assert!(error.contains("held hold"), "{error}");

    // A writer that settles the hold itself and debits one nano-USD more
    // than the hold: refused, and its whole transaction with it.
    let settle_by_hand = |amount: i64| {
        format!(
            "UPDATE holds SET status = 'settled', released_at = now() WHERE request_id = '{id}';
             {}",
            charge(id, account, amount)
        )
    };
    let result = conn
        .transaction::<(), diesel::result::Error, _>(async |conn| {
            conn.batch_execute(&settle_by_hand(1_001)).await
        })
        .await;
    let error = result.unwrap_err().to_string();
    assert!(error.contains("the hold is a ceiling"), "{error}");
    assert!(error.contains("1001"), "{error}");
    assert_eq!(count(&db, &debits).await, 0);

    // Exactly the hold is accepted (the check is not refusing everything).
    conn.transaction::<(), diesel::result::Error, _>(async |conn| {
        conn.batch_execute(&settle_by_hand(1_000)).await
    })
    .await
    .unwrap();
    assert_eq!(count(&db, &debits).await, 2);

    // A second debit of the same request counts with the first.
    let error = rejected(&mut conn, &charge(id, account, 1)).await;
    assert!(error.contains("the hold is a ceiling"), "{error}");

    // A wallet charge that names no request is refused.
    let txn = Uuid::now_v7();
    let error = rejected(
        &mut conn,
        &format!(
            "INSERT INTO ledger_entries (txn_id, account_id, ledger_account, amount_nano, kind)
             VALUES ('{txn}', '{account}', 'wallet', -5, 'charge'),
                    ('{txn}', NULL, 'revenue', 5, 'charge')"
        ),
    )
    .await;
    assert!(error.contains("must name its request"), "{error}");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_ceiling_cannot_be_raised_or_the_request_overcharged() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();
    let mut conn = db.connection().await.unwrap();

    // A hold's amount is fixed once taken.
    let error = rejected(
        &mut conn,
        &format!("UPDATE holds SET amount_nano = 5000 WHERE request_id = '{id}'"),
    )
    .await;
    assert!(error.contains("hold amounts are fixed"), "{error}");

    // A request is never recorded as charged above its reservation, nor
    // charged more than its reported cost.
    let finish = |charged: i64, reported: i64| {
        format!(
            "UPDATE requests SET status = 'succeeded', finished_at = now(),
                                 charged_nano = {charged}, reported_nano = {reported}
             WHERE id = '{id}'"
        )
    };
    let error = rejected(&mut conn, &finish(1_001, 1_001)).await;
    assert!(
        error.contains("requests_charge_within_reservation"),
        "{error}"
    );
    let error = rejected(&mut conn, &finish(900, 800)).await;
    assert!(error.contains("requests_reported_covers_charge"), "{error}");

    // The lifecycle's own settlement passes every check.
    db.settle(settlement(id, 4_000)).await.unwrap();
    assert_books_agree(&db).await;
}
