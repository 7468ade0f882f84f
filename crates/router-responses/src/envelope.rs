//! The OpenAI error envelope: `{"error": {"message", "type", "param", "code"}}`.

use router_canonical::ApiError;

/// The JSON body of an error response for a Responses client.
pub fn error_body(_error: &ApiError) -> Vec<u8> {
    Vec::new()
}
