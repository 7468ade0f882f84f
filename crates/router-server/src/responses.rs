//! `POST /v1/responses` (stateless): parse, run the lifecycle, answer with
//! a `response` object or the `response.*` event stream.

use crate::app::App;
use crate::body::INFERENCE_BODY_LIMIT;
use crate::client_stream;
use crate::inference::{self, unix_now};
use crate::reply::{self, Body, Surface};
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, Protocol};
use router_core::Outcome;
use router_responses::{ResponseContext, StreamContext, StreamEncoder};
use std::sync::Arc;
use uuid::Uuid;

pub async fn handle(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
) -> Response<Body> {
    let id_text = request_id.to_string();
    match run(app, request, request_id).await {
        Ok(response) => response,
        Err(error) => reply::error(Surface::OpenAi, &error, &id_text),
    }
}

async fn run(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
) -> Result<Response<Body>, ApiError> {
    let inbound = inference::receive(&app, request, INFERENCE_BODY_LIMIT).await?;
    let mut canonical = router_responses::parse_request(&inbound.body)?;
    inference::apply_headers(&inbound.parts.headers, &mut canonical);
    let public_model = canonical.model.clone();
    let admission = inference::admission(request_id, &inbound.key, Protocol::Responses);
    let id_text = request_id.to_string();
    let response_id = format!("resp_{}", request_id.simple());
    match app.gateway.run(admission, canonical).await? {
        Outcome::Complete { response, cost } => {
            let ctx = ResponseContext {
                id: &response_id,
                model: &public_model,
                created: response.created,
                cost,
            };
            Ok(reply::json(
                StatusCode::OK,
                router_responses::encode_response(&response, &ctx),
                &id_text,
            ))
        }
        Outcome::Stream(live) => {
            let ctx = StreamContext {
                id: response_id,
                model: public_model,
                created: unix_now(),
            };
            Ok(client_stream::relay(
                live,
                StreamEncoder::new(ctx),
                &id_text,
            ))
        }
    }
}
