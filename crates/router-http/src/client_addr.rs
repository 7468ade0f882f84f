//! The client address a key's IP allowlist is checked against (A-19,
//! CF-27): the TCP peer, or, when the peer is a proxy listed in
//! `ROUTER_TRUSTED_PROXIES`, the right-most address of the forwarding chain
//! that is not itself a trusted proxy.
//!
//! `X-Forwarded-For` and `Forwarded` are read only from a trusted peer. When
//! both are present they must name the same client: a proxy that appends to
//! one of them passes the other through from the client untouched, so a
//! disagreement means one was forged, and the address is then unknown. An
//! unknown address (also: an unreadable, obfuscated or `unknown` entry in
//! the chain) passes only keys without an allowlist.

use ipnet::IpNet;
use std::net::{IpAddr, SocketAddr};

/// Where a request came from, worked out once per request by the accept
/// loop (`server.rs`) and carried as a request extension: the access line
/// logs it, a key's IP allowlist checks it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientAddr {
    /// The TCP peer of the connection.
    pub peer: IpAddr,
    /// The client behind trusted proxies ([`TrustedProxies::client`]);
    /// `None` when it cannot be known.
    pub client: Option<IpAddr>,
}

impl ClientAddr {
    pub fn of(peer: IpAddr, proxies: &TrustedProxies, headers: &http::HeaderMap) -> ClientAddr {
        ClientAddr {
            peer,
            client: proxies.client(peer, headers),
        }
    }

    /// What the access line shows: the client, or the peer when the
    /// client cannot be known.
    pub fn logged(&self) -> IpAddr {
        self.client.unwrap_or(self.peer)
    }
}

/// The proxies whose forwarding headers are believed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Believes the forwarding headers of peers in `networks`; none (the
    /// default) trusts no proxy. The binary reads them from
    /// `ROUTER_TRUSTED_PROXIES`.
    pub fn new(networks: Vec<IpNet>) -> TrustedProxies {
        TrustedProxies(networks)
    }

    fn trusts(&self, ip: IpAddr) -> bool {
        self.0.iter().any(|net| net.contains(&ip))
    }

    /// The client address of a request that arrived from `peer`; `None`
    /// when it cannot be known.
    pub fn client(&self, peer: IpAddr, headers: &http::HeaderMap) -> Option<IpAddr> {
        let peer = peer.to_canonical();
        if !self.trusts(peer) {
            return Some(peer);
        }
        let forwarded_for = chain(
            headers,
            http::header::HeaderName::from_static("x-forwarded-for"),
        )
        .map(|entries| self.walk(peer, entries.iter().map(|e| parse_xff_entry(e))));
        let forwarded = chain(headers, http::header::FORWARDED)
            .map(|elements| self.walk(peer, elements.iter().map(|e| parse_forwarded_for(e))));
        match (forwarded_for, forwarded) {
            (None, None) => Some(peer),
            (Some(one), None) | (None, Some(one)) => one,
            (Some(a), Some(b)) => (a == b).then_some(a).flatten(),
        }
    }

    /// Right to left through the hops: the first address that is not a
    /// trusted proxy is the client; when every hop is trusted, the
    /// left-most is. An unreadable hop ends the walk as unknown.
    fn walk(
        &self,
        peer: IpAddr,
        hops: impl DoubleEndedIterator<Item = Option<IpAddr>>,
    ) -> Option<IpAddr> {
        let mut client = peer;
        for hop in hops.rev() {
            let ip = hop?.to_canonical();
            client = ip;
            if !self.trusts(ip) {
                break;
            }
        }
        Some(client)
    }
}

/// The comma-separated entries of every instance of header `name`, or
/// `None` when it is absent. A value that is not text makes the chain
/// unreadable: one empty entry.
fn chain(headers: &http::HeaderMap, name: http::header::HeaderName) -> Option<Vec<String>> {
    let mut values = headers.get_all(name).iter().peekable();
    values.peek()?;
    let mut entries = Vec::new();
    for value in values {
        match value.to_str() {
            Ok(text) => entries.extend(text.split(',').map(|e| e.trim().to_owned())),
            Err(_) => entries.push(String::new()),
        }
    }
    Some(entries)
}

/// `192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`, `192.0.2.1:443`, `[2001:db8::1]:443`.
fn parse_xff_entry(entry: &str) -> Option<IpAddr> {
    let entry = entry.trim();
    if let Ok(ip) = entry.parse::<IpAddr>() {
        return Some(ip);
    }
    if let Ok(addr) = entry.parse::<SocketAddr>() {
        return Some(addr.ip());
    }
    entry
        .strip_prefix('[')
        .and_then(|rest| rest.strip_suffix(']'))
        .and_then(|inner| inner.parse().ok())
}

