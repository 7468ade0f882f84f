//! The Messages error envelope.

use router_canonical::ApiError;

pub fn error_body(error: &ApiError) -> Vec<u8> {
    serde_json::json!({"type": "error", "error": {"type": error.code.messages_type(), "message": error.message}})
        .to_string()
        .into_bytes()
}
