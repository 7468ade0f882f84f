//! `GET /openapi.json`: the OpenAPI 3.1 document of every route, generated
//! once from the rows of the route table (`routes.rs`) by `router-openapi`.
//!
//! A row's `api` gives the summary, query and header parameters, body,
//! replies with their headers and the handler's own errors. What its
//! columns imply is said here, in `impl Endpoint for Route`: the security
//! of its auth rule, its path parameter's schema, the errors its guard and
//! path check can answer, its error envelope and the headers every answer
//! carries (`x-request-id`, and `request-id` on the Messages envelope;
//! every 429 and 503 `Retry-After`). Nothing here knows a handler: a new
//! endpoint is one row. The tests check that every row is in the document
//! with its security, success and errors.

use crate::reply::{DetailError, Envelope, VideoError};
use crate::routes::{AuthRule, ParamRule, ROUTES, Route};
use crate::session;
use router_canonical::ErrorCode;
use router_core::product_codes;
use router_core::store::Scope;
use router_openapi::operation::{self, Operation, Schemas};
use router_openapi::{Endpoint, Info};
use std::sync::OnceLock;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::openapi::{OpenApi, RefOr, Schema};

/// The interface version (R-01, GP-60).
pub const VERSION: &str = "0.1.0";

/// Security scheme names.
const BEARER: &str = "bearerAuth";
const X_API_KEY: &str = "apiKeyAuth";
const SESSION: &str = "sessionCookie";
const OPERATOR: &str = "operatorToken";

/// The document as served, rendered once.
pub fn json() -> &'static [u8] {
    static JSON: OnceLock<Vec<u8>> = OnceLock::new();
    JSON.get_or_init(|| serde_json::to_vec(&document()).unwrap_or_default())
}

/// The OpenAPI document of every row of `ROUTES`.
pub fn document() -> OpenApi {
    build().0
}

/// The document, and the component names two different schemas claimed.
fn build() -> (OpenApi, Vec<String>) {
    let info = Info {
        title: "Router",
        version: VERSION,
        description: "An LLM inference gateway: OpenAI Chat Completions, Responses and Completions, Anthropic Messages, and the account, catalog, documentation and media surfaces around them. The user manual is at /docs/guide/getting-started and searchable with GET /v1/docs.",
    };
    router_openapi::build(info, security_schemes(), &ROUTES)
}

fn security_schemes() -> Vec<(&'static str, SecurityScheme)> {
    vec![
        (
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key: `Authorization: Bearer <API_KEY>`."))
                    .build(),
            ),
        ),
        (
            X_API_KEY,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "x-api-key",
                "An API key in `x-api-key`; when both headers are sent they must carry the same key.",
            ))),
        ),
        (
            SESSION,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                session::COOKIE_NAME,
                "A signed-in browser session (magic-link sign-in, POST /api/auth/sign-in); its mutations must come from the router's own origin.",
            ))),
        ),
        (
            OPERATOR,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some(
                        "The operator token (`ROUTER_ADMIN_TOKEN`) of the `/admin/` API.",
                    ))
                    .build(),
            ),
        ),
    ]
}

impl Endpoint for Route {
    fn method(&self) -> &str {
        self.method.as_str()
    }

    fn path(&self) -> &str {
        self.path
    }

    fn operation(&self) -> &Operation {
        &self.api
    }

