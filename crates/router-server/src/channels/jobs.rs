//! The admin jobs' HTTP side: `POST /admin/jobs/{name}/run` (one pass now;
//! with test hooks, the `digest-scheduler` as if at another time) and the
//! `POST /admin/requests/backdate` test hook that moves requests into
//! another digest period. The passes are the notifications wing's
//! (`router_notify::jobs`) and the registry's (`crate::jobs`).

use crate::app::App;
use crate::jobs::JobPassView;
use chrono::{DateTime, Utc};

/// `POST /admin/jobs/{name}/run`'s optional body.
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AdminJobRun)]
pub struct JobRun {
    /// The instant a `digest-scheduler` pass takes as now (test hooks only).
    #[schema(value_type = String, format = DateTime)]
    as_of: DateTime<Utc>,
}

/// `POST /admin/requests/backdate` (test hooks only).
#[derive(serde::Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = AdminBackdate)]
pub struct Backdate {
    request_ids: Vec<uuid::Uuid>,
    #[schema(value_type = String, format = DateTime)]
    finished_at: DateTime<Utc>,
}

/// How many finished requests moved.
#[derive(serde::Serialize, utoipa::ToSchema)]
#[schema(as = AdminBackdated)]
pub struct Backdated {
    #[schema(value_type = i64)]
    moved: usize,
}

/// `POST /admin/jobs/{name}/run`: one pass now. With test hooks on, the
/// `digest-scheduler` takes `{"as_of": RFC 3339}` to run as if it were then;
/// without them a body with `as_of` is 404 like the hook itself.
pub async fn run_job(
    app: &App,
    request: http::Request<crate::body::Incoming>,
    name: Option<&str>,
    request_id: &str,
) -> Result<http::Response<crate::reply::Body>, router_canonical::ApiError> {
    let (parts, body) = request.into_parts();
    let bytes =
        crate::body::read_limited(&parts.headers, body, crate::body::ADMIN_BODY_LIMIT).await?;
    let view = if bytes.iter().all(u8::is_ascii_whitespace) {
        crate::jobs::run_now(app, name).await?
    } else {
        crate::jobs::require_test_hooks(app)?;
        let mut de = serde_json::Deserializer::from_slice(&bytes);
        let as_of: JobRun = serde_path_to_error::deserialize(&mut de)
            .map_err(|e| router_canonical::ApiError::invalid("as_of", e.inner().to_string()))?;
        if name != Some("digest-scheduler") {
            return Err(router_canonical::ApiError::invalid(
                "as_of",
                "Only the digest-scheduler takes `as_of`.",
            ));
        }
        let processed = app.notify.digest_pass(as_of.as_of).await.map_err(|e| {
            tracing::error!(error = %e, "digest-scheduler pass failed");
            router_canonical::ApiError::new(
                router_canonical::ErrorCode::InternalError,
                "The `digest-scheduler` pass failed.",
            )
        })?;
        JobPassView {
            name: "digest-scheduler",
            processed,
        }
    };
    Ok(crate::reply::json_value(
        http::StatusCode::OK,
        &view,
        request_id,
    ))
}

/// `POST /admin/requests/backdate` `{request_ids, finished_at}` (test hooks
/// only): moves finished requests into another period.
pub async fn backdate_requests(
    app: &App,
    request: http::Request<crate::body::Incoming>,
    request_id: &str,
) -> Result<http::Response<crate::reply::Body>, router_canonical::ApiError> {
    crate::jobs::require_test_hooks(app)?;
    let body: Backdate = crate::body::json_body(request, crate::body::ADMIN_BODY_LIMIT).await?;
    let moved = app
        .notify
        .backdate_requests(&body.request_ids, body.finished_at)
        .await
        .map_err(router_operator::store_error)?;
    Ok(crate::reply::json_value(
        http::StatusCode::OK,
        &Backdated { moved },
        request_id,
    ))
}
