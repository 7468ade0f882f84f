//! Credit leases (issue 34): requests admitted from an instance's lease in
//! memory, settled exactly in PostgreSQL, with no overspend and no false
//! 402 across instances.

use crate::seed::{
    Funded, assert_books_agree, count, funded_account, new_request, settlement, voiding, wallet,
};
use router_core::store::{AttemptOutcome, AttemptRecord, ReserveError, SettleError, Store};
use router_store::test_support::TestDatabase;
use router_store::{Database, LeaseSettings};
use std::time::{Duration, Instant, SystemTime};

fn settings(share_percent: i64, min_requests: i64) -> LeaseSettings {
    LeaseSettings {
        share_percent,
        min_requests,
        ..LeaseSettings::default()
    }
}

/// An instance of its own (pool, batches, leases) on the test database.
async fn instance(db: &TestDatabase, settings: LeaseSettings) -> Database {
    let instance = Database::connect(db.url(), 8).await.unwrap();
    instance.enable_credit_leases(settings).await.unwrap();
    instance
}

/// Reserves (direct) one request, which asks for a lease, waits until the
/// instance holds one, and voids the request: the lease is the share of the
/// balance less that reservation.
async fn warm(instance: &Database, funded: &Funded, reserve: i64) {
    let first = new_request(funded, reserve);
    let id = first.request_id;
    instance.reserve(first).await.unwrap();
    until_leased(instance).await;
    instance.void(voiding(id, "warm_up")).await.unwrap();
}

