//! How the router reaches a supplier besides its base URL: how it
//! authenticates, extra query parameters (Azure's `api-version`), static
//! headers, and the `{model}` placeholder of a base URL (Azure deployments,
//! Vertex publishers). Read from a catalog `[[suppliers]]` entry and checked
//! when the catalog loads.
//!
//! Secrets never sit in the file: each scheme names the environment
//! variables it reads. A variable that is unset leaves the secret missing;
//! the catalog still loads (one instance may lack a supplier's key) and an
//! attempt on such a supplier fails before anything is sent
//! ([`Auth::missing_secret`]). `Debug` never prints a secret.

use router_canonical::encode_path_segment;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::fmt;

/// The placeholder a base URL may hold for the route's upstream model.
pub const MODEL_PLACEHOLDER: &str = "{model}";

/// How requests to one supplier authenticate.
#[derive(Clone, PartialEq, Eq)]
pub enum Auth {
    /// The dialect's own scheme with the supplier's `api_key` (`api_key_env`):
    /// `Authorization: Bearer` for the OpenAI dialects, `x-api-key` for
    /// Messages, `x-goog-api-key` for Gemini. No key, no header.
    Dialect,
    /// `Authorization: Bearer <secret>`.
    Bearer(Secret),
    /// `<name>: <secret>` (Azure's `api-key`, Anthropic's `x-api-key`).
    Header { name: String, secret: Secret },
    /// AWS Signature Version 4 over the whole request (Bedrock).
    SigV4(SigV4Settings),
    /// `Authorization: Bearer` with an OAuth access token exchanged for a
    /// signed assertion of a Google service account (Vertex AI). The
    /// secret is the path of the account's JSON key file, as Google's own
    /// libraries read it (`GOOGLE_APPLICATION_CREDENTIALS` by default).
    GoogleServiceAccount { credentials: Secret, scope: String },
    /// `Authorization: Bearer` with the access token of the machine's own
    /// service account, from the metadata server of Compute Engine, GKE or
    /// Cloud Run (`host`: `GCE_METADATA_HOST` when set, as Google's
    /// libraries read it).
    GoogleMetadata { host: String, scope: String },
    /// Nothing (a local server).
    None,
}

/// The OAuth scope Google tokens are asked for unless the file names one.
pub const GOOGLE_CLOUD_SCOPE: &str = "https://www.googleapis.com/auth/cloud-platform";

/// Where the metadata server answers unless `GCE_METADATA_HOST` says.
pub const GOOGLE_METADATA_HOST: &str = "metadata.google.internal";

/// AWS SigV4 signing settings and the credentials read from the
/// environment.
#[derive(Clone, PartialEq, Eq)]
pub struct SigV4Settings {
    pub region: String,
    pub service: String,
    pub access_key_id: Secret,
    pub secret_access_key: Secret,
    /// Temporary credentials' session token (`X-Amz-Security-Token`);
    /// `None` when the file names no variable.
    pub session_token: Option<Secret>,
}

/// A secret read from the environment variable `variable`; `value` is
/// `None` when the variable is unset. Never printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret {
    pub variable: String,
    pub value: Option<String>,
}

impl Secret {
    fn read(variable: &str, env: &dyn Fn(&str) -> Option<String>) -> Secret {
        Secret {
            variable: variable.to_owned(),
            value: env(variable).filter(|v| !v.is_empty()),
        }
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = if self.value.is_some() {
            "<redacted>"
        } else {
            "<unset>"
        };
        write!(f, "${} = {state}", self.variable)
    }
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::Dialect => f.write_str("Dialect"),
            Auth::Bearer(secret) => f.debug_tuple("Bearer").field(secret).finish(),
            Auth::Header { name, secret } => f
                .debug_struct("Header")
                .field("name", name)
                .field("secret", secret)
                .finish(),
            Auth::SigV4(s) => f
                .debug_struct("SigV4")
                .field("region", &s.region)
                .field("service", &s.service)
                .field("access_key_id", &s.access_key_id)
                .field("secret_access_key", &s.secret_access_key)
                .field("session_token", &s.session_token)
                .finish(),
            Auth::GoogleServiceAccount { credentials, scope } => f
                .debug_struct("GoogleServiceAccount")
                .field("credentials", credentials)
                .field("scope", scope)
                .finish(),
            Auth::GoogleMetadata { host, scope } => f
                .debug_struct("GoogleMetadata")
                .field("host", host)
                .field("scope", scope)
                .finish(),
            Auth::None => f.write_str("None"),
        }
    }
}

