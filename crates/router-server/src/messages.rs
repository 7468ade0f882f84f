//! `POST /v1/messages/count_tokens`: a free local token estimate on the
//! Messages surface (`POST /v1/messages` itself is an ordinary surface in
//! `surfaces.rs`). Errors use the Messages envelope and every response
//! carries `request-id` as well as `x-request-id` (D-34, CF-12).

use crate::app::App;
use crate::body::Incoming;
use crate::body::MESSAGES_BODY_LIMIT;
use crate::inference::{self, Headers};
use crate::reply::{self, Body};
use crate::surfaces::MESSAGES;
use http::Response;
use router_canonical::ApiError;
use router_core::RoutingOptions;
use router_core::store::ApiKeyRecord;
use std::sync::Arc;

pub async fn handle_count_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    id_text: &str,
) -> Response<Body> {
    match count_tokens(app, request, key, id_text).await {
        Ok(response) => response,
        Err(error) => MESSAGES.error(&error, id_text),
    }
}

/// A local, free estimate: no supplier call, no reservation, no charge and
/// no request record (D-37..D-42, CF-04).
async fn count_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    id_text: &str,
) -> Result<Response<Body>, ApiError> {
    let inbound = inference::receive(request, key, MESSAGES_BODY_LIMIT).await?;
    let canonical = MESSAGES
        .codec
        // The routing fields are validated as on every inference body;
        // a local count does not route.
        .parse_count_tokens_with(
            &Headers(&inbound.parts.headers),
            &inbound.body,
            &mut RoutingOptions::default(),
        )?;
    let input_tokens = app
        .gateway
        .estimate_input_tokens(&inbound.key, canonical)
        .await?;
    let body = serde_json::to_vec(&InputTokens { input_tokens }).unwrap_or_default();
    let mut response = crate::token_count::estimated_reply(body, id_text);
    reply::set_messages_request_id(response.headers_mut(), id_text);
    Ok(response)
}

/// The answer of `POST /v1/messages/count_tokens`.
#[derive(serde::Serialize, utoipa::ToSchema)]
pub struct InputTokens {
    /// A local estimate of the request's input tokens.
    pub input_tokens: u64,
}
