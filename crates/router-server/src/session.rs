//! Browser sessions (the spec's `SessionAuth`): the cookie, its lookup, and
//! the same-origin rule for cookie-authenticated mutations.
//!
//! A session is found only where the route table allows one
//! (`ApiKeyOrSession`, `Session`); on an `ApiKey` route the guard never
//! looks, so a session is never a credential there. A session's
//! mutation (any method but GET/HEAD) must come from the router's own
//! origin, else 403 `cross_origin_forbidden` (A-16, GP-36): `Origin` (or,
//! without it, `Referer`) must equal the public base URL's origin, and
//! `Sec-Fetch-Site: cross-site` is refused whatever they say.

use crate::app::App;
use router_canonical::ApiError;
use router_core::product_codes;
use router_http::public_url::PublicBaseUrl;
use std::time::Duration;

// The session cookie's name, defined where the operator's session view
// names it too.
pub use router_operator::COOKIE_NAME;

/// A signed-in browser session: the operator wing's record of it (its id,
/// account, the account's email and when it expires).
pub use router_operator::SessionRecord as Session;

/// The value of this router's session cookie in the `Cookie` headers, if
/// sent once. Two different values (a sibling subdomain can plant a second
/// cookie of the same name) are no session: neither is trusted.
fn cookie_value(headers: &http::HeaderMap) -> Option<&str> {
    let mut values = headers
        .get_all(http::header::COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value.trim());
    let first = values.next()?;
    if values.any(|other| other != first) {
        return None;
    }
    Some(first).filter(|value| !value.is_empty())
}

/// The request's live session, if its cookie names one. An unknown,
/// expired or revoked cookie is no session (the route then answers 401).
pub async fn find(app: &App, headers: &http::HeaderMap) -> Result<Option<Session>, ApiError> {
    let Some(token) = cookie_value(headers) else {
        return Ok(None);
    };
    app.operator
        .find_session(token)
        .await
        .map_err(ApiError::from)
}

/// The same-origin rule for a cookie-authenticated request (GP-36): safe
/// methods pass; a mutation needs `Origin` (or `Referer`) of this router's
/// origin and no `Sec-Fetch-Site: cross-site`.
pub fn check_origin(
    public: &PublicBaseUrl,
    method: &http::Method,
    headers: &http::HeaderMap,
) -> Result<(), ApiError> {
    if matches!(*method, http::Method::GET | http::Method::HEAD) {
        return Ok(());
    }
    // Each of these sent twice is refused: first-wins would let an added
    // copy decide.
    let mut repeated = false;
    let mut header = |name: &str| match crate::auth::single_header(headers, name) {
        Ok(value) => value.and_then(|v| v.to_str().ok()),
        Err(_) => {
            repeated = true;
            None
        }
    };
    let cross_site = header("sec-fetch-site").is_some_and(|v| v.eq_ignore_ascii_case("cross-site"));
    let claimed = header("origin").or_else(|| header("referer"));
    match claimed {
        Some(url) if !repeated && !cross_site && public.is_same_origin(url) => Ok(()),
        _ => Err(ApiError::new(
            product_codes::CROSS_ORIGIN_FORBIDDEN,
            format!(
                "A signed-in browser may change things only from {}.",
                public.origin()
            ),
        )),
    }
}

/// The `Set-Cookie` value that stores a session in the browser: HttpOnly,
/// SameSite=Lax, Secure unless the router is reached over plain http, and
/// scoped to the whole site.
pub fn set_cookie(public: &PublicBaseUrl, token: &str, max_age: Duration) -> String {
    let secure = if public.is_https() { "; Secure" } else { "" };
    format!(
        "{COOKIE_NAME}={token}; Path=/; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
        max_age.as_secs()
    )
}

/// The `Set-Cookie` value that removes the session cookie.
pub fn clear_cookie(public: &PublicBaseUrl) -> String {
    set_cookie(public, "", Duration::ZERO)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::test_headers::headers;

    #[test]
    fn finds_the_session_cookie_among_others() {
        let h = headers(&[("cookie", "a=1; router_session=abc ; b=2")]);
        assert_eq!(cookie_value(&h), Some("abc"));
        let h = headers(&[("cookie", "a=1"), ("cookie", "router_session=xyz")]);
        assert_eq!(cookie_value(&h), Some("xyz"));
        assert_eq!(
            cookie_value(&headers(&[("cookie", "router_session=")])),
            None
        );
        assert_eq!(
            cookie_value(&headers(&[("cookie", "xrouter_session=1")])),
            None
        );
    }

    #[test]
    fn mutations_need_the_routers_origin() {
        let public = PublicBaseUrl::parse("https://r.example.com").unwrap();
        let post = http::Method::POST;
        let ok = |h: &[(&'static str, &str)]| check_origin(&public, &post, &headers(h)).is_ok();
        assert!(ok(&[("origin", "https://r.example.com")]));
        assert!(ok(&[("referer", "https://r.example.com/settings")]));
        assert!(ok(&[
            ("origin", "https://r.example.com"),
            ("sec-fetch-site", "same-origin")
        ]));
        assert!(!ok(&[]));
        assert!(!ok(&[("origin", "https://evil.example.com")]));
        assert!(!ok(&[("origin", "null")]));
        assert!(!ok(&[
            ("origin", "https://r.example.com"),
            ("sec-fetch-site", "cross-site")
        ]));
        // Repeated, even with the router's own value first: refused.
        assert!(!ok(&[
            ("origin", "https://r.example.com"),
            ("origin", "https://evil.example.com")
        ]));
        assert!(!ok(&[
            ("origin", "https://r.example.com"),
            ("sec-fetch-site", "same-origin"),
            ("sec-fetch-site", "cross-site")
        ]));
        assert!(check_origin(&public, &http::Method::GET, &headers(&[])).is_ok());
    }

    #[test]
    fn two_different_session_cookies_are_no_session() {
        let two = headers(&[
            ("cookie", "router_session=a"),
            ("cookie", "router_session=b"),
        ]);
        assert_eq!(cookie_value(&two), None);
        let same = headers(&[("cookie", "router_session=a; router_session=a")]);
        assert_eq!(cookie_value(&same), Some("a"));
    }

    #[test]
    fn cookies_are_http_only_lax_and_secure_over_https() {
        let https = PublicBaseUrl::parse("https://r.example.com").unwrap();
        let c = set_cookie(&https, "t", Duration::from_secs(60));
        assert_eq!(
            c,
            "router_session=t; Path=/; Max-Age=60; HttpOnly; SameSite=Lax; Secure"
        );
        let http = PublicBaseUrl::parse("http://127.0.0.1:8080").unwrap();
        assert!(!set_cookie(&http, "t", Duration::from_secs(60)).contains("Secure"));
        assert!(clear_cookie(&https).contains("Max-Age=0"));
    }
}
