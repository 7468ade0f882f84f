//! Which hosts count as public: the pure half of the SSRF rules
//! (RELIABILITY.md §3 f), shared by the router's downloads (which also
//! check every address a name resolves to) and by request validation that
//! must refuse a URL without fetching or resolving it (video references).
//!
//! Refused: loopback, RFC 1918, link-local (169.254/16, the cloud metadata
//! address), CGNAT 100.64/10, 0.0.0.0/8, multicast, reserved and
//! documentation ranges, `::1`, `::`, `fc00::/7`, `fe80::/10`, the
//! deprecated site-local `fec0::/10`, the discard prefix `100::/64`, the
//! local-use NAT64 prefix `64:ff9b:1::/48`, Teredo `2001::/32` (its client
//! address is obfuscated, so it cannot be judged) and the rest of the IETF
//! protocol block `2001::/23`, and the IPv4-mapped, -compatible, -translated
//! (`::ffff:0:a.b.c.d`), NAT64 and 6to4 (`2002:a.b.c.d::/48`) IPv6 forms of
//! any refused IPv4 address; and the names `localhost` and `*.localhost`
//! (RFC 6761), which never leave the machine.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Whether `ip` is a public unicast address; loopback passes only when
/// `allow_loopback` (tests and the local demo), and then only in its own
/// form, never IPv4-mapped.
pub fn is_public_ip(ip: IpAddr, allow_loopback: bool) -> bool {
    match ip {
        IpAddr::V4(v4) => v4_public(v4, allow_loopback),
        IpAddr::V6(v6) => {
            if let Some(v4) = embedded_v4(v6) {
                // A mapped or translated IPv4 address is judged as IPv4,
                // except that loopback is allowed only in its own form.
                return !v4.is_loopback() && v4_public(v4, allow_loopback);
            }
            if v6.is_loopback() {
                return allow_loopback;
            }
            let s = v6.segments();
            !(v6.is_unspecified()
                || v6.is_multicast()
                || v6.is_unique_local()
                || v6.is_unicast_link_local()
                // fec0::/10, site-local: deprecated, still routed inside some sites.
                || (s[0] & 0xffc0) == 0xfec0
                // 100::/64, discard-only.
                || (s[0] == 0x0100 && s[1..4] == [0, 0, 0])
                // 64:ff9b:1::/48, NAT64 for local use (RFC 8215).
                || (s[0] == 0x64 && s[1] == 0xff9b && s[2] == 1)
                // 2001::/23: Teredo, benchmarking, ORCHID and other protocol
                // assignments; none is a supplier.
                || (s[0] == 0x2001 && s[1] < 0x0200)
                // 2001:db8::/32 and 3fff::/20, documentation.
                || (s[0] == 0x2001 && s[1] == 0x0db8)
                || (s[0] & 0xfff0) == 0x3ff0)
        }
    }
}

fn v4_public(ip: Ipv4Addr, allow_loopback: bool) -> bool {
    if ip.is_loopback() {
        return allow_loopback;
    }
    let [a, b, c, _] = ip.octets();
    let special = a == 0
        || ip.is_private()
        || ip.is_link_local()
        || (a == 100 && (64..128).contains(&b))
        || (a == 192 && b == 0 && c == 0)
        || (a == 192 && b == 0 && c == 2)
        || (a == 198 && (b == 18 || b == 19))
        || (a == 198 && b == 51 && c == 100)
        || (a == 203 && b == 0 && c == 113)
        || ip.is_multicast()
        || a >= 240;
    !special
}

/// The IPv4 address inside an IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`), IPv4-translated (`::ffff:0:a.b.c.d`), NAT64
/// (`64:ff9b::a.b.c.d`) or 6to4 (`2002:a.b.c.d::/48`) IPv6 address.
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let [a, b, c, d] = [s[6] >> 8, s[6] & 0xff, s[7] >> 8, s[7] & 0xff].map(|x| x as u8);
    let tail = Ipv4Addr::new(a, b, c, d);
    match s {
        [0, 0, 0, 0, 0, 0xffff, _, _] => Some(tail),
        [0, 0, 0, 0, 0, 0, _, _] if !ip.is_loopback() && !ip.is_unspecified() => Some(tail),
        [0, 0, 0, 0, 0xffff, 0, _, _] => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, _, _] => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::from((u32::from(hi) << 16) | u32::from(lo))),
        _ => None,
    }
}

/// Whether a host *name* (not an IP literal; already lowercased, as URL
/// parsers give it) is one that never leaves the machine: `localhost` or a
/// name under it, with or without the trailing dot.
pub fn is_local_name(host: &str) -> bool {
    let host = host.strip_suffix('.').unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || host
            .len()
            .checked_sub(".localhost".len())
            .and_then(|at| host.get(at..))
            .is_some_and(|tail| tail.eq_ignore_ascii_case(".localhost"))
}

