//! The OpenAI error envelope: `{"error": {"message", "type", "param", "code"}}`.
//!
//! Responses clients get the same envelope as Chat clients (P-01, GP-05) for
//! a failed request. A stream that fails after it started ends with an
//! `error` event and `response.failed` instead (see [`crate::StreamEncoder`]).

use crate::wire::to_json_bytes;
use router_canonical::ApiError;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    pub error: ErrorObject,
}

/// All four keys are always present; `param` is `null` when no field is at fault.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorObject {
    pub message: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub param: Option<String>,
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

/// The JSON body of an error response for a Responses client.
pub fn error_body(error: &ApiError) -> Vec<u8> {
    to_json_bytes(&ErrorEnvelope::from(error))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a panic is the failure report
mod tests {
    use super::*;
    use router_canonical::ErrorCode;
    use serde_json::json;

    #[test]
    fn envelope_has_all_four_keys() {
        let body = error_body(&ApiError::invalid("input[0].content", "bad content"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"error": {
                "message": "bad content",
                "type": "invalid_request_error",
                "param": "input[0].content",
                "code": "invalid_parameter"
            }})
        );
    }

    #[test]
    fn param_is_null_when_absent_and_type_follows_status() {
        let body = error_body(&ApiError::new(ErrorCode::UpstreamUnavailable, "try later"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["param"], serde_json::Value::Null);
        assert_eq!(value["error"]["type"], "api_error");
        assert_eq!(value["error"]["code"], "upstream_unavailable");
    }
}
