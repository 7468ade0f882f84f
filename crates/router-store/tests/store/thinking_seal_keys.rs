//! The thinking seal key: created once, whoever asks first, and the same for
//! every instance afterwards (router thinking signatures, issue 14 item 9).

use router_core::SealKey;
use router_store::test_support::TestDatabase;

#[tokio::test(flavor = "multi_thread")]
async fn instances_starting_together_agree_on_one_key() {
    let db = TestDatabase::new().await;
    let instances = (0..8).map(|_| {
        let db = db.database().clone();
        tokio::spawn(async move { SealKey::load(&db).await })
    });
    let keys: Vec<[u8; 32]> = futures::future::join_all(instances)
        .await
        .into_iter()
        .map(|key| *key.unwrap().unwrap().as_bytes())
        .collect();
    assert!(keys.iter().all(|key| key == &keys[0]), "one key for all");
    assert_ne!(keys[0], [0u8; 32]);
    // Later starts read the same key.
    let later = SealKey::load(db.database()).await.unwrap();
    assert_eq!(later.as_bytes(), &keys[0]);
    assert_eq!(format!("{later:?}"), "SealKey(redacted)");
}

#[tokio::test(flavor = "multi_thread")]
async fn each_deployment_gets_its_own_key() {
    let a = TestDatabase::new().await;
    let b = TestDatabase::new().await;
    let key_a = SealKey::load(a.database()).await.unwrap();
    let key_b = SealKey::load(b.database()).await.unwrap();
    assert_ne!(key_a.as_bytes(), key_b.as_bytes());
}
