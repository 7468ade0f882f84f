//! Background jobs: every pass of work that is not a request (the hold
//! reaper, digests and the outbox, cache purges, upload expiry and purge,
//! the video poller).
//!
//! Each instance runs every job of [`REGISTRY`] on the job's interval, but a
//! scheduled pass starts only under the job's lease row in PostgreSQL
//! (`router_store::jobs`), so with several instances one runs it, and the
//! next pass waits for the interval whichever instance takes it. The work
//! inside a pass claims its items with `FOR UPDATE SKIP LOCKED`, so passes
//! that overlap anyway (a manual run, a lease that ran out under a slow
//! pass) never process an item twice. `POST /admin/jobs/{name}/run`
//! (`router_server::jobs::run_now`) runs one pass of a job of this registry
//! now, for operators and tests.
//!
//! Adding a job: one [`JobSpec`] row in [`REGISTRY`] whose pass is one call
//! into its wing (or core), returning how many items it processed.

use futures::TryFutureExt;
use router_core::jobs::timed_pass;
use router_server::App;
use router_server::jobs::{JobError, JobSpec};
use std::sync::Arc;
use std::time::Duration;

/// Every job.
pub static REGISTRY: &[JobSpec] = &[
    JobSpec {
        name: "hold-reaper",
        every: |app| app.reaper_interval,
        run: |app| Box::pin(reap_expired_holds(app)),
    },
    // Channels (`router_notify::jobs`): queue due digests and key-expiry
    // events, then relay the outbox.
    JobSpec {
        name: "digest-scheduler",
        every: |_| Duration::from_secs(300),
        run: |app| Box::pin(digest_scheduler(app)),
    },
    JobSpec {
        name: "outbox",
        every: |_| Duration::from_secs(30),
        run: |app| Box::pin(outbox(app)),
    },
    JobSpec {
        name: "response-cache-purge",
        every: |_| Duration::from_secs(600),
        run: |app| Box::pin(purge_response_cache(app)),
    },
    JobSpec {
        name: "affinity-purge",
        every: |_| Duration::from_secs(3600),
        run: |app| Box::pin(purge_affinity(app)),
    },
    JobSpec {
        name: "upload-expiry",
        every: |app| app.uploads.settings.every,
        run: |app| Box::pin(TryFutureExt::err_into(app.uploads.expiry_pass())),
    },
    // Video jobs (`videos.rs`): poll each active job once per interval,
    // complete (content copied, then settled) or fail (released).
    JobSpec {
        name: "video-poller",
        every: |app| app.videos.poll_interval,
        run: |app| Box::pin(video_poller(app)),
    },
    JobSpec {
        name: "upload-purge",
        every: |app| app.uploads.settings.every,
        run: |app| Box::pin(TryFutureExt::err_into(app.uploads.purge_pass())),
    },
];

async fn digest_scheduler(app: &App) -> Result<u64, JobError> {
    Ok(app.notify.digest_pass(chrono::Utc::now()).await?)
}

/// Orphaned submissions become `unknown`, then every due job is polled
/// once (`router_core::video_jobs`); how many were polled.
async fn video_poller(app: &App) -> Result<u64, JobError> {
    Ok(app.gateway.poll_videos(app.videos, &app.uploads).await?)
}

async fn outbox(app: &App) -> Result<u64, JobError> {
    Ok(app.notify.outbox_pass().await?)
}

/// Deletes prompt-cache route preferences that expired a day ago or more.
async fn purge_affinity(app: &App) -> Result<u64, JobError> {
    Ok(app.gateway.purge_affinity().await?)
}

/// Deletes exact-response cache entries older than any key's TTL.
async fn purge_response_cache(app: &App) -> Result<u64, JobError> {
    Ok(app.gateway.purge_response_cache().await?)
}

/// Releases holds of requests that died with their process.
async fn reap_expired_holds(app: &App) -> Result<u64, JobError> {
    // The reliability suite kills a router here, its pass holding the
    // job's lease (`router_core::failpoints`).
    router_core::failpoints::reached("KR").await;
    Ok(app.gateway.reap_expired_holds().await?)
}