impl Auth {
    /// The environment variable a request needs but the process lacks.
    pub fn missing_secret(&self) -> Option<&str> {
        let needed: Vec<&Secret> = match self {
            Auth::Dialect | Auth::None | Auth::GoogleMetadata { .. } => Vec::new(),
            Auth::Bearer(secret)
            | Auth::Header { secret, .. }
            | Auth::GoogleServiceAccount {
                credentials: secret,
                ..
            } => vec![secret],
            Auth::SigV4(s) => std::iter::once(&s.access_key_id)
                .chain(Some(&s.secret_access_key))
                .chain(s.session_token.as_ref())
                .collect(),
        };
        needed
            .into_iter()
            .find(|s| s.value.is_none())
            .map(|s| s.variable.as_str())
    }
}

/// The `auth` table of a `[[suppliers]]` entry.
#[derive(Debug, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case", deny_unknown_fields)]
pub(crate) enum AuthFile {
    Bearer {
        key_env: String,
    },
    Header {
        name: String,
        key_env: String,
    },
    Sigv4 {
        region: String,
        service: String,
        #[serde(default = "default_access_key_env")]
        access_key_id_env: String,
        #[serde(default = "default_secret_key_env")]
        secret_access_key_env: String,
        /// Absent: no session token is sent.
        #[serde(default)]
        session_token_env: Option<String>,
    },
    GoogleServiceAccount {
        #[serde(default = "default_google_credentials_env")]
        credentials_env: String,
        #[serde(default)]
        scope: Option<String>,
    },
    GoogleMetadata {
        #[serde(default)]
        scope: Option<String>,
    },
    None,
}

fn default_google_credentials_env() -> String {
    "GOOGLE_APPLICATION_CREDENTIALS".to_owned()
}

/// An OAuth scope is a URL (or a bare name) with no space or control.
fn check_scope(scope: Option<String>) -> Result<String, ConnectionProblem> {
    let scope = scope.unwrap_or_else(|| GOOGLE_CLOUD_SCOPE.to_owned());
    if scope.is_empty() || !scope.bytes().all(|b| (0x21..0x7f).contains(&b)) {
        return Err(problem(
            "auth.scope",
            format!("`{scope}` is not an OAuth scope"),
        ));
    }
    Ok(scope)
}

fn default_access_key_env() -> String {
    "AWS_ACCESS_KEY_ID".to_owned()
}

fn default_secret_key_env() -> String {
    "AWS_SECRET_ACCESS_KEY".to_owned()
}

/// What is wrong with a supplier's connection settings.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("field `{field}`: {reason}")]
pub struct ConnectionProblem {
    pub field: &'static str,
    pub reason: String,
}

fn problem(field: &'static str, reason: impl Into<String>) -> ConnectionProblem {
    ConnectionProblem {
        field,
        reason: reason.into(),
    }
}

/// Headers the router sets itself (or the auth scheme does): a static
/// header may not replace them.
const RESERVED_HEADERS: [&str; 7] = [
    "authorization",
    "host",
    "content-type",
    "content-length",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
];

fn valid_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"-_".contains(&b))
}

fn valid_header_value(value: &str) -> bool {
    value
        .bytes()
        .all(|b| b == b'\t' || (0x20..0x7f).contains(&b))
}

/// The checked connection settings of one supplier.
pub(crate) struct Connection {
    pub(crate) auth: Auth,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: Vec<(String, String)>,
}

