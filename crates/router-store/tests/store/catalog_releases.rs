//! Catalog releases and their price changes (issue 17): recorded once per
//! distinct text, compared per model in SQL, serialised across instances.

use diesel_async::AsyncPgConnection;
use router_store::catalog_releases::{self, ModelSnapshot, Recorded};
use router_store::test_support::TestDatabase;

fn model(id: &str, price: u32) -> ModelSnapshot {
    ModelSnapshot {
        model_id: id.to_owned(),
        entry: format!(r#"{{"id":"{id}"}}"#),
        pricing: format!(r#"{{"input_usd_per_mtok":{price}}}"#),
    }
}

/// Records `c.toml` as `text` with `digest` and these models.
async fn record(
    conn: &mut AsyncPgConnection,
    text: &str,
    digest: &str,
    models: &[ModelSnapshot],
) -> Recorded {
    let recorded = catalog_releases::record(conn, "c.toml", text, digest, models).await;
    recorded.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn releases_append_changes_only_for_what_changed() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    let first = record(&mut conn, "v1", "d1", &[model("a", 1), model("b", 2)]).await;
    assert_eq!((first.release, first.changed, first.created), (1, 2, true));
    // The same text again is the same release.
    let same = record(&mut conn, "v1", "d1", &[model("a", 1), model("b", 2)]).await;
    assert_eq!((same.release, same.changed, same.created), (1, 0, false));
    // b repriced, a unchanged (JSON equality, not text), c new, then d gone.
    let mut a_reordered = model("a", 1);
    a_reordered.pricing = r#"{ "input_usd_per_mtok" : 1 }"#.to_owned();
    let second = record(
        &mut conn,
        "v2",
        "d2",
        &[a_reordered, model("b", 3), model("c", 1)],
    )
    .await;
    assert_eq!((second.release, second.changed), (2, 2));
    let third = record(&mut conn, "v3", "d3", &[model("a", 1), model("c", 1)]).await;
    assert_eq!((third.release, third.changed), (3, 1));
    let epoch = chrono::DateTime::<chrono::Utc>::UNIX_EPOCH;
    let latest = catalog_releases::latest_changes(&mut conn, 3, epoch)
        .await
        .unwrap();
    let kinds: Vec<(&str, &str, bool)> = latest
        .iter()
        .map(|r| (r.model_id.as_str(), r.kind.as_str(), r.previous.is_some()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a", "updated", false),
            ("c", "updated", false),
            ("b", "removed", true)
        ],
        "one row per model, ascending by (changed_at, position): a in 1, c in 2, b gone in 3"
    );
    let removed = &latest[2];
    assert!(removed.model.is_none() && removed.current.is_none());
    // As of release 2, b's latest change is its repricing.
    let as_of_two = catalog_releases::latest_changes(&mut conn, 2, epoch)
        .await
        .unwrap();
    let b = as_of_two.iter().find(|r| r.model_id == "b").unwrap();
    assert_eq!(
        (b.kind.as_str(), b.current.as_deref()),
        ("updated", Some(r#"{"input_usd_per_mtok": 3}"#))
    );
    // Only real price changes date `pricing_updated_at`.
    let changed = catalog_releases::price_changed_at(&mut conn, 3)
        .await
        .unwrap();
    assert_eq!(
        changed.iter().map(|(m, _)| m.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn instances_recording_together_number_releases_without_gaps() {
    let db = TestDatabase::new().await;
    let instances = (0..6).map(|i| {
        let db = db.database().clone();
        tokio::spawn(async move {
            let mut conn = db.connection().await.unwrap();
            let text = format!("text {i}");
            catalog_releases::record(&mut conn, "c.toml", &text, &text, &[model("a", i)])
                .await
                .unwrap()
                .release
        })
    });
    let mut releases: Vec<i64> = futures::future::join_all(instances)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    releases.sort_unstable();
    assert_eq!(releases, [1, 2, 3, 4, 5, 6]);
    let mut conn = db.connection().await.unwrap();
    assert_eq!(catalog_releases::latest_number(&mut conn).await.unwrap(), 6);
    let stored = catalog_releases::release(&mut conn, 6)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.path, "c.toml");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_cursor_key_is_created_once() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    let first = catalog_releases::cursor_key(&mut conn, &[1u8; 32])
        .await
        .unwrap();
    let second = catalog_releases::cursor_key(&mut conn, &[2u8; 32])
        .await
        .unwrap();
    assert_eq!(first, vec![1u8; 32]);
    assert_eq!(second, first);
}
