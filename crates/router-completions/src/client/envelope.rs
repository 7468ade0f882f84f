//! The OpenAI error envelope: `{"error": {"message", "type", "param", "code"}}`.
//!
//! The router renders its canonical [`ApiError`] in this shape for
//! Completions clients, both as a response body and as the
//! terminal `data:` frame of a stream that fails after it started. The shape is shared with the other OpenAI surfaces through
//! [`router_canonical::openai_error`], so the wire crates stay independent of
//! each other.

use router_canonical::ApiError;

/// The envelope types are shared by every OpenAI surface.
pub use router_canonical::openai_error::{ErrorEnvelope, ErrorObject};

/// The JSON body of an error response for a Completions client.
pub fn error_body(error: &ApiError) -> Vec<u8> {
    router_canonical::openai_error::openai_error_body(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::{ErrorCode, ProductCode};
    use serde_json::json;

    #[test]
    fn envelope_has_all_four_keys() {
        let body = error_body(&ApiError::invalid("prompt", "bad prompt"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(
            value,
            json!({"error": {
                "message": "bad prompt",
                "type": "invalid_request_error",
                "param": "prompt",
                "code": "invalid_parameter"
            }})
        );
    }

    #[test]
    fn param_is_null_when_absent_and_type_follows_status() {
        const ZDR_CAPACITY_UNAVAILABLE: ErrorCode =
            ErrorCode::Product(&ProductCode::new("zdr_capacity_unavailable", 503));
        let body = error_body(&ApiError::new(ZDR_CAPACITY_UNAVAILABLE, "none"));
        let value: serde_json::Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(value["error"]["param"], serde_json::Value::Null);
        assert_eq!(value["error"]["type"], "api_error");
        assert_eq!(value["error"]["code"], "zdr_capacity_unavailable");
    }
}
