//! Google's token sources, as the router meets them for Vertex AI: the
//! OAuth token endpoint that exchanges a service account's signed assertion
//! (RFC 7523 JWT bearer grant, `POST …/oauth2/token`) and the metadata
//! server's token of the machine's own account
//! (`GET /computeMetadata/v1/instance/service-accounts/default/token`,
//! only with `Metadata-Flavor: Google`). The endpoint checks what Google
//! checks: the grant type, the assertion's RS256 signature against the
//! test account's public key, its issuer, audience, scope and lifetime.
//!
//! The key pair in `google_test_key/` exists for these tests only; it
//! belongs to no Google account.

use crate::response_body::{ResponseBody, json_response};
use base64::Engine;
use http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use serde_json::{Value, json};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The test service account's `client_email`.
pub const MOCK_GOOGLE_CLIENT_EMAIL: &str = "router-tests@mock-project.iam.gserviceaccount.com";
/// The test service account's private key (PKCS#8 PEM), for the key file a
/// test writes. Not a secret: it belongs to no Google account.
pub const MOCK_GOOGLE_PRIVATE_KEY: &str = include_str!("google_test_key/private_key.pem");
const PUBLIC_KEY: &[u8] = include_bytes!("google_test_key/public_key.der");

pub(crate) const METADATA_TOKEN_PATH: &str =
    "/computeMetadata/v1/instance/service-accounts/default/token";

/// Tokens issued, by source.
#[derive(Debug, Default)]
pub(crate) struct GoogleTokens {
    service_account: AtomicUsize,
    metadata: AtomicUsize,
}

impl GoogleTokens {
    /// (service-account tokens issued, metadata tokens issued).
    pub(crate) fn issued(&self) -> (usize, usize) {
        (
            self.service_account.load(Ordering::SeqCst),
            self.metadata.load(Ordering::SeqCst),
        )
    }
}

/// Whether `path` is one of Google's token sources.
pub(crate) fn is_token_path(method: &Method, path: &str) -> bool {
    (method == Method::POST && path.ends_with("/oauth2/token"))
        || (method == Method::GET && path == METADATA_TOKEN_PATH)
}

pub(crate) async fn serve(request: Request<Incoming>, tokens: &GoogleTokens) -> Response {
    if request.uri().path() == METADATA_TOKEN_PATH {
        let flavored = request
            .headers()
            .get("metadata-flavor")
            .is_some_and(|v| v == "Google");
        if !flavored {
            return oauth_error(StatusCode::FORBIDDEN, "missing Metadata-Flavor: Google");
        }
        let n = tokens.metadata.fetch_add(1, Ordering::SeqCst) + 1;
        return json_response(
            StatusCode::OK,
            &json!({"access_token": format!("mock-metadata-token-{n}"), "expires_in": 3599, "token_type": "Bearer"}),
        );
    }
    let audience = format!("http://{}{}", host(&request), request.uri().path());
    let body = match request.into_body().collect().await {
        Ok(body) => body.to_bytes(),
        Err(_) => return oauth_error(StatusCode::BAD_REQUEST, "unreadable body"),
    };
    let form: Vec<(String, String)> = form_urlencoded::parse(&body).into_owned().collect();
    let field = |name: &str| {
        form.iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    };
    if field("grant_type") != Some("urn:ietf:params:oauth:grant-type:jwt-bearer") {
        return oauth_error(StatusCode::BAD_REQUEST, "unsupported_grant_type");
    }
    match check_assertion(field("assertion").unwrap_or_default(), &audience) {
        Ok(()) => {
            let n = tokens.service_account.fetch_add(1, Ordering::SeqCst) + 1;
            json_response(
                StatusCode::OK,
                &json!({"access_token": format!("mock-google-token-{n}"), "expires_in": 3599, "token_type": "Bearer"}),
            )
        }
        Err(reason) => oauth_error(StatusCode::BAD_REQUEST, reason),
    }
}

type Response = http::Response<ResponseBody>;

fn host(request: &Request<Incoming>) -> String {
    request
        .headers()
        .get(http::header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

fn oauth_error(status: StatusCode, description: &str) -> Response {
    json_response(
        status,
        &json!({"error": "invalid_grant", "error_description": description}),
    )
}

/// What Google's endpoint checks of an assertion.
fn check_assertion(assertion: &str, audience: &str) -> Result<(), &'static str> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let mut parts = assertion.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a JWT");
    };
    let decode = |part: &str| -> Result<Value, &'static str> {
        let bytes = b64.decode(part).map_err(|_| "not base64url")?;
        serde_json::from_slice(&bytes).map_err(|_| "not JSON")
    };
    if decode(header)?["alg"] != "RS256" {
        return Err("alg must be RS256");
    }
    let signature = b64
        .decode(signature)
        .map_err(|_| "signature not base64url")?;
    ring::signature::UnparsedPublicKey::new(
        &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        PUBLIC_KEY,
    )
    .verify(format!("{header}.{claims}").as_bytes(), &signature)
    .map_err(|_| "invalid signature")?;
    let claims = decode(claims)?;
    if claims["iss"] != MOCK_GOOGLE_CLIENT_EMAIL {
        return Err("unknown issuer");
    }
    if claims["aud"] != audience {
        return Err("wrong audience");
    }
    if claims["scope"].as_str().is_none_or(str::is_empty) {
        return Err("no scope");
    }
    let (iat, exp) = (claims["iat"].as_u64(), claims["exp"].as_u64());
    match (iat, exp) {
        (Some(iat), Some(exp)) if exp > iat && exp - iat <= 3600 => Ok(()),
        _ => Err("bad lifetime"),
    }
}
