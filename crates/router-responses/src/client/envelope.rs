//! The OpenAI error envelope: `{"error": {"message", "type", "param", "code"}}`.
//!
//! Responses clients get the same envelope as Chat clients for
//! a failed request. A stream that fails after it started ends with an
//! `error` event and `response.failed` instead (see [`super::StreamEncoder`]).
//! The shape lives in [`router_canonical::openai_error`].

use router_canonical::ApiError;

/// The JSON body of an error response for a Responses client.
pub(super) fn error_body(error: &ApiError) -> Vec<u8> {
    router_canonical::openai_error::openai_error_body(error)
}

#[cfg(test)]
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