/// Waits (at most 10 s) until `instance` holds a lease.
async fn until_leased(instance: &Database) {
    let give_up = Instant::now() + Duration::from_secs(10);
    while instance.leased_nano() == 0 {
        assert!(Instant::now() < give_up, "no lease was taken");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

async fn active_leases(db: &TestDatabase, funded: &Funded) -> i64 {
    count(
        db,
        &format!(
            "SELECT coalesce(sum(amount_nano), 0)::bigint AS n FROM credit_leases
             WHERE status = 'active' AND account_id = '{}'",
            funded.account_id
        ),
    )
    .await
}

#[tokio::test(flavor = "multi_thread")]
async fn a_leased_request_is_admitted_without_a_hold_row_and_settles_exactly() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_001_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    warm(&leasing, &funded, 1_000).await;

    // The lease is half the available balance, held on the wallet: the
    // account's view shows it as held.
    assert_eq!(active_leases(&db, &funded).await, 500_000);
    assert_eq!(wallet(&db, funded.account_id).await, (1_001_000, 500_000));

    let holds_before = count(&db, "SELECT count(*) AS n FROM holds").await;
    let mut ids = Vec::new();
    for _ in 0..10 {
        let request = new_request(&funded, 3_000);
        ids.push(request.request_id);
        leasing.reserve(request).await.unwrap();
    }
    // Admitted in memory: no row was written for them yet.
    assert_eq!(
        count(&db, "SELECT count(*) AS n FROM holds").await,
        holds_before
    );

    // A failed attempt before the success is kept and written with it.
    let failed = AttemptRecord {
        outcome: AttemptOutcome::Failed {
            upstream_status: Some(503),
            kind: "status".into(),
            retryable: true,
        },
        ..settlement(ids[0], 0).attempt
    };
    leasing.record_attempt(failed).await.unwrap();
    let mut settled = 0;
    for id in &ids[..9] {
        let mut success = settlement(*id, 1_234);
        success.attempt.attempt_no = 2;
        settled += leasing.settle(success).await.unwrap().0;
    }
    // Usage beyond the reservation costs exactly the reservation (I4).
    let capped = leasing.settle(settlement(ids[9], 9_999)).await.unwrap();
    assert_eq!(capped.0, 3_000);
    settled += capped.0;
    assert_eq!(settled, 9 * 1_234 + 3_000);
    // Exactly once: a second settlement charges nothing.
    assert!(matches!(
        leasing.settle(settlement(ids[1], 1_234)).await,
        Err(SettleError::NotReserved(_))
    ));

    let view = leasing.get_request(ids[0]).await.unwrap().unwrap();
    assert_eq!(view.status, "succeeded");
    assert_eq!(view.charged_nano, Some(1_234));
    assert_eq!(view.reserved_nano, 3_000);
    assert_eq!(view.hold.as_ref().unwrap().status, "settled");
    assert_eq!(
        view.attempts
            .iter()
            .map(|a| a.outcome.as_str())
            .collect::<Vec<_>>(),
        ["failed", "succeeded"]
    );
    // Balance down by the charges; the lease and the held amount by the same.
    assert_eq!(
        wallet(&db, funded.account_id).await,
        (1_001_000 - settled, 500_000 - settled)
    );
    assert_eq!(active_leases(&db, &funded).await, 500_000 - settled);
    assert_eq!(leasing.leased_nano(), 500_000 - settled);
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_voided_leased_request_is_recorded_and_its_reservation_returns_to_the_lease() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 101_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    warm(&leasing, &funded, 1_000).await;
    let request = new_request(&funded, 10_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    assert_eq!(leasing.leased_nano(), 50_000);
    leasing.void(voiding(id, "upstream_error")).await.unwrap();
    let view = leasing.get_request(id).await.unwrap().unwrap();
    assert_eq!(view.status, "failed");
    assert_eq!(view.error_reason.as_deref(), Some("upstream_error"));
    assert_eq!(view.hold.unwrap().status, "released");
    assert_eq!(wallet(&db, funded.account_id).await, (101_000, 50_000));
    assert!(matches!(
        leasing.void(voiding(id, "again")).await,
        Err(SettleError::NotReserved(_))
    ));
    assert_books_agree(&db).await;
}

/// 200 requests of 1,000 at once, alternating between `a` and `b`, each
/// answered after `held`: the admitted (instance, request) and how many
/// were refused for credit. Any other refusal fails the test.
async fn burst(
    a: &Database,
    b: &Database,
    funded: &Funded,
    held: Duration,
) -> (Vec<(Database, uuid::Uuid)>, usize) {
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(200));
    let racing = (0..200).map(|i| {
        let instance = if i % 2 == 0 { a.clone() } else { b.clone() };
        let request = new_request(funded, 1_000);
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            let id = request.request_id;
            let reserved = instance.reserve(request).await;
            tokio::time::sleep(held).await;
            reserved.map(|()| (instance, id))
        })
    });
    let mut admitted = Vec::new();
    let mut refused = 0;
    for result in futures::future::join_all(racing).await {
        match result.unwrap() {
            Ok(ok) => admitted.push(ok),
            Err(ReserveError::InsufficientCredits) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    (admitted, refused)
}

/// N=200 against a wallet that pays for exactly K=37, over two instances
/// whose leases hold most of it: exactly 37 are admitted (no overspend, no
/// false 402: funds stranded in a lease are recalled), and after every
/// settlement the books are exact.
#[tokio::test(flavor = "multi_thread")]
async fn two_leasing_instances_admit_exactly_what_the_wallet_pays() {
    let db = TestDatabase::with_pool_size(8).await;
    let funded = funded_account(&db, 37_000 + 2_000).await;
    let a = instance(&db, settings(50, 4)).await;
    let b = instance(&db, settings(50, 4)).await;
    warm(&a, &funded, 1_000).await;
    warm(&b, &funded, 1_000).await;
    // The warm-ups cost nothing; spend 2,000 so that 37,000 is left.
    for instance in [&a, &b] {
        let request = new_request(&funded, 1_000);
        let id = request.request_id;
        instance.reserve(request).await.unwrap();
        instance.settle(settlement(id, 1_000)).await.unwrap();
    }
    assert!(a.leased_nano() > 0 && b.leased_nano() > 0);

    let (admitted, refused) = burst(&a, &b, &funded, Duration::ZERO).await;
    assert_eq!((admitted.len(), refused), (37, 163));
    for (instance, id) in admitted {
        assert_eq!(
            instance.settle(settlement(id, 1_000)).await.unwrap().0,
            1_000
        );
    }
    let (balance, _) = wallet(&db, funded.account_id).await;
    assert_eq!(balance, 0);
    assert_eq!(
        count(
            &db,
            "SELECT count(*) AS n FROM requests WHERE status = 'succeeded'"
        )
        .await,
        39
    );
    assert_books_agree(&db).await;
}

/// As the reliability suite's concurrency case: two instances with no lease
/// yet, 200 requests at once. The first ones go direct and take leases
/// while the rest are refused and recall them. A refused request must try
/// again after it has looked for funds on their way back (a lease the
/// other instance has not answered for, or one its own instance is taking
/// or giving back), or funds that land a moment later are never spent (a
/// false 402). Several cold accounts, so the race is met more than once.
#[tokio::test(flavor = "multi_thread")]
async fn cold_instances_under_a_burst_admit_exactly_what_the_wallet_pays() {
    let db = TestDatabase::with_pool_size(8).await;
    let a = instance(&db, settings(50, 4)).await;
    let b = instance(&db, settings(50, 4)).await;
    for round in 0..4 {
        // 37 requests fit, the 38th misses by 1.
        let funded = funded_account(&db, 37_000 + 999).await;
        // Each admitted request held a moment, as a supplier call would be.
        let (admitted, refused) = burst(&a, &b, &funded, Duration::from_millis(50)).await;
        assert_eq!((round, admitted.len(), refused), (round, 37, 163));
        for (instance, id) in admitted {
            instance.settle(settlement(id, 1_000)).await.unwrap();
        }
        assert_eq!(wallet(&db, funded.account_id).await.0, 999);
    }
    assert_books_agree(&db).await;
}

/// A small balance spread over two instances: a request the wallet can pay
/// is admitted although part of the balance sat in the other's lease.
#[tokio::test(flavor = "multi_thread")]
async fn funds_in_another_instances_lease_are_recalled_not_refused() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 5_000).await;
    let a = instance(&db, settings(50, 1)).await;
    let b = instance(&db, LeaseSettings::default()).await;
    warm(&a, &funded, 1_000).await;
    assert_eq!(active_leases(&db, &funded).await, 2_000);

    // 3,500 of 5,000: only with A's lease given back.
    let request = new_request(&funded, 3_500);
    let id = request.request_id;
    b.reserve(request).await.expect("admitted after the recall");
    assert_eq!(b.settle(settlement(id, 3_500)).await.unwrap().0, 3_500);
    assert_eq!(wallet(&db, funded.account_id).await.0, 1_500);
    // A answered the recall and stopped leasing the account.
    assert_eq!(active_leases(&db, &funded).await, 0);
    assert_eq!(a.leased_nano(), 0);
    // What no instance can pay is still refused.
    assert!(matches!(
        b.reserve(new_request(&funded, 1_600)).await,
        Err(ReserveError::InsufficientCredits)
    ));
    assert_books_agree(&db).await;
}

