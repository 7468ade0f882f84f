//! What can be wrong with a Messages supplier's reply or stream, and how each
//! case reads as a canonical [`SupplierError`].
//!
//! Every variant means the reply yields no canonical value. The supplier's
//! own failure (an `error` event or an error object in place of a reply) is
//! a [`SupplierError::Reported`]; a block or delta type the canonical model
//! cannot represent is [`SupplierError::Unsupported`]; everything else is an
//! [`SupplierError::InvalidReply`]. Supplier text is kept for the log, never
//! meant for a client.

use router_canonical::parse::InvalidJson;
use router_canonical::{SupplierError, SupplierFailure, Usage};

/// Why a Messages supplier's reply or stream frame could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape.
    #[error(transparent)]
    InvalidJson(#[from] InvalidJson),
    /// No `usage` in the reply (or no token counts in it), or a stream that
    /// reported none, when the codec requires usage.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Reasoning tokens above the output, or counts that overflow.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage {
        /// The usage as the supplier reported it.
        usage: Usage,
    },
    /// A content block of a type the canonical model cannot represent.
    #[error("unknown content block type `{kind}` at `{path}`")]
    UnknownContent {
        /// Where the block sits in the reply, as a JSON path.
        path: String,
        /// Its `type` as the supplier sent it.
        kind: String,
    },
    /// A `content_block_delta` of a type the canonical model cannot represent.
    #[error("unknown content block delta type `{kind}` for block {index}")]
    UnknownDelta {
        /// The content block's `index`.
        index: usize,
        /// The delta's `type` as the supplier sent it.
        kind: String,
    },
    /// A delta that does not fit its block (a `text_delta` for a tool call).
    #[error("a `{kind}` delta does not fit content block {index}")]
    MismatchedDelta {
        /// The content block's `index`.
        index: usize,
        /// The delta's `type` as the supplier sent it.
        kind: String,
    },
    /// An event before `message_start`, or a second `message_start`.
    #[error("a `{kind}` event arrived out of order")]
    OutOfOrder {
        /// The event's `type`.
        kind: String,
    },
    /// A delta or stop for a block that is not open.
    #[error("content block {index} is not open")]
    UnknownBlock {
        /// The `index` the event names.
        index: usize,
    },
    /// A second `content_block_start` for an index already used.
    #[error("content block {index} started twice")]
    DuplicateBlock {
        /// The `index` started twice.
        index: usize,
    },
    /// An event after `message_stop`.
    #[error("a stream event arrived after message_stop")]
    AfterStop,
    /// The supplier sent an `error` event inside the stream.
    #[error("the supplier reported an error in the stream (type {kind:?})")]
    SupplierError {
        /// The error's `type` (such as `overloaded_error`), if sent.
        kind: Option<String>,
        /// The error's `message`, if sent.
        message: Option<String>,
    },
    /// The supplier answered with an error object (`"type": "error"`) where
    /// a `message` object was expected.
    #[error("the supplier replied with an error object (type {kind:?})")]
    ErrorReply {
        /// The error's `type` (such as `overloaded_error`), if sent.
        kind: Option<String>,
        /// The error's `message`, if sent.
        message: Option<String>,
    },
}

impl From<DecodeError> for SupplierError {
    /// The supplier's own failure is [`SupplierError::Reported`] (with no
    /// HTTP status: it came inside a success reply or a stream); an unknown
    /// block or delta type is [`SupplierError::Unsupported`]; the rest is
    /// [`SupplierError::InvalidReply`]. The typed error stays the source.
    fn from(err: DecodeError) -> Self {
        match err {
            DecodeError::SupplierError { kind, message }
            | DecodeError::ErrorReply { kind, message } => {
                SupplierError::Reported(SupplierFailure::in_reply(kind, None, message))
            }
            DecodeError::UnknownContent { .. } | DecodeError::UnknownDelta { .. } => {
                SupplierError::unsupported(err)
            }
            DecodeError::InvalidJson(_)
            | DecodeError::MissingUsage
            | DecodeError::InvalidUsage { .. }
            | DecodeError::MismatchedDelta { .. }
            | DecodeError::OutOfOrder { .. }
            | DecodeError::UnknownBlock { .. }
            | DecodeError::DuplicateBlock { .. }
            | DecodeError::AfterStop => SupplierError::invalid(err),
        }
    }
}
