//! The gauges `/metrics` reads from the database when it is scraped: this
//! instance's connection pool, and state every instance shares (holds
//! outstanding, credits granted, background jobs' last passes), so each
//! instance reports the same value and a dashboard takes one of them
//! (`max`) instead of adding instances up.

use router_store::Database;

/// This instance's pool, and the gauges of state every instance shares
/// read from the database; `false` when that could not be read (the last
/// values stay).
pub async fn record(db: &Database) -> bool {
    let (open, in_use, waiting, max) = db.pool_status();
    metrics::gauge!("router_db_connections_open").set(open as f64);
    metrics::gauge!("router_db_connections_in_use").set(in_use as f64);
    metrics::gauge!("router_db_pool_waiting").set(waiting as f64);
    metrics::gauge!("router_db_connections_max").set(max as f64);
    // This instance's own: what its credit leases hold, free and in flight.
    metrics::gauge!("router_credit_leases_nano_usd").set(db.leased_nano() as f64);
    let (holds, granted, jobs) = tokio::join!(
        db.outstanding_holds(),
        db.credits_granted(),
        db.job_passes()
    );
    let mut ok = true;
    match granted {
        Ok(nano_usd) => metrics::gauge!("router_credits_granted_nano_usd").set(nano_usd as f64),
        Err(e) => {
            tracing::debug!(error = %e, "metrics: cannot read credits granted");
            ok = false;
        }
    }
    match holds {
        Ok(holds) => {
            metrics::gauge!("router_holds_outstanding").set(holds.count as f64);
            metrics::gauge!("router_holds_outstanding_nano_usd").set(holds.nano_usd as f64);
            metrics::gauge!("router_holds_expired").set(holds.expired as f64);
            metrics::gauge!("router_holds_oldest_age_seconds").set(holds.oldest_age_secs as f64);
        }
        Err(e) => {
            tracing::debug!(error = %e, "metrics: cannot read outstanding holds");
            ok = false;
        }
    }
    match jobs {
        Ok(jobs) => {
            for job in jobs {
                if let Some(finished) = job.last_finished_at {
                    metrics::gauge!("router_job_last_finished_timestamp_seconds", "job" => job.name.clone())
                        .set(finished.timestamp() as f64);
                }
                metrics::gauge!("router_job_last_failed", "job" => job.name)
                    .set(if job.last_failed { 1.0 } else { 0.0 });
            }
        }
        Err(e) => {
            tracing::debug!(error = %e, "metrics: cannot read job passes");
            ok = false;
        }
    }
    ok
}
