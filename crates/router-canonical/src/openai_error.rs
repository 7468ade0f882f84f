//! The OpenAI error envelope: `{"error": {"message", "type", "param", "code"}}`.
//!
//! Chat, Responses and Completions clients all get their errors in this one
//! shape; each of those wire crates re-exports the types
//! and offers its own `error_body`, so the server renders one canonical
//! [`ApiError`] into the caller's protocol without knowing which crates share
//! a shape. Messages has an envelope of its own (in router-messages).

use crate::ApiError;
use crate::header::HeaderSource;
use crate::parse::to_json_bytes_or;
use crate::supplier_error::SupplierFailure;
use serde::{Deserialize, Serialize};

/// The body sent should serializing an envelope ever fail: a well-formed
/// `internal_error` envelope, never a panic.
pub const INTERNAL_ERROR_BODY: &[u8] = br#"{"error":{"message":"the router could not serialize its response","type":"api_error","param":null,"code":"internal_error"}}"#;

/// The OpenAI error body: `{"error": {...}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = OpenAiError))]
pub struct ErrorEnvelope {
    /// The error.
    pub error: ErrorObject,
}

/// All four keys are always present; `param` is `null` when no field is at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = OpenAiErrorObject))]
pub struct ErrorObject {
    /// A message safe to show the client.
    pub message: String,
    /// Follows from the HTTP status (`invalid_request_error`, `authentication_error`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The offending body field, query parameter or header, or `null`.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub param: Option<String>,
    /// A stable machine-readable code such as `invalid_parameter`.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub code: Option<String>,
}

impl From<&ApiError> for ErrorEnvelope {
    fn from(error: &ApiError) -> Self {
        ErrorEnvelope {
            error: ErrorObject {
                message: error.message.clone(),
                kind: error.code.openai_type().to_owned(),
                param: error.param.clone(),
                code: Some(error.code.as_str().to_owned()),
            },
        }
    }
}

/// Serialize an OpenAI-surface wire value to JSON bytes, falling back to
/// [`INTERNAL_ERROR_BODY`] (see [`to_json_bytes_or`]).
pub fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    to_json_bytes_or(value, INTERNAL_ERROR_BODY)
}

/// The JSON body of an error response in the OpenAI envelope.
pub fn openai_error_body(error: &ApiError) -> Vec<u8> {
    to_json_bytes(&ErrorEnvelope::from(error))
}

/// The `error` object a supplier sends on an OpenAI protocol, leniently:
/// every member may be absent or `null`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct SupplierErrorObject {
    /// The error type (`rate_limit_error`, ...).
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    /// The error code, as text (some suppliers send a number).
    #[serde(default, deserialize_with = "code_text")]
    pub code: Option<String>,
    /// The supplier's message.
    #[serde(default)]
    pub message: Option<String>,
}

impl SupplierErrorObject {
    /// This object's detail on `reply` (the status and `Retry-After` of an
    /// error reply).
    pub fn failure_of(self, reply: SupplierFailure) -> SupplierFailure {
        SupplierFailure {
            kind: self.kind,
            code: self.code,
            message: self.message,
            ..reply
        }
    }

    /// The canonical failure this object reports, under `status` when it
    /// came as an error reply.
    pub fn failure(self, status: Option<u16>) -> SupplierFailure {
        SupplierFailure {
            status,
            kind: self.kind,
            code: self.code,
            message: self.message,
            retry_after: None,
        }
    }
}

/// Some suppliers send `code` as a number.
fn code_text<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Option::<serde_json::Value>::deserialize(d)? {
        Some(serde_json::Value::String(s)) => Some(s),
        Some(serde_json::Value::Null) | None => None,
        Some(other) => Some(other.to_string()),
    })
}

/// The authentication header of the OpenAI protocols, `authorization:
/// Bearer <key>`, when there is a key.
pub fn bearer_auth(api_key: Option<&str>) -> Vec<(&'static str, String)> {
    api_key
        .map(|key| ("authorization", format!("Bearer {key}")))
        .into_iter()
        .collect()
}

/// Read an OpenAI-protocol error reply (`{"error": {...}}`) with HTTP
/// `status` and its headers (for `Retry-After`). A body in another shape
/// still reports the failure, without detail.
pub fn supplier_failure(status: u16, headers: &dyn HeaderSource, body: &[u8]) -> SupplierFailure {
    #[derive(Deserialize)]
    struct Envelope {
        error: SupplierErrorObject,
    }
    serde_json::from_slice::<Envelope>(body)
        .map(|envelope| envelope.error)
        .unwrap_or_default()
        .failure_of(SupplierFailure::from_reply(status, headers))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_supplier_error_reply_is_read_leniently() {
        let failure = supplier_failure(
            429,
            &[("retry-after", "3")],
            br#"{"error": {"message": "slow down", "type": "rate_limit_error", "code": 42}}"#,
        );
        assert_eq!(failure.status, Some(429));
        assert_eq!(failure.kind.as_deref(), Some("rate_limit_error"));
        assert_eq!(failure.code.as_deref(), Some("42"));
        assert_eq!(failure.message.as_deref(), Some("slow down"));
        assert_eq!(failure.retry_after, Some(std::time::Duration::from_secs(3)));
        let failure = supplier_failure(500, &(), b"<html>oops</html>");
        assert_eq!(failure, SupplierFailure::with_status(500));
    }

    #[test]
    fn the_fallback_body_is_a_valid_envelope() {
        let envelope: ErrorEnvelope = serde_json::from_slice(INTERNAL_ERROR_BODY).unwrap();
        assert_eq!(envelope.error.code.as_deref(), Some("internal_error"));
        assert_eq!(envelope.error.param, None);
    }
}
