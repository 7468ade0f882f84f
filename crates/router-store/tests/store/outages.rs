//! The database misbehaving under a request (issue 33, RELIABILITY.md D3
//! and D4): a path that accepts connections and delivers nothing (a black
//! hole, through a small TCP proxy of the test's own), and a wallet row
//! another session holds `FOR UPDATE`. Every wait is bounded, money stays
//! exact, and one account's locked row does not stall another's billing.

use crate::seed::{funded_account, new_request, settlement};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use router_core::store::{ReserveError, SettleError, Store, StoreError};
use router_store::test_support::TestDatabase;
use router_store::{Database, DatabaseLimits};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use uuid::Uuid;

/// A TCP proxy to PostgreSQL that can black-hole its path: connections are
/// still accepted, and nothing is forwarded either way while the hole
/// lasts; what was sent is delivered once it heals (as TCP's
/// retransmission would). It can also hole the way back only: statements
/// reach the server and commit, and their answers are lost.
struct BlackHole {
    port: u16,
    holed: watch::Sender<Hole>,
}

/// Which ways of the path are holed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Hole {
    Open,
    BothWays,
    AnswersOnly,
}

impl BlackHole {
    async fn start(upstream: String) -> BlackHole {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let (holed, watching) = watch::channel(Hole::Open);
        tokio::spawn(async move {
            while let Ok((inbound, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let mut path = watching.clone();
                tokio::spawn(async move {
                    if path.wait_for(|hole| *hole == Hole::Open).await.is_err() {
                        return;
                    }
                    let Ok(outbound) = TcpStream::connect(&upstream).await else {
                        return;
                    };
                    let (in_read, in_write) = inbound.into_split();
                    let (out_read, out_write) = outbound.into_split();
                    tokio::select! {
                        () = pump(in_read, out_write, path.clone(), |h| h == Hole::BothWays) => {}
                        () = pump(out_read, in_write, path, |h| h != Hole::Open) => {}
                    }
                });
            }
        });
        BlackHole { port, holed }
    }

    fn set(&self, holed: bool) {
        self.holed
            .send_replace(if holed { Hole::BothWays } else { Hole::Open });
    }

    fn lose_answers(&self) {
        self.holed.send_replace(Hole::AnswersOnly);
    }
}

/// Forwards `from` to `to`, holding what it reads while `holed` says so.
async fn pump(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    mut path: watch::Receiver<Hole>,
    holed: fn(Hole) -> bool,
) {
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        if holed(*path.borrow_and_update()) {
            if path.changed().await.is_err() {
                return;
            }
            continue;
        }
        tokio::select! {
            read = from.read(&mut buf) => match read {
                Ok(0) | Err(_) => return,
                Ok(n) => if to.write_all(&buf[..n]).await.is_err() { return },
            },
            changed = path.changed() => if changed.is_err() { return },
        }
    }
}

/// `url` through a new [`BlackHole`] in front of its server.
async fn through_a_black_hole(url: &str) -> (BlackHole, String) {
    let rest = url.split_once("://").unwrap().1;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let upstream = rest.split(['/', '?']).next().unwrap().to_owned();
    let hole = BlackHole::start(upstream.clone()).await;
    let proxied = url.replacen(&upstream, &format!("127.0.0.1:{}", hole.port), 1);
    (hole, proxied)
}

const SHORT: DatabaseLimits = DatabaseLimits {
    connect_timeout: Duration::from_millis(300),
    checkout_timeout: Duration::from_millis(300),
    statement_timeout: Duration::from_millis(500),
    lock_timeout: Duration::from_millis(300),
};

#[derive(diesel::QueryableByName)]
struct HoldRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    balance: i64,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    held: i64,
}

async fn hold_and_wallet(conn: &mut AsyncPgConnection, request_id: Uuid) -> HoldRow {
    diesel::sql_query(format!(
        "SELECT h.status, w.balance_nano AS balance, w.held_nano AS held
         FROM holds h JOIN wallets w ON w.account_id = h.account_id
         WHERE h.request_id = '{request_id}'"
    ))
    .get_result(conn)
    .await
    .unwrap()
}

