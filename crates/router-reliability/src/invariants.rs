//! The books sampled while load runs (RELIABILITY.md §3, I1–I7): one
//! read-only REPEATABLE READ transaction per sample, so every count comes
//! from one snapshot, every `interval` until stopped.

use anyhow::Result;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncConnection, AsyncPgConnection, SimpleAsyncConnection};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// Violations of each invariant in one snapshot.
#[derive(Debug, Clone, Copy, Default, QueryableByName)]
pub struct Books {
    /// I1: a ledger transaction that does not sum to zero, or a wallet whose
    /// balance is not the sum of its ledger entries (initial + credits −
    /// posted charges).
    #[diesel(sql_type = BigInt)]
    i1: i64,
    /// I2: a wallet whose `held_nano` is not the sum of its live holds and
    /// active credit leases.
    #[diesel(sql_type = BigInt)]
    i2: i64,
    /// I3: a wallet whose balance less its holds is negative.
    #[diesel(sql_type = BigInt)]
    i3: i64,
    /// I4: a hold in an unknown state, a charge above its hold or without a
    /// settled hold, a settled hold without a charge row, a released hold
    /// with one.
    #[diesel(sql_type = BigInt)]
    i4: i64,
    /// I5: a request charged twice, charged without succeeding, or with
    /// more than two attempts on one route.
    #[diesel(sql_type = BigInt)]
    i5: i64,
    /// I6: a key whose charges in a rolling window or this month exceed its
    /// limit.
    #[diesel(sql_type = BigInt)]
    i6: i64,
    /// I7: two video jobs for one (account, `client_task_id`), or an
    /// `unknown` video whose hold is not held.
    #[diesel(sql_type = BigInt)]
    i7: i64,
}

impl Books {
    pub fn violations(&self) -> i64 {
        self.i1 + self.i2 + self.i3 + self.i4 + self.i5 + self.i6 + self.i7
    }
}

const SAMPLE: &str = "
SELECT
  (SELECT count(*) FROM (SELECT txn_id FROM ledger_entries GROUP BY txn_id
                         HAVING sum(amount_nano) <> 0) t)
  + (SELECT count(*) FROM wallets w
     WHERE w.balance_nano <> coalesce((SELECT sum(l.amount_nano) FROM ledger_entries l
                                       WHERE l.ledger_account = 'wallet'
                                         AND l.account_id = w.account_id), 0)) AS i1,
  (SELECT count(*) FROM wallets w
   WHERE w.held_nano <> coalesce((SELECT sum(h.amount_nano) FROM holds h
                                  WHERE h.status = 'held' AND h.account_id = w.account_id), 0)
                        + coalesce((SELECT sum(c.amount_nano) FROM credit_leases c
                                    WHERE c.status = 'active' AND c.account_id = w.account_id), 0)) AS i2,
  (SELECT count(*) FROM wallets WHERE balance_nano - held_nano < 0) AS i3,
  (SELECT count(*) FROM holds WHERE status NOT IN ('held', 'settled', 'released'))
  + (SELECT count(*) FROM (SELECT l.request_id, -sum(l.amount_nano) AS debit
                           FROM ledger_entries l
                           WHERE l.kind = 'charge' AND l.ledger_account = 'wallet'
                           GROUP BY l.request_id) c
     LEFT JOIN holds h ON h.request_id = c.request_id
     WHERE h.request_id IS NULL OR h.status <> 'settled' OR c.debit > h.amount_nano
        OR c.debit < 0)
  + (SELECT count(*) FROM holds h JOIN requests r ON r.id = h.request_id
     WHERE h.status = 'settled' AND coalesce(r.charged_nano, 0) > 0
       AND NOT EXISTS (SELECT 1 FROM ledger_entries l WHERE l.request_id = h.request_id
                       AND l.kind = 'charge')) AS i4,
  (SELECT count(*) FROM (SELECT request_id FROM ledger_entries WHERE kind = 'charge'
                         GROUP BY request_id HAVING count(DISTINCT txn_id) > 1) d)
  + (SELECT count(*) FROM requests WHERE coalesce(charged_nano, 0) > 0 AND status <> 'succeeded')
  + (SELECT count(*) FROM (SELECT request_id FROM attempts GROUP BY request_id, route_id
                           HAVING count(*) > 2) a) AS i5,
  (SELECT count(*) FROM api_keys k
   WHERE k.monthly_budget_nano IS NOT NULL
     AND (SELECT coalesce(sum(r.charged_nano), 0) FROM requests r
          WHERE r.api_key_id = k.id
            AND r.created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC')
         > k.monthly_budget_nano)
  + (SELECT count(*) FROM api_keys k,
            unnest(k.spend_limit_nano, k.spend_limit_seconds) AS s(lim, secs)
     WHERE (SELECT coalesce(sum(r.charged_nano), 0) FROM requests r
            WHERE r.api_key_id = k.id AND r.created_at > now() - make_interval(secs => s.secs))
           > s.lim) AS i6,
  (SELECT count(*) FROM (SELECT account_id, client_task_id FROM videos GROUP BY 1, 2
                         HAVING count(*) > 1) v)
  + (SELECT count(*) FROM videos v JOIN holds h ON h.request_id = v.request_id
     WHERE v.status = 'unknown' AND h.status <> 'held') AS i7";

/// One snapshot of the books.
pub async fn sample(conn: &mut AsyncPgConnection) -> Result<Books> {
    conn.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        .await?;
    let books =
        diesel_async::RunQueryDsl::get_result::<Books>(diesel::sql_query(SAMPLE), conn).await;
    conn.batch_execute("COMMIT").await?;
    Ok(books?)
}

/// What a sampler saw.
#[derive(Debug, Default, Clone)]
pub struct Sampled {
    pub reads: u64,
    pub violations: i64,
    /// The first snapshot with a violation.
    pub first: Option<String>,
    /// Reads that failed (the database was down on purpose).
    pub failed_reads: u64,
    /// The first failed read's error.
    pub first_error: Option<String>,
}

/// Samples the books every `interval` until the returned flag is set; the
/// task answers what it saw.
pub fn spawn_sampler(
    database_url: String,
    interval: Duration,
) -> (Arc<AtomicBool>, tokio::task::JoinHandle<Sampled>) {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let task = tokio::spawn(async move {
        let mut seen = Sampled::default();
        let mut conn: Option<AsyncPgConnection> = None;
        while !flag.load(Ordering::Relaxed) {
            if conn.is_none() {
                conn = AsyncPgConnection::establish(&database_url).await.ok();
            }
            match conn.as_mut() {
                Some(c) => match sample(c).await {
                    Ok(books) => {
                        seen.reads += 1;
                        let v = books.violations();
                        if v > 0 {
                            seen.violations += v;
                            seen.first.get_or_insert_with(|| format!("{books:?}"));
                        }
                    }
                    // Before the first router has migrated the fresh
                    // database there are no books to read.
                    Err(_) if seen.reads == 0 => conn = None,
                    Err(e) => {
                        seen.failed_reads += 1;
                        seen.first_error.get_or_insert_with(|| format!("{e:#}"));
                        conn = None;
                    }
                },
                None if seen.reads == 0 => {}
                None => seen.failed_reads += 1,
            }
            tokio::time::sleep(interval).await;
        }
        // One last read once the load has stopped.
        if let Ok(mut c) = AsyncPgConnection::establish(&database_url).await
            && let Ok(books) = sample(&mut c).await
        {
            seen.reads += 1;
            if books.violations() > 0 {
                seen.violations += books.violations();
                seen.first.get_or_insert_with(|| format!("{books:?}"));
            }
        }
        seen
    });
    (stop, task)
}
