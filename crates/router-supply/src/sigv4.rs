//! AWS Signature Version 4 for the header form (`Authorization:
//! AWS4-HMAC-SHA256 …`), as Bedrock requires: canonical request, string to
//! sign, the derived key and the signature. Checked against AWS's published
//! test suite (`tests` below).
//!
//! The path is signed as it goes on the wire, URI-encoded once more (every
//! AWS service but S3 signs the path double-encoded): a Bedrock model ID's
//! `:` travels as `%3A` and is signed as `%253A`.

use ring::hmac;
use sha2::{Digest, Sha256};

/// The parts of one request that are signed.
pub(crate) struct Unsigned<'a> {
    pub(crate) method: &'a str,
    /// `host` or `host:port` (a port only when it is not the scheme's default).
    pub(crate) host: &'a str,
    /// The path as sent on the wire (percent-encoded already).
    pub(crate) path: &'a str,
    /// Query parameters, decoded.
    pub(crate) query: &'a [(String, String)],
    /// Other headers to sign besides `host`, `x-amz-date` and the token.
    pub(crate) headers: &'a [(&'a str, &'a str)],
    pub(crate) payload: &'a [u8],
}

/// Credentials of one signature. Never logged.
pub(crate) struct Credentials<'a> {
    pub(crate) access_key_id: &'a str,
    pub(crate) secret_access_key: &'a str,
    pub(crate) session_token: Option<&'a str>,
}

/// Where a signature is valid: region and service.
pub(crate) struct Scope<'a> {
    pub(crate) region: &'a str,
    pub(crate) service: &'a str,
}

/// The headers to add to the request, with the intermediate texts the
/// tests compare.
#[derive(Debug)]
pub(crate) struct Signed {
    pub(crate) authorization: String,
    /// `x-amz-date`: `YYYYMMDD'T'HHMMSS'Z'`.
    pub(crate) amz_date: String,
    /// `x-amz-security-token`, when the credentials have one.
    pub(crate) security_token: Option<String>,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) canonical_request: String,
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) string_to_sign: String,
}

/// Sign `request` at `unix_seconds` (UTC).
pub(crate) fn sign(
    request: &Unsigned<'_>,
    credentials: &Credentials<'_>,
    scope: &Scope<'_>,
    unix_seconds: i64,
) -> Signed {
    let (date, amz_date) = amz_dates(unix_seconds);
    let mut headers: Vec<(String, String)> = request
        .headers
        .iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), canonical_value(value)))
        .collect();
    headers.push(("host".to_owned(), request.host.to_owned()));
    headers.push(("x-amz-date".to_owned(), amz_date.clone()));
    if let Some(token) = credentials.session_token {
        headers.push(("x-amz-security-token".to_owned(), token.to_owned()));
    }
    // Stable by name: repeated names keep their values' order.
    headers.sort_by(|a, b| a.0.cmp(&b.0));
    // Repeated names join their values with commas, in order.
    let mut merged: Vec<(String, String)> = Vec::with_capacity(headers.len());
    for (name, value) in headers {
        match merged.last_mut() {
            Some((last, values)) if *last == name => {
                values.push(',');
                values.push_str(&value);
            }
            _ => merged.push((name, value)),
        }
    }
    let signed_headers = merged
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(";");
    let canonical_headers: String = merged
        .iter()
        .map(|(name, value)| format!("{name}:{value}\n"))
        .collect();
    let canonical_request = format!(
        "{}\n{}\n{}\n{canonical_headers}\n{signed_headers}\n{}",
        request.method.to_ascii_uppercase(),
        uri_encode(request.path, false),
        canonical_query(request.query),
        hex::encode(Sha256::digest(request.payload)),
    );
    let credential_scope = format!("{date}/{}/{}/aws4_request", scope.region, scope.service);
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{amz_date}\n{credential_scope}\n{}",
        hex::encode(Sha256::digest(canonical_request.as_bytes()))
    );
    let key = signing_key(credentials.secret_access_key, &date, scope);
    let signature = hex::encode(hmac::sign(&key, string_to_sign.as_bytes()).as_ref());
    Signed {
        authorization: format!(
            "AWS4-HMAC-SHA256 Credential={}/{credential_scope}, SignedHeaders={signed_headers}, Signature={signature}",
            credentials.access_key_id
        ),
        amz_date,
        security_token: credentials.session_token.map(str::to_owned),
        canonical_request,
        string_to_sign,
    }
}

fn signing_key(secret: &str, date: &str, scope: &Scope<'_>) -> hmac::Key {
    let step = |key: &[u8], data: &str| {
        hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes())
    };
    let k_date = step(format!("AWS4{secret}").as_bytes(), date);
    let k_region = step(k_date.as_ref(), scope.region);
    let k_service = step(k_region.as_ref(), scope.service);
    let k_signing = step(k_service.as_ref(), "aws4_request");
    hmac::Key::new(hmac::HMAC_SHA256, k_signing.as_ref())
}

