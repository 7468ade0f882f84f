//! Canonical -> wire (in progress).

use router_canonical::{ApiError, ErrorCode, Request, Response};

pub(crate) fn request(
    _req: &Request,
    _upstream_model: &str,
    _default_max_tokens: u32,
) -> Result<Vec<u8>, ApiError> {
    Err(ApiError::new(
        ErrorCode::InternalError,
        "router-messages is not finished",
    ))
}

pub(crate) fn response(_resp: &Response, _ctx: &crate::ResponseContext<'_>) -> Vec<u8> {
    Vec::new()
}
