//! Image generation (section N): reserve the model's fixed per-image price,
//! make one supplier attempt on one route (no retry, no fallback, N-08)
//! within the image deadline, and settle that price only for one complete,
//! validated PNG (N-02, N-09); otherwise release the hold.
//!
//! **Client cancellation (CF-20, N-10).** After the hold is taken, the
//! attempt and its settlement run in a task of their own, so dropping the
//! caller's future (the client left) never interrupts a settlement half
//! way. The task releases the hold if the client is gone before the
//! settlement starts (while the supplier works, or once it answered);
//! once the settlement has started it commits, and the charge stands. So
//! every request ends exactly one way, charged and recorded as succeeded
//! or released, and its final status is readable by request ID.

use crate::catalog::{Modality, Model, Route};
use crate::gateway::{Gateway, Reservation, internal};
use crate::product_codes;
use crate::store::{ApiKeyRecord, AttemptOutcome, AttemptRecord, NewRequest, Requester, Store};
use crate::supplier::{AttemptCall, AttemptCause, AttemptError, FailureKind, Suppliers};
use router_canonical::{ApiError, ErrorCode, ImageRequest, NanoUsd, Protocol, Usage};
use std::sync::Arc;
use std::time::{Duration, SystemTime};
use tokio::time::Instant;
use uuid::Uuid;

/// One image request as the server hands it over: authenticated (scope
/// `inference`, IP policy) and parsed. The protocol is always
/// [`Protocol::Images`].
#[derive(Debug, Clone)]
pub struct ImageCall<'a> {
    pub request_id: Uuid,
    /// The key the request came with: its model policy, its account's zero
    /// data retention (J-14, GP-38; the image body has no `zdr` field).
    pub key: &'a ApiKeyRecord,
    /// Filled as the lifecycle goes, for the request's log line.
    pub trace: Arc<crate::trace::RequestTrace>,
}

/// One settled image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedPng {
    /// The validated PNG.
    pub png: Vec<u8>,
    /// What was charged: the model's per-image price.
    pub charged: NanoUsd,
    /// Unix seconds.
    pub created: i64,
}

/// The model and the one route an image request goes to.
#[derive(Debug, Clone)]
pub struct ImagePlan {
    pub model: Arc<Model>,
    pub route: Arc<Route>,
    pub price: NanoUsd,
}

/// Resolve the image model (404 unknown; 400 `invalid_parameter` naming
/// `model` for a model that generates no images, GP-67) and its route: the
/// enabled `images` route of highest priority, then lowest operator cost.
/// The key's model policy is checked before ([`Gateway::generate_image`]).
/// With `zdr`
/// (the account's data-protection switch, J-14) only routes marked `zdr`
/// qualify; none is 503 `zdr_capacity_unavailable`.
pub fn plan(
    catalog: &crate::Catalog,
    request: &ImageRequest,
    zdr: bool,
) -> Result<ImagePlan, ApiError> {
    let model = crate::routing::find_model(catalog, &request.model)?;
    let price = match (model.modality, model.image_price()) {
        (Modality::Image, Some(price)) => price,
        _ => {
            return Err(ApiError::invalid(
                "model",
                format!("The model `{}` cannot generate images.", request.model),
            ));
        }
    };
    let route = crate::routing::single_route(catalog, &model.id, Protocol::Images, zdr)?;
    Ok(ImagePlan {
        model,
        route,
        price,
    })
}

/// What the attempt task hands back to the waiting caller.
type TaskResult = Result<GeneratedPng, ApiError>;

