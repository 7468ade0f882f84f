//! What can be wrong with a Chat supplier's reply or stream.
//!
//! Each variant says what was wrong; `From<DecodeError> for SupplierError`
//! sorts them into the kinds a gateway acts on: the supplier's own reported
//! failure, a construct the canonical model cannot represent, or an invalid
//! reply.

use router_canonical::Usage;
use router_canonical::codec::{SupplierError, SupplierFailure};
use router_canonical::parse::InvalidJson;

/// Why a Chat supplier's reply or stream frame yields no canonical value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecodeError {
    /// Not JSON, or JSON of the wrong shape.
    #[error(transparent)]
    InvalidJson(InvalidJson),
    /// `choices` is missing or empty.
    #[error("the supplier reply has no choices")]
    MissingChoice,
    /// No `usage` in the reply, or a stream ended without a usage chunk,
    /// when the codec requires usage.
    #[error("the supplier reply carries no usage")]
    MissingUsage,
    /// Cached tokens above the prompt, or reasoning tokens above the completion.
    #[error("the supplier reported implausible usage: {usage:?}")]
    InvalidUsage {
        /// The usage as the supplier reported it.
        usage: Usage,
    },
    /// A content part of a type the canonical model cannot represent.
    #[error("unknown content part type `{kind}` at `{path}`")]
    UnknownContent {
        /// Where the part sits in the reply, as a JSON path.
        path: String,
        /// Its `type` as the supplier sent it.
        kind: String,
    },
    /// A tool call whose `type` is not `function`.
    #[error("unknown tool call type `{kind}`")]
    UnknownToolCallType {
        /// The tool call's `type` as the supplier sent it.
        kind: String,
    },
    /// A streamed tool call whose name never arrived.
    #[error("streamed tool call {index} has no function name")]
    IncompleteToolCall {
        /// The tool call's `index` in the stream.
        index: u32,
    },
    /// A streamed tool call that continued after another block had started.
    #[error("streamed tool call {index} continued after another block started")]
    InterleavedToolCall {
        /// The tool call's `index` in the stream.
        index: u32,
    },
    /// A frame after `data: [DONE]`.
    #[error("a stream frame arrived after [DONE]")]
    AfterDone,
    /// The supplier sent `{"error": {...}}` inside the stream.
    #[error("the supplier reported an error in the stream (type {kind:?}, code {code:?})")]
    SupplierError {
        /// The error's `type`, if the supplier sent one.
        kind: Option<String>,
        /// The error's `code`, if the supplier sent one.
        code: Option<String>,
        /// The error's `message`, if the supplier sent one.
        message: Option<String>,
    },
}

impl From<InvalidJson> for DecodeError {
    fn from(err: InvalidJson) -> Self {
        DecodeError::InvalidJson(err)
    }
}

impl From<DecodeError> for SupplierError {
    /// The supplier's own in-stream error is a reported failure; an unknown
    /// content part or tool-call type is unsupported; anything else makes
    /// the reply invalid.
    fn from(err: DecodeError) -> Self {
        match err {
            DecodeError::SupplierError {
                kind,
                code,
                message,
            } => SupplierError::Reported(SupplierFailure::in_reply(kind, code, message)),
            DecodeError::UnknownContent { .. } | DecodeError::UnknownToolCallType { .. } => {
                SupplierError::unsupported(err)
            }
            DecodeError::InvalidJson(_)
            | DecodeError::MissingChoice
            | DecodeError::MissingUsage
            | DecodeError::InvalidUsage { .. }
            | DecodeError::IncompleteToolCall { .. }
            | DecodeError::InterleavedToolCall { .. }
            | DecodeError::AfterDone => SupplierError::invalid(err),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_variant_has_its_kind() {
        let reported = DecodeError::SupplierError {
            kind: Some("server_error".into()),
            code: Some("529".into()),
            message: Some("overloaded".into()),
        };
        assert_eq!(
            SupplierError::from(reported),
            SupplierError::Reported(
                SupplierFailure::default()
                    .kind("server_error")
                    .code("529")
                    .message("overloaded")
            )
        );
        for unsupported in [
            DecodeError::UnknownContent {
                path: "choices[0].message.content[0]".into(),
                kind: "output_audio".into(),
            },
            DecodeError::UnknownToolCallType {
                kind: "custom".into(),
            },
        ] {
            let text = unsupported.to_string();
            let error = SupplierError::from(unsupported);
            assert!(matches!(error, SupplierError::Unsupported(_)), "{error:?}");
            assert!(error.to_string().ends_with(&text), "{error}");
        }
        for invalid in [
            DecodeError::InvalidJson(InvalidJson {
                path: ".".into(),
                message: "expected value".into(),
            }),
            DecodeError::MissingChoice,
            DecodeError::MissingUsage,
            DecodeError::InvalidUsage {
                usage: Usage::default(),
            },
            DecodeError::IncompleteToolCall { index: 0 },
            DecodeError::InterleavedToolCall { index: 0 },
            DecodeError::AfterDone,
        ] {
            let text = invalid.to_string();
            let error = SupplierError::from(invalid);
            assert!(matches!(error, SupplierError::InvalidReply(_)), "{error:?}");
            assert_eq!(error.to_string(), format!("invalid supplier reply: {text}"));
        }
    }
}
