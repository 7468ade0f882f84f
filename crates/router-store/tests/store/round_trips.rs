//! The lifecycle's statements cost one round trip each: one statement that
//! diesel-async prepares once per connection and then executes from its
//! statement cache (an uncached statement is prepared on every call, which
//! is a second round trip).

use crate::seed::{funded_account, key_with, new_request, settlement, voiding};
use diesel::connection::{Instrumentation, InstrumentationEvent};
use diesel_async::AsyncConnection;
use router_canonical::Protocol;
use router_core::store::{AttemptOutcome, AttemptRecord};
use router_store::test_support::TestDatabase;
use router_store::{api_keys, billing, hash_api_key, history};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// Counts statements started and statements newly prepared into the cache.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<(usize, usize)>>);

impl Instrumentation for Recorder {
    fn on_connection_event(&mut self, event: InstrumentationEvent<'_>) {
        let mut counts = self.0.lock().unwrap();
        match event {
            InstrumentationEvent::StartQuery { .. } => counts.0 += 1,
            InstrumentationEvent::CacheQuery { .. } => counts.1 += 1,
            _ => {}
        }
    }
}

impl Recorder {
    /// (statements, newly cached statements) since the last call.
    fn take(&self) -> (usize, usize) {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn each_lifecycle_step_is_one_cached_statement() {
    let db = TestDatabase::new().await;
    let funded = funded_account(&db, 1_000_000).await;
    let key = key_with(
        &db,
        funded.account_id,
        &[router_core::store::Scope::Inference],
    )
    .await;
    let recorder = Recorder::default();
    let mut conn = db.connection().await.unwrap();
    conn.set_instrumentation(recorder.clone());

    // Twice: the first pass prepares and caches each statement (proving it
    // is cacheable); the second runs each from the cache.
    for (pass, expected_cached) in [("first", 1), ("second", 0)] {
        let expect = |step: &str, counts: (usize, usize)| {
            assert_eq!(
                counts,
                (1, expected_cached),
                "{step}, {pass} pass: (statements, prepared)"
            );
        };
        let hash = hash_api_key(&key.key);
        assert!(
            api_keys::find_api_key(&mut conn, &hash)
                .await
                .unwrap()
                .is_some()
        );
        expect("find_api_key", recorder.take());

        let request = new_request(&funded, 1_000);
        let id = request.request_id;
        billing::reserve(&mut conn, &request).await.unwrap();
        expect("reserve", recorder.take());

        billing::extend_hold(&mut conn, id, SystemTime::now() + Duration::from_secs(900))
            .await
            .unwrap();
        expect("extend_hold", recorder.take());

        let attempt = AttemptRecord {
            request_id: id,
            attempt_no: 1,
            route_id: "acme-direct".to_owned(),
            supplier_id: "acme".to_owned(),
            upstream_protocol: Protocol::Chat,
            started_at: SystemTime::now(),
            duration_ms: 10,
            outcome: AttemptOutcome::Failed {
                upstream_status: Some(503),
                kind: "status".to_owned(),
                retryable: true,
            },
            supplier_request_id: None,
        };
        history::record_attempt(&mut conn, &attempt).await.unwrap();
        expect("record_attempt", recorder.take());

        // The succeeded attempt rides in the settle statement.
        let mut settled = settlement(id, 700);
        settled.attempt.attempt_no = 2;
        billing::settle(&mut conn, &settled).await.unwrap();
        expect("settle", recorder.take());

        let voided = new_request(&funded, 1_000);
        billing::reserve(&mut conn, &voided).await.unwrap();
        recorder.take();
        billing::void(&mut conn, &voiding(voided.request_id, "client_cancelled"))
            .await
            .unwrap();
        expect("void", recorder.take());

        billing::reap_expired_holds(&mut conn, SystemTime::now())
            .await
            .unwrap();
        expect("reap_expired_holds", recorder.take());
    }
}