/// Why `text` is not an absolute `http(s)` URL to a public host, judged
/// without fetching or resolving it (O-10, GP-20; image URLs in inference requests too). The host is read by the
/// WHATWG rules, so every IPv4 spelling (`2130706433`, `0x7f.1`,
/// `0177.0.0.1`, `127.1`) is the address it means; names are judged by
/// form only (a name that resolves to a private address is the fetcher's
/// to refuse, RELIABILITY.md §3 f).
pub fn public_url(text: &str) -> Result<(), &'static str> {
    // Leading or trailing spaces and controls would be silently stripped
    // by the parser: what is checked must be what is sent.
    if text.trim() != text || text.chars().any(char::is_control) {
        return Err("it has surrounding spaces or control characters");
    }
    let url = url::Url::parse(text).map_err(
        |_| "it is not an absolute URL (uploads, file IDs and raw base64 are not accepted)",
    )?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err("only http and https are accepted (not data:, blob: or others)");
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err("credentials in the URL are not accepted");
    }
    match url.host() {
        None => Err("it has no host"),
        Some(url::Host::Ipv4(ip)) if !is_public_ip(ip.into(), false) => {
            Err("its address is not public")
        }
        Some(url::Host::Ipv6(ip)) if !is_public_ip(ip.into(), false) => {
            Err("its address is not public")
        }
        Some(url::Host::Ipv4(_) | url::Host::Ipv6(_)) => Ok(()),
        Some(url::Host::Domain(name)) => public_name(name),
    }
}

/// A host name that can be public: not `localhost` or under it, not a
/// single label (`intranet`, `metadata`), not under a special-use suffix
/// that never resolves on the public internet.
fn public_name(name: &str) -> Result<(), &'static str> {
    const PRIVATE_SUFFIXES: [&str; 4] = [".local", ".internal", ".home.arpa", ".localdomain"];
    let bare = name.strip_suffix('.').unwrap_or(name).to_ascii_lowercase();
    if is_local_name(&bare) {
        return Err("localhost is not public");
    }
    if !bare.contains('.') {
        return Err("a single-label host is not public");
    }
    if PRIVATE_SUFFIXES.iter().any(|suffix| bare.ends_with(suffix)) {
        return Err("the host is under a private-use domain");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn public_addresses_pass_and_loopback_only_when_allowed() {
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_public_ip(ip, false), "{ip}");
        }
        for ip in ["127.0.0.1", "127.1.2.3", "::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_public_ip(ip, false), "{ip}");
            assert!(is_public_ip(ip, true), "{ip}");
        }
    }

    #[test]
    fn every_refused_range_is_refused_even_with_loopback_allowed() {
        for ip in [
            "0.0.0.0",
            "0.1.2.3",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "192.0.0.1",
            "192.0.2.1",
            "198.18.0.1",
            "198.51.100.1",
            "203.0.113.1",
            "224.0.0.1",
            "240.0.0.1",
            "255.255.255.255",
            "::",
            "fc00::1",
            "fd12:3456::1",
            "fe80::1",
            "ff02::1",
            "2001:db8::1",
            "::ffff:127.0.0.1",
            "::ffff:10.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "::10.0.0.1",
            "64:ff9b::a9fe:a9fe",
            // Issue 33: the IPv6 special forms.
            "fec0::1",
            "feff::1",
            "2002:7f00:1::",
            "2002:7f00:0001::1",
            "2002:a00:1::1",
            "2002:a9fe:a9fe::",
            "2002:c0a8:101::1",
            "64:ff9b:1::a00:1",
            "64:ff9b:1::808:808",
            "::ffff:0:7f00:1",
            "::ffff:0:a00:1",
            "2001::1",
            "2001:0:4136:e378:8000:63bf:3fff:fdd2",
            "2001:2::1",
            "2001:10::1",
            "100::1",
            "100::ffff:ffff:ffff:ffff",
            "3fff::1",
        ] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_public_ip(ip, true), "{ip}");
        }
        // Public addresses in the embedded forms are judged as the IPv4 address.
        assert!(is_public_ip("::ffff:8.8.8.8".parse().unwrap(), false));
        assert!(is_public_ip("2002:808:808::1".parse().unwrap(), false));
        assert!(is_public_ip("::ffff:0:808:808".parse().unwrap(), false));
        assert!(is_public_ip("2001:4860:4860::8888".parse().unwrap(), false));
        assert!(is_public_ip("100:0:0:1::1".parse().unwrap(), false));
        assert!(is_public_ip("100.128.0.1".parse().unwrap(), false));
    }

    #[test]
    fn localhost_names_are_local() {
        for name in [
            "localhost",
            "localhost.",
            "LOCALHOST",
            "a.localhost",
            "x.y.localhost.",
        ] {
            assert!(is_local_name(name), "{name}");
        }
        for name in [
            "example.com",
            "localhost.example.com",
            "mylocalhost",
            "localhostx",
        ] {
            assert!(!is_local_name(name), "{name}");
        }
    }
}
