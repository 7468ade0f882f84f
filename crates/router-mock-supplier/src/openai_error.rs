//! The OpenAI error envelope `{"error": {"message", "type", "param", "code"}}`,
//! shared by the Chat Completions and Responses endpoints.

use serde_json::{Value, json};

/// The envelope for an error with the given HTTP status; `type` follows the
/// status the way OpenAI names its error types.
pub(crate) fn error_body(status: u16, message: &str) -> Value {
    let kind = match status {
        400 => "invalid_request_error",
        401 => "authentication_error",
        403 => "permission_error",
        404 => "not_found_error",
        408 => "timeout_error",
        429 => "rate_limit_error",
        500..=599 => "server_error",
        _ => "api_error",
    };
    envelope(message, kind)
}

/// The envelope with an explicit `type`.
pub(crate) fn envelope(message: &str, kind: &str) -> Value {
    json!({
        "error": {
            "message": message,
            "type": kind,
            "param": null,
            "code": null,
        }
    })
}