/// A dead instance's lease goes back to the wallet once it expires.
#[tokio::test(flavor = "multi_thread")]
async fn the_reaper_returns_an_expired_lease_and_a_live_one_is_renewed() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 101_000).await;
    let leasing = instance(
        &db,
        LeaseSettings {
            // Renewed every 375 ms: a loaded machine can starve the keeper
            // for a second and the lease still lives.
            ttl: Duration::from_millis(1_500),
            ..settings(50, 4)
        },
    )
    .await;
    warm(&leasing, &funded, 1_000).await;
    // Renewed while the instance lives: still active well past one life.
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    tokio::time::sleep(Duration::from_millis(3_000)).await;
    assert_eq!(db.reap_expired_holds(SystemTime::now()).await.unwrap(), 0);
    assert_eq!(active_leases(&db, &funded).await, 50_000);
    leasing.settle(settlement(id, 400)).await.unwrap();

    // As if the holder died: its lease is not renewed and the reaper, on
    // any instance, releases it whole after its expiry. The holder here
    // still renews every 375 ms, and a reaper pass skips (SKIP LOCKED) a
    // lease row a renewal has locked at that instant; the next pass takes
    // it. So passes are summed, a bounded few, and exactly one release is
    // expected in all.
    let later = SystemTime::now() + Duration::from_secs(3_600);
    let mut released = 0;
    for _ in 0..20 {
        released += db.reap_expired_holds(later).await.unwrap();
        if released > 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(released, 1);
    assert_eq!(db.reap_expired_holds(later).await.unwrap(), 0);
    assert_eq!(active_leases(&db, &funded).await, 0);
    assert_eq!(wallet(&db, funded.account_id).await, (100_600, 0));
    assert_books_agree(&db).await;
}

