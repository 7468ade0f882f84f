//! Job leases: of instances asking at once, one runs the pass; the next
//! scheduled pass waits for the interval, whichever instance asks.

use router_store::test_support::TestDatabase;
use std::time::Duration;

/// Whether `holder` takes `job`'s lease for a minute.
async fn lease(db: &TestDatabase, job: &str, holder: &str) -> bool {
    let lease = db.try_lease_job(job, holder, Duration::from_secs(60)).await;
    lease.unwrap()
}

#[tokio::test(flavor = "multi_thread")]
async fn one_of_many_instances_takes_a_pass_and_the_next_waits() {
    let db = TestDatabase::new().await;
    let asks = (0..8).map(|i| {
        let db = db.database().clone();
        tokio::spawn(async move {
            db.try_lease_job("reaper", &format!("instance-{i}"), Duration::from_secs(60))
                .await
                .unwrap()
        })
    });
    let taken: Vec<bool> = futures::future::join_all(asks)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert_eq!(taken.iter().filter(|t| **t).count(), 1, "{taken:?}");
    let holder = format!("instance-{}", taken.iter().position(|t| *t).unwrap());

    // While the pass runs, and after it until the interval passes, nobody
    // else starts one; another job is independent.
    assert!(!lease(&db, "reaper", "late").await);
    assert!(lease(&db, "purge", "late").await);
    db.finish_job("reaper", &holder, Duration::from_secs(3600), Ok(7))
        .await
        .unwrap();
    assert!(!lease(&db, "reaper", "late").await);
    // Only the holder records a pass: a stranger's finish changes nothing.
    db.finish_job("reaper", "stranger", Duration::ZERO, Err("boom"))
        .await
        .unwrap();
    assert!(!lease(&db, "reaper", "late").await);
    // A zero interval makes the job due again at once.
    db.finish_job("reaper", &holder, Duration::ZERO, Ok(0))
        .await
        .unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(lease(&db, "reaper", "next").await);
}
