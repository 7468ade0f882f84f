//! `POST /v1/images/generations` (section N): one validated PNG for the
//! model's fixed per-image price, with a receipt.
//!
//! The route guard has checked the key and its scope (`inference`) and IP
//! policy. Here: the common `X-CI-*` headers and the body (2 MiB, 413
//! beyond), the request (`router_images::client`, 400 naming the field),
//! then the lifecycle in `router_core::images`: the model (404 unknown, 403
//! outside the key's policy, 400 not an image model), reserve the price
//! (402), one attempt, PNG check, settle.

use crate::app::App;
use crate::body::INFERENCE_BODY_LIMIT;
use crate::body::Incoming;
use crate::inference::receive;
use crate::reply::{self, Body, Envelope};
use http::{Response, StatusCode};
use router_canonical::ApiError;
use router_core::ImageCall;
use router_core::store::ApiKeyRecord;
use router_images::client::{Receipt, encode_response, parse_request};
use router_telemetry::request_log::RequestLog;
use std::sync::Arc;
use uuid::Uuid;

pub async fn handle(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    log: &RequestLog,
) -> Response<Body> {
    let id_text = log.reply_id();
    match run(app, request, key, request_id, &id_text, log).await {
        Ok(response) => response,
        Err(error) => reply::error(Envelope::OpenAi, &error, &id_text),
    }
}

async fn run(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    id_text: &str,
    log: &RequestLog,
) -> Result<Response<Body>, ApiError> {
    let inbound = receive(request, key, INFERENCE_BODY_LIMIT).await?;
    let image_request = parse_request(&inbound.body)?;
    let call = ImageCall {
        request_id,
        key: &inbound.key,
        trace: log.trace(),
    };
    let generated = app.gateway.generate_image(call, image_request).await?;
    let body = encode_response(
        generated.created,
        &generated.png,
        &Receipt {
            request_id: id_text,
            charged: generated.charged,
        },
    );
    Ok(reply::json(StatusCode::OK, body, id_text))
}

/// `GET /v1/requests/{id}`: the final status of one of the caller's
/// requests (N-10, GP-62; `router_operator::RequestStatus`). Another
/// account's request, a malformed and an unknown ID all get the same 404
///
pub async fn request_status(
    app: &App,
    key: &ApiKeyRecord,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    use router_core::ownership::{Resource, parse_id};
    let id = parse_id(Resource::Request, id.unwrap_or_default())?;
    let view = app
        .operator
        .request_status(key.account_id, id)
        .await
        .map_err(ApiError::from)?
        .ok_or_else(|| Resource::Request.not_found())?;
    Ok(reply::json_value(StatusCode::OK, &view, request_id))
}