/// Sets a spend limit of `amount` per hour on the funded key; the key's
/// requests then carry its new policy version, limited on spend only.
async fn spend_limited(db: &Database, funded: &Funded, amount: i64) -> i64 {
    use router_store::api_keys::ApiKeyChange;
    let change = ApiKeyChange {
        spend_limits: Some(Some(vec![router_core::SpendWindow {
            amount_nano_usd: amount,
            window_seconds: 3_600,
        }])),
        ..ApiKeyChange::default()
    };
    db.update_api_key(funded.api_key_id, &change)
        .await
        .unwrap()
        .policy
        .version
}

fn limited_request(funded: &Funded, reserve: i64, version: i64) -> router_core::store::NewRequest {
    router_core::store::NewRequest {
        key_limited: true,
        key_spend_only: true,
        policy_version: version,
        ..new_request(funded, reserve)
    }
}

/// Issue 34: a key's spend limit rides its own lease, which counts against
/// the limit like a live hold: N=200 over two instances against a limit
/// that allows exactly 37 (after the warm-ups' 2) → exactly 37 admitted,
/// 163 refused by the spend limit, never more (no overspend of the key) and
/// never fewer (no false 429: funds in a lease are recalled).
#[tokio::test(flavor = "multi_thread")]
async fn a_keys_spend_limit_rides_its_lease_and_admits_exactly_what_it_allows() {
    let db = TestDatabase::with_pool_size(8).await;
    let funded = funded_account(&db, 10_000_000).await;
    let version = spend_limited(&db, &funded, 39_000).await;
    let a = instance(&db, settings(50, 4)).await;
    let b = instance(&db, settings(50, 4)).await;
    for leasing in [&a, &b] {
        let first = limited_request(&funded, 1_000, version);
        let id = first.request_id;
        leasing.reserve(first).await.unwrap();
        until_leased(leasing).await;
        assert_eq!(
            leasing.settle(settlement(id, 1_000)).await.unwrap().0,
            1_000
        );
    }
    // Each lease holds a share of what the key still allows, held on the wallet.
    let key_leases = count(
        &db,
        &format!(
            "SELECT coalesce(sum(amount_nano), 0)::bigint AS n FROM credit_leases
             WHERE status = 'active' AND api_key_id = '{}'",
            funded.api_key_id
        ),
    )
    .await;
    assert!(key_leases > 0 && key_leases <= 37_000, "{key_leases}");

    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(200));
    let racing = (0..200).map(|i| {
        let leasing = if i % 2 == 0 { a.clone() } else { b.clone() };
        let request = limited_request(&funded, 1_000, version);
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            let id = request.request_id;
            leasing.reserve(request).await.map(|()| (leasing, id))
        })
    });
    let mut admitted = Vec::new();
    let mut refused = 0;
    for result in futures::future::join_all(racing).await {
        match result.unwrap() {
            Ok(ok) => admitted.push(ok),
            Err(ReserveError::KeyLimit {
                limit: router_core::KeyLimit::Spend,
                ..
            }) => refused += 1,
            Err(other) => panic!("unexpected refusal {other:?}"),
        }
    }
    assert_eq!((admitted.len(), refused), (37, 163));
    for (leasing, id) in admitted {
        leasing.settle(settlement(id, 1_000)).await.unwrap();
    }
    let charged = count(
        &db,
        &format!(
            "SELECT coalesce(sum(charged_nano), 0)::bigint AS n FROM requests
             WHERE api_key_id = '{}'",
            funded.api_key_id
        ),
    )
    .await;
    assert_eq!(charged, 39_000);
    assert_books_agree(&db).await;
}