/// Trimmed, with runs of spaces collapsed to one.
fn canonical_value(value: &str) -> String {
    value.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Parameters sorted by encoded name, then encoded value.
fn canonical_query(query: &[(String, String)]) -> String {
    let mut pairs: Vec<(String, String)> = query
        .iter()
        .map(|(k, v)| (uri_encode(k, true), uri_encode(v, true)))
        .collect();
    pairs.sort();
    pairs
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join("&")
}

/// AWS's URI encoding: every byte but `A-Za-z0-9-._~` as `%XX`; `/` kept
/// unless `encode_slash`.
fn uri_encode(text: &str, encode_slash: bool) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) || (b == b'/' && !encode_slash) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `YYYYMMDD` and `YYYYMMDD'T'HHMMSS'Z'` of a Unix time.
fn amz_dates(unix_seconds: i64) -> (String, String) {
    let time = chrono::DateTime::from_timestamp(unix_seconds, 0).unwrap_or_default();
    (
        time.format("%Y%m%d").to_string(),
        time.format("%Y%m%dT%H%M%SZ").to_string(),
    )
}

#[cfg(test)]
mod tests {
    //! Cases of AWS's Signature Version 4 test suite
    //! (`aws-sig-v4-test-suite`: credentials `AKIDEXAMPLE`, region
    //! `us-east-1`, service `service`, 2015-08-30T12:36:00Z, host
    //! `example.amazonaws.com`), with the signatures it publishes.
    use super::*;

