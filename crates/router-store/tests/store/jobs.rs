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

/// Issue 33: a pass holds a short lease and renews it while it runs; a
/// holder that stops renewing (its process died mid-pass) keeps the job from
/// the other instances for one short lease at most, and a stranger cannot
/// renew a lease it does not hold.
#[tokio::test(flavor = "multi_thread")]
async fn a_renewed_lease_is_kept_and_a_dead_holders_lease_ends_with_its_term() {
    let db = TestDatabase::new().await;
    let term = Duration::from_millis(600);
    assert!(db.try_lease_job("reaper", "alive", term).await.unwrap());
    // Renewed within each term, the lease outlives several terms.
    for _ in 0..3 {
        tokio::time::sleep(term / 2).await;
        assert!(db.renew_job_lease("reaper", "alive", term).await.unwrap());
        assert!(!db.try_lease_job("reaper", "other", term).await.unwrap());
    }
    assert!(
        !db.renew_job_lease("reaper", "stranger", term)
            .await
            .unwrap(),
        "only the holder renews"
    );
    // The holder dies: no more renewals. Within one term another takes it.
    tokio::time::sleep(term + Duration::from_millis(100)).await;
    assert!(db.try_lease_job("reaper", "other", term).await.unwrap());
    assert!(
        !db.renew_job_lease("reaper", "alive", term).await.unwrap(),
        "a lease taken over is not the old holder's to renew"
    );
}
