//! Reserve, settle, void and reap, with the wallet and ledger checked.

use crate::seed::{
    assert_books_agree, count, expiring_request, funded_account, new_request, settlement, voiding,
    wallet,
};
use router_canonical::{NanoUsd, Protocol};
use router_core::store::{AttemptOutcome, AttemptRecord, ReserveError, SettleError, Store};
use router_store::billing;
use router_store::test_support::TestDatabase;
use std::time::{Duration, SystemTime};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread")]
async fn reserve_then_settle_charges_the_wallet_and_books_the_ledger() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 3_000);
    let id = request.request_id;

    db.reserve(request).await.unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 3_000));
    let reserved = db.get_request(id).await.unwrap().unwrap();
    assert_eq!(reserved.status, "reserved");
    assert_eq!(reserved.reserved_nano, 3_000);
    assert_eq!(reserved.inbound_protocol, "completions");
    assert_eq!(reserved.recorded_protocol, "chat");
    assert_eq!(reserved.hold.as_ref().unwrap().status, "held");
    assert_eq!(reserved.finished_at, None);

    db.settle(settlement(id, 1_234)).await.unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (8_766, 0));

    let settled = db.get_request(id).await.unwrap().unwrap();
    assert_eq!(settled.status, "succeeded");
    assert_eq!(settled.charged_nano, Some(1_234));
    assert_eq!(settled.route_id.as_deref(), Some("acme-direct"));
    // The succeeded attempt is recorded by the same statement.
    assert_eq!(settled.attempts.len(), 1);
    assert_eq!(settled.attempts[0].outcome, "succeeded");
    assert_eq!(settled.attempts[0].route_id, "acme-direct");
    assert_eq!(settled.attempts[0].duration_ms, 12);
    let usage = settled.usage.unwrap();
    assert_eq!(
        (
            usage.input_tokens,
            usage.output_tokens,
            usage.cache_read_tokens,
            usage.cache_write_tokens,
            usage.reasoning_tokens
        ),
        (120, 45, 100, 10, 7)
    );
    assert!(settled.finished_at.is_some());
    let hold = settled.hold.unwrap();
    assert_eq!((hold.status.as_str(), hold.amount_nano), ("settled", 3_000));
    assert!(hold.released_at.is_some());

    let entries = &settled.ledger_entries;
    assert_eq!(entries.len(), 2);
    assert_eq!(entries[0].txn_id, entries[1].txn_id);
    let wallet_entry = entries
        .iter()
        .find(|e| e.ledger_account == "wallet")
        .unwrap();
    let revenue_entry = entries
        .iter()
        .find(|e| e.ledger_account == "revenue")
        .unwrap();
    assert_eq!(wallet_entry.amount_nano, -1_234);
    assert_eq!(wallet_entry.account_id, Some(funded.account_id));
    assert_eq!(revenue_entry.amount_nano, 1_234);
    assert_eq!(revenue_entry.account_id, None);
    assert!(entries.iter().all(|e| e.kind == "charge"));
    assert_books_agree(&db).await;

    // The view serialises with RFC 3339 times and integer money.
    let json = serde_json::to_value(&settled.ledger_entries[0]).unwrap();
    assert!(json["created_at"].as_str().unwrap().ends_with('Z'));
    assert!(json["amount_nano"].is_i64());
}