/// A key's lease is sized under its limits: when the key changes, its lease
/// drains and gives its free part back (the next one is sized afresh).
#[tokio::test(flavor = "multi_thread")]
async fn a_key_change_drains_the_keys_lease() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000_000).await;
    let version = spend_limited(&db, &funded, 100_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    let first = limited_request(&funded, 1_000, version);
    let id = first.request_id;
    leasing.reserve(first).await.unwrap();
    until_leased(&leasing).await;
    leasing.void(voiding(id, "warm_up")).await.unwrap();
    // Half of what the key allows (100,000 less the warm-up's live hold).
    assert_eq!(leasing.leased_nano(), 49_500);
    spend_limited(&db, &funded, 10_000).await;
    let give_up = Instant::now() + Duration::from_secs(10);
    while active_leases(&db, &funded).await > 0 {
        assert!(Instant::now() < give_up, "the key's lease did not drain");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(wallet(&db, funded.account_id).await, (10_000_000, 0));
    assert_books_agree(&db).await;
}

/// At shutdown (after the drain) an instance returns its leases at once,
/// instead of leaving the funds held until the leases expire.
#[tokio::test(flavor = "multi_thread")]
async fn a_stopping_instance_returns_its_leases() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 101_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    warm(&leasing, &funded, 1_000).await;
    let request = new_request(&funded, 2_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    leasing.settle(settlement(id, 700)).await.unwrap();
    assert_eq!(active_leases(&db, &funded).await, 49_300);
    assert_eq!(leasing.return_credit_leases().await, 1);
    assert_eq!(active_leases(&db, &funded).await, 0);
    assert_eq!(wallet(&db, funded.account_id).await, (100_300, 0));
    // Nothing more is admitted from a lease: the next request goes direct.
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (100_300, 1_000));
    leasing.void(voiding(id, "done")).await.unwrap();
    assert_books_agree(&db).await;
}

