//! Downloads of supplier-given URLs (an image answer's `url`) under the SSRF
//! rules of the reliability plan (RELIABILITY.md §3 f):
//!
//! - only `http` and `https`, no credentials in the URL (`user@host`);
//! - the host is parsed by the WHATWG rules, so decimal, octal and hex IPv4
//!   literals and a trailing dot become the address they mean;
//! - every address the name resolves to must be public: loopback, RFC 1918,
//!   link-local (169.254/16, the cloud metadata address), CGNAT 100.64/10,
//!   0.0.0.0/8, multicast, reserved and documentation ranges, `::1`,
//!   `fc00::/7`, `fe80::/10`, and IPv4-mapped or -embedded IPv6 forms of any
//!   of them are refused;
//! - the connection goes to the address that was checked (pinned, so a second
//!   DNS answer cannot rebind it), no proxy is used, and each redirect is a
//!   new URL checked from the start (at most [`MAX_REDIRECTS`]);
//! - the body is capped at [`MAX_DOWNLOAD_BYTES`].
//!
//! [`pin`] is the resolve-check-pin step alone, for other requests to URLs
//! the router was given (digest channels' webhooks).
//!
//! Loopback can be allowed ([`UrlPolicy::allow_loopback`]) for tests and
//! the local demo only, where the mock supplier serves its images on
//! 127.0.0.1 (`ROUTER_IMAGE_URL_ALLOW_LOOPBACK`, docs/operations.md).

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

/// The most redirects one download follows.
pub const MAX_REDIRECTS: usize = 3;

/// The largest image the router downloads.
pub const MAX_DOWNLOAD_BYTES: usize = 32 * 1024 * 1024;

/// Which addresses a download may reach besides public ones.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UrlPolicy {
    /// Allow 127.0.0.0/8 and `::1` (tests and the local demo only).
    pub allow_loopback: bool,
}

/// Why a URL was not downloaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UrlError {
    #[error("not a valid URL")]
    Parse,
    #[error("only http and https URLs are fetched")]
    Scheme,
    #[error("URLs with credentials are refused")]
    Credentials,
    #[error("the URL has no host")]
    NoHost,
    #[error("the host does not resolve")]
    Resolve,
    #[error("the host resolves to a non-public address")]
    Forbidden,
    #[error("too many redirects")]
    Redirects,
    #[error("the download failed: {0}")]
    Transport(String),
    #[error("the download answered HTTP {0}")]
    Status(u16),
    #[error("the download exceeds the size limit")]
    TooLarge,
}

/// Whether `ip` is a public unicast address (or loopback, when allowed).
/// The classification itself is [`router_canonical::public_host`], shared
/// with request validation that must judge a URL without resolving it.
pub fn is_allowed(ip: IpAddr, policy: UrlPolicy) -> bool {
    router_canonical::public_host::is_public_ip(ip, policy.allow_loopback)
}

/// Check a URL's form (scheme, credentials, host), before any resolution.
pub fn check_url(text: &str) -> Result<reqwest::Url, UrlError> {
    let url = reqwest::Url::parse(text).map_err(|_| UrlError::Parse)?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(UrlError::Scheme);
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(UrlError::Credentials);
    }
    if url.host().is_none() {
        return Err(UrlError::NoHost);
    }
    Ok(url)
}

/// The addresses to connect to for `url`, every one of them allowed.
/// How a host name becomes addresses: the system resolver, or (in tests) a
/// fixed map, so the rules are proven for names as well as literals.
trait Lookup: Sync {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>,
    >;
}

struct SystemLookup;

impl Lookup for SystemLookup {
    fn lookup<'a>(
        &'a self,
        host: &'a str,
        port: u16,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>,
    > {
        Box::pin(async move { Ok(tokio::net::lookup_host((host, port)).await?.collect()) })
    }
}

