//! The Messages request headers: `anthropic-version`, `anthropic-beta` and
//! `anthropic-dangerous-direct-browser-access`.

use super::request::pin;
use crate::convert::ANTHROPIC_VERSION;
use router_canonical::request::NativeFields;
use router_canonical::{ApiError, HeaderSource, Protocol, Request};
use serde_json::Map;

/// The Messages headers that bear on a request.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct RequestHeaders<'a> {
    /// `anthropic-version`.
    pub(crate) version: Option<&'a str>,
    /// `anthropic-beta`.
    pub(crate) beta: Option<&'a str>,
    /// `anthropic-dangerous-direct-browser-access`.
    pub(crate) direct_browser_access: Option<&'a str>,
}

impl<'a> RequestHeaders<'a> {
    pub(crate) fn read(headers: &'a dyn HeaderSource) -> Self {
        RequestHeaders {
            version: headers.header("anthropic-version"),
            beta: headers.header("anthropic-beta"),
            direct_browser_access: headers.header("anthropic-dangerous-direct-browser-access"),
        }
    }
}

/// Messages bodies must be declared JSON.
pub(crate) fn require_json(headers: &dyn HeaderSource) -> Result<(), ApiError> {
    let is_json = headers
        .header("content-type")
        .and_then(|v| v.split(';').next())
        .is_some_and(|mime| mime.trim().eq_ignore_ascii_case("application/json"));
    if is_json {
        Ok(())
    } else {
        Err(ApiError::invalid(
            "content-type",
            "`Content-Type` must be `application/json`.",
        ))
    }
}

/// Check the version and browser headers; the beta identifiers, split on
/// commas, trimmed, empties dropped.
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
                format!(
                    "`anthropic-version` `{v}` is not supported: use {ANTHROPIC_VERSION}; the current Anthropic SDKs send a newer version by default, so set the header yourself (Python `default_headers={{\"anthropic-version\": \"{ANTHROPIC_VERSION}\"}}`, TypeScript `defaultHeaders`)"
                ),
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

/// Check the Messages headers and record the beta identifiers on the request.
///
/// `anthropic-version` must be `2023-06-01` (missing is a 400);
/// `anthropic-dangerous-direct-browser-access` must be `true` when present.
/// `anthropic-beta` is split on commas, trimmed and stored in
/// `request.native.betas`; a non-empty list pins the request to a native
/// route. Whether each identifier is allowed is the route's decision.
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
