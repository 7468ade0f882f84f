//! Anthropic Messages wire types and their translation to and from the
//! canonical model (work in progress: the public surface is fixed).

pub mod envelope;
pub mod error;
pub mod wire;
mod from_wire;
pub mod stream;
mod to_wire;

pub use envelope::error_body;
pub use error::DecodeError;
pub use stream::{StreamContext, StreamDecoder, StreamEncoder};

use router_canonical::{ApiError, Request, Response};

/// Validate a client's `POST /v1/messages` body into a canonical request.
pub fn parse_request(body: &[u8]) -> Result<Request, ApiError> {
    from_wire::request(body)
}

/// The Messages headers that bear on a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RequestHeaders<'a> {
    /// `anthropic-version`.
    pub version: Option<&'a str>,
    /// `anthropic-beta`.
    pub beta: Option<&'a str>,
    /// `anthropic-dangerous-direct-browser-access`.
    pub direct_browser_access: Option<&'a str>,
}

/// Check the Messages headers and record the beta identifiers on the request.
pub fn apply_headers(request: &mut Request, headers: &RequestHeaders<'_>) -> Result<(), ApiError> {
    from_wire::apply_headers(request, headers)
}

/// Validate a `POST /v1/messages/count_tokens` body.
pub fn parse_count_tokens(body: &[u8]) -> Result<Request, ApiError> {
    from_wire::count_tokens(body)
}

/// Check the headers of a count_tokens call (betas are accepted and ignored).
pub fn validate_count_tokens_headers(headers: &RequestHeaders<'_>) -> Result<(), ApiError> {
    from_wire::check_headers(headers).map(|_| ())
}

/// The JSON body for a Messages supplier.
pub fn encode_request(
    request: &Request,
    upstream_model: &str,
    default_max_tokens: u32,
) -> Result<Vec<u8>, ApiError> {
    to_wire::request(request, upstream_model, default_max_tokens)
}

/// Read a Messages supplier's non-streaming reply.
pub fn decode_response(body: &[u8]) -> Result<Response, DecodeError> {
    from_wire::response(body)
}

/// What the router's reply states that the supplier's did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's message id (`msg_...`).
    pub id: &'a str,
    /// The public model ID the client asked for (D-36).
    pub model: &'a str,
}

/// The client's `message` JSON object.
pub fn encode_response(response: &Response, ctx: &ResponseContext<'_>) -> Vec<u8> {
    to_wire::response(response, ctx)
}
