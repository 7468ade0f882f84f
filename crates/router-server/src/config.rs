//! Server configuration, from flags and the environment (see `main.rs`).

use crate::client_addr::TrustedProxies;
use std::net::SocketAddr;
use std::time::Duration;

#[derive(Clone)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub database_url: String,
    pub catalog_path: String,
    /// The operator token guarding `/admin/`; `None` disables the admin API.
    pub admin_token: Option<String>,
    /// The routing deadline shared by all attempts (180 s in production).
    pub deadline: Duration,
    pub hold_lease: Duration,
    pub reaper_interval: Duration,
    pub database_pool_size: usize,
    /// `ROUTER_TRUSTED_PROXIES`: whose forwarding headers name the client.
    pub trusted_proxies: TrustedProxies,
    /// `ROUTER_PUBLIC_BASE_URL`: the origin clients reach this router at
    /// (`https://router.example.com`, no trailing slash), for absolute URLs
    /// in answers such as `/v1/docs`. Default `http://{listen}`.
    pub public_base_url: String,
}

/// A bad `ROUTER_PUBLIC_BASE_URL`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("`{0}` is not an http(s) origin such as https://router.example.com")]
pub struct BadBaseUrl(pub String);

/// Check an origin (`scheme://host[:port]`, http or https, no path, query
/// or fragment) and drop a trailing `/`.
pub fn public_base_url(text: &str) -> Result<String, BadBaseUrl> {
    let trimmed = text.trim().trim_end_matches('/');
    let bad = || BadBaseUrl(text.to_owned());
    let uri: http::Uri = trimmed.parse().map_err(|_| bad())?;
    let scheme_ok = matches!(uri.scheme_str(), Some("http" | "https"));
    let host_ok = uri.host().is_some_and(|h| !h.is_empty());
    // `http::Uri` reads "http://a/b" with path "/b"; an origin has none.
    let bare = uri.path_and_query().is_none_or(|p| p.as_str() == "/");
    if scheme_ok && host_ok && bare && !trimmed.contains(['#', '?', '@']) {
        Ok(trimmed.to_owned())
    } else {
        Err(bad())
    }
}

impl std::fmt::Debug for ServerConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServerConfig")
            .field("listen", &self.listen)
            .field("catalog_path", &self.catalog_path)
            .field(
                "admin_token",
                &self.admin_token.as_ref().map(|_| "<redacted>"),
            )
            .field("deadline", &self.deadline)
            .field("hold_lease", &self.hold_lease)
            .field("trusted_proxies", &self.trusted_proxies)
            .field("public_base_url", &self.public_base_url)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_base_url_is_an_origin() {
        assert_eq!(
            public_base_url("https://router.example.com/").unwrap(),
            "https://router.example.com"
        );
        assert_eq!(
            public_base_url("http://127.0.0.1:8080").unwrap(),
            "http://127.0.0.1:8080"
        );
        assert_eq!(
            public_base_url("http://[::1]:80").unwrap(),
            "http://[::1]:80"
        );
        for bad in [
            "",
            "router.example.com",
            "ftp://router.example.com",
            "https://",
            "https://router.example.com/docs",
            "https://router.example.com?x=1",
            "https://user@router.example.com",
            "https://router.example.com#top",
            "http://a b",
        ] {
            assert!(public_base_url(bad).is_err(), "{bad}");
        }
    }
}