/// The `for=` node of one `Forwarded` element (RFC 7239); obfuscated and
/// `unknown` nodes are unreadable.
fn parse_forwarded_for(element: &str) -> Option<IpAddr> {
    element.split(';').find_map(|pair| {
        let (name, value) = pair.trim().split_once('=')?;
        if !name.trim().eq_ignore_ascii_case("for") {
            return None;
        }
        let value = value.trim();
        let value = value
            .strip_prefix('"')
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or(value);
        parse_xff_entry(value)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A header map of (name, value) pairs, a name possibly repeated.
    fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
        let entries = pairs
            .iter()
            .map(|(k, v)| (http::HeaderName::from_static(k), v.parse().unwrap()));
        http::HeaderMap::from_iter(entries)
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    /// Trusted proxies from CIDR networks.
    fn trusting(networks: &[&str]) -> TrustedProxies {
        TrustedProxies::new(networks.iter().map(|n| n.parse().unwrap()).collect())
    }

    #[test]
    fn a_peer_in_a_trusted_network_is_a_proxy() {
        let proxies = trusting(&["10.0.0.0/8", "192.0.2.7/32", "2001:db8::/32"]);
        assert!(proxies.trusts(ip("10.1.2.3")));
        assert!(proxies.trusts(ip("192.0.2.7")));
        assert!(!proxies.trusts(ip("192.0.2.8")));
        assert!(proxies.trusts(ip("2001:db8::5")));
        assert!(!TrustedProxies::default().trusts(ip("10.1.2.3")));
    }

    #[test]
    fn headers_are_ignored_from_an_untrusted_peer() {
        let none = TrustedProxies::default();
        let h = headers(&[("x-forwarded-for", "10.9.9.9")]);
        assert_eq!(none.client(ip("127.0.0.1"), &h), Some(ip("127.0.0.1")));
        assert_eq!(
            none.client(ip("::ffff:127.0.0.1"), &h),
            Some(ip("127.0.0.1"))
        );
    }

    #[test]
    fn the_right_most_untrusted_hop_is_the_client() {
        let proxies = trusting(&["127.0.0.1/32", "10.0.0.0/8"]);
        let peer = ip("127.0.0.1");
        let client = |pairs: &[(&'static str, &str)]| proxies.client(peer, &headers(pairs));
        assert_eq!(client(&[]), Some(peer), "no header: the peer");
        assert_eq!(
            client(&[("x-forwarded-for", "1.1.1.1, 203.0.113.9, 10.0.0.2")]),
            Some(ip("203.0.113.9")),
            "a spoofed left-most entry is not believed"
        );
        assert_eq!(
            client(&[
                ("x-forwarded-for", "1.1.1.1"),
                ("x-forwarded-for", "203.0.113.9")
            ]),
            Some(ip("203.0.113.9")),
            "repeated headers form one chain"
        );
        assert_eq!(
            client(&[("x-forwarded-for", "10.0.0.3, 10.0.0.2")]),
            Some(ip("10.0.0.3")),
            "all trusted: the left-most"
        );
        assert_eq!(
            client(&[("x-forwarded-for", "[2001:db8::1]:443")]),
            Some(ip("2001:db8::1"))
        );
        assert_eq!(client(&[("x-forwarded-for", "garbage")]), None);
        assert_eq!(
            client(&[("x-forwarded-for", "garbage, 203.0.113.9")]),
            Some(ip("203.0.113.9")),
            "unreadable entries left of the client do not matter"
        );
        assert_eq!(
            client(&[(
                "forwarded",
                "for=198.51.100.1, for=\"[2001:db8:cafe::17]:4711\";proto=https"
            )]),
            Some(ip("2001:db8:cafe::17"))
        );
        assert_eq!(client(&[("forwarded", "for=unknown")]), None);
        assert_eq!(client(&[("forwarded", "for=_hidden")]), None);
        assert_eq!(
            client(&[
                ("forwarded", "for=203.0.113.9"),
                ("x-forwarded-for", "203.0.113.9")
            ]),
            Some(ip("203.0.113.9")),
            "both, agreeing"
        );
        assert_eq!(
            client(&[
                ("forwarded", "for=10.1.1.1, for=192.0.2.1"),
                ("x-forwarded-for", "203.0.113.9")
            ]),
            None,
            "both, disagreeing: one was forged"
        );
    }
}
