//! The account's zero-data-retention switch in the store: carried on every
//! key record, announced to key caches for each of the account's keys,
//! audited once per change, and scheduling the account's uploads.

use crate::seed::{KeyChanges, key_with};
use diesel_async::RunQueryDsl;
use router_core::store::{Scope, Store};
use router_store::hash_api_key;
use router_store::test_support::TestDatabase;
use std::collections::HashSet;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread")]
async fn a_flip_is_on_the_key_record_and_notifies_every_key_of_the_account() {
    let db = TestDatabase::new().await;
    let account = db.create_account("zdr@example.test", true).await.unwrap();
    let other = db.create_account("other@example.test", true).await.unwrap();
    let a = key_with(&db, account.id, &[Scope::Inference]).await;
    let b = key_with(&db, account.id, &[Scope::AccountRead]).await;
    let foreign = key_with(&db, other.id, &[Scope::Inference]).await;
    let record = db
        .find_api_key(hash_api_key(&a.key))
        .await
        .unwrap()
        .unwrap();
    assert!(!record.account_zdr);
    let session = db
        .create_session(account.id, Duration::from_secs(600))
        .await
        .unwrap();

    let mut changes = KeyChanges::listen(&db).await;
    let change = db
        .set_zero_data_retention(account.id, session.id, true)
        .await
        .unwrap()
        .unwrap();
    assert!(change.changed && change.zero_data_retention);

    let mut heard = HashSet::new();
    for _ in 0..2 {
        heard.insert(changes.next().await);
    }
    let expected: HashSet<String> = [&a.key, &b.key]
        .into_iter()
        .map(|k| hex::encode(hash_api_key(k)))
        .collect();
    assert_eq!(heard, expected);
    assert!(!heard.contains(&hex::encode(hash_api_key(&foreign.key))));

    let record = db
        .find_api_key(hash_api_key(&b.key))
        .await
        .unwrap()
        .unwrap();
    assert!(record.account_zdr);
    let record = db
        .find_api_key(hash_api_key(&foreign.key))
        .await
        .unwrap()
        .unwrap();
    assert!(!record.account_zdr);

    // Idempotent: the same value again changes nothing and is not audited.
    let again = db
        .set_zero_data_retention(account.id, session.id, true)
        .await
        .unwrap()
        .unwrap();
    assert!(!again.changed);
    db.set_zero_data_retention(account.id, session.id, false)
        .await
        .unwrap();
    let mut conn = db.connection().await.unwrap();
    let audit = router_store::data_protection::changes(&mut conn, account.id)
        .await
        .unwrap();
    assert_eq!(
        audit
            .iter()
            .map(|c| (c.zero_data_retention, c.session_id))
            .collect::<Vec<_>>(),
        [(true, session.id), (false, session.id)]
    );
    // The trail is append-only.
    let error = diesel::sql_query("DELETE FROM data_protection_changes")
        .execute(&mut conn)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("append-only"), "{error}");
}
