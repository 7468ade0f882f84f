//! OAuth access tokens for Google suppliers (Vertex AI): exchanged for a
//! service account's signed assertion (RFC 7523, the JWT bearer grant, as
//! Google's libraries do with a JSON key file) or read from the metadata
//! server of the machine the router runs on. A token is cached per
//! supplier until a minute before it expires; one fetch at a time per
//! supplier, so a burst of requests waits for one exchange rather than
//! making one each.
//!
//! The key file is read when a token is first needed (and again on every
//! refresh, so a rotated file is picked up); its private key never leaves
//! this module and is never logged.

use base64::Engine;
use router_core::AttemptError;
use router_core::connection::Auth;
use serde::Deserialize;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

/// A token is renewed this long before it expires.
const EARLY: Duration = Duration::from_secs(60);
/// The lifetime asked of a service account's assertion (Google's maximum).
const ASSERTION_LIFETIME: Duration = Duration::from_secs(3600);
/// How long a token exchange may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(20);

struct Token {
    value: String,
    renew_at: SystemTime,
}

/// The tokens of every Google supplier of this process.
#[derive(Default)]
pub(crate) struct GoogleTokens {
    /// Per supplier id: its token, behind a lock held while one is fetched.
    slots: Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Token>>>>>,
}

impl GoogleTokens {
    /// The bearer token for `auth` on supplier `supplier_id`, or `None` for
    /// a scheme that is not Google's.
    pub(crate) async fn bearer(
        &self,
        client: &reqwest::Client,
        supplier_id: &str,
        auth: &Auth,
    ) -> Result<Option<String>, AttemptError> {
        if !matches!(
            auth,
            Auth::GoogleServiceAccount { .. } | Auth::GoogleMetadata { .. }
        ) {
            return Ok(None);
        }
        let slot = self
            .slots
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(supplier_id.to_owned())
            .or_default()
            .clone();
        let mut cached = slot.lock().await;
        if let Some(token) = cached.as_ref()
            && SystemTime::now() < token.renew_at
        {
            return Ok(Some(token.value.clone()));
        }
        let token = fetch(client, auth)
            .await
            .map_err(|e| e.for_supplier(supplier_id))?;
        let value = token.value.clone();
        *cached = Some(token);
        Ok(Some(value))
    }
}

/// Why no token could be had.
#[derive(Debug, thiserror::Error)]
enum TokenError {
    /// The key file is missing, unreadable or not a service account key:
    /// the operator's to fix; nothing was sent.
    #[error("the service account key file: {0}")]
    KeyFile(String),
    /// The token endpoint could not be reached or refused.
    #[error("the token endpoint: {0}")]
    Endpoint(String),
}

impl TokenError {
    fn for_supplier(self, supplier_id: &str) -> AttemptError {
        let detail = format!("supplier `{supplier_id}`: {self}");
        match self {
            TokenError::KeyFile(_) => AttemptError::unconfigured(detail),
            TokenError::Endpoint(_) => AttemptError::transport(detail),
        }
    }
}

/// The fields of a service account's JSON key file the exchange needs.
#[derive(Deserialize)]
struct ServiceAccountKey {
    #[serde(rename = "type")]
    kind: String,
    client_email: String,
    private_key: String,
    #[serde(default = "default_token_uri")]
    token_uri: String,
}

fn default_token_uri() -> String {
    "https://oauth2.googleapis.com/token".to_owned()
}

/// What a token endpoint (or the metadata server) answers.
#[derive(Deserialize)]
struct TokenAnswer {
    access_token: String,
    #[serde(default)]
    expires_in: Option<u64>,
}

