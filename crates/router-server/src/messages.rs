//! `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic
//! Messages surface. Errors use the Messages envelope and every response
//! carries `request-id` as well as `x-request-id` (D-34, CF-12).

use crate::app::App;
use crate::body::MESSAGES_BODY_LIMIT;
use crate::client_stream;
use crate::inference;
use crate::reply::{self, Body, Surface};
use http::header::HeaderValue;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, ErrorCode, Protocol};
use router_core::Outcome;
use router_messages::{RequestHeaders, ResponseContext, StreamContext, StreamEncoder};
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
        Err(error) => reply::error(Surface::Messages, &error, &id_text),
    }
}

pub async fn handle_count_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
) -> Response<Body> {
    let id_text = request_id.to_string();
    match count_tokens(app, request, &id_text).await {
        Ok(response) => response,
        Err(error) => reply::error(Surface::Messages, &error, &id_text),
    }
}

fn vendor_headers(headers: &http::HeaderMap) -> RequestHeaders<'_> {
    let get = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    RequestHeaders {
        version: get("anthropic-version"),
        beta: get("anthropic-beta"),
        direct_browser_access: get("anthropic-dangerous-direct-browser-access"),
    }
}

/// Messages bodies must be declared JSON (D-07, GP-52).
fn require_json(headers: &http::HeaderMap) -> Result<(), ApiError> {
    let is_json = headers
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "content-type",
            "`Content-Type` must be `application/json`.",
        ))
    }
}

async fn run(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
) -> Result<Response<Body>, ApiError> {
    let inbound = inference::receive(&app, request, MESSAGES_BODY_LIMIT).await?;
    let headers = &inbound.parts.headers;
    require_json(headers)?;
    let mut canonical = router_messages::parse_request(&inbound.body)?;
    router_messages::apply_headers(&mut canonical, &vendor_headers(headers))?;
    inference::apply_headers(headers, &mut canonical);
    // The response names the model the client asked for, also after a fallback (D-36).
    let public_model = canonical.model.clone();
    let admission = inference::admission(request_id, &inbound.key, Protocol::Messages);
    let id_text = request_id.to_string();
    let message_id = format!("msg_{}", request_id.simple());
    let mut response = match app.gateway.run(admission, canonical).await? {
        Outcome::Complete { response, .. } => {
            let ctx = ResponseContext {
                id: &message_id,
                model: &public_model,
            };
            reply::json(
                StatusCode::OK,
                router_messages::encode_response(&response, &ctx),
                &id_text,
            )
        }
        Outcome::Stream(live) => {
            let ctx = StreamContext {
                id: message_id,
                model: public_model,
            };
            client_stream::relay(live, StreamEncoder::new(ctx), &id_text)
        }
    };
    reply::set_messages_request_id(response.headers_mut(), &id_text);
    Ok(response)
}

/// A local, free estimate: no supplier call, no reservation, no charge and
/// no request record (D-37..D-42, CF-04).
async fn count_tokens(
    app: Arc<App>,
    request: http::Request<Incoming>,
    id_text: &str,
) -> Result<Response<Body>, ApiError> {
    let inbound = inference::receive(&app, request, MESSAGES_BODY_LIMIT).await?;
    let headers = &inbound.parts.headers;
    require_json(headers)?;
    router_messages::validate_count_tokens_headers(&vendor_headers(headers))?;
    let canonical = router_messages::parse_count_tokens(&inbound.body)?;
    if app.gateway.catalog().model(&canonical.model).is_none() {
        return Err(ApiError::new(
            ErrorCode::ModelNotFound,
            format!(
                "The model `{}` does not exist or is not available.",
                canonical.model
            ),
        )
        .with_param("model"));
    }
    // Tokenizing up to 8 MiB is CPU work: keep it off the I/O threads.
    let input_tokens =
        tokio::task::spawn_blocking(move || router_tokens::estimate_input_tokens(&canonical))
            .await
            .map_err(|_| ApiError::new(ErrorCode::InternalError, "Token counting failed."))?;
    let body = serde_json::json!({ "input_tokens": input_tokens });
    let mut response = reply::json_value(StatusCode::OK, &body, id_text);
    reply::set_messages_request_id(response.headers_mut(), id_text);
    response.headers_mut().insert(
        "x-ci-token-count-estimated",
        HeaderValue::from_static("true"),
    );
    Ok(response)
}
