//! The Messages request headers: `anthropic-version`, `anthropic-beta` and
//! `anthropic-dangerous-direct-browser-access`.

use super::request::pin;
use crate::RequestHeaders;
use crate::convert::ANTHROPIC_VERSION;
use router_canonical::request::NativeFields;
use router_canonical::{ApiError, Protocol, Request};
use serde_json::Map;

/// Check the version and browser headers; the beta identifiers, split on
/// commas, trimmed, empties dropped (GP-32).
pub(crate) fn check_headers(headers: &RequestHeaders<'_>) -> Result<Vec<String>, ApiError> {
    match headers.version.map(str::trim) {
        None => {
            return Err(ApiError::invalid(
                "anthropic-version",
                format!("the `anthropic-version` header is required (use {ANTHROPIC_VERSION})"),
            ));
        }
        Some(v) if v != ANTHROPIC_VERSION => {
            return Err(ApiError::invalid(
                "anthropic-version",
                format!("`anthropic-version` `{v}` is not supported: use {ANTHROPIC_VERSION}"),
            ));
        }
        Some(_) => {}
    }
    if let Some(v) = headers.direct_browser_access
        && v.trim() != "true"
    {
        return Err(ApiError::invalid(
            "anthropic-dangerous-direct-browser-access",
            "`anthropic-dangerous-direct-browser-access` must be `true` when present",
        ));
    }
    Ok(headers
        .beta
        .into_iter()
        .flat_map(|b| b.split(','))
        .map(str::trim)
        .filter(|b| !b.is_empty())
        .map(str::to_owned)
        .collect())
}

pub(crate) fn apply_headers(
    request: &mut Request,
    headers: &RequestHeaders<'_>,
) -> Result<(), ApiError> {
    let betas = check_headers(headers)?;
    if betas.is_empty() {
        return Ok(());
    }
    let native = request.native.get_or_insert_with(|| NativeFields {
        protocol: Some(Protocol::Messages),
        fields: Map::new(),
        betas: Vec::new(),
    });
    native.betas = betas;
    // Whether each identifier is allowed is the chosen route's decision (D-04);
    // no converted route can honour any of them.
    pin(&mut request.native_only, "anthropic-beta");
    Ok(())
}