/// The lease a running pass holds, renewed every [`RENEW_EVERY`] while it
/// runs: a slow pass keeps its job, and an instance that died mid-pass
/// keeps it from the others for this long at most (it was 60 s whatever
/// the job's interval, issue 33: a killed router delayed every other
/// instance's hold reaper by up to a minute).
const PASS_LEASE: Duration = Duration::from_secs(10);
/// How often a running pass renews its lease: three renewals a lease, so
/// one slow or failed renewal does not lose it.
const RENEW_EVERY: Duration = Duration::from_millis(3_300);

/// Runs every job in the background on this instance until the process
/// ends; `holder` names this instance on the lease rows.
///
/// Each job's loop asks for the lease when it is due, not on a fixed tick:
/// after its own pass it sleeps one interval from the pass's start (the
/// lease row says the same), and when another instance holds the lease it
/// sleeps until that lease runs out (at most one interval, so a row pushed
/// far ahead is read again). Passes therefore start once an interval,
/// whichever instance runs them.
pub fn spawn_all(app: Arc<App>, holder: String) {
    for job in REGISTRY {
        let app = app.clone();
        let holder = holder.clone();
        tokio::spawn(async move {
            let every = (job.every)(&app).max(MIN_INTERVAL);
            loop {
                let wait = scheduled_pass(&app, job, &holder, every).await;
                tokio::time::sleep(wait).await;
            }
        });
    }
}

/// Jobs run no more often than this, whatever their setting.
const MIN_INTERVAL: Duration = Duration::from_millis(100);
/// The least pause between two asks for a lease (a lease that runs out
/// within a few milliseconds is asked for again after this).
const MIN_PAUSE: Duration = Duration::from_millis(10);

/// Asks for the job's lease and runs a pass if it is granted; how long to
/// wait before asking again.
async fn scheduled_pass(app: &App, job: &JobSpec, holder: &str, every: Duration) -> Duration {
    let started = tokio::time::Instant::now();
    let db = app.gateway.store();
    match db.try_lease_job(job.name, holder, PASS_LEASE).await {
        Ok(true) => {}
        Ok(false) => {
            // Another instance holds it: ask again when its lease runs out.
            return match db.job_due_in(job.name).await {
                Ok(due) => due.clamp(MIN_PAUSE, every),
                Err(_) => every,
            };
        }
        Err(e) => {
            // Every job, every interval, while the database is away.
            static LEASE_FAILED: router_core::throttle::Throttle =
                router_core::throttle::Throttle::new();
            if let Some(held_back) = LEASE_FAILED.allow(Duration::from_secs(60)) {
                tracing::warn!(job = job.name, error = %e, held_back, "could not take the job's lease");
            }
            return every;
        }
    }
    let outcome = renewing_lease(db, job.name, holder, timed_pass(app, job)).await;
    if let Err(e) = &outcome {
        tracing::warn!(job = job.name, error = %e, "job pass failed");
    }
    let recorded = outcome.as_ref().map(|n| *n).map_err(|e| e.0.as_str());
    if let Err(e) = db.finish_job(job.name, holder, every, recorded).await {
        tracing::warn!(job = job.name, error = %e, "could not record the job's pass");
    }
    (started + every)
        .saturating_duration_since(tokio::time::Instant::now())
        .max(MIN_PAUSE)
}

/// Runs `pass`, renewing `holder`'s lease of job `name` every
/// [`RENEW_EVERY`] until it ends.
async fn renewing_lease<T>(
    db: &router_store::Database,
    name: &str,
    holder: &str,
    pass: impl std::future::Future<Output = T>,
) -> T {
    let mut pass = std::pin::pin!(pass);
    let mut renew =
        tokio::time::interval_at(tokio::time::Instant::now() + RENEW_EVERY, RENEW_EVERY);
    renew.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            outcome = &mut pass => return outcome,
            _ = renew.tick() => match db.renew_job_lease(name, holder, PASS_LEASE).await {
                Ok(true) => {}
                Ok(false) => tracing::warn!(job = name, "the job's lease was taken over while its pass ran"),
                Err(e) => tracing::warn!(job = name, error = %e, "could not renew the job's lease"),
            },
        }
    }
}
