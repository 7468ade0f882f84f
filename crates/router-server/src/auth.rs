//! API-key authentication: `Authorization: Bearer` or `x-api-key` (A-01..A-05).

use crate::app::App;
use router_canonical::{ApiError, ErrorCode};
use router_core::store::{ApiKeyRecord, Scope, Store};

fn invalid_key() -> ApiError {
    ApiError::new(ErrorCode::InvalidApiKey, "Invalid or missing API key.")
}

/// The presented key: Bearer and `x-api-key` must agree when both are sent
/// (A-03, GP-35); a non-Bearer Authorization is malformed.
pub fn presented_key(headers: &http::HeaderMap) -> Result<&str, ApiError> {
    let bearer = match headers.get(http::header::AUTHORIZATION) {
        Some(value) => {
            let text = value.to_str().map_err(|_| invalid_key())?;
            let (scheme, token) = text.split_once(' ').ok_or_else(invalid_key)?;
            if !scheme.eq_ignore_ascii_case("bearer") {
                return Err(invalid_key());
            }
            Some(token.trim())
        }
        None => None,
    };
    let api_key = match headers.get("x-api-key") {
        Some(value) => Some(value.to_str().map_err(|_| invalid_key())?.trim()),
        None => None,
    };
    let key = match (bearer, api_key) {
        (Some(a), Some(b)) if a != b => return Err(invalid_key()),
        (Some(a), _) => a,
        (None, Some(b)) => b,
        (None, None) => return Err(invalid_key()),
    };
    if key.is_empty() {
        return Err(invalid_key());
    }
    Ok(key)
}

/// Authenticate and check the scope, when the route names one (A-06, A-11;
/// `None`: any valid key, A-12).
pub async fn authenticate(
    app: &App,
    headers: &http::HeaderMap,
    scope: Option<Scope>,
) -> Result<ApiKeyRecord, ApiError> {
    let key = presented_key(headers)?;
    let hash = router_store::hash_api_key(key);
    let record = app
        .database()
        .find_api_key(hash)
        .await
        .map_err(|e| {
            tracing::error!(error = %e, "key lookup failed");
            ApiError::new(
                ErrorCode::InternalError,
                "Authentication is temporarily unavailable.",
            )
        })?
        .ok_or_else(invalid_key)?;
    if let Some(scope) = scope
        && !record.has_scope(scope)
    {
        return Err(ApiError::new(
            ErrorCode::InsufficientScope,
            format!("This API key lacks the `{}` scope.", scope.as_str()),
        ));
    }
    Ok(record)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let mut h = http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn credentials_must_agree_and_be_bearer() {
        assert_eq!(
            presented_key(&headers(&[("authorization", "Bearer k1")])).unwrap(),
            "k1"
        );
        assert_eq!(
            presented_key(&headers(&[("x-api-key", "k1")])).unwrap(),
            "k1"
        );
        assert_eq!(
            presented_key(&headers(&[
                ("authorization", "Bearer k1"),
                ("x-api-key", "k1")
            ]))
            .unwrap(),
            "k1"
        );
        assert!(
            presented_key(&headers(&[
                ("authorization", "Bearer k1"),
                ("x-api-key", "k2")
            ]))
            .is_err()
        );
        assert!(presented_key(&headers(&[("authorization", "Basic abc")])).is_err());
        assert!(presented_key(&headers(&[("authorization", "Bearer ")])).is_err());
        assert!(presented_key(&headers(&[])).is_err());
    }
}
