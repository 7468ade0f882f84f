//! Wire -> canonical (in progress).

use crate::RequestHeaders;
use crate::error::DecodeError;
use router_canonical::{ApiError, ErrorCode, Request, Response};

fn pending() -> ApiError {
    ApiError::new(ErrorCode::InternalError, "router-messages is not finished")
}

pub(crate) fn request(_body: &[u8]) -> Result<Request, ApiError> {
    Err(pending())
}

pub(crate) fn count_tokens(_body: &[u8]) -> Result<Request, ApiError> {
    Err(pending())
}

pub(crate) fn check_headers(_headers: &RequestHeaders<'_>) -> Result<(), ApiError> {
    Ok(())
}

pub(crate) fn apply_headers(
    _request: &mut Request,
    _headers: &RequestHeaders<'_>,
) -> Result<(), ApiError> {
    Ok(())
}

pub(crate) fn response(_body: &[u8]) -> Result<Response, DecodeError> {
    Err(DecodeError::InvalidJson {
        path: ".".to_owned(),
        message: "not implemented".to_owned(),
    })
}
