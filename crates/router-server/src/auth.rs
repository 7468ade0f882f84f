//! API-key authentication: `Authorization: Bearer` or `x-api-key`
//! (A-01..A-05), the key's IP allowlist and model policy.

use crate::app::App;
use router_canonical::ApiError;
use router_core::access::invalid_key;
use router_core::store::{ApiKeyRecord, Scope};
use router_http::client_addr::ClientAddr;

/// A header sent more than once where one value decides (a credential,
/// `Origin`, `Sec-Fetch-Site`).
#[derive(Debug, PartialEq, Eq)]
pub struct Repeated;

/// The one value of `name`: `None` when absent, [`Repeated`] when sent
/// twice or more. Taking the first would let whoever adds a copy (a client
/// behind a proxy that adds its own, a script that can add one header)
/// choose which counts (issue 33).
pub fn single_header<'h>(
    headers: &'h http::HeaderMap,
    name: &str,
) -> Result<Option<&'h http::HeaderValue>, Repeated> {
    let mut values = headers.get_all(name).iter();
    let first = values.next();
    match values.next() {
        Some(_) => Err(Repeated),
        None => Ok(first),
    }
}

/// The presented key: Bearer and `x-api-key` must agree when both are sent
/// (A-03, GP-35); a non-Bearer Authorization is malformed; either
/// sent twice is refused.
pub fn presented_key(headers: &http::HeaderMap) -> Result<&str, ApiError> {
    let once = |name| single_header(headers, name).map_err(|Repeated| invalid_key());
    let bearer = match once("authorization")? {
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
    let api_key = match once("x-api-key")? {
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

/// Authenticate, check the scope when the route names one (A-06, A-11;
/// `None`: any valid key, A-12), then the key's IP allowlist. Every
/// API-key endpoint passes here; the rules are core's
/// (`Gateway::authenticate`), the credential and the client's address are
/// read here.
pub async fn authenticate(
    app: &App,
    headers: &http::HeaderMap,
    extensions: &http::Extensions,
    scope: Option<Scope>,
) -> Result<ApiKeyRecord, ApiError> {
    let key = presented_key(headers)?;
    app.gateway
        .authenticate(key, scope, || {
            extensions.get::<ClientAddr>().and_then(|c| c.client)
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_headers::headers;

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
        // A credential header sent twice, even with one value, is refused.
        for name in ["authorization", "x-api-key"] {
            let value = if name == "authorization" {
                "Bearer k1"
            } else {
                "k1"
            };
            assert!(presented_key(&headers(&[(name, value), (name, value)])).is_err());
        }
        assert!(presented_key(&headers(&[("authorization", "Bearer ")])).is_err());
        assert!(presented_key(&headers(&[])).is_err());
    }
}
