//! The shape of a background job: a stable name, an interval and a pass
//! over the context `C` the process runs it in (the server's `App`). Which
//! jobs exist and how instances share them under lease rows is the
//! process's (`router::jobs`); core's own passes are in `maintenance.rs`.

use crate::store::StoreError;
use futures::future::BoxFuture;
use std::time::Duration;

/// Why a pass failed (logged, recorded on the lease row, answered 500 to a
/// manual run).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct JobError(pub String);

impl From<StoreError> for JobError {
    fn from(error: StoreError) -> Self {
        JobError(error.to_string())
    }
}

/// One pass of a job: how many items it processed.
pub type JobPass<C> = for<'a> fn(&'a C) -> BoxFuture<'a, Result<u64, JobError>>;

/// One background job.
pub struct JobSpec<C: 'static> {
    /// Stable, in `/admin/jobs/{name}/run`.
    pub name: &'static str,
    /// How long after a pass starts the next may start.
    pub every: fn(&C) -> Duration,
    pub run: JobPass<C>,
}

/// One pass of `job` over `context`, counted and timed on this instance
/// (`router_job_passes_total`, `router_job_duration_seconds`): a scheduled
/// pass and a manual one alike.
pub async fn timed_pass<C>(context: &C, job: &JobSpec<C>) -> Result<u64, JobError> {
    let started = std::time::Instant::now();
    let outcome = (job.run)(context).await;
    metrics::counter!(
        "router_job_passes_total",
        "job" => job.name,
        "outcome" => if outcome.is_ok() { "succeeded" } else { "failed" }
    )
    .increment(1);
    metrics::histogram!("router_job_duration_seconds", "job" => job.name)
        .record(started.elapsed().as_secs_f64());
    outcome
}
