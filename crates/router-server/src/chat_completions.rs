//! `POST /v1/chat/completions`: authenticate, parse, run the lifecycle,
//! answer as JSON or as `chat.completion.chunk` server-sent events.

use crate::app::App;
use crate::auth;
use crate::body::{INFERENCE_BODY_LIMIT, read_limited};
use crate::reply::{self, Body, Surface};
use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, Protocol};
use router_chat::{ResponseContext, StreamContext, StreamEncoder};
use router_core::gateway::Admission;
use router_core::store::Scope;
use router_core::{LiveStream, Outcome, StreamItem};
use router_store::Database;
use router_supply::HttpSuppliers;
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
    let (parts, body) = request.into_parts();
    let key = auth::authenticate(&app, &parts.headers, Scope::Inference).await?;
    crate::inference_headers::validate(&parts.headers)?;
    let bytes = read_limited(&parts.headers, body, INFERENCE_BODY_LIMIT).await?;
    let canonical = router_chat::parse_request(&bytes)?;
    // The response names the model the client asked for, also after a fallback (B-23).
    let public_model = canonical.model.clone();
    let admission = Admission {
        request_id,
        account_id: key.account_id,
        api_key_id: key.key_id,
        inbound: Protocol::Chat,
    };
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
            Ok(sse_response(live, StreamEncoder::new(ctx), &id_text))
        }
    }
}

pub fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Relay a live stream as SSE. Each upstream event is encoded and sent as
/// it arrives. If the client goes away, the relay task ends and dropping
/// the live stream voids its reservation.
fn sse_response(
    mut live: LiveStream<Database, HttpSuppliers>,
    mut encoder: StreamEncoder,
    request_id: &str,
) -> Response<Body> {
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    tokio::spawn(async move {
        let mut buf = Vec::with_capacity(512);
        loop {
            let item = tokio::select! {
                biased;
                item = live.next() => item,
                () = tx.closed() => return,
            };
            let Some(item) = item else { return };
            buf.clear();
            match &item {
                StreamItem::Event(event) => encoder.encode(event, &mut buf),
                StreamItem::Finished {
                    stop_reason,
                    usage,
                    cost,
                    ..
                } => encoder.encode_finish(stop_reason, usage, *cost, &mut buf),
                StreamItem::Failed(error) => encoder.encode_error(error, &mut buf),
            }
            // Hand the encoded frame over without copying it.
            if !buf.is_empty()
                && tx
                    .send(Bytes::from(std::mem::replace(
                        &mut buf,
                        Vec::with_capacity(512),
                    )))
                    .await
                    .is_err()
            {
                return;
            }
        }
    });
    let mut response = Response::new(crate::server::channel_body(rx));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    reply::set_request_id(headers, request_id);
    response
}
