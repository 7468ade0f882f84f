//! References between the per-request rows hold without row-level foreign
//! keys (migration `hot_path_plans`): inserts are checked per statement,
//! references never change, referenced rows are never deleted; and the
//! lifecycle's lookups stay on primary keys.

use crate::seed::{assert_books_agree, count, funded_account, new_request, settlement};
use diesel::QueryableByName;
use diesel::sql_types::Text;
use diesel_async::{AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
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

#[tokio::test(flavor = "multi_thread")]
async fn inserts_with_a_missing_reference_are_rejected_and_write_nothing() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000).await;
    let (account, key) = (funded.account_id, funded.api_key_id);
    let missing = Uuid::now_v7();
    let mut conn = db.connection().await.unwrap();

    let request = |id: Uuid, account: Uuid, key: Uuid| {
        format!(
            "INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                                   recorded_protocol, stream, status, reserved_nano)
             VALUES ('{id}', '{account}', '{key}', 'm', 'chat', 'chat', false, 'reserved', 1)"
        )
    };
    let cases = [
        (request(Uuid::now_v7(), missing, key), "missing account"),
        (request(Uuid::now_v7(), account, missing), "missing api key"),
        (
            format!(
                "INSERT INTO holds (request_id, account_id, amount_nano, status, expires_at)
                 VALUES ('{missing}', '{account}', 1, 'held', now())"
            ),
            "missing request",
        ),
        (
            format!(
                "INSERT INTO attempts (request_id, attempt_no, route_id, supplier_id,
                                       upstream_protocol, started_at, duration_ms, outcome)
                 VALUES ('{missing}', 1, 'r', 's', 'chat', now(), 1, 'succeeded')"
            ),
            "missing request",
        ),
        (
            format!(
                "INSERT INTO ledger_entries (txn_id, request_id, account_id, ledger_account,
                                             amount_nano, kind)
                 VALUES ('{missing}', '{missing}', '{account}', 'wallet', -1, 'charge'),
                        ('{missing}', '{missing}', NULL, 'revenue', 1, 'charge')"
            ),
            "missing request",
        ),
    ];
    for (sql, expected) in cases {
        let error = rejected(&mut conn, &sql).await;
        assert!(error.contains(expected), "{sql}: {error}");
    }
    // One bad row fails its whole statement, the good rows with it.
    let good = Uuid::now_v7();
    let mixed = format!(
        "{}, ('{}', '{missing}', '{key}', 'm', 'chat', 'chat', false, 'reserved', 1)",
        request(good, account, key),
        Uuid::now_v7()
    );
    assert!(
        rejected(&mut conn, &mixed)
            .await
            .contains("missing account")
    );

    for table in ["requests", "holds", "attempts", "ledger_entries"] {
        let rows = count(&db, &format!("SELECT count(*) AS n FROM {table}")).await;
        let expected = if table == "ledger_entries" { 2 } else { 0 }; // the grant
        assert_eq!(rows, expected, "{table}");
    }
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn references_never_change_and_referenced_rows_stay() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000).await;
    let other = funded_account(&db, 1_000).await;
    let request = new_request(&funded, 100);
    let id = request.request_id;
    db.reserve(request).await.unwrap();
    db.settle(settlement(id, 40)).await.unwrap();
    let mut conn = db.connection().await.unwrap();

    let (account, key, other_account) = (funded.account_id, funded.api_key_id, other.account_id);
    for sql in [
        format!("UPDATE requests SET account_id = '{other_account}' WHERE id = '{id}'"),
        format!(
            "UPDATE requests SET api_key_id = '{}' WHERE id = '{id}'",
            other.api_key_id
        ),
        format!("UPDATE holds SET account_id = '{other_account}' WHERE request_id = '{id}'"),
        format!(
            "UPDATE attempts SET request_id = '{}' WHERE request_id = '{id}'",
            Uuid::now_v7()
        ),
        format!(
            "UPDATE requests SET id = '{}' WHERE id = '{id}'",
            Uuid::now_v7()
        ),
        format!("DELETE FROM requests WHERE id = '{id}'"),
        format!("DELETE FROM api_keys WHERE id = '{key}'"),
        format!("DELETE FROM wallets WHERE account_id = '{account}'"),
        format!("DELETE FROM accounts WHERE id = '{account}'"),
        "TRUNCATE requests CASCADE".to_owned(),
        "TRUNCATE accounts CASCADE".to_owned(),
    ] {
        let error = rejected(&mut conn, &sql).await;
        assert!(error.contains("rejected"), "{sql}: {error}");
    }
    assert_eq!(count(&db, "SELECT count(*) AS n FROM requests").await, 1);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM attempts").await, 1);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM accounts").await, 2);
    // The lifecycle's own updates (status, usage, hold expiry) still work.
    db.reserve(new_request(&funded, 10)).await.unwrap();
    assert_books_agree(&db).await;
}

#[derive(QueryableByName)]
struct PlanLine {
    #[diesel(sql_type = Text, column_name = "QUERY PLAN")]
    line: String,
}