async fn resolve(
    url: &reqwest::Url,
    policy: UrlPolicy,
    lookup: &dyn Lookup,
) -> Result<Vec<SocketAddr>, UrlError> {
    let port = url.port_or_known_default().ok_or(UrlError::NoHost)?;
    let host = url.host_str().ok_or(UrlError::NoHost)?;
    // The parser already turned every IPv4 spelling into dotted form and
    // bracketed IPv6; a literal is its own answer.
    let literal = host
        .trim_start_matches('[')
        .trim_end_matches(']')
        .parse::<IpAddr>()
        .ok();
    let addrs: Vec<SocketAddr> = match literal {
        Some(ip) => vec![SocketAddr::new(ip, port)],
        None => lookup
            .lookup(host, port)
            .await
            .map_err(|_| UrlError::Resolve)?,
    };
    if addrs.is_empty() {
        return Err(UrlError::Resolve);
    }
    // Every answer must pass: one private address among public ones is how
    // rebinding and split-horizon tricks get in.
    if addrs.iter().any(|a| !is_allowed(a.ip(), policy)) {
        return Err(UrlError::Forbidden);
    }
    Ok(addrs)
}

/// Download `text` under the rules above, within `timeout`.
pub async fn download(
    text: &str,
    policy: UrlPolicy,
    timeout: Duration,
) -> Result<Vec<u8>, UrlError> {
    download_via(text, policy, timeout, &SystemLookup).await
}

/// A client for one URL's host, pinned to addresses checked under the
/// rules above.
#[derive(Debug, Clone)]
pub struct Pinned {
    /// Connects only to [`Pinned::addrs`] for the URL's host (TLS still
    /// verifies the name), through no proxy, following no redirect and
    /// sending no `Referer`.
    pub client: reqwest::Client,
    /// Every address the host resolved to, each one allowed.
    pub addrs: Vec<SocketAddr>,
}

/// Resolve `url`'s host once, check every address against `policy`, and
/// build from `builder` (the caller's timeouts) a client pinned to them,
/// so that a second DNS answer cannot rebind the connection. The URL's
/// form is the caller's to check first ([`check_url`]).
pub async fn pin(
    url: &reqwest::Url,
    policy: UrlPolicy,
    builder: reqwest::ClientBuilder,
) -> Result<Pinned, UrlError> {
    pin_via(url, policy, builder, &SystemLookup).await
}

async fn pin_via(
    url: &reqwest::Url,
    policy: UrlPolicy,
    builder: reqwest::ClientBuilder,
    lookup: &dyn Lookup,
) -> Result<Pinned, UrlError> {
    let addrs = resolve(url, policy, lookup).await?;
    let host = url.host_str().ok_or(UrlError::NoHost)?;
    let client = builder
        .redirect(reqwest::redirect::Policy::none())
        .referer(false)
        .no_proxy()
        .resolve_to_addrs(host, &addrs)
        .build()
        .map_err(|e| UrlError::Transport(e.to_string()))?;
    Ok(Pinned { client, addrs })
}