#[tokio::test(flavor = "multi_thread")]
async fn void_releases_the_whole_hold_without_a_charge() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 5_000).await;
    let request = new_request(&funded, 4_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (5_000, 4_000));

    db.void(voiding(id, "upstream_unavailable")).await.unwrap();

    assert_eq!(wallet(&db, funded.account_id).await, (5_000, 0));
    let view = db.get_request(id).await.unwrap().unwrap();
    assert_eq!(view.status, "failed");
    assert_eq!(view.error_reason.as_deref(), Some("upstream_unavailable"));
    assert_eq!(view.charged_nano, None);
    assert_eq!(view.usage, None);
    assert_eq!(view.hold.unwrap().status, "released");
    assert!(view.ledger_entries.is_empty());
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_request_settles_or_voids_exactly_once() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;

    let settled = new_request(&funded, 1_000);
    let settled_id = settled.request_id;
    db.reserve(settled).await.unwrap();
    db.settle(settlement(settled_id, 600)).await.unwrap();
    assert_eq!(
        db.settle(settlement(settled_id, 600)).await,
        Err(SettleError::NotReserved(settled_id))
    );
    assert_eq!(
        db.void(voiding(settled_id, "late")).await,
        Err(SettleError::NotReserved(settled_id))
    );

    let voided = new_request(&funded, 1_000);
    let voided_id = voided.request_id;
    db.reserve(voided).await.unwrap();
    db.void(voiding(voided_id, "client_cancelled"))
        .await
        .unwrap();
    assert_eq!(
        db.void(voiding(voided_id, "client_cancelled")).await,
        Err(SettleError::NotReserved(voided_id))
    );
    assert_eq!(
        db.settle(settlement(voided_id, 600)).await,
        Err(SettleError::NotReserved(voided_id))
    );

    let unknown = Uuid::now_v7();
    assert_eq!(
        db.settle(settlement(unknown, 1)).await,
        Err(SettleError::NotReserved(unknown))
    );
    assert_eq!(
        db.void(voiding(unknown, "x")).await,
        Err(SettleError::NotReserved(unknown))
    );

    // Only the first settlement was charged; the later calls changed nothing.
    assert_eq!(wallet(&db, funded.account_id).await, (9_400, 0));
    let view = db.get_request(settled_id).await.unwrap().unwrap();
    assert_eq!(view.ledger_entries.len(), 2);
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn racing_settles_and_voids_end_the_request_once() {
    let db = TestDatabase::with_pool_size(16).await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 2_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();

    let racers = (0..16).map(|i| {
        let db = db.database().clone();
        tokio::spawn(async move {
            if i % 2 == 0 {
                db.settle(settlement(id, 1_500))
                    .await
                    .map(|charge| assert_eq!(charge.0, 1_500))
            } else {
                db.void(voiding(id, "client_cancelled")).await
            }
        })
    });
    let results = futures::future::join_all(racers).await;
    let ok = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    let not_reserved = results
        .iter()
        .filter(|r| matches!(r, Ok(Err(SettleError::NotReserved(_)))))
        .count();
    assert_eq!((ok, not_reserved), (1, 15));

    let (balance, held) = wallet(&db, funded.account_id).await;
    assert_eq!(held, 0);
    assert!(balance == 10_000 || balance == 8_500, "balance {balance}");
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn insufficient_credits_write_nothing() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 500).await;

    let too_much = new_request(&funded, 501);
    let id = too_much.request_id;
    assert_eq!(
        db.reserve(too_much).await,
        Err(ReserveError::InsufficientCredits)
    );
    assert_eq!(db.get_request(id).await.unwrap(), None);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM holds").await, 0);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM requests").await, 0);
    assert_eq!(wallet(&db, funded.account_id).await, (500, 0));

    // An account that was never funded cannot reserve either.
    let broke = funded_account(&db, 0).await;
    assert_eq!(
        db.reserve(new_request(&broke, 1)).await,
        Err(ReserveError::InsufficientCredits)
    );

    // The whole available balance can be held, and then nothing more.
    db.reserve(new_request(&funded, 500)).await.unwrap();
    assert_eq!(
        db.reserve(new_request(&funded, 1)).await,
        Err(ReserveError::InsufficientCredits)
    );
    assert_eq!(count(&db, "SELECT count(*) AS n FROM holds").await, 1);
    assert_books_agree(&db).await;
}

