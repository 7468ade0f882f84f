//! What can be wrong with a Gemini reply or stream chunk, and how each case
//! reads as a canonical [`SupplierError`].

use router_canonical::{SupplierError, SupplierFailure, Usage};

/// Why a Gemini reply or stream chunk could not be decoded.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    #[error("the Gemini reply is not valid JSON of its shape: {0}")]
    InvalidJson(String),
    #[error("the Gemini reply has no candidate")]
    NoCandidate,
    #[error("the Gemini reply carries no usage")]
    MissingUsage,
    #[error("the Gemini reply reports implausible usage: {usage:?}")]
    InvalidUsage { usage: Usage },
    /// A part the canonical model cannot represent (`executableCode`,
    /// `inlineData` output, ...).
    #[error("unsupported Gemini part `{kind}`")]
    UnsupportedPart { kind: String },
    /// The prompt was blocked (`promptFeedback.blockReason`): the
    /// supplier's refusal, reported.
    #[error("the Gemini prompt was blocked ({reason})")]
    Blocked { reason: String },
    /// An `error` object where a reply was expected.
    #[error("the Gemini reply is an error ({status:?})")]
    ErrorReply {
        status: Option<String>,
        message: Option<String>,
    },
    #[error("a Gemini stream chunk arrived after the finish")]
    AfterFinish,
}

impl From<DecodeError> for SupplierError {
    fn from(err: DecodeError) -> Self {
        match err {
            DecodeError::Blocked { reason } => SupplierError::Reported(
                SupplierFailure::default()
                    .kind("prompt_blocked")
                    .code(reason),
            ),
            DecodeError::ErrorReply { status, message } => {
                SupplierError::Reported(SupplierFailure::in_reply(status, None, message))
            }
            DecodeError::UnsupportedPart { .. } => SupplierError::unsupported(err),
            _ => SupplierError::invalid(err),
        }
    }
}