    const SUITE_TIME: i64 = 1_440_938_160; // 2015-08-30T12:36:00Z
    const SUITE_KEY: Credentials<'static> = Credentials {
        access_key_id: "AKIDEXAMPLE",
        secret_access_key: "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
        session_token: None,
    };
    const SUITE_SCOPE: Scope<'static> = Scope {
        region: "us-east-1",
        service: "service",
    };
    const UNRESERVED: &str = "-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

    struct Case {
        name: &'static str,
        method: &'static str,
        path: String,
        query: Vec<(String, String)>,
        headers: Vec<(&'static str, &'static str)>,
        body: &'static str,
        signature: &'static str,
    }

    fn case(name: &'static str, method: &'static str, path: &str, signature: &'static str) -> Case {
        Case {
            name,
            method,
            path: path.to_owned(),
            query: Vec::new(),
            headers: Vec::new(),
            body: "",
            signature,
        }
    }

    fn suite() -> Vec<Case> {
        let q = |k: &str, v: &str| vec![(k.to_owned(), v.to_owned())];
        vec![
            case(
                "get-vanilla",
                "GET",
                "/",
                "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31",
            ),
            Case {
                query: q("Param1", "value1"),
                ..case(
                    "get-vanilla-empty-query-key",
                    "GET",
                    "/",
                    "a67d582fa61cc504c4bae71f336f98b97f1ea3c7a6bfe1b6e45aec72011b9aeb",
                )
            },
            Case {
                query: vec![
                    ("Param2".into(), "value2".into()),
                    ("Param1".into(), "value1".into()),
                ],
                ..case(
                    "get-vanilla-query-order-key-case",
                    "GET",
                    "/",
                    "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
                )
            },
            Case {
                query: q(UNRESERVED, UNRESERVED),
                ..case(
                    "get-vanilla-query-unreserved",
                    "GET",
                    "/",
                    "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197",
                )
            },
            Case {
                query: q("\u{1234}", "bar"),
                ..case(
                    "get-vanilla-utf8-query",
                    "GET",
                    "/",
                    "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04",
                )
            },
            case(
                "get-unreserved",
                "GET",
                &format!("/{UNRESERVED}"),
                "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f",
            ),
            case(
                "get-utf8",
                "GET",
                "/\u{1234}",
                "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85",
            ),
            case(
                "get-space",
                "GET",
                "/example space/",
                "652487583200325589f1fba4c7e578f72c47cb61beeca81406b39ddec1366741",
            ),
            Case {
                headers: vec![
                    ("My-Header1", "value4"),
                    ("My-Header1", "value1"),
                    ("My-Header1", "value3"),
                    ("My-Header1", "value2"),
                ],
                ..case(
                    "get-header-value-order",
                    "GET",
                    "/",
                    "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01",
                )
            },
            Case {
                headers: vec![
                    ("My-Header1", "value2"),
                    ("My-Header1", "value2"),
                    ("My-Header1", "value1"),
                ],
                ..case(
                    "get-header-key-duplicate",
                    "GET",
                    "/",
                    "c9d5ea9f3f72853aea855b47ea873832890dbdd183b4468f858259531a5138ea",
                )
            },
            Case {
                headers: vec![("My-Header1", " value1"), ("My-Header2", " \"a   b   c\"")],
                ..case(
                    "get-header-value-trim",
                    "GET",
                    "/",
                    "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736",
                )
            },
            case(
                "post-vanilla",
                "POST",
                "/",
                "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
            ),
            Case {
                query: q("Param1", "value1"),
                ..case(
                    "post-vanilla-query",
                    "POST",
                    "/",
                    "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11",
                )
            },
            Case {
                headers: vec![("MY-HEADER1", "value1")],
                ..case(
                    "post-header-key-case",
                    "POST",
                    "/",
                    "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c",
                )
            },
            Case {
                headers: vec![("My-Header1", "VALUE1")],
                ..case(
                    "post-header-value-case",
                    "POST",
                    "/",
                    "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d",
                )
            },
            Case {
                headers: vec![("Content-Type", "application/x-www-form-urlencoded")],
                body: "Param1=value1",
                ..case(
                    "post-x-www-form-urlencoded",
                    "POST",
                    "/",
                    "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
                )
            },
        ]
    }

    fn sign_case(c: &Case, credentials: &Credentials<'_>) -> Signed {
        sign(
            &Unsigned {
                method: c.method,
                host: "example.amazonaws.com",
                path: &c.path,
                query: &c.query,
                headers: &c.headers,
                payload: c.body.as_bytes(),
            },
            credentials,
            &SUITE_SCOPE,
            SUITE_TIME,
        )
    }

    #[test]
    fn the_published_suite_signs_alike() {
        for c in suite() {
            let signed = sign_case(&c, &SUITE_KEY);
            assert!(
                signed
                    .authorization
                    .ends_with(&format!("Signature={}", c.signature)),
                "{}: {}\n{}",
                c.name,
                signed.authorization,
                signed.canonical_request
            );
            assert!(
                signed.authorization.starts_with(
                    "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders="
                ),
                "{}",
                c.name
            );
            assert_eq!(signed.amz_date, "20150830T123600Z");
        }
    }

    #[test]
    fn get_vanilla_shows_its_canonical_request_and_string_to_sign() {
        let signed = sign_case(&suite()[0], &SUITE_KEY);
        assert_eq!(
            signed.canonical_request,
            "GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\nhost;x-amz-date\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            signed.string_to_sign,
            "AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\nbb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63"
        );
        assert_eq!(
            signed.authorization,
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, SignedHeaders=host;x-amz-date, Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
    }

    #[test]
    fn a_session_token_is_signed_before_the_signature() {
        // post-sts-token/post-sts-header-before.
        let token = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";
        let credentials = Credentials {
            session_token: Some(token),
            ..SUITE_KEY
        };
        let signed = sign_case(
            &case("post-sts-header-before", "POST", "/", ""),
            &credentials,
        );
        assert!(
            signed.authorization.ends_with(
                "SignedHeaders=host;x-amz-date;x-amz-security-token, Signature=85d96828115b5dc0cfc3bd16ad9e210dd772bbebba041836c64533a82be05ead"
            ),
            "{}",
            signed.authorization
        );
        assert_eq!(signed.security_token.as_deref(), Some(token));
    }

    #[test]
    fn the_documented_iam_signing_key_derives() {
        // "Examples of how to derive a signing key": 2012-02-15, iam.
        let key = signing_key(
            SUITE_KEY.secret_access_key,
            "20120215",
            &Scope {
                region: "us-east-1",
                service: "iam",
            },
        );
        // The key itself is opaque in ring; its HMAC of "" pins it.
        let expected = hmac::Key::new(
            hmac::HMAC_SHA256,
            &hex::decode("f4780e2d9f65fa895f9c67b32ce1baf0b0d8a43505a000a1a9e090d414db404d")
                .unwrap_or_default(),
        );
        assert_eq!(
            hmac::sign(&key, b"").as_ref(),
            hmac::sign(&expected, b"").as_ref()
        );
    }

    #[test]
    fn a_bedrock_model_path_is_signed_double_encoded() {
        let signed = sign(
            &Unsigned {
                method: "POST",
                host: "bedrock-runtime.us-east-1.amazonaws.com",
                path: "/model/anthropic.claude-3-haiku-20240307-v1%3A0/invoke",
                query: &[],
                headers: &[("content-type", "application/json")],
                payload: b"{}",
            },
            &SUITE_KEY,
            &Scope {
                region: "us-east-1",
                service: "bedrock",
            },
            SUITE_TIME,
        );
        assert!(
            signed
                .canonical_request
                .starts_with("POST\n/model/anthropic.claude-3-haiku-20240307-v1%253A0/invoke\n\ncontent-type:application/json\n"),
            "{}",
            signed.canonical_request
        );
    }
}