/// The hold is a ceiling (RELIABILITY.md I4; B-21, G-06, G-18): a reported
/// cost above the hold debits exactly the hold; the request keeps the
/// reported cost and the shortfall, and the wallet counts it.
#[tokio::test(flavor = "multi_thread")]
async fn a_charge_above_the_hold_debits_exactly_the_hold() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();

    let charged = db.settle(settlement(id, 2_500)).await.unwrap();

    assert_eq!(charged, NanoUsd(1_000), "the settlement returns the hold");
    assert_eq!(wallet(&db, funded.account_id).await, (9_000, 0));
    let view = db.get_request(id).await.unwrap().unwrap();
    assert_eq!(view.status, "succeeded");
    assert_eq!(view.charged_nano, Some(1_000));
    assert_eq!(view.reported_nano, Some(2_500));
    assert_eq!(view.shortfall_nano, Some(1_500));
    let debits: Vec<i64> = view
        .ledger_entries
        .iter()
        .filter(|e| e.ledger_account == "wallet")
        .map(|e| e.amount_nano)
        .collect();
    assert_eq!(debits, [-1_000], "one debit, equal to the hold");
    let account = db.get_account(funded.account_id).await.unwrap().unwrap();
    assert_eq!(
        (account.shortfall_count, account.shortfall_nano),
        (1, 1_500)
    );

    // A charge within the hold is taken in full and leaves no shortfall.
    let within = new_request(&funded, 1_000);
    let within_id = within.request_id;
    db.reserve(within).await.unwrap();
    assert_eq!(
        db.settle(settlement(within_id, 1_000)).await.unwrap(),
        NanoUsd(1_000)
    );
    let view = db.get_request(within_id).await.unwrap().unwrap();
    assert_eq!(
        (view.charged_nano, view.reported_nano, view.shortfall_nano),
        (Some(1_000), Some(1_000), Some(0))
    );
    let account = db.get_account(funded.account_id).await.unwrap().unwrap();
    assert_eq!(
        (account.shortfall_count, account.shortfall_nano),
        (1, 1_500)
    );
    assert_eq!(wallet(&db, funded.account_id).await, (8_000, 0));
    assert_books_agree(&db).await;
}

/// In one batch, each settlement is capped at its own hold, and the
/// wallet's counters sum the batch's shortfalls (I4).
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_caps_each_settlement_at_its_own_hold() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let requests = [
        new_request(&funded, 1_000),
        new_request(&funded, 2_000),
        new_request(&funded, 3_000),
    ];
    for request in &requests {
        db.reserve(request.clone()).await.unwrap();
    }
    let [a, b, c] = requests.map(|r| r.request_id);
    let mut conn = db.connection().await.unwrap();
    let batch = [
        settlement(a, 1_700),
        settlement(b, 500),
        settlement(c, 3_001),
    ];
    let charged = billing::settle_batch(&mut conn, &batch).await.unwrap();
    assert_eq!(
        charged,
        [
            Some(NanoUsd(1_000)),
            Some(NanoUsd(500)),
            Some(NanoUsd(3_000))
        ]
    );
    assert_eq!(wallet(&db, funded.account_id).await, (10_000 - 4_500, 0));
    let account = db.get_account(funded.account_id).await.unwrap().unwrap();
    assert_eq!((account.shortfall_count, account.shortfall_nano), (2, 701));
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_zero_charge_settles_without_ledger_entries() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();

    // A negative charge is refused and changes nothing.
    assert!(matches!(
        db.settle(settlement(id, -1)).await,
        Err(SettleError::Store(_))
    ));
    assert_eq!(
        db.get_request(id).await.unwrap().unwrap().status,
        "reserved"
    );

    db.settle(settlement(id, 0)).await.unwrap();

    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 0));
    let view = db.get_request(id).await.unwrap().unwrap();
    assert_eq!(
        (view.status.as_str(), view.charged_nano),
        ("succeeded", Some(0))
    );
    assert!(view.ledger_entries.is_empty());
    assert_books_agree(&db).await;
}

