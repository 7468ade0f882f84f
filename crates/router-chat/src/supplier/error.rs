//! What can be wrong with a Chat supplier's reply or stream.
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
    /// `choices` is missing or empty.
    #[error("the supplier reply has no choices")]
    MissingChoice,
    /// No `usage` in the reply, or a stream ended without a usage chunk:
    /// the request cannot be billed.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Cached tokens above the prompt, or reasoning tokens above the completion.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// A content part of a type the router cannot represent.
    #[error("unknown content part type `{kind}` at `{path}`")]
    UnknownContent { path: String, kind: String },
    /// A tool call whose `type` is not `function`.
    #[error("unknown tool call type `{kind}`")]
    UnknownToolCallType { kind: String },
    /// A streamed tool call whose name never arrived.
    #[error("streamed tool call {index} has no function name")]
    IncompleteToolCall { index: u32 },
    /// A streamed tool call that continued after another block had started.
    #[error("streamed tool call {index} continued after another block started")]
    InterleavedToolCall { index: u32 },
    /// A frame after `data: [DONE]`.
    #[error("a stream frame arrived after [DONE]")]
    AfterDone,
    /// The supplier sent `{"error": {...}}` inside the stream.
    #[error("the supplier reported an error in the stream (type {kind:?}, code {code:?})")]
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
