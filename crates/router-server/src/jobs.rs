//! What the HTTP edge knows of background jobs: `POST /admin/jobs/{name}/run`
//! runs one pass of a job of [`App::jobs`] now, counted like a scheduled
//! one. A job's shape is core's (`router_core::jobs::JobSpec`); which jobs
//! exist and how each instance schedules them under its lease row is the
//! process's (`router::jobs`: the registry and the scheduler).

use crate::app::App;
use router_canonical::{ApiError, ErrorCode};
use router_core::jobs::timed_pass;
pub use router_core::jobs::{JobError, JobPass};

/// A job the server runs: its pass takes the whole [`App`].
pub type JobSpec = router_core::jobs::JobSpec<App>;

/// `POST /admin/jobs/{name}/run`: one pass.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(as = AdminJobPass)]
pub struct JobPassView {
    #[schema(value_type = String)]
    pub name: &'static str,
    #[schema(value_type = i64)]
    pub processed: u64,
}

/// `POST /admin/jobs/{name}/run`: one pass now, whatever the schedule.
pub async fn run_now(app: &App, name: Option<&str>) -> Result<JobPassView, ApiError> {
    let job = name
        .and_then(|name| app.jobs.iter().find(|job| job.name == name))
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such job."))?;
    let processed = timed_pass(app, job).await.map_err(|e| {
        tracing::error!(job = job.name, error = %e, "manual job pass failed");
        ApiError::new(
            ErrorCode::InternalError,
            format!("The `{}` pass failed.", job.name),
        )
    })?;
    Ok(JobPassView {
        name: job.name,
        processed,
    })
}

/// What bends time for tests exists only with `ROUTER_ADMIN_TEST_HOOKS=1`:
/// otherwise the route answers as if it did not exist.
pub fn require_test_hooks(app: &App) -> Result<(), ApiError> {
    if app.test_hooks {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::NotFound, "No endpoint here."))
    }
}