/// Four `Database` instances (four processes' worth of group commits, each
/// batching its own reservations) race on one wallet, so batches really run
/// at once and only the wallet's `FOR UPDATE` keeps them from each reading
/// the same available balance (issue 33: with one instance, the test passed
/// with the lock deleted).
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reservations_never_overdraw_the_wallet() {
    let db = TestDatabase::with_pool_size(8).await;
    let funded = funded_account(&db, 37_000).await;
    let mut instances = vec![db.database().clone()];
    for _ in 0..3 {
        instances.push(router_store::Database::connect(db.url(), 8).await.unwrap());
    }
    let barrier = std::sync::Arc::new(tokio::sync::Barrier::new(200));
    let reservations = (0..200).map(|i| {
        let db = instances[i % instances.len()].clone();
        let request = new_request(&funded, 1_000);
        let barrier = barrier.clone();
        tokio::spawn(async move {
            barrier.wait().await;
            db.reserve(request).await
        })
    });
    let results = futures::future::join_all(reservations).await;

    let held = results.iter().filter(|r| matches!(r, Ok(Ok(())))).count();
    let refused = results
        .iter()
        .filter(|r| matches!(r, Ok(Err(ReserveError::InsufficientCredits))))
        .count();
    assert_eq!((held, refused), (37, 163));
    assert_eq!(wallet(&db, funded.account_id).await, (37_000, 37_000));
    assert_eq!(
        count(&db, "SELECT count(*) AS n FROM holds WHERE status = 'held'").await,
        37
    );
    assert_eq!(count(&db, "SELECT count(*) AS n FROM requests").await, 37);
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn the_reaper_releases_expired_holds_and_spares_live_ones() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let start = SystemTime::now();
    let minutes = |n: u64| Duration::from_secs(60 * n);

    let orphaned = expiring_request(&funded, 1_000, start + minutes(10));
    let orphaned_id = orphaned.request_id;
    let live = expiring_request(&funded, 2_000, start + minutes(60));
    let live_id = live.request_id;
    let extended = expiring_request(&funded, 3_000, start + minutes(10));
    let extended_id = extended.request_id;
    for request in [orphaned, live, extended] {
        db.reserve(request).await.unwrap();
    }
    // A long stream keeps its hold alive; extending never shortens.
    db.extend_hold(extended_id, start + minutes(45))
        .await
        .unwrap();
    db.extend_hold(extended_id, start + minutes(5))
        .await
        .unwrap();

    // Half an hour later only the orphaned hold has expired.
    let reaped = db.reap_expired_holds(start + minutes(30)).await.unwrap();
    assert_eq!(reaped, 1);
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 5_000));
    let view = db.get_request(orphaned_id).await.unwrap().unwrap();
    assert_eq!(view.status, "failed");
    assert_eq!(
        view.error_reason.as_deref(),
        Some(router_store::billing::REAPED)
    );
    assert_eq!(view.hold.unwrap().status, "released");
    for id in [live_id, extended_id] {
        let view = db.get_request(id).await.unwrap().unwrap();
        assert_eq!(
            (view.status.as_str(), view.hold.unwrap().status.as_str()),
            ("reserved", "held")
        );
    }

    // Nothing more to reap, and a reaped request can no longer settle.
    assert_eq!(db.reap_expired_holds(start + minutes(30)).await.unwrap(), 0);
    assert_eq!(
        db.settle(settlement(orphaned_id, 10)).await,
        Err(SettleError::NotReserved(orphaned_id))
    );
    // Extending a hold that is gone is harmless.
    db.extend_hold(orphaned_id, start + minutes(90))
        .await
        .unwrap();
    assert_eq!(
        db.get_request(orphaned_id).await.unwrap().unwrap().status,
        "failed"
    );

    db.settle(settlement(live_id, 1_500)).await.unwrap();
    assert_eq!(
        db.reap_expired_holds(start + minutes(120)).await.unwrap(),
        1
    );
    assert_eq!(wallet(&db, funded.account_id).await, (8_500, 0));
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reapers_release_each_hold_once() {
    let db = TestDatabase::with_pool_size(8).await;
    let accounts = [
        funded_account(&db, 100_000).await,
        funded_account(&db, 100_000).await,
        funded_account(&db, 100_000).await,
    ];
    let start = SystemTime::now();
    for i in 0..60 {
        let funded = &accounts[i % accounts.len()];
        db.reserve(expiring_request(
            funded,
            100,
            start + Duration::from_secs(1),
        ))
        .await
        .unwrap();
    }

    let later = start + Duration::from_secs(60);
    let reapers = (0..4).map(|_| {
        let db = db.database().clone();
        tokio::spawn(async move { db.reap_expired_holds(later).await })
    });
    let released: u64 = futures::future::join_all(reapers)
        .await
        .into_iter()
        .map(|r| r.unwrap().unwrap())
        .sum();

    assert_eq!(released, 60);
    for funded in &accounts {
        assert_eq!(wallet(&db, funded.account_id).await, (100_000, 0));
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) AS n FROM requests WHERE error_reason = 'reaped'"
        )
        .await,
        60
    );
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn attempts_are_recorded_in_order() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let request = new_request(&funded, 1_000);
    let id = request.request_id;
    db.reserve(request).await.unwrap();
    let started_at = SystemTime::now();

    let failed = AttemptRecord {
        request_id: id,
        attempt_no: 1,
        route_id: "acme-direct".to_owned(),
        supplier_id: "acme".to_owned(),
        upstream_protocol: Protocol::Messages,
        started_at,
        duration_ms: 812,
        outcome: AttemptOutcome::Failed {
            upstream_status: Some(529),
            kind: "status".to_owned(),
            retryable: true,
        },
        supplier_request_id: Some("req_overloaded_1".to_owned()),
    };
    let succeeded = AttemptRecord {
        attempt_no: 2,
        route_id: "acme-fallback".to_owned(),
        upstream_protocol: Protocol::Chat,
        duration_ms: 1_204,
        outcome: AttemptOutcome::Succeeded,
        supplier_request_id: None,
        ..failed.clone()
    };
    // Recorded out of order; the view sorts by attempt number.
    db.record_attempt(succeeded.clone()).await.unwrap();
    db.record_attempt(failed.clone()).await.unwrap();
    // An attempt number is recorded once.
    assert!(db.record_attempt(failed).await.is_err());

    let view = db.get_request(id).await.unwrap().unwrap();
    let attempts = &view.attempts;
    assert_eq!(attempts.len(), 2);
    assert_eq!(attempts[0].attempt_no, 1);
    assert_eq!(attempts[0].outcome, "failed");
    assert_eq!(attempts[0].upstream_status, Some(529));
    assert_eq!(attempts[0].failure_kind.as_deref(), Some("status"));
    assert_eq!(attempts[0].retryable, Some(true));
    assert_eq!(attempts[0].upstream_protocol, "messages");
    assert_eq!(attempts[0].duration_ms, 812);
    // Issue 30: the supplier's own request id is kept on its attempt.
    assert_eq!(
        attempts[0].supplier_request_id.as_deref(),
        Some("req_overloaded_1")
    );
    assert_eq!(attempts[1].supplier_request_id, None);
    assert_eq!(attempts[1].attempt_no, 2);
    assert_eq!(attempts[1].outcome, "succeeded");
    assert_eq!(attempts[1].route_id, "acme-fallback");
    assert_eq!(
        (
            attempts[1].upstream_status,
            attempts[1].failure_kind.as_deref(),
            attempts[1].retryable
        ),
        (None, None, None)
    );
}

