//! Background jobs through the operator API: `POST /admin/jobs/{name}/run`
//! runs one pass now (the hold reaper here), unknown jobs are 404.

use crate::harness::*;
use diesel_async::RunQueryDsl;
use serde_json::json;

#[tokio::test(flavor = "multi_thread")]
async fn a_manual_reaper_pass_releases_expired_holds_once() {
    let (r, c) = TestRouter::start_rich().await;
    // A request whose process died mid-flight: its hold is live but expired.
    r.mock.set_default(slow_reply(60_000));
    let pending = spawn_hello(&r.client, &r.base, &c.key);
    for _ in 0..200 {
        if r.mock.call_count() > 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let mut conn = r.db.database().connection().await.unwrap();
    let expired = diesel::sql_query(
        "UPDATE holds SET expires_at = now() - interval '1 second' WHERE status = 'held'",
    )
    .execute(&mut conn)
    .await
    .unwrap();
    assert_eq!(expired, 1);

    let (status, body) = r
        .admin(reqwest::Method::POST, "/admin/jobs/hold-reaper/run", None)
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body, json!({"name": "hold-reaper", "processed": 1}));
    let account = r.account(&c.account_id).await;
    assert_eq!(account["held_nano_usd"], 0);
    // A second pass finds nothing.
    let (_, body) = r
        .admin(reqwest::Method::POST, "/admin/jobs/hold-reaper/run", None)
        .await;
    assert_eq!(body["processed"], 0);
    pending.abort();

    let (status, body) = r
        .admin(reqwest::Method::POST, "/admin/jobs/no-such-job/run", None)
        .await;
    assert_eq!(status, 404, "{body}");
    assert_eq!(body["error"]["code"], "not_found");
}