impl<S: Store, P: Suppliers> Gateway<S, P> {
    /// The model (404 unknown, 403 outside the key's policy, 400 not an
    /// image model), then reserve, generate once, validate, settle (see
    /// the module docs).
    pub async fn generate_image(
        &self,
        call: ImageCall<'_>,
        request: ImageRequest,
    ) -> Result<GeneratedPng, ApiError> {
        let catalog = self.catalog();
        // Unknown first (404, from the plan), then the key's model policy
        // (403, A-18), then whether the model generates images (400, GP-67).
        crate::pipeline::check_model(&catalog, call.key, &call.trace, &request.model)?;
        let plan = plan(&catalog, &request, call.key.account_zdr)?;
        // Nothing extends an image's hold while the supplier works: it
        // must outlive the image deadline, or the reaper could release it
        // under a generation that then cannot settle.
        let config = &self.inner.config;
        let hold_expires_at = SystemTime::now()
            + config
                .hold_lease
                .max(config.image_deadline + Duration::from_secs(60));
        let new = NewRequest::admit(
            call.request_id,
            Requester::of(call.key),
            plan.model.id.clone(),
            Protocol::Images,
            plan.price,
            hold_expires_at,
        );
        let reservation = self.reserve(new, call.trace).await?;
        let (reply, outcome) = tokio::sync::oneshot::channel::<TaskResult>();
        let gateway = self.clone();
        tokio::spawn(async move {
            gateway
                .attempt_image(plan, request, reservation, reply)
                .await;
        });
        match outcome.await {
            Ok(result) => result,
            Err(_) => Err(internal(&"the image task stopped")),
        }
    }

    async fn attempt_image(
        &self,
        plan: ImagePlan,
        request: ImageRequest,
        mut reservation: Reservation<S, P>,
        mut reply: tokio::sync::oneshot::Sender<TaskResult>,
    ) {
        let deadline = self.inner.config.image_deadline;
        let started_at = SystemTime::now();
        let started = Instant::now();
        reservation.trace.attempt_started(&plan.route);
        let call = AttemptCall::new(reservation.request_id, reservation.trace.attempt_context());
        let attempt = self
            .inner
            .suppliers
            .generate_image(&plan.route, &request, &call);
        let mut stop = self.shutdown().watcher();
        let result = tokio::select! {
            result = tokio::time::timeout(deadline, attempt) => match result {
                Ok(result) => result,
                Err(_) => Err(AttemptError::timeout()),
            },
            // The router's drain ended with the supplier still working: the
            // attempt is recorded, the hold voided, the client answered 503.
            () = stop.stopped() => Err(AttemptError::shutdown()),
            // The client left while the supplier worked: nothing to deliver.
            () = reply.closed() => Err(AttemptError {
                kind: FailureKind::Transport,
                retry: crate::supplier::Retry::Stop,
                upstream_status: None,
                cause: AttemptCause::Observed("the client cancelled".into()),
            }),
        };
        crate::trace::attempt_finished(
            &plan.route,
            match &result {
                Ok(_) => "succeeded",
                Err(error) => error.kind.as_str(),
            },
            started.elapsed(),
            false,
        );
        let mut record = AttemptRecord {
            request_id: reservation.request_id,
            attempt_no: 1,
            route_id: plan.route.id.clone(),
            supplier_id: plan.route.supplier.id.clone(),
            upstream_protocol: Protocol::Images,
            started_at,
            duration_ms: started.elapsed().as_millis() as u64,
            outcome: AttemptOutcome::Succeeded,
            supplier_request_id: call.supplier_request_id().map(str::to_owned),
        };
        let png = match result {
            Ok(png) => png,
            Err(error) => {
                let public = public_error(&error, deadline);
                let reason = if reply.is_closed() {
                    "client_cancelled"
                } else if error.kind == FailureKind::Shutdown {
                    "shutdown"
                } else {
                    public.code.as_str()
                };
                tracing::info!(request_id = %reservation.request_id, route = %plan.route.id, error = %error, "image attempt failed");
                record.outcome = AttemptOutcome::Failed {
                    upstream_status: error.upstream_status,
                    kind: if reason == "client_cancelled" {
                        reason.to_owned()
                    } else {
                        error.kind.as_str().to_owned()
                    },
                    retryable: false,
                };
                reservation.stream_attempt = Some(record);
                reservation.void(reason).await;
                let _ = reply.send(Err(public));
                return;
            }
        };
        // The last point where a client that left gets its hold back; past
        // it the settlement commits and stands (CF-20).
        if reply.is_closed() {
            record.outcome = AttemptOutcome::Failed {
                upstream_status: None,
                kind: "client_cancelled".to_owned(),
                retryable: false,
            };
            reservation.stream_attempt = Some(record);
            reservation.void("client_cancelled").await;
            return;
        }
        let result = reservation
            .settle(plan.price, Usage::default(), record)
            .await
            .map(|charged| GeneratedPng {
                png,
                charged,
                created: unix_now(),
            });
        // A client gone by now misses the reply; the charge stands and the
        // request's status says so.
        let _ = reply.send(result);
    }
}

