//! A video job as the operator sees it, and its reconciliation: what
//! `GET /admin/videos/{id}`, `POST /admin/videos/{id}/reconcile` and
//! `router videos show|reconcile` share. The job is read and reconciled
//! through core (`Gateway::video_job`, `Gateway::reconcile_video`: the
//! decision and its money are core's); here is the operator's view of it,
//! which includes the supplier's own failure text and task id.

use router_canonical::ApiError;
use router_core::Gateway;
use router_core::ownership::Resource;
use router_core::store::{Store, VideoJob, VideoStore};
use router_core::supplier::Suppliers;
use router_core::video_jobs::{Reconcile, parse_public_id, public_id, unix_seconds};
use serde::Serialize;
use uuid::Uuid;

/// `GET /admin/videos/{id}`: a video job as the operator sees it.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = AdminVideo))]
pub struct VideoRecord {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    id: String,
    /// `admin.video`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    object: &'static str,
    account_id: Uuid,
    api_key_id: Uuid,
    request_id: Uuid,
    client_task_id: String,
    model: String,
    route_id: String,
    supplier_id: String,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    status: &'static str,
    #[cfg_attr(feature = "openapi", schema(value_type = i32))]
    progress: u8,
    #[cfg_attr(feature = "openapi", schema(required))]
    upstream_task_id: Option<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = f64))]
    charge_usd: serde_json::Value,
    #[cfg_attr(feature = "openapi", schema(required))]
    fail_reason: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    supplier_error: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<i64>))]
    content_bytes: Option<u64>,
    #[cfg_attr(feature = "openapi", schema(value_type = i32))]
    polls: u32,
    /// Unix seconds.
    created_at: i64,
    updated_at: i64,
    #[cfg_attr(feature = "openapi", schema(required))]
    completed_at: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    next_poll_at: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    reconciled_at: Option<i64>,
}

impl From<&VideoJob> for VideoRecord {
    fn from(job: &VideoJob) -> VideoRecord {
        VideoRecord {
            id: public_id(job.id),
            object: "admin.video",
            account_id: job.account_id,
            api_key_id: job.api_key_id,
            request_id: job.request_id,
            client_task_id: job.client_task_id.clone(),
            model: job.model.clone(),
            route_id: job.route_id.clone(),
            supplier_id: job.supplier_id.clone(),
            status: job.status.as_str(),
            progress: job.progress,
            upstream_task_id: job.upstream_task_id.clone(),
            charge_usd: job.charge.to_usd_json(),
            fail_reason: job.fail_reason.clone(),
            supplier_error: job.supplier_error.clone(),
            content_bytes: job.content_bytes,
            polls: job.polls,
            created_at: unix_seconds(job.created_at),
            updated_at: unix_seconds(job.updated_at),
            completed_at: job.completed_at.map(unix_seconds),
            next_poll_at: job.next_poll_at.map(unix_seconds),
            reconciled_at: job.reconciled_at.map(unix_seconds),
        }
    }
}

/// The job of public id `id`, any account's; a malformed or unknown id is
/// the video's one 404.
async fn find<S: Store + VideoStore, P: Suppliers>(
    gateway: &Gateway<S, P>,
    id: &str,
) -> Result<VideoJob, ApiError> {
    gateway
        .video_job(parse_public_id(id)?)
        .await?
        .ok_or_else(|| Resource::Video.not_found())
}

/// `GET /admin/videos/{id}` and `router videos show`.
pub async fn show_video<S: Store + VideoStore, P: Suppliers>(
    gateway: &Gateway<S, P>,
    id: &str,
) -> Result<VideoRecord, ApiError> {
    Ok(VideoRecord::from(&find(gateway, id).await?))
}

/// `POST /admin/videos/{id}/reconcile` and `router videos reconcile`: the
/// decision is core's (`Gateway::reconcile_video`).
pub async fn reconcile_video<S: Store + VideoStore, P: Suppliers>(
    gateway: &Gateway<S, P>,
    id: &str,
    body: Reconcile,
) -> Result<VideoRecord, ApiError> {
    let job = find(gateway, id).await?;
    let job = gateway.reconcile_video(job, body).await?;
    Ok(VideoRecord::from(&job))
}