    fn security(&self) -> &'static [&'static str] {
        match self.auth {
            AuthRule::Public | AuthRule::PublicSameOrigin => &[],
            AuthRule::Admin | AuthRule::Metrics => &[OPERATOR],
            AuthRule::ApiKey { .. } => &[BEARER, X_API_KEY],
            AuthRule::ApiKeyOrSession { .. } => &[BEARER, X_API_KEY, SESSION],
            AuthRule::Session => &[SESSION],
        }
    }

    fn credential_note(&self) -> Option<String> {
        match self.auth {
            AuthRule::ApiKey { scope: None } => {
                Some("Any valid API key; no scope, no credit needed.".into())
            }
            AuthRule::ApiKey { scope: Some(scope) } | AuthRule::ApiKeyOrSession { scope } => {
                Some(scope_note(scope))
            }
            _ => None,
        }
    }

    fn path_parameter(&self, schemas: &mut Schemas) -> RefOr<Schema> {
        match self.param {
            ParamRule::ChannelId => operation::uuid(schemas),
            ParamRule::Platform => ObjectBuilder::new()
                .schema_type(Type::String)
                .enum_values(Some(
                    router_notify::Platform::EXTERNAL.map(router_notify::Platform::as_str),
                ))
                .into(),
            ParamRule::None => operation::string(schemas),
        }
    }

    /// The codes the row's guard and path check can answer.
    fn guard_errors(&self) -> Vec<ErrorCode> {
        let mutation = !matches!(self.method.as_str(), "GET" | "HEAD");
        let mut codes = match self.auth {
            AuthRule::Public => vec![],
            AuthRule::PublicSameOrigin => vec![product_codes::CROSS_ORIGIN_FORBIDDEN],
            AuthRule::Admin | AuthRule::Metrics => {
                vec![ErrorCode::InvalidApiKey, product_codes::RATE_LIMITED]
            }
            AuthRule::ApiKey { scope } => {
                let mut codes = vec![ErrorCode::InvalidApiKey, product_codes::IP_NOT_ALLOWED];
                if scope.is_some() {
                    codes.push(product_codes::INSUFFICIENT_SCOPE);
                }
                codes
            }
            AuthRule::ApiKeyOrSession { .. } => vec![
                ErrorCode::InvalidApiKey,
                product_codes::IP_NOT_ALLOWED,
                product_codes::INSUFFICIENT_SCOPE,
            ],
            AuthRule::Session => vec![
                product_codes::AUTHENTICATION_REQUIRED,
                product_codes::SESSION_REQUIRED,
            ],
        };
        // A session's mutation must come from the router's own origin (GP-36).
        if mutation
            && matches!(
                self.auth,
                AuthRule::ApiKeyOrSession { .. } | AuthRule::Session
            )
        {
            codes.push(product_codes::CROSS_ORIGIN_FORBIDDEN);
        }
        match self.param {
            ParamRule::None => {}
            ParamRule::ChannelId => codes.push(product_codes::CHANNEL_NOT_FOUND),
            ParamRule::Platform => codes.push(ErrorCode::NotFound),
        }
        codes
    }

    fn error_schema(&self, schemas: &mut Schemas) -> RefOr<Schema> {
        match self.envelope {
            Envelope::OpenAi => schemas.of::<router_canonical::openai_error::ErrorEnvelope>(),
            Envelope::Messages => schemas.of::<router_messages::client::ErrorEnvelope>(),
            Envelope::Video => schemas.of::<VideoError<'static>>(),
            Envelope::Public => schemas.of::<DetailError<'static>>(),
        }
    }

    fn error_description(&self, codes: &[ErrorCode]) -> String {
        let names = router_openapi::document::quoted(codes);
        if self.envelope == Envelope::Messages {
            format!(
                "An error ({names}); the Messages envelope has no `code`, its `error.type` follows from the status."
            )
        } else {
            format!("An error: {names}.")
        }
    }

    fn common_headers(&self, status: Option<u16>) -> Vec<(&'static str, &'static str)> {
        let mut headers = vec![(
            crate::reply::REQUEST_ID,
            "This request's ID: the client's own `x-request-id` when it sent a well-formed one (1 to 128 of letters, digits and `-_.:+=/`), else the router's; the request log records both.",
        )];
        if self.envelope == Envelope::Messages {
            headers.push((
                crate::reply::MESSAGES_REQUEST_ID,
                "The same ID, under the Messages API's name.",
            ));
        }
        if matches!(status, Some(429 | 503)) {
            headers.push((
                "retry-after",
                "Seconds to wait before trying again, when known.",
            ));
        }
        if status.is_some() && self.envelope == Envelope::Video {
            headers.push((
                crate::videos::VIDEO_ID_HEADER,
                "The video the error is about, when it is about one.",
            ));
        }
        headers
    }
}

