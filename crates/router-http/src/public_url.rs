//! The public base URL (`ROUTER_PUBLIC_BASE_URL`): where people and
//! browsers reach this router. Sign-in links and documentation URLs are
//! built on it, session cookies are `Secure` when it is https, and its
//! origin is the one a cookie-authenticated mutation must come from (GP-36).

use std::net::SocketAddr;
use url::Url;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PublicBaseUrl {
    /// Without a trailing slash: `https://router.example.com` or
    /// `https://example.com/router`.
    base: String,
    /// `scheme://host[:port]`, as browsers send it in `Origin`.
    origin: String,
    https: bool,
}

impl PublicBaseUrl {
    /// An absolute http(s) URL without query or fragment.
    pub fn parse(text: &str) -> Result<PublicBaseUrl, String> {
        let url = Url::parse(text).map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        let https = match url.scheme() {
            "https" => true,
            "http" => false,
            other => {
                return Err(format!(
                    "`{text}`: the scheme must be http or https, not {other}"
                ));
            }
        };
        if url.host().is_none() || url.query().is_some() || url.fragment().is_some() {
            return Err(format!("`{text}` must be scheme://host[:port][/path]"));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(format!("`{text}` must not carry credentials"));
        }
        Ok(PublicBaseUrl {
            base: url.as_str().trim_end_matches('/').to_owned(),
            origin: url.origin().ascii_serialization(),
            https,
        })
    }

    /// The default: the listen address over plain http.
    pub fn for_listen(listen: SocketAddr) -> PublicBaseUrl {
        PublicBaseUrl {
            base: format!("http://{listen}"),
            origin: format!("http://{listen}"),
            https: false,
        }
    }

    /// `scheme://host[:port]`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn is_https(&self) -> bool {
        self.https
    }

    /// The absolute URL of `path` (which starts with `/`).
    pub fn join(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Whether `url` (an `Origin` or `Referer` value) has this origin.
    pub fn is_same_origin(&self, url: &str) -> bool {
        Url::parse(url).is_ok_and(|u| u.origin().ascii_serialization() == self.origin)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_origins_and_joins_paths() {
        let u = PublicBaseUrl::parse("https://Router.Example.com:443/gw/").unwrap();
        assert_eq!(u.origin(), "https://router.example.com");
        assert_eq!(u.join("/v1/docs"), "https://router.example.com/gw/v1/docs");
        assert!(u.is_https());
        assert!(u.is_same_origin("https://router.example.com"));
        assert!(u.is_same_origin("https://router.example.com/settings?x=1"));
        assert!(!u.is_same_origin("http://router.example.com"));
        assert!(!u.is_same_origin("https://router.example.com.evil.test"));
        assert!(!u.is_same_origin("null"));
        let local = PublicBaseUrl::for_listen("127.0.0.1:8080".parse().unwrap());
        assert_eq!(local.origin(), "http://127.0.0.1:8080");
        assert!(local.is_same_origin("http://127.0.0.1:8080"));
        assert!(!local.is_https());
    }

    #[test]
    fn refuses_what_is_not_a_base_url() {
        for bad in [
            "router.example.com",
            "ftp://x.test",
            "https://x.test/?q=1",
            "https://u:p@x.test",
            "https://x.test/#f",
        ] {
            assert!(PublicBaseUrl::parse(bad).is_err(), "{bad}");
        }
    }
}
