//! What can be wrong with a Responses supplier's reply or stream.
//!
//! Every variant but [`DecodeError::SupplierError`] is an invalid supplier
//! response: never charged, never retried (G-12), and never shown to a client
//! verbatim (P-08). The server renders [`DecodeError::api_error`] instead.

use router_canonical::{ApiError, ErrorCode, Usage};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape (`path` is `.` for the root).
    #[error("invalid supplier JSON at `{path}`: {message}")]
    InvalidJson { path: String, message: String },
    /// No `usage` in the reply, or a stream that finished without one: the
    /// request cannot be billed.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Cached tokens above the input, or reasoning tokens above the output.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// An output item of a type the router cannot represent (CF-08).
    #[error("unknown output item type `{kind}` at `{path}`")]
    UnknownOutputItem { path: String, kind: String },
    /// A content part of a type the router cannot represent (CF-08).
    #[error("unknown content part type `{kind}` at `{path}`")]
    UnknownContent { path: String, kind: String },
    /// A reply whose `status` is not a finished one (`in_progress`,
    /// `queued`, `cancelled`, ...).
    #[error("the supplier reply has status `{status}`")]
    UnexpectedStatus { status: String },
    /// A stream event for an output item or part that was never opened or was
    /// already closed, or that lacks the index it needs.
    #[error("stream event `{event}` does not fit the open output (output_index {output_index:?})")]
    OutOfOrder {
        event: String,
        output_index: Option<usize>,
    },
    /// A frame after `response.completed` / `response.incomplete`.
    #[error("a stream frame arrived after the response finished")]
    AfterFinish,
    /// The supplier reported a failure: `response.failed`, an `error` event,
    /// or a non-streaming reply with `status: "failed"`.
    #[error("the supplier reported an error (type {kind:?}, code {code:?})")]
    SupplierError {
        kind: Option<String>,
        code: Option<String>,
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