/// A leased request whose caller leaves while its settlement is in flight
/// (the client went away and the request's future was dropped): the batch
/// commits anyway, and the lease book must record the request's end too.
/// It did not: the request stayed outstanding on its lease forever, so the
/// lease, once idle, drained and could never close, and the account was
/// never leased again (every later request went to the database directly;
/// the bench's Messages case after its Chat cases, issue 34).
#[tokio::test(flavor = "multi_thread")]
async fn a_settlement_whose_caller_left_still_ends_the_leased_request() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_001_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    warm(&leasing, &funded, 1_000).await;
    assert_eq!(leasing.leased_nano(), 500_000);

    let request = new_request(&funded, 3_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    assert!(
        polled_once(leasing.settle(settlement(id, 1_234))).await,
        "the settlement answered at once"
    );

    // The batch committed without its caller; the book follows it.
    let give_up = Instant::now() + Duration::from_secs(5);
    while leasing.leased_nano() != 500_000 - 1_234 {
        assert!(
            Instant::now() < give_up,
            "the book still counts the request: {} leased",
            leasing.leased_nano()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(active_leases(&db, &funded).await, 500_000 - 1_234);
    let view = leasing.get_request(id).await.unwrap().unwrap();
    assert_eq!(view.status, "succeeded");
    assert_eq!(view.charged_nano, Some(1_234));
    assert_books_agree(&db).await;
}

/// The same for a release whose caller left: the reservation goes back to
/// the lease.
#[tokio::test(flavor = "multi_thread")]
async fn a_release_whose_caller_left_still_ends_the_leased_request() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_001_000).await;
    let leasing = instance(&db, settings(50, 4)).await;
    warm(&leasing, &funded, 1_000).await;

    let request = new_request(&funded, 3_000);
    let id = request.request_id;
    leasing.reserve(request).await.unwrap();
    assert!(
        polled_once(leasing.void(voiding(id, "client_cancelled"))).await,
        "the release answered at once"
    );
    let give_up = Instant::now() + Duration::from_secs(5);
    while leasing.get_request(id).await.unwrap().is_none() {
        assert!(Instant::now() < give_up, "the release was not written");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(
        leasing.leased_nano(),
        500_000,
        "the reservation is free again"
    );
    assert_eq!(active_leases(&db, &funded).await, 500_000);
    assert_books_agree(&db).await;
}

/// Polls `operation` once and drops it, as a request's future is dropped
/// when its client leaves; whether it was still pending.
async fn polled_once<T>(operation: impl std::future::Future<Output = T>) -> bool {
    let mut operation = std::pin::pin!(operation);
    tokio::select! {
        biased;
        _ = &mut operation => false,
        () = std::future::ready(()) => true,
    }
}

async fn active_lease_count(db: &TestDatabase, funded: &Funded) -> i64 {
    count(
        db,
        &format!(
            "SELECT count(*) AS n FROM credit_leases
             WHERE status = 'active' AND account_id = '{}'",
            funded.account_id
        ),
    )
    .await
}

/// A lease that drains while a long request is outstanding on it (a
/// stream of minutes) does not keep its account from a new lease: the next
/// request takes one, later requests are admitted from it, and the old
/// lease closes when its last request ends (issue 34).
#[tokio::test(flavor = "multi_thread")]
async fn a_draining_lease_with_a_long_request_does_not_block_a_new_lease() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_001_000).await;
    let leasing = instance(
        &db,
        LeaseSettings {
            ttl: Duration::from_secs(1),
            idle: Duration::from_millis(300),
            share_percent: 50,
            min_requests: 4,
            ..LeaseSettings::default()
        },
    )
    .await;
    warm(&leasing, &funded, 1_000).await;
    let long = new_request(&funded, 3_000);
    leasing.reserve(long.clone()).await.unwrap();

    // Idle, the lease drains; the long request keeps it open.
    tokio::time::sleep(Duration::from_millis(900)).await;
    assert_eq!(active_lease_count(&db, &funded).await, 1);

    // The next request goes direct and takes a new lease beside it.
    let next = new_request(&funded, 3_000);
    leasing.reserve(next.clone()).await.unwrap();
    let give_up = Instant::now() + Duration::from_secs(5);
    while active_lease_count(&db, &funded).await < 2 {
        assert!(
            Instant::now() < give_up,
            "no new lease beside the draining one"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let holds = count(&db, "SELECT count(*) AS n FROM holds").await;
    let later = new_request(&funded, 3_000);
    leasing.reserve(later.clone()).await.unwrap();
    assert_eq!(
        count(&db, "SELECT count(*) AS n FROM holds").await,
        holds,
        "admitted from the new lease"
    );

    // The long request ends: the old lease closes.
    leasing
        .settle(settlement(long.request_id, 1_234))
        .await
        .unwrap();
    let give_up = Instant::now() + Duration::from_secs(5);
    while active_lease_count(&db, &funded).await > 1 {
        assert!(Instant::now() < give_up, "the old lease did not close");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    for id in [next.request_id, later.request_id] {
        leasing.void(voiding(id, "done")).await.unwrap();
    }
    assert_books_agree(&db).await;
}
