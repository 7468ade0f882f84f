//! Where a digest channel may deliver: the SSRF rules for Slack and
//! Discord webhook URLs and Telegram Bot API bases (a channel's `api_base`
//! and `ROUTER_TELEGRAM_API_BASE`), which carry the webhook secret or the
//! router's bot token.
//!
//! - `https` only, no credentials in the URL, the host parsed by the WHATWG
//!   rules (`router_supply::url_guard::check_url`), so `0x7f000001` is
//!   127.0.0.1;
//! - a literal host must be public (`router_canonical::public_host`): no
//!   loopback, private, link-local (the cloud metadata address), CGNAT,
//!   unique-local or reserved address; a name must be one that can be
//!   public: not `localhost`, not a single label (`metadata`, `intranet`),
//!   not under `.local`, `.internal`, `.home.arpa` or `.localdomain`
//!   (`metadata.google.internal`), the same rule as image URLs in requests;
//! - no surrounding spaces or control characters (the parser would strip
//!   them: what is checked must be what is sent);
//! - at delivery, every address the host resolves to must be public too,
//!   and the connection goes to those addresses
//!   (`router_supply::url_guard::pin`), so a later DNS answer cannot
//!   rebind it.
//!
//! `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK` (tests and the local demo only)
//! allows loopback hosts, and plain `http` to them; every other rule holds.
//!
//! The checks happen when the operator provisions a channel (without DNS:
//! a 400 naming the field), at start-up for `ROUTER_TELEGRAM_API_BASE`, and
//! again before every delivery (channels stored before these rules, names
//! that resolve elsewhere since).

use router_canonical::public_host::{self, is_local_name, is_public_ip};
use router_supply::url_guard::{self, UrlError, UrlPolicy};
use std::net::IpAddr;
use url::{Host, Url};

/// Why a destination is refused. The text names the rule, never the URL
/// (which carries secrets).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DestinationError {
    #[error("must be an https URL with a host")]
    NotUrl,
    #[error("must not have surrounding spaces or control characters")]
    Spaces,
    #[error("must not carry credentials (user:password@)")]
    Credentials,
    #[error("must use https (plain http only to loopback, when loopback is allowed)")]
    NotHttps,
    #[error("must name a public host, not a loopback, private, link-local or reserved address")]
    NotPublic,
    #[error("does not resolve")]
    Unresolved,
    #[error("cannot be reached: the HTTP client could not be built")]
    Client,
}

/// The form of a destination, before any DNS: what provisioning and
/// start-up check.
pub fn check(text: &str, policy: UrlPolicy) -> Result<Url, DestinationError> {
    if text.trim() != text || text.chars().any(char::is_control) {
        return Err(DestinationError::Spaces);
    }
    let url = url_guard::check_url(text).map_err(|e| match e {
        UrlError::Credentials => DestinationError::Credentials,
        _ => DestinationError::NotUrl,
    })?;
    let loopback = match url.host() {
        Some(Host::Ipv4(ip)) => literal(IpAddr::V4(ip), policy)?,
        Some(Host::Ipv6(ip)) => literal(IpAddr::V6(ip), policy)?,
        Some(Host::Domain(name)) if is_local_name(name) => {
            if !policy.allow_loopback {
                return Err(DestinationError::NotPublic);
            }
            true
        }
        Some(Host::Domain(_)) => {
            // Names by form (no DNS here): the image-URL rule's.
            public_host::public_url(text).map_err(|_| DestinationError::NotPublic)?;
            false
        }
        None => return Err(DestinationError::NotUrl),
    };
    if url.scheme() != "https" && !loopback {
        return Err(DestinationError::NotHttps);
    }
    Ok(url)
}

/// Whether an allowed literal host is loopback; a refused one is an error.
fn literal(ip: IpAddr, policy: UrlPolicy) -> Result<bool, DestinationError> {
    if !is_public_ip(ip, policy.allow_loopback) {
        return Err(DestinationError::NotPublic);
    }
    Ok(ip.is_loopback())
}

/// What a delivery sends with: the checked URL and a client pinned to the
/// addresses its host resolved to, every one allowed.
#[derive(Debug)]
pub struct Checked {
    pub url: Url,
    pub client: reqwest::Client,
}