async fn download_via(
    text: &str,
    policy: UrlPolicy,
    timeout: Duration,
    lookup: &dyn Lookup,
) -> Result<Vec<u8>, UrlError> {
    let mut url = check_url(text)?;
    for _ in 0..=MAX_REDIRECTS {
        // A client of its own per hop, pinned to the checked addresses;
        // redirects are followed here, each one checked from the start.
        let Pinned { client, .. } = pin_via(
            &url,
            policy,
            reqwest::Client::builder().timeout(timeout),
            lookup,
        )
        .await?;
        let mut response = client
            .get(url.clone())
            .send()
            .await
            .map_err(|e| UrlError::Transport(e.to_string()))?;
        let status = response.status();
        if status.is_redirection() {
            let location = response
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or(UrlError::Status(status.as_u16()))?;
            let next = url.join(location).map_err(|_| UrlError::Parse)?;
            url = check_url(next.as_str())?;
            continue;
        }
        if !status.is_success() {
            return Err(UrlError::Status(status.as_u16()));
        }
        if response
            .content_length()
            .is_some_and(|n| n > MAX_DOWNLOAD_BYTES as u64)
        {
            return Err(UrlError::TooLarge);
        }
        let mut body = Vec::new();
        while let Some(chunk) = response
            .chunk()
            .await
            .map_err(|e| UrlError::Transport(e.to_string()))?
        {
            if body.len() + chunk.len() > MAX_DOWNLOAD_BYTES {
                return Err(UrlError::TooLarge);
            }
            body.extend_from_slice(&chunk);
        }
        return Ok(body);
    }
    Err(UrlError::Redirects)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DENY: UrlPolicy = UrlPolicy {
        allow_loopback: false,
    };

    /// The SSRF corpus of RELIABILITY.md: every form is refused, by its
    /// literal or by the address it resolves to.
    #[tokio::test]
    async fn the_ssrf_corpus_is_refused() {
        let corpus = [
            "http://127.0.0.1/a.png",
            "http://127.1/a.png",
            "http://2130706433/a.png",
            "http://0x7f000001/a.png",
            "http://0177.0.0.1/a.png",
            "http://10.0.0.1/a.png",
            "http://172.16.0.1/a.png",
            "http://192.168.1.1/a.png",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/a.png",
            "http://0.0.0.0/a.png",
            "http://[::1]/a.png",
            "http://[fc00::1]/a.png",
            "http://[fd12:3456::1]/a.png",
            "http://[fe80::1]/a.png",
            "http://[::ffff:127.0.0.1]/a.png",
            "http://[::ffff:169.254.169.254]/a.png",
            "http://[64:ff9b::a9fe:a9fe]/a.png",
            "http://localhost/a.png",
            "http://localhost./a.png",
            "http://user@example.com/a.png",
            "http://user:pw@8.8.8.8/a.png",
            "ftp://8.8.8.8/a.png",
            "file:///etc/passwd",
            "data:image/png;base64,iVBORw0KGgo=",
            "iVBORw0KGgo=",
            "gopher://8.8.8.8/",
            "http:///a.png",
        ];
        for url in corpus {
            let result = download(url, DENY, Duration::from_secs(2)).await;
            assert!(
                matches!(
                    result,
                    Err(UrlError::Forbidden
                        | UrlError::Scheme
                        | UrlError::Credentials
                        | UrlError::Parse
                        | UrlError::NoHost
                        | UrlError::Resolve)
                ),
                "{url}: {result:?}"
            );
        }
    }

    /// A test resolver: each name maps to the next of its answers (the last
    /// one repeats); every lookup is counted.
    struct Answers {
        answers: std::collections::HashMap<&'static str, Vec<Vec<IpAddr>>>,
        calls: std::sync::Mutex<Vec<String>>,
    }

    impl Lookup for Answers {
        fn lookup<'a>(
            &'a self,
            host: &'a str,
            port: u16,
        ) -> std::pin::Pin<
            Box<dyn std::future::Future<Output = std::io::Result<Vec<SocketAddr>>> + Send + 'a>,
        > {
            let mut calls = self.calls.lock().unwrap();
            let round = calls.iter().filter(|c| *c == host).count();
            calls.push(host.to_owned());
            let list = self.answers.get(host).cloned().unwrap_or_default();
            let ips = list.get(round).or(list.last()).cloned().unwrap_or_default();
            Box::pin(std::future::ready(Ok(ips
                .into_iter()
                .map(|ip| SocketAddr::new(ip, port))
                .collect())))
        }
    }

    /// Names resolving to each refused range are refused, as is a name with
    /// one private answer among public ones.
    #[tokio::test]
    async fn names_are_judged_by_every_address_they_resolve_to() {
        let private = [
            "127.0.0.1",
            "10.1.1.1",
            "172.16.5.5",
            "192.168.0.1",
            "169.254.169.254",
            "100.64.1.1",
            "0.0.0.0",
            "::1",
            "fc00::1",
            "::ffff:127.0.0.1",
            "fe80::1",
        ];
        for ip in private {
            let lookup = Answers {
                answers: [("evil.test", vec![vec![ip.parse().unwrap()]])].into(),
                calls: Default::default(),
            };
            let result = download_via(
                "http://evil.test/a.png",
                DENY,
                Duration::from_secs(2),
                &lookup,
            )
            .await;
            assert_eq!(result, Err(UrlError::Forbidden), "{ip}");
        }
        let split = Answers {
            answers: [(
                "split.test",
                vec![vec![
                    "8.8.8.8".parse().unwrap(),
                    "10.0.0.1".parse().unwrap(),
                ]],
            )]
            .into(),
            calls: Default::default(),
        };
        let result = download_via(
            "http://split.test/a.png",
            DENY,
            Duration::from_secs(2),
            &split,
        )
        .await;
        assert_eq!(result, Err(UrlError::Forbidden));
    }

    /// Rebinding: the first answer (checked) is where the connection goes;
    /// a second answer (private) is never asked for nor used.
    #[tokio::test]
    async fn the_connection_is_pinned_to_the_checked_address() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let server = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = server.local_addr().unwrap().port();
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            while let Ok((mut socket, _)) = server.accept().await {
                let mut buf = [0u8; 1024];
                let _ = socket.read(&mut buf).await;
                let _ = socket
                    .write_all(
                        b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\nconnection: close\r\n\r\npinned",
                    )
                    .await;
            }
        });
        let allow = UrlPolicy {
            allow_loopback: true,
        };
        let lookup = Answers {
            answers: [(
                "rebind.test",
                vec![
                    vec!["127.0.0.1".parse().unwrap()],
                    vec!["10.0.0.1".parse().unwrap()],
                ],
            )]
            .into(),
            calls: Default::default(),
        };
        let url = format!("http://rebind.test:{port}/a.png");
        let body = download_via(&url, allow, Duration::from_secs(5), &lookup).await;
        assert_eq!(body, Ok(b"pinne".to_vec()));
        assert_eq!(*lookup.calls.lock().unwrap(), ["rebind.test"]);
    }

    /// [`pin`] judges a name by every address it resolves to, so a caller
    /// that sends only through the pinned client never connects to a
    /// refused one; an allowed answer is what the client is pinned to.
    #[tokio::test]
    async fn pin_refuses_names_with_a_private_answer_and_pins_allowed_ones() {
        let _ = rustls::crypto::ring::default_provider().install_default();
        for ip in ["10.0.0.7", "169.254.169.254", "127.0.0.1", "fd00::1"] {
            let lookup = Answers {
                answers: [("hooks.test", vec![vec![ip.parse().unwrap()]])].into(),
                calls: Default::default(),
            };
            let url = reqwest::Url::parse("https://hooks.test/services/x").unwrap();
            let result = pin_via(&url, DENY, reqwest::Client::builder(), &lookup).await;
            assert!(
                matches!(result, Err(UrlError::Forbidden)),
                "{ip}: {result:?}"
            );
        }
        let lookup = Answers {
            answers: [("hooks.test", vec![vec!["8.8.8.8".parse().unwrap()]])].into(),
            calls: Default::default(),
        };
        let url = reqwest::Url::parse("https://hooks.test/services/x").unwrap();
        let pinned = pin_via(&url, DENY, reqwest::Client::builder(), &lookup)
            .await
            .unwrap();
        assert_eq!(pinned.addrs, ["8.8.8.8:443".parse().unwrap()]);
    }

    #[test]
    fn public_addresses_pass_and_loopback_only_when_allowed() {
        let allow = UrlPolicy {
            allow_loopback: true,
        };
        for ip in ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(is_allowed(ip, DENY), "{ip}");
        }
        for ip in ["127.0.0.1", "::1"] {
            let ip: IpAddr = ip.parse().unwrap();
            assert!(!is_allowed(ip, DENY), "{ip}");
            assert!(is_allowed(ip, allow), "{ip}");
        }
        // Loopback in a mapped form, and every private range, stay refused.
        for ip in ["::ffff:127.0.0.1", "10.1.2.3", "169.254.169.254", "fd00::1"] {
            assert!(!is_allowed(ip.parse().unwrap(), allow), "{ip}");
        }
    }
}