/// Check a supplier's settings and read its secrets with `env`.
pub(crate) fn connection(
    base_url: &str,
    api_key_env: Option<&str>,
    auth: Option<AuthFile>,
    query: BTreeMap<String, String>,
    headers: BTreeMap<String, String>,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Connection, ConnectionProblem> {
    check_base_url(base_url)?;
    let auth = match (auth, api_key_env) {
        (Some(_), Some(_)) => {
            return Err(problem(
                "api_key_env",
                "give either `api_key_env` or `auth`, not both",
            ));
        }
        (None, _) => Auth::Dialect,
        (Some(AuthFile::None), None) => Auth::None,
        (Some(AuthFile::Bearer { key_env }), None) => {
            check_variable("auth.key_env", &key_env)?;
            Auth::Bearer(Secret::read(&key_env, env))
        }
        (Some(AuthFile::Header { name, key_env }), None) => {
            check_variable("auth.key_env", &key_env)?;
            if !valid_header_name(&name) || RESERVED_HEADERS.contains(&name.as_str()) {
                return Err(problem(
                    "auth.name",
                    format!(
                        "`{name}` is not a lower-case header name the router lets a key go in (use `type = \"bearer\"` for `authorization`)"
                    ),
                ));
            }
            Auth::Header {
                name,
                secret: Secret::read(&key_env, env),
            }
        }
        (
            Some(AuthFile::Sigv4 {
                region,
                service,
                access_key_id_env,
                secret_access_key_env,
                session_token_env,
            }),
            None,
        ) => {
            let plain = |s: &str| {
                !s.is_empty()
                    && s.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            };
            if !plain(&region) {
                return Err(problem(
                    "auth.region",
                    format!("`{region}` is not a region"),
                ));
            }
            if !plain(&service) {
                return Err(problem(
                    "auth.service",
                    format!("`{service}` is not a service name"),
                ));
            }
            check_variable("auth.access_key_id_env", &access_key_id_env)?;
            check_variable("auth.secret_access_key_env", &secret_access_key_env)?;
            if let Some(token) = &session_token_env {
                check_variable("auth.session_token_env", token)?;
            }
            Auth::SigV4(SigV4Settings {
                region,
                service,
                access_key_id: Secret::read(&access_key_id_env, env),
                secret_access_key: Secret::read(&secret_access_key_env, env),
                session_token: session_token_env.map(|v| Secret::read(&v, env)),
            })
        }
        (
            Some(AuthFile::GoogleServiceAccount {
                credentials_env,
                scope,
            }),
            None,
        ) => {
            check_variable("auth.credentials_env", &credentials_env)?;
            Auth::GoogleServiceAccount {
                credentials: Secret::read(&credentials_env, env),
                scope: check_scope(scope)?,
            }
        }
        (Some(AuthFile::GoogleMetadata { scope }), None) => {
            let host = env("GCE_METADATA_HOST")
                .filter(|h| !h.is_empty())
                .unwrap_or_else(|| GOOGLE_METADATA_HOST.to_owned());
            if host.contains(['/', '?', '#', '@', ' ']) {
                return Err(problem(
                    "auth",
                    format!("GCE_METADATA_HOST `{host}` is not a host[:port]"),
                ));
            }
            Auth::GoogleMetadata {
                host,
                scope: check_scope(scope)?,
            }
        }
    };
    for (name, value) in &query {
        if name.is_empty() || value.contains(['\r', '\n']) {
            return Err(problem(
                "query",
                format!("`{name}` is not a query parameter"),
            ));
        }
    }
    let auth_header = match &auth {
        Auth::Header { name, .. } => Some(name.as_str()),
        _ => None,
    };
    for (name, value) in &headers {
        if !valid_header_name(name)
            || RESERVED_HEADERS.contains(&name.as_str())
            || Some(name.as_str()) == auth_header
        {
            return Err(problem(
                "headers",
                format!("`{name}` must be a lower-case header name the router does not set itself"),
            ));
        }
        if !valid_header_value(value) {
            return Err(problem(
                "headers",
                format!("the value of `{name}` is not a visible ASCII header value"),
            ));
        }
    }
    Ok(Connection {
        auth,
        query: query.into_iter().collect(),
        headers: headers.into_iter().collect(),
    })
}

fn check_variable(field: &'static str, name: &str) -> Result<(), ConnectionProblem> {
    let plain = !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if plain {
        Ok(())
    } else {
        Err(problem(
            field,
            format!("`{name}` is not an environment variable name"),
        ))
    }
}

/// A base URL is `http(s)://…` with at most the `{model}` placeholder and
/// no query (extra query parameters go in `query`).
fn check_base_url(base_url: &str) -> Result<(), ConnectionProblem> {
    if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
        return Err(problem("base_url", "must start with http:// or https://"));
    }
    if base_url.contains(['?', '#']) {
        return Err(problem(
            "base_url",
            "must hold no query or fragment (put query parameters in `query`)",
        ));
    }
    let rest = base_url.replace(MODEL_PLACEHOLDER, "");
    if rest.contains(['{', '}']) {
        return Err(problem(
            "base_url",
            "the only placeholder a base URL may hold is `{model}`",
        ));
    }
    Ok(())
}

