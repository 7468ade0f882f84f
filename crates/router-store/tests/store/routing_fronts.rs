//! What the in-process fronts of issue 16 rely on in the store: a trigger
//! announcing every change of an account's experiments, and an affinity
//! refresh that never overwrites another instance's newer choice (F-14).

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures::StreamExt;
use router_core::ExperimentStatus;
use router_store::affinity;
use router_store::experiments::EXPERIMENT_CHANGED_CHANNEL;
use router_store::test_support::TestDatabase;
use std::time::Duration;

async fn next_payload(
    notifications: &mut (
             impl futures::Stream<Item = Result<diesel::pg::PgNotification, diesel::result::Error>>
             + Unpin
         ),
) -> String {
    // Fails (an elapsed timeout) when nothing is heard within 5 s.
    let notification = tokio::time::timeout(Duration::from_secs(5), notifications.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(notification.channel, EXPERIMENT_CHANGED_CHANNEL);
    notification.payload
}

#[tokio::test(flavor = "multi_thread")]
async fn every_experiment_change_is_announced_with_its_account() {
    let db = TestDatabase::new().await;
    let account = db.create_account("exp@example.test", true).await.unwrap();
    let mut listener = AsyncPgConnection::establish(db.url()).await.unwrap();
    diesel::sql_query(format!("LISTEN {EXPERIMENT_CHANGED_CHANNEL}"))
        .execute(&mut listener)
        .await
        .unwrap();
    let variants: Vec<router_core::Variant> =
        serde_json::from_value(serde_json::json!([{"name": "a", "weight": 1}])).unwrap();
    db.create_experiment(account.id, "tone", &variants)
        .await
        .unwrap();
    db.set_experiment_status(account.id, "tone", ExperimentStatus::Running, None)
        .await
        .unwrap();
    let mut conn = db.connection().await.unwrap();
    diesel::sql_query("DELETE FROM experiments")
        .execute(&mut conn)
        .await
        .unwrap();
    let mut notifications = std::pin::pin!(listener.notifications_stream());
    for change in ["insert", "update", "delete"] {
        assert_eq!(
            next_payload(&mut notifications).await,
            account.id.to_string(),
            "{change}"
        );
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_refresh_extends_its_own_route_and_leaves_a_newer_choice_alone() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    let prefix = [7; 32];
    // No row yet: the refresh stores it.
    assert!(
        affinity::refresh(&mut conn, &prefix, "primary", 300)
            .await
            .unwrap()
    );
    assert!(
        affinity::refresh(&mut conn, &prefix, "primary", 300)
            .await
            .unwrap()
    );
    // Another instance chose the fallback: a late refresh of the primary
    // does not undo that choice.
    affinity::record(&mut conn, &prefix, "fallback", 300)
        .await
        .unwrap();
    assert!(
        !affinity::refresh(&mut conn, &prefix, "primary", 300)
            .await
            .unwrap()
    );
    let hint = affinity::lookup(&mut conn, &prefix).await.unwrap().unwrap();
    assert_eq!(hint.route_id, "fallback");
    assert!(hint.fresh && hint.remaining > Duration::from_secs(290));
}
