//! A route's connection settings applied to one request: the endpoint URL
//! (base URL with `{model}` filled in, the dialect's path, the supplier's
//! extra query parameters) and the headers (the dialect's, the supplier's
//! authentication, its static headers). The settings themselves are the
//! catalog's (`router_core::connection`).

use crate::sigv4;
use router_canonical::{Request, SupplierCodec, SupplierTarget};
use router_core::connection::{Auth, expand_base_url};
use router_core::{AttemptError, Route};
use std::time::SystemTime;

/// The target a route's requests are encoded for.
pub(crate) fn target(route: &Route) -> SupplierTarget<'_> {
    SupplierTarget::new(&route.upstream_model)
        .with_default_max_output_tokens(Some(route.max_output_tokens))
}

/// The URL of one request on `route`.
pub(crate) fn endpoint(
    route: &Route,
    codec: &dyn SupplierCodec,
    stream: bool,
) -> Result<reqwest::Url, AttemptError> {
    url(route, &codec.request_path(&target(route), stream))
}

/// The URL of `path` on `route`'s supplier: the base URL with `{model}`
/// filled in, the path, and the supplier's extra query parameters after
/// any the path has. Every kind of route (inference, images, videos) is
/// reached this way.
pub(crate) fn url(route: &Route, path: &str) -> Result<reqwest::Url, AttemptError> {
    let supplier = &route.supplier;
    let base = expand_base_url(&supplier.base_url, &route.upstream_model);
    let mut url = reqwest::Url::parse(&format!("{base}{path}"))
        .map_err(|e| AttemptError::transport(format!("supplier URL: {e}")))?;
    if !supplier.query.is_empty() {
        let mut pairs = url.query_pairs_mut();
        for (name, value) in &supplier.query {
            pairs.append_pair(name, value);
        }
    }
    Ok(url)
}

/// Every header of one inference request: content type, the dialect's, the
/// supplier's authentication (a SigV4 signature over `url` and `body`) and
/// its static headers. Fails, before anything is sent, when a credential
/// the supplier names is not set in this process.
pub(crate) fn headers(
    route: &Route,
    codec: &dyn SupplierCodec,
    request: &Request,
    url: &reqwest::Url,
    body: &[u8],
    bearer: Option<&str>,
) -> Result<Vec<(String, String)>, AttemptError> {
    let outgoing = Outgoing {
        method: "POST",
        url,
        body: Some(body),
    };
    request_headers(route, &outgoing, |key| codec.headers(request, key), bearer)
}

/// One request as the supplier will see it, for the headers that depend on
/// it (a SigV4 signature covers the method, URL and body).
pub(crate) struct Outgoing<'a> {
    pub(crate) method: &'static str,
    pub(crate) url: &'a reqwest::Url,
    /// A JSON body; `None` for a GET.
    pub(crate) body: Option<&'a [u8]>,
}