/// Group commit must not change who is admitted: smallest first within an
/// account, exactly as one-by-one reservations in that order would.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_admits_exactly_what_one_by_one_reservations_would() {
    let db = TestDatabase::new().await;
    let tight = funded_account(&db, 1_000).await;
    let rich = funded_account(&db, 1_000_000).await;
    let batch = [
        new_request(&tight, 600),
        new_request(&rich, 5_000),
        new_request(&tight, 300),
        new_request(&tight, 500),
        new_request(&rich, 7_000),
    ];
    let mut conn = db.connection().await.unwrap();
    let admitted = billing::reserve_batch(&mut conn, &batch).await.unwrap();
    // 300 + 500 fit in 1,000; 600 no longer does. The rich account takes both.
    assert_eq!(admitted, [false, true, true, true, true]);
    assert_eq!(wallet(&db, tight.account_id).await, (1_000, 800));
    assert_eq!(wallet(&db, rich.account_id).await, (1_000_000, 12_000));
    let refused = db.get_request(batch[0].request_id).await.unwrap();
    assert!(refused.is_none(), "a refused reservation writes nothing");
    assert_eq!(count(&db, "SELECT count(*) AS n FROM holds").await, 4);
    assert_books_agree(&db).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_batch_settles_each_live_hold_once_and_skips_the_rest() {
    let db = TestDatabase::new().await;
    let a = funded_account(&db, 10_000).await;
    let b = funded_account(&db, 10_000).await;
    let requests = [
        new_request(&a, 1_000),
        new_request(&a, 2_000),
        new_request(&b, 3_000),
    ];
    for request in &requests {
        db.reserve(request.clone()).await.unwrap();
    }
    let [first, second, third] = requests.map(|r| r.request_id);
    db.settle(settlement(first, 400)).await.unwrap();

    let mut conn = db.connection().await.unwrap();
    let batch = [
        settlement(first, 999),
        settlement(second, 1_500),
        settlement(third, 0),
    ];
    let settled = billing::settle_batch(&mut conn, &batch).await.unwrap();
    assert_eq!(
        settled,
        [None, Some(NanoUsd(1_500)), Some(NanoUsd(0))],
        "the first was already settled"
    );
    assert_eq!(wallet(&db, a.account_id).await, (10_000 - 400 - 1_500, 0));
    assert_eq!(wallet(&db, b.account_id).await, (10_000, 0));
    let view = db.get_request(first).await.unwrap().unwrap();
    assert_eq!(
        view.charged_nano,
        Some(400),
        "a second settlement changes nothing"
    );
    assert_eq!(view.attempts.len(), 1);
    let view = db.get_request(second).await.unwrap().unwrap();
    assert_eq!(view.status, "succeeded");
    assert_eq!(view.attempts[0].outcome, "succeeded");
    assert_eq!(view.ledger_entries.len(), 2);
    let view = db.get_request(third).await.unwrap().unwrap();
    assert!(
        view.ledger_entries.is_empty(),
        "a zero charge books nothing"
    );
    assert_books_agree(&db).await;
}

