//! Key policies in storage: stored and read back with the key, changed by
//! PATCH (null clears, the version goes up, caches are told), and a
//! reservation admitted under a superseded policy refused with nothing
//! written (A-18, A-19, A-20, F-07).

use crate::seed::{KeyChanges, count, funded_account, key_with, new_request, wallet};
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use router_core::KeyPolicy;
use router_core::PromptCacheMode;
use router_core::store::{ReserveError, Scope, Store};
use router_store::api_keys::ApiKeyChange;
use router_store::hash_api_key;
use router_store::test_support::TestDatabase;
use std::time::Duration;

fn policy() -> KeyPolicy {
    KeyPolicy {
        allowed_models: Some(vec!["m-text".into(), "alias".into()]),
        ip_allowlist: Some(vec![
            "10.0.0.0/8".parse().unwrap(),
            "2001:db8::/32".parse().unwrap(),
        ]),
        prompt_cache_mode: Some(PromptCacheMode::On),
        response_cache_ttl_seconds: Some(300),
        limits: router_core::KeyLimits::default(),
        version: 0,
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_is_stored_with_the_key_and_changed_by_patch() {
    let db = TestDatabase::new().await;
    let account = db.create_account("p@example.test", true).await.unwrap();
    let issued = db
        .create_api_key(account.id, &[Scope::Inference], None, &policy())
        .await
        .unwrap();
    let found = db
        .find_api_key(hash_api_key(&issued.key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(*found.policy, policy());
    let view = db.get_api_key(issued.id).await.unwrap().unwrap();
    assert_eq!(view.policy, policy());
    assert_eq!(view.scopes, vec!["inference"]);

    // Only what the change names moves; null clears; the version goes up.
    let change = ApiKeyChange {
        allowed_models: Some(None),
        prompt_cache_mode: Some(Some(PromptCacheMode::Off)),
        response_cache_ttl_seconds: Some(None),
        ..ApiKeyChange::default()
    };
    let view = db.update_api_key(issued.id, &change).await.unwrap();
    let expected = KeyPolicy {
        allowed_models: None,
        prompt_cache_mode: Some(PromptCacheMode::Off),
        response_cache_ttl_seconds: None,
        version: 1,
        ..policy()
    };
    assert_eq!(view.policy, expected);
    let found = db
        .find_api_key(hash_api_key(&issued.key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        *found.policy, expected,
        "the key cache forgot the old policy"
    );

    let view = db
        .update_api_key(
            issued.id,
            &ApiKeyChange {
                ip_allowlist: Some(None),
                scopes: Some(vec![Scope::Inference, Scope::UsageRead]),
                ..ApiKeyChange::default()
            },
        )
        .await
        .unwrap();
    assert_eq!(view.policy.ip_allowlist, None);
    assert_eq!(view.policy.version, 2);
    assert_eq!(view.scopes, vec!["inference", "usage:read"]);

    db.delete_api_key(issued.id).await.unwrap();
    assert!(matches!(
        db.update_api_key(issued.id, &ApiKeyChange::default()).await,
        Err(router_store::AdminError::ApiKeyNotFound(_))
    ));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_policy_change_notifies_key_caches() {
    let db = TestDatabase::new().await;
    let account = db.create_account("n@example.test", true).await.unwrap();
    let issued = key_with(&db, account.id, &[Scope::Inference]).await;
    let mut changes = KeyChanges::listen(&db).await;
    let change = ApiKeyChange {
        prompt_cache_mode: Some(Some(PromptCacheMode::On)),
        ..ApiKeyChange::default()
    };
    db.update_api_key(issued.id, &change).await.unwrap();
    let payload = changes.next().await;
    assert_eq!(payload, hex::encode(hash_api_key(&issued.key)));
}

/// a request admitted under policy version 0 cannot reserve once the
/// version is 1, and nothing is held or recorded.
#[tokio::test(flavor = "multi_thread")]
async fn a_reservation_under_a_superseded_policy_is_refused_and_writes_nothing() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let admitted_under_v0 = new_request(&funded, 1_000);
    db.update_api_key(funded.api_key_id, &ApiKeyChange::default())
        .await
        .unwrap();
    assert_eq!(
        db.reserve(admitted_under_v0).await,
        Err(ReserveError::PolicyChanged)
    );
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 0));
    assert_eq!(count(&db, "SELECT count(*) AS n FROM requests").await, 0);
    assert_eq!(count(&db, "SELECT count(*) AS n FROM holds").await, 0);

    // Under the current version it reserves; a short wallet is still 402-shaped.
    let mut current = new_request(&funded, 1_000);
    current.policy_version = 1;
    db.reserve(current).await.unwrap();
    let mut too_much = new_request(&funded, 1_000_000);
    too_much.policy_version = 1;
    assert_eq!(
        db.reserve(too_much).await,
        Err(ReserveError::InsufficientCredits)
    );
}

/// A-20, the race itself: a policy change whose transaction is still open
/// when the reservation runs. The reservation waits for the key row, sees
/// the new version once the change commits, and is refused.
#[tokio::test(flavor = "multi_thread")]
async fn a_reservation_racing_an_uncommitted_policy_change_waits_and_is_refused() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let mut patcher = AsyncPgConnection::establish(db.url()).await.unwrap();
    patcher
        .batch_execute(&format!(
            "BEGIN; UPDATE api_keys SET prompt_cache_mode = 'on',
                    policy_version = policy_version + 1 WHERE id = '{}'",
            funded.api_key_id
        ))
        .await
        .unwrap();
    let request = new_request(&funded, 1_000);
    let store = db.database().clone();
    let reservation = tokio::spawn(async move { store.reserve(request).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        !reservation.is_finished(),
        "the reservation waits for the key row the change holds"
    );
    patcher.batch_execute("COMMIT").await.unwrap();
    assert_eq!(reservation.await.unwrap(), Err(ReserveError::PolicyChanged));
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 0));
    assert_eq!(count(&db, "SELECT count(*) AS n FROM holds").await, 0);
}

/// The other order: a reservation that committed first keeps its hold; the
/// change lands after it.
#[tokio::test(flavor = "multi_thread")]
async fn a_change_after_the_hold_leaves_the_hold() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    db.reserve(new_request(&funded, 1_000)).await.unwrap();
    db.update_api_key(funded.api_key_id, &ApiKeyChange::default())
        .await
        .unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 1_000));
}

