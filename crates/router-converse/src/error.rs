//! What can be wrong with a Converse reply or stream event, and how each
//! case reads as a canonical [`SupplierError`].

use router_canonical::{SupplierError, SupplierFailure, Usage};

#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("the Converse reply is not valid JSON of its shape: {0}")]
    InvalidJson(String),
    #[error("the Converse reply carries no usage")]
    MissingUsage,
    #[error("the Converse reply reports implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// A content block the canonical model cannot represent (`document`,
    /// `video`, `guardContent`, ...).
    #[error("unsupported Converse content block `{kind}`")]
    UnsupportedBlock { kind: String },
    #[error("a Converse stream event `{kind}` arrived out of order")]
    OutOfOrder { kind: String },
    /// An exception message in the stream (`throttlingException`, ...).
    #[error("the supplier reported `{kind}` in the stream")]
    Exception {
        kind: String,
        message: Option<String>,
    },
}

impl From<DecodeError> for SupplierError {
    fn from(err: DecodeError) -> Self {
        match err {
            DecodeError::Exception { kind, message } => {
                SupplierError::Reported(SupplierFailure::in_reply(Some(kind), None, message))
            }
            DecodeError::UnsupportedBlock { .. } => SupplierError::unsupported(err),
            _ => SupplierError::invalid(err),
        }
    }
}