/// Every header of one request on `route`, of any kind: content type (with
/// a body), the dialect's own (`dialect` gets the supplier's key when the
/// supplier authenticates the dialect's way), the supplier's
/// authentication and its static headers. Fails, before anything is sent,
/// when a credential the supplier names is not set in this process.
pub(crate) fn request_headers(
    route: &Route,
    outgoing: &Outgoing<'_>,
    dialect: impl FnOnce(Option<&str>) -> Vec<(&'static str, String)>,
    bearer: Option<&str>,
) -> Result<Vec<(String, String)>, AttemptError> {
    let supplier = &route.supplier;
    if let Some(variable) = supplier.auth.missing_secret() {
        return Err(AttemptError::unconfigured(format!(
            "supplier `{}`: environment variable `{variable}` is not set",
            supplier.id
        )));
    }
    let dialect_key = match supplier.auth {
        Auth::Dialect => supplier.api_key.as_deref(),
        _ => None,
    };
    let mut headers = Vec::new();
    if outgoing.body.is_some() {
        headers.push(("content-type".to_owned(), "application/json".to_owned()));
    }
    headers.extend(
        dialect(dialect_key)
            .into_iter()
            .map(|(name, value)| (name.to_owned(), value)),
    );
    match &supplier.auth {
        Auth::Dialect | Auth::None => {}
        Auth::GoogleServiceAccount { .. } | Auth::GoogleMetadata { .. } => {
            let token = bearer.ok_or_else(|| {
                AttemptError::unconfigured(format!("supplier `{}`: no access token", supplier.id))
            })?;
            headers.push(("authorization".to_owned(), format!("Bearer {token}")));
        }
        Auth::Bearer(secret) => {
            if let Some(key) = &secret.value {
                headers.push(("authorization".to_owned(), format!("Bearer {key}")));
            }
        }
        Auth::Header { name, secret } => {
            if let Some(key) = &secret.value {
                headers.push((name.clone(), key.clone()));
            }
        }
        Auth::SigV4(settings) => {
            let url = outgoing.url;
            let host = match url.port() {
                Some(port) => format!("{}:{port}", url.host_str().unwrap_or_default()),
                None => url.host_str().unwrap_or_default().to_owned(),
            };
            let query: Vec<(String, String)> = url.query_pairs().into_owned().collect();
            let now = SystemTime::now()
                .duration_since(SystemTime::UNIX_EPOCH)
                .map_or(0, |d| d.as_secs() as i64);
            let signed_headers: &[(&str, &str)] = if outgoing.body.is_some() {
                &[("content-type", "application/json")]
            } else {
                &[]
            };
            let signed = sigv4::sign(
                &sigv4::Unsigned {
                    method: outgoing.method,
                    host: &host,
                    path: url.path(),
                    query: &query,
                    headers: signed_headers,
                    payload: outgoing.body.unwrap_or_default(),
                },
                &sigv4::Credentials {
                    access_key_id: settings.access_key_id.value.as_deref().unwrap_or_default(),
                    secret_access_key: settings
                        .secret_access_key
                        .value
                        .as_deref()
                        .unwrap_or_default(),
                    session_token: settings
                        .session_token
                        .as_ref()
                        .and_then(|t| t.value.as_deref()),
                },
                &sigv4::Scope {
                    region: &settings.region,
                    service: &settings.service,
                },
                now,
            );
            headers.push(("x-amz-date".to_owned(), signed.amz_date));
            if let Some(token) = signed.security_token {
                headers.push(("x-amz-security-token".to_owned(), token));
            }
            headers.push(("authorization".to_owned(), signed.authorization));
        }
    }
    headers.extend(supplier.headers.iter().cloned());
    Ok(headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::Protocol;
    use router_core::Catalog;

    const CATALOG: &str = r#"
[[suppliers]]
id = "azure"
base_url = "https://res.openai.azure.com/openai/deployments/{model}"
auth = { type = "header", name = "api-key", key_env = "AZURE_KEY" }
query = { api-version = "2024-10-21" }
headers = { x-ms-client = "router" }

[[suppliers]]
id = "bedrock"
base_url = "https://bedrock-runtime.us-east-1.amazonaws.com"
auth = { type = "sigv4", region = "us-east-1", service = "bedrock", session_token_env = "AWS_SESSION_TOKEN" }

[[models]]
id = "m"
pricing = "fixed"
rates = { input = 1, output = 1 }

[[routes]]
id = "r-azure"
model = "m"
supplier = "azure"
upstream_model = "gpt-4o-prod"
protocol = "chat"
internal_cost = { input = 1, output = 1 }

[[routes]]
id = "r-bedrock"
model = "m"
supplier = "bedrock"
upstream_model = "m"
protocol = "chat"
internal_cost = { input = 1, output = 1 }
"#;

    fn routes(env: fn(&str) -> Option<String>) -> Vec<std::sync::Arc<Route>> {
        let catalog = Catalog::from_toml(CATALOG, env).unwrap();
        catalog.routes("m").to_vec()
    }

    fn codec() -> &'static dyn SupplierCodec {
        crate::codecs::for_protocol(Protocol::Chat).unwrap()
    }

    #[test]
    fn azure_gets_its_deployment_path_api_version_and_api_key() {
        let routes = routes(|v| (v == "AZURE_KEY").then(|| "az-secret".to_owned()));
        let url = endpoint(&routes[0], codec(), false).unwrap();
        assert_eq!(
            url.as_str(),
            "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
        );
        let headers = headers(&routes[0], codec(), &Request::default(), &url, b"{}", None).unwrap();
        assert!(headers.contains(&("api-key".into(), "az-secret".into())));
        assert!(headers.contains(&("x-ms-client".into(), "router".into())));
        assert!(
            !headers.iter().any(|(n, _)| n == "authorization"),
            "no bearer besides the api-key: {headers:?}"
        );
    }

    #[test]
    fn a_missing_credential_fails_before_sending_and_names_only_the_variable() {
        let routes = routes(|v| match v {
            "AWS_ACCESS_KEY_ID" => Some("AKID".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("aws-secret".into()),
            _ => None,
        });
        let url = endpoint(&routes[1], codec(), false).unwrap();
        let error =
            headers(&routes[1], codec(), &Request::default(), &url, b"{}", None).unwrap_err();
        assert_eq!(error.retry, router_core::Retry::NextRoute);
        let text = error.to_string();
        assert!(text.contains("AWS_SESSION_TOKEN"), "{text}");
        assert!(!text.contains("aws-secret"));
    }

    #[test]
    fn sigv4_signs_the_request_it_sends() {
        let routes = routes(|v| match v {
            "AWS_ACCESS_KEY_ID" => Some("AKID".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("aws-secret".into()),
            "AWS_SESSION_TOKEN" => Some("token".into()),
            _ => None,
        });
        let url = endpoint(&routes[1], codec(), false).unwrap();
        let headers = headers(&routes[1], codec(), &Request::default(), &url, b"{}", None).unwrap();
        let find = |name: &str| {
            headers
                .iter()
                .find(|(n, _)| n == name)
                .map(|(_, v)| v.as_str())
        };
        let authorization = find("authorization").unwrap();
        assert!(
            authorization.starts_with("AWS4-HMAC-SHA256 Credential=AKID/"),
            "{authorization}"
        );
        assert!(authorization.contains(
            "/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date;x-amz-security-token, Signature="
        ));
        assert_eq!(find("x-amz-security-token"), Some("token"));
        assert_eq!(find("x-amz-date").map(str::len), Some(16));
    }

    /// The same settings reach an image or video call: its own path under
    /// the deployment, `api-version` after it, the `api-key`; a GET (a
    /// video poll) has no content type, and a SigV4 signature covers the
    /// GET without one.
    #[test]
    fn media_calls_get_the_same_connection_settings() {
        let routes = routes(|v| match v {
            "AZURE_KEY" => Some("az-secret".into()),
            "AWS_ACCESS_KEY_ID" => Some("AKID".into()),
            "AWS_SECRET_ACCESS_KEY" => Some("aws-secret".into()),
            "AWS_SESSION_TOKEN" => Some("token".into()),
            _ => None,
        });
        let images = url(&routes[0], "/images/generations").unwrap();
        assert_eq!(
            images.as_str(),
            "https://res.openai.azure.com/openai/deployments/gpt-4o-prod/images/generations?api-version=2024-10-21"
        );
        let poll = url(&routes[0], "/videos/video_1").unwrap();
        let get = Outgoing {
            method: "GET",
            url: &poll,
            body: None,
        };
        let headers = request_headers(&routes[0], &get, |_| Vec::new(), None).unwrap();
        assert_eq!(
            headers,
            vec![
                ("api-key".to_owned(), "az-secret".to_owned()),
                ("x-ms-client".to_owned(), "router".to_owned()),
            ]
        );
        let poll = url(&routes[1], "/videos/video_1").unwrap();
        let get = Outgoing {
            method: "GET",
            url: &poll,
            body: None,
        };
        let headers = request_headers(&routes[1], &get, |_| Vec::new(), None).unwrap();
        let authorization = &headers
            .iter()
            .find(|(n, _)| n == "authorization")
            .unwrap()
            .1;
        assert!(
            authorization.contains("SignedHeaders=host;x-amz-date;x-amz-security-token, "),
            "{authorization}"
        );
        assert!(
            !headers.iter().any(|(n, _)| n == "content-type"),
            "{headers:?}"
        );
    }
}
