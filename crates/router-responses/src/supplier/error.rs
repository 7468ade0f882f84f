//! What can be wrong with a Responses supplier's reply or stream.
//!
//! [`DecodeError`] says exactly what the decoder found; `SupplierError::from`
//! sorts it into the kind a gateway decides on: the supplier's own reported
//! failure, a construct the canonical model cannot represent, or an invalid
//! reply.

use router_canonical::parse::InvalidJson;
use router_canonical::{SupplierError, SupplierFailure, Usage};

/// Why a Responses supplier's reply or stream frame yields no canonical value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape (`path` is `.` for the root).
    #[error(transparent)]
    InvalidJson(#[from] InvalidJson),
    /// No `usage` in the reply, or a stream that finished without one, when
    /// the codec requires usage (`ResponsesSupplier::require_usage`).
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Cached tokens above the input, or reasoning tokens above the output.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage {
        /// The usage as the supplier reported it.
        usage: Usage,
    },
    /// An output item of a type the canonical model cannot represent.
    #[error("unknown output item type `{kind}` at `{path}`")]
    UnknownOutputItem {
        /// Where the item sits in the reply, as a JSON path.
        path: String,
        /// Its `type` as the supplier sent it.
        kind: String,
    },
    /// A content part of a type the canonical model cannot represent.
    #[error("unknown content part type `{kind}` at `{path}`")]
    UnknownContent {
        /// Where the part sits in the reply, as a JSON path.
        path: String,
        /// Its `type` as the supplier sent it.
        kind: String,
    },
    /// A reply whose `status` is not a finished one (`in_progress`,
    /// `queued`, `cancelled`, ...).
    #[error("the supplier reply has status `{status}`")]
    UnexpectedStatus {
        /// The `status` as the supplier sent it.
        status: String,
    },
    /// A stream event for an output item or part that was never opened or was
    /// already closed, or that lacks the index it needs.
    #[error("stream event `{event}` does not fit the open output (output_index {output_index:?})")]
    OutOfOrder {
        /// The event's `type`.
        event: String,
        /// The `output_index` it named, if any.
        output_index: Option<usize>,
    },
    /// A frame after `response.completed` / `response.incomplete`.
    #[error("a stream frame arrived after the response finished")]
    AfterFinish,
    /// The supplier reported a failure: `response.failed`, an `error` event,
    /// or a non-streaming reply with `status: "failed"`.
    #[error("the supplier reported an error (type {kind:?}, code {code:?})")]
    SupplierError {
        /// The error's `type`, if sent.
        kind: Option<String>,
        /// The error's `code` (such as `rate_limit_exceeded`), if sent.
        code: Option<String>,
        /// The error's `message`, if sent.
        message: Option<String>,
    },
}

impl DecodeError {
    /// A body that is not one JSON value of the expected shape at its root.
    pub(crate) fn at_root(err: &serde_json::Error) -> Self {
        DecodeError::InvalidJson(InvalidJson {
            path: ".".to_owned(),
            message: err.to_string(),
        })
    }
}

impl From<DecodeError> for SupplierError {
    /// The supplier's own failure is [`SupplierError::Reported`] (with no
    /// HTTP status: it came inside a success reply or a stream); an unknown
    /// output item or content part is [`SupplierError::Unsupported`];
    /// everything else is [`SupplierError::InvalidReply`].
    fn from(err: DecodeError) -> Self {
        match err {
            DecodeError::SupplierError {
                kind,
                code,
                message,
            } => SupplierError::Reported(SupplierFailure::in_reply(kind, code, message)),
            DecodeError::UnknownOutputItem { .. } | DecodeError::UnknownContent { .. } => {
                SupplierError::unsupported(err)
            }
            DecodeError::InvalidJson(_)
            | DecodeError::MissingUsage
            | DecodeError::InvalidUsage { .. }
            | DecodeError::UnexpectedStatus { .. }
            | DecodeError::OutOfOrder { .. }
            | DecodeError::AfterFinish => SupplierError::invalid(err),
        }
    }
}