/// The public error of the single attempt (N-08, N-09, GP-27): a timeout is
/// 408; a supplier failure 502 `upstream_error`; an answer that is not one
/// valid PNG 502 `invalid_upstream_response`.
fn public_error(error: &AttemptError, deadline: Duration) -> ApiError {
    match (&error.cause, error.kind) {
        (AttemptCause::Conversion(public), _) => public.clone(),
        (_, FailureKind::Shutdown) => crate::supplier::shutdown_error(),
        (_, FailureKind::Timeout) => ApiError::new(
            product_codes::GENERATION_TIMEOUT,
            format!(
                "The image was not generated within {} seconds; nothing was charged.",
                deadline.as_secs()
            ),
        ),
        (_, FailureKind::InvalidResponse) => ApiError::new(
            ErrorCode::InvalidUpstreamResponse,
            "The upstream image was not one complete, valid PNG; nothing was charged.",
        ),
        _ => ApiError::new(
            ErrorCode::UpstreamError,
            "The upstream failed to generate the image; nothing was charged.",
        ),
    }
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Catalog;

    const CATALOG: &str = r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:9/v1"

[[models]]
id = "m-img"
modality = "image"
image_price = 40_000_000

[[models]]
id = "m-text"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "img-cheap"
model = "m-img"
supplier = "s"
upstream_model = "up-cheap"
protocol = "images"
image_cost = 10
zdr = true

[[routes]]
id = "img-preferred"
model = "m-img"
supplier = "s"
upstream_model = "up-pref"
protocol = "images"
priority = 5
image_cost = 20

[[routes]]
id = "img-off"
model = "m-img"
supplier = "s"
upstream_model = "up-off"
protocol = "images"
priority = 9
image_cost = 1
enabled = false
"#;

    fn request(model: &str) -> ImageRequest {
        ImageRequest {
            model: model.into(),
            prompt: "a cat".into(),
            user: None,
        }
    }

    #[test]
    fn the_plan_is_one_route_at_the_fixed_price() {
        let catalog = Catalog::from_toml(CATALOG, |_| None).unwrap();
        let plan = plan(&catalog, &request("m-img"), false).unwrap();
        assert_eq!(plan.route.id, "img-preferred");
        assert_eq!(plan.price, NanoUsd(40_000_000));
        // GP-67: a text model is a 400 naming `model`; unknown is a 404.
        let error = super::plan(&catalog, &request("m-text"), false).unwrap_err();
        assert_eq!(
            (error.code, error.param.as_deref()),
            (ErrorCode::InvalidParameter, Some("model"))
        );
        let error = super::plan(&catalog, &request("nope"), false).unwrap_err();
        assert_eq!(error.code, ErrorCode::ModelNotFound);
    }

    #[test]
    fn account_zdr_keeps_only_zdr_image_routes() {
        // GP-38, J-14: the account's switch on, only the verified route.
        let catalog = Catalog::from_toml(CATALOG, |_| None).unwrap();
        let chosen = plan(&catalog, &request("m-img"), true).unwrap();
        assert_eq!(chosen.route.id, "img-cheap");
        let without_zdr = CATALOG.replace("zdr = true\n", "");
        let catalog = Catalog::from_toml(&without_zdr, |_| None).unwrap();
        let error = plan(&catalog, &request("m-img"), true).unwrap_err();
        assert_eq!(error.code, product_codes::ZDR_CAPACITY_UNAVAILABLE);
        assert_eq!(error.status(), 503);
        assert!(plan(&catalog, &request("m-img"), false).is_ok());
    }

    #[test]
    fn failures_map_to_the_image_statuses() {
        let deadline = Duration::from_secs(120);
        assert_eq!(
            public_error(&AttemptError::timeout(), deadline).status(),
            408
        );
        assert_eq!(
            public_error(&AttemptError::status(500, None), deadline).code,
            ErrorCode::UpstreamError
        );
        assert_eq!(
            public_error(&AttemptError::invalid_response("bad crc"), deadline).code,
            ErrorCode::InvalidUpstreamResponse
        );
        assert_eq!(
            public_error(&AttemptError::transport("refused"), deadline).code,
            ErrorCode::UpstreamError
        );
    }
}
