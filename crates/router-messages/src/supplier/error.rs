//! What can be wrong with a Messages supplier's reply or stream.
//!
//! Every variant is an invalid supplier response: never charged, never
//! retried (G-12), and never shown to a client verbatim (P-08). The server
//! renders [`DecodeError::api_error`] instead.

use router_canonical::{ApiError, ErrorCode, Usage};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape (`path` is `.` for the root).
    #[error("invalid supplier JSON at `{path}`: {message}")]
    InvalidJson { path: String, message: String },
    /// No `usage` in the reply (or no token counts in it), or a stream that
    /// reported none: the request cannot be billed.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Reasoning tokens above the output, or counts that overflow.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// A content block of a type the router cannot represent (CF-08).
    #[error("unknown content block type `{kind}` at `{path}`")]
    UnknownContent { path: String, kind: String },
    /// A `content_block_delta` of a type the router cannot represent.
    #[error("unknown content block delta type `{kind}` for block {index}")]
    UnknownDelta { index: usize, kind: String },
    /// A delta that does not fit its block (a `text_delta` for a tool call).
    #[error("a `{kind}` delta does not fit content block {index}")]
    MismatchedDelta { index: usize, kind: String },
    /// An event before `message_start`, or a second `message_start`.
    #[error("a `{kind}` event arrived out of order")]
    OutOfOrder { kind: String },
    /// A delta or stop for a block that is not open.
    #[error("content block {index} is not open")]
    UnknownBlock { index: usize },
    /// A second `content_block_start` for an index already used.
    #[error("content block {index} started twice")]
    DuplicateBlock { index: usize },
    /// An event after `message_stop`.
    #[error("a stream event arrived after message_stop")]
    AfterStop,
    /// The supplier sent an `error` event inside the stream.
    #[error("the supplier reported an error in the stream (type {kind:?})")]
    SupplierError {
        kind: Option<String>,
        message: Option<String>,
    },
}

impl DecodeError {
    pub(crate) fn json(err: serde_path_to_error::Error<serde_json::Error>) -> Self {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        match router_canonical::parse::split_nested(&message) {
            Some((inner, message)) => DecodeError::InvalidJson {
                path: router_canonical::parse::join_path(&path, inner),
                message: message.to_owned(),
            },
            None => DecodeError::InvalidJson { path, message },
        }
    }

    /// The public error for a client: `upstream_error` when the supplier
    /// reported a failure, else `invalid_upstream_response`. The message
    /// never contains supplier text.
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

impl From<&DecodeError> for ApiError {
    fn from(err: &DecodeError) -> Self {
        err.api_error()
    }
}
