//! OpenAI Responses (`POST /v1/responses`, stateless) wire types and their
//! translation to and from the canonical model.
//!
//! (Surface committed early; conversions are being filled in.)

pub mod envelope;
pub mod error;
pub mod stream;

pub use envelope::error_body;
pub use error::DecodeError;
pub use stream::{StreamContext, StreamDecoder, StreamEncoder};

use router_canonical::{ApiError, ErrorCode, NanoUsd, Request, Response};

/// Validate a client's Responses body into a canonical request.
pub fn parse_request(_body: &[u8]) -> Result<Request, ApiError> {
    Err(ApiError::new(
        ErrorCode::InternalError,
        "the Responses surface is not implemented yet",
    ))
}

/// The JSON body for a Responses supplier (always `"store": false`).
pub fn encode_request(_request: &Request, _upstream_model: &str) -> Result<Vec<u8>, ApiError> {
    Err(ApiError::new(
        ErrorCode::InternalError,
        "the Responses surface is not implemented yet",
    ))
}

/// Read a Responses supplier's non-streaming reply.
pub fn decode_response(_body: &[u8]) -> Result<Response, DecodeError> {
    Err(DecodeError::MissingUsage)
}

/// What the router's reply states that the supplier's did not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResponseContext<'a> {
    /// The router's response id (`resp_...`).
    pub id: &'a str,
    /// The public model ID the client asked for.
    pub model: &'a str,
    /// Unix seconds.
    pub created: i64,
    /// The settled charge, reported as `usage.cost` in USD (GP-03).
    pub cost: NanoUsd,
}

/// The client's `response` object JSON.
pub fn encode_response(_response: &Response, _ctx: &ResponseContext<'_>) -> Vec<u8> {
    Vec::new()
}
