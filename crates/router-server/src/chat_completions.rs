//! `POST /v1/chat/completions`: parse, run the lifecycle, answer as JSON or
//! as `chat.completion.chunk` server-sent events.

use crate::app::App;
use crate::body::INFERENCE_BODY_LIMIT;
use crate::client_stream;
use crate::inference::{self, unix_now};
use crate::reply::{self, Body, Surface};
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, Protocol};
use router_chat::{ResponseContext, StreamContext, StreamEncoder};
use router_core::Outcome;
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
    let mut canonical = router_chat::parse_request(&inbound.body)?;
    inference::apply_headers(&inbound.parts.headers, &mut canonical);
    // The response names the model the client asked for, also after a fallback (B-23).
    let public_model = canonical.model.clone();
    let admission = inference::admission(request_id, &inbound.key, Protocol::Chat);
    let id_text = request_id.to_string();
    let completion_id = format!("chatcmpl-{}", request_id.simple());
    match app.gateway.run(admission, canonical).await? {
        Outcome::Complete { response, cost } => {
            let ctx = ResponseContext {
                id: &completion_id,
                model: &public_model,
                created: response.created,
                cost,
            };
            Ok(reply::json(
                StatusCode::OK,
                router_chat::encode_response(&response, &ctx),
                &id_text,
            ))
        }
        Outcome::Stream(live) => {
            let ctx = StreamContext {
                id: completion_id,
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