/// [`check`], then resolve the host and pin `builder`'s client to its
/// addresses; plain `http` must resolve to loopback only. Nothing is sent.
pub async fn resolve(
    text: &str,
    policy: UrlPolicy,
    builder: reqwest::ClientBuilder,
) -> Result<Checked, DestinationError> {
    let url = check(text, policy)?;
    let pinned = url_guard::pin(&url, policy, builder)
        .await
        .map_err(|e| match e {
            UrlError::Forbidden => DestinationError::NotPublic,
            UrlError::Resolve => DestinationError::Unresolved,
            _ => DestinationError::Client,
        })?;
    if url.scheme() != "https" && !pinned.addrs.iter().all(|a| a.ip().is_loopback()) {
        return Err(DestinationError::NotHttps);
    }
    Ok(Checked {
        url,
        client: pinned.client,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const DENY: UrlPolicy = UrlPolicy {
        allow_loopback: false,
    };
    const LOOPBACK: UrlPolicy = UrlPolicy {
        allow_loopback: true,
    };

    #[test]
    fn only_https_to_public_hosts_passes() {
        for ok in [
            "https://hooks.slack.com/services/T0/B0/x",
            "https://discord.com/api/webhooks/1/x",
            "https://api.telegram.org",
            "https://8.8.8.8/x",
            "https://[2606:4700:4700::1111]/x",
        ] {
            assert!(check(ok, DENY).is_ok(), "{ok}");
            assert!(check(ok, LOOPBACK).is_ok(), "{ok}");
        }
        let refused = [
            ("http://hooks.slack.com/x", DestinationError::NotHttps),
            ("https://127.0.0.1/x", DestinationError::NotPublic),
            ("https://0x7f000001/x", DestinationError::NotPublic),
            ("https://2130706433/x", DestinationError::NotPublic),
            ("https://10.0.0.1/x", DestinationError::NotPublic),
            ("https://169.254.169.254/x", DestinationError::NotPublic),
            ("https://100.64.0.1/x", DestinationError::NotPublic),
            ("https://[::1]/x", DestinationError::NotPublic),
            ("https://[fd00::1]/x", DestinationError::NotPublic),
            ("https://[::ffff:127.0.0.1]/x", DestinationError::NotPublic),
            ("https://localhost/x", DestinationError::NotPublic),
            // Issue 33: private-use names, as for image URLs.
            ("https://metadata/x", DestinationError::NotPublic),
            (
                "https://metadata.google.internal/computeMetadata/v1/",
                DestinationError::NotPublic,
            ),
            ("https://printer.local/x", DestinationError::NotPublic),
            ("https://router.home.arpa/x", DestinationError::NotPublic),
            ("https://hooks.slack.com/x\n", DestinationError::Spaces),
            (" https://hooks.slack.com/x", DestinationError::Spaces),
            ("https://hooks.sl\tack.com/x", DestinationError::Spaces),
            (
                "https://user:pass@hooks.slack.com/x",
                DestinationError::Credentials,
            ),
            ("ftp://hooks.slack.com/x", DestinationError::NotUrl),
            ("hooks.slack.com/x", DestinationError::NotUrl),
        ];
        for (text, error) in refused {
            assert_eq!(check(text, DENY).unwrap_err(), error, "{text}");
        }
    }

    #[test]
    fn allowing_loopback_allows_loopback_and_http_to_it_only() {
        for ok in [
            "http://127.0.0.1:9/x",
            "https://127.0.0.1/x",
            "http://[::1]:9/x",
            "http://localhost:9/x",
        ] {
            assert!(check(ok, LOOPBACK).is_ok(), "{ok}");
        }
        for (text, error) in [
            ("http://hooks.slack.com/x", DestinationError::NotHttps),
            ("http://8.8.8.8/x", DestinationError::NotHttps),
            ("https://10.0.0.1/x", DestinationError::NotPublic),
            ("https://169.254.169.254/x", DestinationError::NotPublic),
            ("http://[::ffff:127.0.0.1]/x", DestinationError::NotPublic),
            ("http://u:p@127.0.0.1/x", DestinationError::Credentials),
        ] {
            assert_eq!(check(text, LOOPBACK).unwrap_err(), error, "{text}");
        }
    }

    /// Delivery re-checks the form, then judges the name by what it
    /// resolves to (names resolving to private addresses are proven in
    /// `url_guard`'s tests with a fixed resolver); nothing is sent here.
    #[tokio::test]
    async fn delivery_checks_again_and_resolves() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        for text in ["http://127.0.0.1:9/x", "https://localhost:9/x"] {
            let refused = resolve(text, DENY, reqwest::Client::builder()).await;
            assert_eq!(refused.unwrap_err(), DestinationError::NotPublic, "{text}");
            let allowed = resolve(text, LOOPBACK, reqwest::Client::builder()).await;
            assert!(allowed.is_ok(), "{text}");
        }
        let missing = resolve(
            "https://no-such-host.invalid/x",
            DENY,
            reqwest::Client::builder(),
        )
        .await;
        assert_eq!(missing.unwrap_err(), DestinationError::Unresolved);
    }
}