/// RELIABILITY.md D3: with the path black-holed, a reservation and a
/// settlement each answer "unavailable" within their bound instead of
/// waiting for the path to heal; the settlement, delivered once the path
/// heals, charges nothing (the server received it too late), and its hold
/// is released, not left held.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_black_holed_database_is_waited_for_within_the_bound_and_charges_nothing_late() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000_000).await;
    let (hole, proxied_url) = through_a_black_hole(db.url()).await;
    let proxied = Database::connect_with(&proxied_url, 4, SHORT)
        .await
        .unwrap();

    let held = new_request(&funded, 10_000);
    proxied.reserve(held.clone()).await.unwrap();

    hole.set(true);
    let started = Instant::now();
    let settled = proxied.settle(settlement(held.request_id, 4_000)).await;
    let settle_took = started.elapsed();
    assert!(
        matches!(settled, Err(SettleError::Store(StoreError::Unavailable(_)))),
        "{settled:?}"
    );
    // The settlement (checkout + statement), then its fence (as long again).
    let bound = SHORT.operation() * 2 + Duration::from_millis(500);
    assert!(
        settle_took <= bound,
        "the settlement answered after {settle_took:?}"
    );

    let started = Instant::now();
    let reserved = proxied.reserve(new_request(&funded, 10_000)).await;
    let reserve_took = started.elapsed();
    assert!(
        matches!(
            reserved,
            Err(ReserveError::Store(StoreError::Unavailable(_)))
        ),
        "{reserved:?}"
    );
    assert!(
        reserve_took <= SHORT.operation() + Duration::from_millis(500),
        "the reservation answered after {reserve_took:?}"
    );
    assert!(proxied.ping().await.is_err(), "not ready while black-holed");

    // The path heals: what was sent arrives now. The settlement must not
    // charge (its client was answered 503), and its hold must not stay.
    tokio::time::sleep(Duration::from_millis(300)).await;
    hole.set(false);
    let mut conn = db.connection().await.unwrap();
    let give_up = Instant::now() + Duration::from_secs(15);
    let row = loop {
        let row = hold_and_wallet(&mut conn, held.request_id).await;
        if row.status != "held" || Instant::now() > give_up {
            break row;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        row.status, "released",
        "the hold of an unanswered settlement"
    );
    assert_eq!(row.balance, 1_000_000, "nothing charged");
    // The reservation sent into the hole arrived too late to take a hold.
    let give_up = Instant::now() + Duration::from_secs(5);
    loop {
        let row = hold_and_wallet(&mut conn, held.request_id).await;
        if row.held == 0 || Instant::now() > give_up {
            assert_eq!(row.held, 0, "funds still held after the path healed");
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // And the pool works again.
    proxied.ping().await.unwrap();
}

/// RELIABILITY.md D1 (issue 33): a settlement commits and its answer is
/// lost with the database, which stays away past the settlement's fence:
/// the client is answered with an error, so once the database answers
/// again the charge is reversed. The request ends `failed`, the wallet is
/// whole, and the ledger holds the charge and its reversal, balanced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settlement_committed_with_its_answer_lost_is_reversed_once_the_database_answers() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000_000).await;
    let (hole, proxied_url) = through_a_black_hole(db.url()).await;
    // One connection, on which the settlement statement is prepared by a
    // first settlement: the lost answer is then the commit's own (a first
    // statement would wait for its preparation's answer, and never run).
    let proxied = Database::connect_with(&proxied_url, 1, SHORT)
        .await
        .unwrap();
    let warm = new_request(&funded, 10_000);
    proxied.reserve(warm.clone()).await.unwrap();
    proxied
        .settle(settlement(warm.request_id, 1_000))
        .await
        .unwrap();

    let held = new_request(&funded, 10_000);
    proxied.reserve(held.clone()).await.unwrap();

    hole.lose_answers();
    let settled = proxied.settle(settlement(held.request_id, 4_000)).await;
    assert!(
        matches!(settled, Err(SettleError::Store(StoreError::Unavailable(_)))),
        "{settled:?}"
    );
    // The settlement reached the server and committed: charged for now.
    let mut conn = db.connection().await.unwrap();
    let row = hold_and_wallet(&mut conn, held.request_id).await;
    assert_eq!((row.status.as_str(), row.balance), ("settled", 995_000));

    hole.set(false);
    assert_reversed_once_healed(&mut conn, held.request_id).await;
    let row = hold_and_wallet(&mut conn, held.request_id).await;
    assert_eq!(
        row.balance, 999_000,
        "the charge given back (the first one stands)"
    );
    assert_eq!(row.held, 0, "nothing held");
    assert_eq!(
        row.status, "settled",
        "its hold was resolved by the settlement"
    );
    let entries: Vec<LedgerRow> = diesel::sql_query(format!(
        "SELECT kind, ledger_account, amount_nano FROM ledger_entries
         WHERE request_id = '{}' ORDER BY id",
        held.request_id
    ))
    .load(&mut conn)
    .await
    .unwrap();
    let entries: Vec<(&str, &str, i64)> = entries
        .iter()
        .map(|e| (e.kind.as_str(), e.ledger_account.as_str(), e.amount_nano))
        .collect();
    assert_eq!(
        entries,
        [
            ("charge", "wallet", -4_000),
            ("charge", "revenue", 4_000),
            ("reversal", "wallet", 4_000),
            ("reversal", "revenue", -4_000),
        ]
    );
    // Once: a second reversal finds nothing to give back.
    assert_eq!(
        router_store::billing::reverse_unanswered_settlement(&mut conn, held.request_id)
            .await
            .unwrap(),
        None
    );
    // The account's usage counts it back: only the first request, and its
    // charge.
    let days = router_store::usage::by_day(
        &mut conn,
        funded.account_id,
        chrono::Utc::now() - chrono::Duration::days(1),
    )
    .await
    .unwrap();
    assert_eq!(
        days.iter()
            .fold((0, 0), |(n, s), d| (n + d.requests, s + d.spend_nano)),
        (1, 1_000),
        "{days:?}"
    );
}

/// The same for a request admitted from a credit lease (issue 34): its
/// settlement commits, its answer is lost, and the lease keeper, which
/// writes the ends of such requests once the database answers, reverses
/// the charge; the lease keeps it apart, and the wallet gets it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leased_settlement_committed_with_its_answer_lost_is_reversed() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000_000).await;
    let (hole, proxied_url) = through_a_black_hole(db.url()).await;
    let proxied = Database::connect_with(&proxied_url, 1, SHORT)
        .await
        .unwrap();
    proxied
        .enable_credit_leases(router_store::LeaseSettings {
            ttl: Duration::from_secs(4),
            share_percent: 50,
            min_requests: 4,
            ..router_store::LeaseSettings::default()
        })
        .await
        .unwrap();
    // A direct request asks for the lease; a leased one prepares the
    // leased settlement on the one connection.
    let first = new_request(&funded, 1_000);
    proxied.reserve(first.clone()).await.unwrap();
    let give_up = Instant::now() + Duration::from_secs(10);
    while proxied.leased_nano() == 0 {
        assert!(Instant::now() < give_up, "no lease was taken");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    proxied
        .void(crate::seed::voiding(first.request_id, "warm_up"))
        .await
        .unwrap();
    let warm = new_request(&funded, 10_000);
    proxied.reserve(warm.clone()).await.unwrap();
    proxied
        .settle(settlement(warm.request_id, 1_000))
        .await
        .unwrap();

    let held = new_request(&funded, 10_000);
    proxied.reserve(held.clone()).await.unwrap();
    hole.lose_answers();
    let settled = proxied.settle(settlement(held.request_id, 4_000)).await;
    assert!(settled.is_err(), "{settled:?}");
    let mut conn = db.connection().await.unwrap();
    assert_eq!(
        request_status(&mut conn, held.request_id).await.0,
        "succeeded",
        "the settlement committed"
    );

    hole.set(false);
    assert_reversed_once_healed(&mut conn, held.request_id).await;
    // Only the warm request's charge stands.
    let (balance, _) = crate::seed::wallet(&db, funded.account_id).await;
    assert_eq!(balance, 999_000);
    crate::seed::assert_books_agree(&db).await;
}

/// Waits (at most 15 s) for the background pass to reverse `request_id`'s
/// settlement once the path healed: the request ends `failed`
/// (`settlement_unanswered`), charged nothing.
async fn assert_reversed_once_healed(conn: &mut AsyncPgConnection, request_id: Uuid) {
    let give_up = Instant::now() + Duration::from_secs(15);
    let status = loop {
        let status = request_status(conn, request_id).await;
        if status.0 != "succeeded" || Instant::now() > give_up {
            break status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert_eq!(
        status,
        (
            "failed".to_owned(),
            None,
            Some("settlement_unanswered".to_owned())
        ),
        "the request of a reversed settlement"
    );
}

#[derive(diesel::QueryableByName)]
struct LedgerRow {
    #[diesel(sql_type = diesel::sql_types::Text)]
    kind: String,
    #[diesel(sql_type = diesel::sql_types::Text)]
    ledger_account: String,
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    amount_nano: i64,
}

#[derive(diesel::QueryableByName)]
struct RequestStatus {
    #[diesel(sql_type = diesel::sql_types::Text)]
    status: String,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::BigInt>)]
    charged_nano: Option<i64>,
    #[diesel(sql_type = diesel::sql_types::Nullable<diesel::sql_types::Text>)]
    error_reason: Option<String>,
}

async fn request_status(
    conn: &mut AsyncPgConnection,
    request_id: Uuid,
) -> (String, Option<i64>, Option<String>) {
    let row: RequestStatus = diesel::sql_query(format!(
        "SELECT status, charged_nano, error_reason FROM requests WHERE id = '{request_id}'"
    ))
    .get_result(conn)
    .await
    .unwrap();
    (row.status, row.charged_nano, row.error_reason)
}

/// RELIABILITY.md D4: another session holds one account's wallet row
/// `FOR UPDATE`. That account's reservations and settlements fail (503)
/// once the lock wait runs out; another account's, in the same batches, go
/// through at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_locked_wallet_row_does_not_stall_another_accounts_billing() {
    let db = TestDatabase::new().await;
    let limits = DatabaseLimits {
        lock_timeout: Duration::from_millis(1500),
        statement_timeout: Duration::from_millis(3000),
        ..DatabaseLimits::default()
    };
    let billing = Arc::new(Database::connect_with(db.url(), 16, limits).await.unwrap());
    let locked = funded_account(&db, 1_000_000_000).await;
    let other = funded_account(&db, 1_000_000_000).await;
    // Held before the lock: settled while it lasts.
    let mut to_settle = Vec::new();
    for funded in [&locked, &other] {
        for _ in 0..6 {
            let request = new_request(funded, 10_000);
            billing.reserve(request.clone()).await.unwrap();
            to_settle.push((funded.account_id, request.request_id));
        }
    }

    let mut locker = AsyncPgConnection::establish(db.url()).await.unwrap();
    locker
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM wallets WHERE account_id = '{}' FOR UPDATE",
            locked.account_id
        ))
        .await
        .unwrap();

    // Both accounts' work at once, so that it shares batches.
    let mut work = Vec::new();
    for (account_id, request_id) in to_settle {
        let billing = billing.clone();
        work.push(tokio::spawn(async move {
            let started = Instant::now();
            let outcome = billing.settle(settlement(request_id, 4_000)).await;
            (account_id, "settle", outcome.is_ok(), started.elapsed())
        }));
    }
    for funded in [&locked, &other] {
        for _ in 0..12 {
            let billing = billing.clone();
            let request = new_request(funded, 10_000);
            let account_id = funded.account_id;
            work.push(tokio::spawn(async move {
                let started = Instant::now();
                let outcome = billing.reserve(request).await;
                if let Err(error) = &outcome {
                    assert!(
                        matches!(error, ReserveError::Store(StoreError::Unavailable(_))),
                        "{error:?}"
                    );
                }
                (account_id, "reserve", outcome.is_ok(), started.elapsed())
            }));
        }
    }
    let mut other_slowest = Duration::ZERO;
    let (mut other_ok, mut locked_ok, mut locked_failed) = (0, 0, 0);
    for done in work {
        let (account_id, what, ok, took) = done.await.unwrap();
        if account_id == other.account_id {
            assert!(ok, "the other account's {what} failed");
            other_ok += 1;
            other_slowest = other_slowest.max(took);
        } else if ok {
            locked_ok += 1;
        } else {
            locked_failed += 1;
            assert!(took < limits.operation(), "a locked {what} waited {took:?}");
        }
    }
    locker.batch_execute("ROLLBACK").await.unwrap();
    assert_eq!(other_ok, 18, "every one of the other account's operations");
    assert_eq!((locked_ok, locked_failed), (0, 18), "the locked account's");
    assert!(
        other_slowest < Duration::from_millis(1000),
        "the other account waited {other_slowest:?} behind a lock that was not its own"
    );

    // Once the lock is gone the locked account is served again, and the
    // holds of its failed settlements are released, not charged.
    billing.reserve(new_request(&locked, 10_000)).await.unwrap();
    let mut conn = db.connection().await.unwrap();
    let give_up = Instant::now() + Duration::from_secs(10);
    loop {
        #[derive(diesel::QueryableByName)]
        struct Wallet {
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            balance: i64,
            #[diesel(sql_type = diesel::sql_types::BigInt)]
            held: i64,
        }
        let wallet: Wallet = diesel::sql_query(format!(
            "SELECT balance_nano AS balance, held_nano AS held FROM wallets
             WHERE account_id = '{}'",
            locked.account_id
        ))
        .get_result(&mut conn)
        .await
        .unwrap();
        if wallet.held == 10_000 || Instant::now() > give_up {
            assert_eq!(wallet.balance, 1_000_000_000, "nothing charged");
            assert_eq!(wallet.held, 10_000, "only the last reservation held");
            break;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}
