//! Azure OpenAI's gate in front of a deployment: a request under
//! `/openai/deployments/` must name an `api-version` in its query and carry
//! a credential (the resource's `api-key` header, or a Microsoft Entra ID
//! bearer token), or Azure answers 404 `Resource not found` and 401
//! `Access denied` before any model sees it. The mock's OpenAI endpoints
//! (Chat, Images, videos) answer the same way, so a router that drops an
//! Azure route's connection settings fails against it as against Azure.

use http::HeaderMap;
use serde_json::{Value, json};

/// The path segment that marks an Azure deployment.
const DEPLOYMENTS: &str = "/openai/deployments/";

/// Azure's refusal of this request, if it is one Azure refuses: its status
/// and `{"error": {"code", "message"}}` body.
pub(crate) fn refusal(
    headers: &HeaderMap,
    path: &str,
    query: Option<&str>,
) -> Option<(u16, Value)> {
    if !path.contains(DEPLOYMENTS) {
        return None;
    }
    let has_credential = ["api-key", "authorization"].into_iter().any(|name| {
        headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| !v.trim().is_empty())
    });
    if !has_credential {
        return Some((
            401,
            error(
                "401",
                "Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.",
            ),
        ));
    }
    let has_version = query.unwrap_or_default().split('&').any(|pair| {
        pair.strip_prefix("api-version=")
            .is_some_and(|v| !v.is_empty())
    });
    if !has_version {
        return Some((404, error("404", "Resource not found")));
    }
    None
}

fn error(code: &str, message: &str) -> Value {
    json!({"error": {"code": code, "message": message}})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deployment_needs_a_credential_and_an_api_version() {
        let path = "/openai/deployments/dall-e-3/images/generations";
        let mut headers = HeaderMap::new();
        assert_eq!(
            refusal(&headers, path, Some("api-version=1")).unwrap().0,
            401
        );
        headers.insert("api-key", "k".parse().unwrap());
        assert_eq!(refusal(&headers, path, None).unwrap().0, 404);
        assert_eq!(refusal(&headers, path, Some("x=1")).unwrap().0, 404);
        assert_eq!(
            refusal(&headers, path, Some("x=1&api-version=2025-04-01-preview")),
            None
        );
        // Elsewhere nothing is asked.
        assert_eq!(
            refusal(&HeaderMap::new(), "/v1/images/generations", None),
            None
        );
    }
}