fn scope_note(scope: Scope) -> String {
    format!("Needs an API key with the `{}` scope.", scope.as_str())
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_openapi::{operation_id, path_parameters};

    #[test]
    fn operation_ids_are_unique() {
        let mut ids: Vec<String> = ROUTES
            .iter()
            .map(|route| operation_id(route.method.as_str(), route.path))
            .collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
    }

    fn served() -> serde_json::Value {
        serde_json::from_slice(json()).unwrap()
    }

    /// an OpenAPI 3.1 document of version 0.1.0.
    #[test]
    fn the_document_is_openapi_3_1_version_0_1_0() {
        let doc = served();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["version"], "0.1.0");
        assert!(doc["info"]["title"].is_string());
        let schemes = &doc["components"]["securitySchemes"];
        assert_eq!(schemes[BEARER]["scheme"], "bearer");
        assert_eq!(schemes[X_API_KEY]["in"], "header");
        assert_eq!(schemes[X_API_KEY]["name"], "x-api-key");
        assert_eq!(schemes[SESSION]["in"], "cookie");
    }

    /// Every route the dispatcher knows is described, and nothing else: a
    /// new row without a description fails here.
    #[test]
    fn every_route_is_described_with_its_security_and_errors() {
        let doc = served();
        let paths = doc["paths"].as_object().unwrap();
        let mut operations = 0;
        for route in &ROUTES {
            let path = route.path.replace("{*", "{");
            let method = route.method.as_str().to_lowercase();
            let op = &paths
                .get(&path)
                .unwrap_or_else(|| panic!("{path} is not in the document"))[&method];
            assert!(op.is_object(), "{method} {path} is not in the document");
            operations += 1;
            assert!(op["summary"].is_string(), "{path}");
            let responses = op["responses"].as_object().unwrap();
            assert!(!responses.is_empty(), "{path}");
            let security = op.get("security").and_then(|s| s.as_array());
            let public = matches!(route.auth, AuthRule::Public | AuthRule::PublicSameOrigin);
            if public {
                assert!(security.is_none(), "{path}");
            } else {
                assert!(security.is_some_and(|s| !s.is_empty()), "{path}");
            }
            if !public {
                assert!(
                    responses.contains_key("401"),
                    "{method} {path} lacks its 401"
                );
            }
            assert!(
                responses.keys().any(|s| s.starts_with('2')),
                "{method} {path} has no success"
            );
            let params = op["parameters"].as_array().cloned().unwrap_or_default();
            for name in path_parameters(route.path) {
                assert!(
                    params
                        .iter()
                        .any(|p| p["in"] == "path" && p["name"] == name && p["required"] == true),
                    "{path}: path parameter {name}"
                );
            }
        }
        let described: usize = paths
            .values()
            .map(|item| item.as_object().unwrap().len())
            .sum();
        assert_eq!(
            described, operations,
            "the document describes only the table's routes"
        );
    }

    /// Every row carries its description: a summary, a tag and, once its
    /// handler has landed, an answer.
    #[test]
    fn every_row_has_a_description() {
        for route in &ROUTES {
            let api = &route.api;
            let at = format!("{} {}", route.method, route.path);
            assert!(!api.summary.is_empty(), "{at}: no summary");
            assert!(!api.tag.is_empty(), "{at}: no tag");
            assert!(
                api.replies.iter().any(|r| (200..300).contains(&r.status)),
                "{at}: no success"
            );
            for reply in api.replies {
                assert!(!reply.description.is_empty(), "{at} {}", reply.status);
            }
        }
    }

    /// Every code a row can answer (its guard's, its path check's, its
    /// handler's) has its status in the document, under the row's envelope.
    #[test]
    fn every_documented_error_code_has_its_status() {
        let doc = served();
        for route in &ROUTES {
            let path = route.path.replace("{*", "{");
            let method = route.method.as_str().to_lowercase();
            let responses = doc["paths"][&path][&method]["responses"]
                .as_object()
                .unwrap_or_else(|| panic!("{method} {path}"));
            for code in route.errors() {
                let status = code.http_status().to_string();
                let response = responses
                    .get(&status)
                    .unwrap_or_else(|| panic!("{method} {path}: {} lacks {status}", code.as_str()));
                let description = response["description"].as_str().unwrap_or_default();
                assert!(
                    description.contains(&format!("`{}`", code.as_str())),
                    "{method} {path} {status}: {description}"
                );
                let schema = &response["content"]["application/json"]["schema"]["$ref"];
                assert!(schema.is_string(), "{method} {path} {status}: no envelope");
            }
        }
    }

    /// No success body is a bare `{"type": "object"}` placeholder but the
    /// document's own (an OpenAPI document is any object).
    #[test]
    fn success_bodies_have_their_schemas() {
        let doc = served();
        let bare = serde_json::json!({"type": "object"});
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (status, response) in op["responses"].as_object().unwrap() {
                    for (media, content) in response["content"].as_object().into_iter().flatten() {
                        if path != "/openapi.json" {
                            assert_ne!(content["schema"], bare, "{method} {path} {status} {media}");
                        }
                    }
                }
            }
        }
    }

    /// Every answer declares `x-request-id`; every 429 and 503 `Retry-After`.
    #[test]
    fn response_headers_are_declared() {
        let doc = served();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, op) in item.as_object().unwrap() {
                for (status, response) in op["responses"].as_object().unwrap() {
                    let headers = &response["headers"];
                    assert!(
                        headers["x-request-id"].is_object(),
                        "{method} {path} {status}"
                    );
                    if status == "429" || (status == "503" && path != "/readyz") {
                        assert!(
                            headers["retry-after"].is_object(),
                            "{method} {path} {status}"
                        );
                    }
                }
            }
        }
        let messages = &doc["paths"]["/v1/messages"]["post"];
        assert!(messages["responses"]["200"]["headers"]["request-id"].is_object());
        let version = messages["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["name"] == "anthropic-version")
            .unwrap();
        assert_eq!(version["in"], "header");
        assert_eq!(version["required"], true);
        let uploads = &doc["paths"]["/v1/uploads"]["post"]["requestBody"]["content"];
        assert!(uploads["multipart/form-data"].is_object(), "{uploads}");
    }

    /// Every `$ref` names a schema of the document.
    #[test]
    fn every_reference_resolves() {
        fn walk(value: &serde_json::Value, refs: &mut Vec<String>) {
            match value {
                serde_json::Value::Object(map) => {
                    if let Some(r) = map.get("$ref").and_then(|r| r.as_str()) {
                        refs.push(r.to_owned());
                    }
                    map.values().for_each(|v| walk(v, refs));
                }
                serde_json::Value::Array(items) => items.iter().for_each(|v| walk(v, refs)),
                _ => {}
            }
        }
        let doc = served();
        let mut refs = Vec::new();
        walk(&doc, &mut refs);
        assert!(!refs.is_empty());
        for r in refs {
            let name = r
                .strip_prefix("#/components/schemas/")
                .unwrap_or_else(|| panic!("{r}"));
            assert!(
                doc["components"]["schemas"][name].is_object(),
                "{r} does not resolve"
            );
        }
    }

    /// No two types share a component name (a later one would replace the
    /// earlier in `components.schemas`).
    #[test]
    fn component_names_are_unique() {
        let (_, clashes) = build();
        assert!(clashes.is_empty(), "{clashes:?}");
    }

    /// The docs search is described from the types it serializes.
    #[test]
    fn the_docs_search_is_described_from_its_types() {
        let doc = served();
        let op = &doc["paths"]["/v1/docs"]["get"];
        let names: Vec<&str> = op["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["q", "limit"]);
        assert_eq!(
            op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/DocsList"
        );
        let section = &doc["components"]["schemas"]["DocsSection"];
        let required: Vec<&str> = section["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r.as_str().unwrap())
            .collect();
        assert_eq!(required, ["id", "title", "category", "url"]);
        assert_eq!(
            op["responses"]["400"]["content"]["application/json"]["schema"]["$ref"],
            "#/components/schemas/OpenAiError"
        );
        let error = &doc["components"]["schemas"]["OpenAiErrorObject"]["required"];
        assert_eq!(error.as_array().unwrap().len(), 4, "{error}");
    }
}
