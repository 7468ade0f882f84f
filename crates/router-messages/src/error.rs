//! What can be wrong with a Messages supplier's reply or stream.

use router_canonical::{ApiError, ErrorCode};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    #[error("invalid supplier JSON at `{path}`: {message}")]
    InvalidJson { path: String, message: String },
}

impl DecodeError {
    pub fn api_error(&self) -> ApiError {
        ApiError::new(
            ErrorCode::InvalidUpstreamResponse,
            "the upstream supplier returned an invalid response",
        )
    }
}
