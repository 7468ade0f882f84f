//! What can be wrong with a Responses supplier's reply or stream.

use router_canonical::{ApiError, ErrorCode, Usage};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape (`path` is `.` for the root).
    #[error("invalid supplier JSON at `{path}`: {message}")]
    InvalidJson { path: String, message: String },
    /// No `usage`: the request cannot be billed.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Implausible usage.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// The supplier reported a failure.
    #[error("the supplier reported an error (type {kind:?}, code {code:?})")]
    SupplierError {
        kind: Option<String>,
        code: Option<String>,
        message: Option<String>,
    },
}

impl DecodeError {
    /// The public error for a client.
    pub fn api_error(&self) -> ApiError {
        match self {
            DecodeError::SupplierError { .. } => ApiError::new(
                ErrorCode::UpstreamError,
                "the upstream supplier failed while generating the response",
            ),
            _ => ApiError::new(
                ErrorCode::InvalidUpstreamResponse,
                "the upstream supplier returned an invalid response",
            ),
        }
    }
}
