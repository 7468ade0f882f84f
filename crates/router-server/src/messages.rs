//! `POST /v1/messages` and `POST /v1/messages/count_tokens`: the Anthropic
//! Messages surface. Errors use the Messages envelope and every response
//! carries `request-id` as well as `x-request-id` (D-34, CF-12).

use crate::app::App;
use crate::body::MESSAGES_BODY_LIMIT;
use crate::inference::{self, InferenceSurface, ReplyContext};
use crate::reply::{self, Body, Surface};
use http::header::HeaderValue;
use http::{Response, StatusCode};
use hyper::body::Incoming;
use router_canonical::{ApiError, ErrorCode, Protocol, Request, Response as CanonicalResponse};
use router_core::thinking_seal::SealError;
use router_messages::{RequestHeaders, ResponseContext, StreamContext, StreamEncoder};
use std::sync::Arc;
use uuid::Uuid;

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

/// `POST /v1/messages`: a `message` object or the named Messages events.
pub struct Messages;

impl InferenceSurface for Messages {
    const PROTOCOL: Protocol = Protocol::Messages;
    const ERRORS: Surface = Surface::Messages;
    const BODY_LIMIT: usize = MESSAGES_BODY_LIMIT;
    const ID_PREFIX: &'static str = "msg_";
    type Extra = ();
    type StreamEncoder = StreamEncoder;

    fn parse(headers: &http::HeaderMap, body: &[u8]) -> Result<(Request, ()), ApiError> {
        require_json(headers)?;
        let mut request = router_messages::parse_request(body)?;
        router_messages::apply_headers(&mut request, &vendor_headers(headers))?;
        Ok((request, ()))
    }

    /// The message object carries no cost (GP-03).
    fn encode_response(response: &CanonicalResponse, ctx: &ReplyContext<'_, ()>) -> Vec<u8> {
        let ctx = ResponseContext {
            id: ctx.id,
            model: ctx.model,
        };
        router_messages::encode_response(response, &ctx)
    }

    fn stream_encoder(id: String, model: String, (): ()) -> StreamEncoder {
        StreamEncoder::new(StreamContext { id, model })
    }

    fn finish_headers(headers: &mut http::HeaderMap, request_id: &str) {
        reply::set_messages_request_id(headers, request_id);
    }

    /// The canonical form puts `system` before `messages`: count the wire
    /// messages to index them as the client did.
    fn signature_param(body: &[u8], error: &SealError) -> String {
        #[derive(serde::Deserialize)]
        struct Messages {
            messages: Vec<serde::de::IgnoredAny>,
        }
        let in_canonical = error.message;
        let message = match serde_json::from_slice::<Messages>(body) {
            Ok(wire) => in_canonical
                .saturating_sub(error.total_messages.saturating_sub(wire.messages.len())),
            Err(_) => in_canonical,
        };
        format!("messages[{message}].content[{}].signature", error.part)
    }
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
