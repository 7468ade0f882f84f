//! API keys: lookup by hash, deletion, expiry, and the secret never stored.

use crate::seed::{KeyChanges, count, key_with};
use router_core::store::{Scope, Store};
use router_store::api_keys::{DISPLAY_PREFIX_LEN, SECRET_PREFIX};
use router_store::test_support::TestDatabase;
use router_store::{AdminError, hash_api_key};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

#[tokio::test(flavor = "multi_thread")]
async fn keys_are_found_by_the_hash_of_their_secret() {
    let db = TestDatabase::new().await;
    let account = db.create_account("keys@example.test", true).await.unwrap();
    let scopes = [Scope::Inference, Scope::UsageRead];
    let issued = key_with(&db, account.id, &scopes).await;

    assert!(issued.key.starts_with(SECRET_PREFIX));
    assert_eq!(issued.key.len(), SECRET_PREFIX.len() + 48);
    assert_eq!(issued.prefix, issued.key[..DISPLAY_PREFIX_LEN]);
    assert!(!format!("{issued:?}").contains(&issued.key));

    let found = db
        .find_api_key(hash_api_key(&issued.key))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(found.key_id, issued.id);
    assert_eq!(found.account_id, account.id);
    assert_eq!(found.scopes, scopes);
    assert!(found.has_scope(Scope::Inference));
    assert!(!found.has_scope(Scope::AccountWrite));

    let wrong = format!("{}x", issued.key);
    assert_eq!(db.find_api_key(hash_api_key(&wrong)).await.unwrap(), None);

    let missing = Uuid::now_v7();
    assert_eq!(
        db.create_api_key(missing, &scopes, None, &router_core::KeyPolicy::default())
            .await,
        Err(AdminError::AccountNotFound(missing))
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deleted_and_expired_keys_are_not_found() {
    let db = TestDatabase::new().await;
    let account = db
        .create_account("expiry@example.test", true)
        .await
        .unwrap();
    let scopes = [Scope::Inference];
    let now = SystemTime::now();

    let deleted = key_with(&db, account.id, &scopes).await;
    assert!(
        db.find_api_key(hash_api_key(&deleted.key))
            .await
            .unwrap()
            .is_some()
    );
    db.delete_api_key(deleted.id).await.unwrap();
    assert_eq!(
        db.find_api_key(hash_api_key(&deleted.key)).await.unwrap(),
        None
    );
    assert_eq!(
        db.delete_api_key(deleted.id).await,
        Err(AdminError::ApiKeyNotFound(deleted.id))
    );

    let expired = db
        .create_api_key(
            account.id,
            &scopes,
            Some(now - Duration::from_secs(1)),
            &router_core::KeyPolicy::default(),
        )
        .await
        .unwrap();
    assert_eq!(
        db.find_api_key(hash_api_key(&expired.key)).await.unwrap(),
        None
    );

    let expiring = db
        .create_api_key(
            account.id,
            &scopes,
            Some(now + Duration::from_secs(3600)),
            &router_core::KeyPolicy::default(),
        )
        .await
        .unwrap();
    assert!(
        db.find_api_key(hash_api_key(&expiring.key))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn the_secret_is_stored_nowhere() {
    let db = TestDatabase::new().await;
    let account = db
        .create_account("secret@example.test", true)
        .await
        .unwrap();
    let issued = key_with(&db, account.id, &Scope::ALL).await;
    let random_part = &issued.key[SECRET_PREFIX.len()..];

    // Every row of every table, as text (bytea renders as hex), searched for
    // the secret's random part, and for the hash as a control.
    let tables = [
        "accounts",
        "wallets",
        "api_keys",
        "requests",
        "holds",
        "ledger_entries",
        "attempts",
        "thinking_seal_keys",
        "catalog_releases",
        "catalog_release_models",
        "catalog_price_changes",
        "catalog_cursor_keys",
        "browser_sessions",
        "magic_links",
        "experiments",
        "response_cache",
        "prompt_cache_affinity",
        "job_leases",
        "channels",
        "channel_report_attempts",
        "channel_deliveries",
        "data_protection_changes",
        "uploads",
        "videos",
        "credit_leases",
    ];
    let mut hash_found = 0;
    for table in tables {
        let sql = |needle: &str| {
            format!("SELECT count(*) AS n FROM {table} t WHERE t::text LIKE '%{needle}%'")
        };
        assert_eq!(
            count(&db, &sql(random_part)).await,
            0,
            "secret found in {table}"
        );
        hash_found += count(&db, &sql(&hex::encode(hash_api_key(&issued.key)))).await;
    }
    assert_eq!(hash_found, 1);
    let tables_in_schema = count(
        &db,
        "SELECT count(*) AS n FROM information_schema.tables
         WHERE table_schema = 'public' AND table_name <> '__diesel_schema_migrations'",
    )
    .await;
    assert_eq!(
        tables_in_schema,
        i64::try_from(tables.len()).unwrap(),
        "a table is not searched"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_key_notifies_key_caches() {
    let db = TestDatabase::new().await;
    let account = db
        .create_account("notify@example.test", true)
        .await
        .unwrap();
    let issued = key_with(&db, account.id, &[Scope::Inference]).await;

    let mut changes = KeyChanges::listen(&db).await;
    db.delete_api_key(issued.id).await.unwrap();

    let payload = changes.next().await;
    assert_eq!(payload, hex::encode(hash_api_key(&issued.key)));
}