async fn fetch(client: &reqwest::Client, auth: &Auth) -> Result<Token, TokenError> {
    let request = match auth {
        Auth::GoogleServiceAccount { credentials, scope } => {
            let path = credentials.value.as_deref().ok_or_else(|| {
                TokenError::KeyFile(format!("${} is not set", credentials.variable))
            })?;
            let text = tokio::fs::read_to_string(path)
                .await
                .map_err(|e| TokenError::KeyFile(format!("cannot read it: {e}")))?;
            let key: ServiceAccountKey = serde_json::from_str(&text)
                .map_err(|e| TokenError::KeyFile(format!("not a key file: {e}")))?;
            if key.kind != "service_account" {
                return Err(TokenError::KeyFile(format!(
                    "its type is `{}`, not `service_account`",
                    key.kind
                )));
            }
            let assertion = assertion(&key, scope, SystemTime::now())?;
            let form = format!(
                "grant_type={}&assertion={assertion}",
                "urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Ajwt-bearer"
            );
            client
                .post(&key.token_uri)
                .header(
                    reqwest::header::CONTENT_TYPE,
                    "application/x-www-form-urlencoded",
                )
                .body(form)
        }
        Auth::GoogleMetadata { host, scope } => {
            let mut url = reqwest::Url::parse(&format!(
                "http://{host}/computeMetadata/v1/instance/service-accounts/default/token"
            ))
            .map_err(|e| TokenError::Endpoint(format!("metadata server URL: {e}")))?;
            url.query_pairs_mut().append_pair("scopes", scope);
            client.get(url).header("metadata-flavor", "Google")
        }
        _ => return Err(TokenError::Endpoint("not a Google scheme".into())),
    };
    let response = request
        .timeout(FETCH_TIMEOUT)
        .send()
        .await
        .map_err(|e| TokenError::Endpoint(e.without_url().to_string()))?;
    let status = response.status();
    if !status.is_success() {
        return Err(TokenError::Endpoint(format!("answered {status}")));
    }
    let answer: TokenAnswer = response
        .json()
        .await
        .map_err(|e| TokenError::Endpoint(format!("unreadable answer: {}", e.without_url())))?;
    let lifetime = Duration::from_secs(answer.expires_in.unwrap_or(3600));
    Ok(Token {
        value: answer.access_token,
        renew_at: SystemTime::now() + lifetime.saturating_sub(EARLY),
    })
}

/// The signed JWT (RS256) a service account presents for a token.
fn assertion(key: &ServiceAccountKey, scope: &str, now: SystemTime) -> Result<String, TokenError> {
    let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
    let iat = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = b64.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let claims = serde_json::json!({
        "iss": key.client_email,
        "scope": scope,
        "aud": key.token_uri,
        "iat": iat,
        "exp": iat + ASSERTION_LIFETIME.as_secs(),
    });
    let claims = b64.encode(claims.to_string());
    let signing_input = format!("{header}.{claims}");
    let der = pem_body(&key.private_key)?;
    let pair = ring::signature::RsaKeyPair::from_pkcs8(&der)
        .map_err(|e| TokenError::KeyFile(format!("the private key: {e}")))?;
    let mut signature = vec![0; pair.public().modulus_len()];
    pair.sign(
        &ring::signature::RSA_PKCS1_SHA256,
        &ring::rand::SystemRandom::new(),
        signing_input.as_bytes(),
        &mut signature,
    )
    .map_err(|_| TokenError::KeyFile("the private key cannot sign".into()))?;
    Ok(format!("{signing_input}.{}", b64.encode(signature)))
}

/// The DER bytes of a `-----BEGIN PRIVATE KEY-----` PEM block.
fn pem_body(pem: &str) -> Result<Vec<u8>, TokenError> {
    let body: String = pem
        .lines()
        .map(str::trim)
        .skip_while(|l| *l != "-----BEGIN PRIVATE KEY-----")
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    if body.is_empty() {
        return Err(TokenError::KeyFile(
            "`private_key` holds no PKCS#8 `PRIVATE KEY` block".into(),
        ));
    }
    base64::engine::general_purpose::STANDARD
        .decode(body)
        .map_err(|_| TokenError::KeyFile("`private_key` is not base64".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pem_without_a_pkcs8_block_is_a_key_file_problem() {
        let err = pem_body("-----BEGIN RSA PRIVATE KEY-----\nAAAA\n-----END RSA PRIVATE KEY-----")
            .unwrap_err();
        assert!(matches!(err, TokenError::KeyFile(_)), "{err}");
        assert_eq!(
            pem_body("-----BEGIN PRIVATE KEY-----\nAAEC\n-----END PRIVATE KEY-----\n").unwrap(),
            vec![0, 1, 2]
        );
    }
}