/// Many requests of a few accounts reserving and settling at once go
/// through the group commit; every one ends once and the books agree.
#[tokio::test(flavor = "multi_thread")]
async fn concurrent_reserves_and_settles_of_shared_wallets_keep_the_books() {
    let db = TestDatabase::with_pool_size(16).await;
    let mut accounts = Vec::new();
    for _ in 0..3 {
        accounts.push(funded_account(&db, 1_000_000).await);
    }
    let lifecycles = (0..240).map(|i| {
        let db = db.database().clone();
        let request = new_request(&accounts[i % 3], 2_000);
        tokio::spawn(async move {
            let id = request.request_id;
            db.reserve(request).await.unwrap();
            if i % 4 == 0 {
                db.void(voiding(id, "client_cancelled")).await.unwrap();
            } else {
                db.settle(settlement(id, 1_000 + i as i64)).await.unwrap();
            }
        })
    });
    for lifecycle in futures::future::join_all(lifecycles).await {
        lifecycle.unwrap();
    }
    for (n, funded) in accounts.iter().enumerate() {
        let charged: i64 = (0..240)
            .filter(|i| i % 3 == n && i % 4 != 0)
            .map(|i| 1_000 + i as i64)
            .sum();
        assert_eq!(
            wallet(&db, funded.account_id).await,
            (1_000_000 - charged, 0)
        );
    }
    assert_eq!(
        count(
            &db,
            "SELECT count(*) AS n FROM requests WHERE status = 'succeeded'"
        )
        .await,
        180
    );
    assert_eq!(count(&db, "SELECT count(*) AS n FROM attempts").await, 180);
    assert_books_agree(&db).await;
}

/// Two racing settlements of one request that the group commit puts in the
/// same batch: the first settles, the duplicate is not settled, and the
/// batch's other settlements are unharmed (I4: one debit per hold).
#[tokio::test(flavor = "multi_thread")]
async fn a_duplicate_settlement_in_one_batch_settles_once() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let a = new_request(&funded, 1_000);
    let b = new_request(&funded, 2_000);
    db.reserve(a.clone()).await.unwrap();
    db.reserve(b.clone()).await.unwrap();
    let mut conn = db.connection().await.unwrap();
    let batch = [
        settlement(a.request_id, 700),
        settlement(a.request_id, 700),
        settlement(b.request_id, 500),
    ];
    let charged = billing::settle_batch(&mut conn, &batch).await.unwrap();
    assert_eq!(charged, [Some(NanoUsd(700)), None, Some(NanoUsd(500))]);
    assert_eq!(wallet(&db, funded.account_id).await, (10_000 - 1_200, 0));
    assert_books_agree(&db).await;
}
