//! The Messages error envelope: `{"type": "error", "error": {"type", "message"}}`.
//!
//! A canonical [`ApiError`] is rendered in this shape for Messages and
//! count_tokens clients: the `type` follows from the HTTP
//! status and there is no `code` member. The same object is the
//! payload of a stream's terminal `error` event.

use crate::wire::event::ErrorObject;
use crate::wire::to_json_bytes;
use router_canonical::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::Map;

/// The body of a Messages error reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = MessagesError))]
pub struct ErrorEnvelope {
    /// Always `error`.
    #[serde(rename = "type")]
    pub kind: String,
    /// What went wrong: its `type` and `message`.
    pub error: ErrorObject,
}

impl From<&ApiError> for ErrorEnvelope {
    fn from(error: &ApiError) -> Self {
        ErrorEnvelope {
            kind: "error".to_owned(),
            error: ErrorObject {
                kind: Some(error.code.messages_type().to_owned()),
                message: Some(error.message.clone()),
                extra: Map::new(),
            },
        }
    }
}

/// The JSON body of an error response for a Messages client.
pub(crate) fn error_body(error: &ApiError) -> Vec<u8> {
    to_json_bytes(&ErrorEnvelope::from(error))
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{ErrorCode, ProductCode};
    use serde_json::json;

    #[test]
    fn envelope_has_type_and_message_and_no_code() {
        let body = error_body(&ApiError::invalid("messages[0].role", "bad role"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad role"}})
        );
    }

    #[test]
    fn type_follows_status() {
        // Product codes as a gateway defines them: the type follows the status too.
        const CREDITS: ErrorCode =
            ErrorCode::Product(&ProductCode::new("insufficient_credits", 402));
        const NOT_ALLOWED: ErrorCode =
            ErrorCode::Product(&ProductCode::new("model_not_allowed", 403));
        const SPEND_LIMIT: ErrorCode =
            ErrorCode::Product(&ProductCode::new("api_key_spend_limit_exceeded", 429));
        for (code, kind) in [
            (ErrorCode::InvalidApiKey, "authentication_error"),
            (CREDITS, "billing_error"),
            (NOT_ALLOWED, "permission_error"),
            (ErrorCode::ModelNotFound, "not_found_error"),
            (ErrorCode::PayloadTooLarge, "request_too_large"),
            (SPEND_LIMIT, "rate_limit_error"),
            (ErrorCode::UpstreamError, "api_error"),
            (ErrorCode::UpstreamUnavailable, "overloaded_error"),
            (ErrorCode::InternalError, "api_error"),
        ] {
            let body = error_body(&ApiError::new(code, "m"));
            let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
            assert_eq!(value["error"]["type"], kind, "{code}");
            assert!(value["error"].get("code").is_none());
        }
    }
}
