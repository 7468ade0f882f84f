//! The free local token estimates over HTTP: what `POST
//! /v1/messages/count_tokens` (`messages.rs`) and `POST
//! /v1/responses/input_tokens` share, and the Responses endpoint itself.
//! The estimate is core's (`Gateway::estimate_input_tokens`: no supplier
//! call, no reservation, no charge, no request record; D-37..D-42, CF-04);
//! every answer carries `x-ci-token-count-estimated: true`.

use crate::app::App;
use crate::body::{INFERENCE_BODY_LIMIT, Incoming};
use crate::inference;
use crate::reply::{self, Body};
use crate::surfaces::RESPONSES;
use http::header::HeaderValue;
use http::{Response, StatusCode};
use router_canonical::ApiError;
use router_core::RoutingOptions;
use router_core::store::ApiKeyRecord;
use std::sync::Arc;
use uuid::Uuid;

/// A 200 JSON answer marked as an estimate.
pub(crate) fn estimated_reply(body: Vec<u8>, request_id: &str) -> Response<Body> {
    let mut response = reply::json(StatusCode::OK, body, request_id);
    response.headers_mut().insert(
        "x-ci-token-count-estimated",
        HeaderValue::from_static("true"),
    );
    response
}

/// `POST /v1/responses/input_tokens`: the Responses API's token count
/// (`client.responses.input_tokens.count`), in the OpenAI envelope.
pub async fn handle_input_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
) -> Response<Body> {
    let id_text = request_id.to_string();
    match input_tokens(app, request, key, &id_text).await {
        Ok(response) => response,
        Err(error) => RESPONSES.error(&error, &id_text),
    }
}

async fn input_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    id_text: &str,
) -> Result<Response<Body>, ApiError> {
    let inbound = inference::receive(request, key, INFERENCE_BODY_LIMIT).await?;
    // The routing fields are validated as on every inference body; a local
    // count does not route.
    let canonical = RESPONSES
        .codec
        .parse_input_tokens_with(&inbound.body, &mut RoutingOptions::default())?;
    let input_tokens = app
        .gateway
        .estimate_input_tokens(&inbound.key, canonical)
        .await?;
    let body = serde_json::to_vec(&ResponseInputTokens {
        object: "response.input_tokens",
        input_tokens,
    })
    .unwrap_or_default();
    Ok(estimated_reply(body, id_text))
}

/// The answer of `POST /v1/responses/input_tokens`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct ResponseInputTokens {
    /// Always `response.input_tokens`.
    #[schema(pattern = "^response\\.input_tokens$")]
    pub object: &'static str,
    /// A local estimate of the request's input tokens.
    pub input_tokens: u64,
}