/// `base_url` with `{model}` replaced by `model`, percent-encoded as one
/// path segment (a model name with `/` or `:` stays one segment).
pub fn expand_base_url(base_url: &str, model: &str) -> String {
    if !base_url.contains(MODEL_PLACEHOLDER) {
        return base_url.to_owned();
    }
    base_url.replace(MODEL_PLACEHOLDER, &encode_path_segment(model))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "AZ_KEY" => Some("az-secret".into()),
            "AWS_ACCESS_KEY_ID" => Some("AKID".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("aws-secret".into()),
            _ => None,
        }
    }

    fn load(
        base_url: &str,
        api_key_env: Option<&str>,
        auth: &str,
        query: &[(&str, &str)],
        headers: &[(&str, &str)],
    ) -> Result<Connection, ConnectionProblem> {
        let auth: Option<AuthFile> = (!auth.is_empty())
            .then(|| toml::from_str::<BTreeMap<String, AuthFile>>(&format!("a = {auth}")))
            .transpose()
            .map_err(|e| problem("auth", e.to_string()))?
            .and_then(|mut m| m.remove("a"));
        let pairs = |p: &[(&str, &str)]| {
            p.iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        connection(
            base_url,
            api_key_env,
            auth,
            pairs(query),
            pairs(headers),
            &env,
        )
    }

    #[test]
    fn azure_header_key_query_and_deployment_path() {
        let c = load(
            "https://res.openai.azure.com/openai/deployments/{model}",
            None,
            r#"{ type = "header", name = "api-key", key_env = "AZ_KEY" }"#,
            &[("api-version", "2024-10-21")],
            &[("x-ms-client", "router")],
        )
        .unwrap();
        let Auth::Header { name, secret } = &c.auth else {
            panic!("{:?}", c.auth);
        };
        assert_eq!(name, "api-key");
        assert_eq!(secret.value.as_deref(), Some("az-secret"));
        assert_eq!(c.query, [("api-version".into(), "2024-10-21".into())]);
        assert!(c.auth.missing_secret().is_none());
        let shown = format!("{:?}", c.auth);
        assert!(!shown.contains("az-secret"), "{shown}");
        assert!(shown.contains("AZ_KEY"));
    }

    #[test]
    fn sigv4_reads_the_standard_variables_and_reports_a_missing_one() {
        let c = load(
            "https://bedrock-runtime.us-east-1.amazonaws.com",
            None,
            r#"{ type = "sigv4", region = "us-east-1", service = "bedrock" }"#,
            &[],
            &[],
        )
        .unwrap();
        assert!(c.auth.missing_secret().is_none());
        assert!(!format!("{:?}", c.auth).contains("aws-secret"));
        let c = load(
            "https://bedrock-runtime.us-east-1.amazonaws.com",
            None,
            r#"{ type = "sigv4", region = "us-east-1", service = "bedrock", session_token_env = "AWS_SESSION_TOKEN" }"#,
            &[],
            &[],
        )
        .unwrap();
        assert_eq!(c.auth.missing_secret(), Some("AWS_SESSION_TOKEN"));
    }

    #[test]
    fn google_schemes_read_their_variables_and_check_the_scope() {
        let vertex = "https://us-central1-aiplatform.googleapis.com/v1/projects/p/locations/l/publishers/google";
        let c = load(
            vertex,
            None,
            r#"{ type = "google_service_account" }"#,
            &[],
            &[],
        )
        .unwrap();
        let Auth::GoogleServiceAccount { credentials, scope } = &c.auth else {
            panic!("{:?}", c.auth);
        };
        assert_eq!(credentials.variable, "GOOGLE_APPLICATION_CREDENTIALS");
        assert_eq!(scope, GOOGLE_CLOUD_SCOPE);
        // The key file's path is unset in this environment.
        assert_eq!(
            c.auth.missing_secret(),
            Some("GOOGLE_APPLICATION_CREDENTIALS")
        );
        let c = load(vertex, None, r#"{ type = "google_metadata" }"#, &[], &[]).unwrap();
        assert_eq!(
            c.auth,
            Auth::GoogleMetadata {
                host: GOOGLE_METADATA_HOST.into(),
                scope: GOOGLE_CLOUD_SCOPE.into()
            }
        );
        assert!(c.auth.missing_secret().is_none());
        let bad = load(
            vertex,
            None,
            r#"{ type = "google_metadata", scope = "two scopes" }"#,
            &[],
            &[],
        );
        assert_eq!(bad.err().map(|p| p.field), Some("auth.scope"));
    }

    /// Base URL, `api_key_env`, `auth`, query, headers, and the field the
    /// refusal names.
    type BadCase<'a> = (
        &'a str,
        Option<&'a str>,
        &'a str,
        &'a [(&'a str, &'a str)],
        &'a [(&'a str, &'a str)],
        &'a str,
    );

    #[test]
    fn bad_settings_name_their_field() {
        let cases: [BadCase<'_>; 9] = [
            (
                "https://x",
                Some("K"),
                r#"{ type = "none" }"#,
                &[],
                &[],
                "api_key_env",
            ),
            ("ftp://x", None, "", &[], &[], "base_url"),
            ("https://x?a=b", None, "", &[], &[], "base_url"),
            ("https://x/{project}", None, "", &[], &[], "base_url"),
            (
                "https://x",
                None,
                r#"{ type = "header", name = "Authorization", key_env = "K" }"#,
                &[],
                &[],
                "auth.name",
            ),
            (
                "https://x",
                None,
                r#"{ type = "sigv4", region = "US East", service = "bedrock" }"#,
                &[],
                &[],
                "auth.region",
            ),
            (
                "https://x",
                None,
                r#"{ type = "bearer", key_env = "not a name" }"#,
                &[],
                &[],
                "auth.key_env",
            ),
            (
                "https://x",
                None,
                "",
                &[],
                &[("authorization", "x")],
                "headers",
            ),
            (
                "https://x",
                None,
                "",
                &[],
                &[("x-a", "line\nbreak")],
                "headers",
            ),
        ];
        for (base, key_env, auth, query, headers, field) in cases {
            let error = load(base, key_env, auth, query, headers)
                .err()
                .unwrap_or_else(|| panic!("{base} {auth} {headers:?} loaded"));
            assert_eq!(error.field, field, "{error}");
        }
    }

    #[test]
    fn the_model_placeholder_is_one_encoded_segment() {
        assert_eq!(
            expand_base_url("https://h/deployments/{model}", "gpt-4o"),
            "https://h/deployments/gpt-4o"
        );
        assert_eq!(
            expand_base_url("https://h/model/{model}", "anthropic.claude-3:0/x"),
            "https://h/model/anthropic.claude-3%3A0%2Fx"
        );
        assert_eq!(expand_base_url("https://h/v1", "m"), "https://h/v1");
    }
}