/// Lock order: a batched reservation waiting for a key row (here: a limited
/// admission of that key holds it `FOR UPDATE`, as while a key's limits are
/// being set and cached records still say "no limits") holds no wallet
/// lock yet, so the limited admission can go on to lock the wallet: the two
/// wait for each other one way only and never deadlock.
#[tokio::test(flavor = "multi_thread")]
async fn a_batch_waiting_for_a_key_holds_no_wallet_lock() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 10_000).await;
    let mut limited = AsyncPgConnection::establish(db.url()).await.unwrap();
    limited
        .batch_execute(&format!(
            "BEGIN; SELECT 1 FROM api_keys WHERE id = '{}' FOR UPDATE",
            funded.api_key_id
        ))
        .await
        .unwrap();
    let request = new_request(&funded, 1_000);
    let store = db.database().clone();
    let batch = tokio::spawn(async move { store.reserve(request).await });
    // Bounded wait until the batch is blocked on a lock.
    let mut blocked = false;
    for _ in 0..100 {
        let waiting = count(
            &db,
            "SELECT count(*) AS n FROM pg_stat_activity
             WHERE datname = current_database() AND wait_event_type = 'Lock'",
        )
        .await;
        if waiting > 0 {
            blocked = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(blocked, "the batch waits for the key row");
    // The wallet is free: NOWAIT fails at once if the batch had locked it.
    limited
        .batch_execute(&format!(
            "SELECT 1 FROM wallets WHERE account_id = '{}' FOR UPDATE NOWAIT",
            funded.account_id
        ))
        .await
        .expect("the waiting batch holds the wallet lock");
    limited.batch_execute("COMMIT").await.unwrap();
    batch.await.unwrap().unwrap();
    assert_eq!(wallet(&db, funded.account_id).await, (10_000, 1_000));
}