async fn plan(conn: &mut AsyncPgConnection, sql: &str) -> String {
    let lines: Vec<PlanLine> = diesel::sql_query(format!("EXPLAIN {sql}"))
        .load(conn)
        .await
        .unwrap_or_else(|error| panic!("EXPLAIN {sql}: {error}"));
    lines
        .into_iter()
        .map(|l| l.line)
        .collect::<Vec<_>>()
        .join("\n")
}

/// The reaper's partial index serves the reaper only. Settling by
/// `request_id AND status = 'held'` once matched it too, and then walked
/// every dead entry left by earlier settlements (a cost growing with the
/// traffic since the last vacuum) instead of probing the primary key.
#[tokio::test(flavor = "multi_thread")]
async fn only_the_reaper_uses_the_live_holds_index() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000_000).await;
    for _ in 0..200 {
        let request = new_request(&funded, 10);
        let id = request.request_id;
        db.reserve(request).await.unwrap();
        db.settle(settlement(id, 1)).await.unwrap();
    }
    db.reserve(new_request(&funded, 10)).await.unwrap();
    let mut conn = db.connection().await.unwrap();
    conn.batch_execute("ANALYZE holds").await.unwrap();

    let settle = plan(
        &mut conn,
        &format!(
            "UPDATE holds SET status = 'settled', released_at = now()
             WHERE request_id = '{}' AND status = 'held'",
            Uuid::now_v7()
        ),
    )
    .await;
    assert!(!settle.contains("holds_live_expiry"), "{settle}");
    assert!(settle.contains("holds_pkey"), "{settle}");

    conn.batch_execute("SET enable_seqscan = off")
        .await
        .unwrap();
    let reap = plan(
        &mut conn,
        "SELECT request_id FROM holds
         WHERE released_at IS NULL AND expires_at < now() ORDER BY expires_at LIMIT 500",
    )
    .await;
    assert!(reap.contains("holds_live_expiry"), "{reap}");
}

#[derive(QueryableByName)]
struct Setting {
    #[diesel(sql_type = Text)]
    enable_seqscan: String,
}

/// A generic plan cached while the tables were nearly empty must not stay
/// a sequential scan as they grow: pooled connections weight those scans as
/// the last resort.
#[tokio::test(flavor = "multi_thread")]
async fn pooled_connections_prefer_index_lookups() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    let setting: Setting = diesel::sql_query("SHOW enable_seqscan")
        .get_result(&mut conn)
        .await
        .unwrap();
    assert_eq!(setting.enable_seqscan, "off");

    // On an empty table the planner would otherwise scan it.
    let lookup = plan(
        &mut conn,
        &format!(
            "SELECT * FROM wallets WHERE account_id = '{}'",
            Uuid::now_v7()
        ),
    )
    .await;
    assert!(lookup.contains("wallets_pkey"), "{lookup}");
}

#[derive(QueryableByName)]
struct Backend {
    #[diesel(sql_type = diesel::sql_types::Integer)]
    pid: i32,
}

async fn backend_pid(conn: &mut AsyncPgConnection) -> i32 {
    let backend: Backend = diesel::sql_query("SELECT pg_backend_pid() AS pid")
        .get_result(conn)
        .await
        .unwrap();
    backend.pid
}

/// A checkout takes the connection returned last, so a steady load keeps
/// reusing the same few warm server processes instead of rotating through
/// every connection the pool ever opened.
#[tokio::test(flavor = "multi_thread")]
async fn checkouts_reuse_the_connection_returned_last() {
    let db = TestDatabase::new().await;
    let mut first = db.connection().await.unwrap();
    let mut second = db.connection().await.unwrap();
    let (first_pid, second_pid) = (
        backend_pid(&mut first).await,
        backend_pid(&mut second).await,
    );
    assert_ne!(first_pid, second_pid);
    drop(first);
    drop(second);
    for _ in 0..3 {
        let mut again = db.connection().await.unwrap();
        assert_eq!(backend_pid(&mut again).await, second_pid);
    }
}

/// Connections a burst opened and that then stay unused are closed; the
/// ones in use stay.
#[tokio::test(flavor = "multi_thread")]
async fn idle_connections_are_closed() {
    let db = TestDatabase::new().await;
    let mut conns = Vec::new();
    for _ in 0..3 {
        conns.push(db.connection().await.unwrap());
    }
    drop(conns);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    // The connection returned last is the one handed out again.
    let mut recent = db.connection().await.unwrap();
    let recent_pid = backend_pid(&mut recent).await;
    drop(recent);

    assert_eq!(
        db.close_idle_connections(std::time::Duration::from_millis(200)),
        2
    );
    let mut again = db.connection().await.unwrap();
    assert_eq!(backend_pid(&mut again).await, recent_pid);
    drop(again);
    assert_eq!(
        db.close_idle_connections(std::time::Duration::from_secs(60)),
        0
    );
}
