//! The document assembled from a list of endpoints.
//!
//! Each endpoint's [`Operation`] gives its own description; the
//! [`Endpoint`] trait gives what follows from its route's rules (method,
//! path, security, path parameters, the guard's errors, the error envelope
//! and the headers every answer carries). Errors are grouped by status, one
//! response per status naming each code it may carry.

use crate::operation::{In, Operation, Schemas};
use router_canonical::ErrorCode;
use std::collections::BTreeMap;
use utoipa::openapi::encoding::EncodingBuilder;
use utoipa::openapi::header::{Header, HeaderBuilder};
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::security::{SecurityRequirement, SecurityScheme};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, Paths, RefOr,
    Required, ResponseBuilder, Schema,
};

/// One endpoint as the document sees it: its description and what its
/// route's rules imply.
pub trait Endpoint {
    /// `GET`, `POST`, `PATCH`, `DELETE` or `PUT`.
    fn method(&self) -> &str;
    /// The path as routed: `{name}` for a parameter, `{*name}` for one that
    /// may contain slashes.
    fn path(&self) -> &str;
    /// What the endpoint says of itself.
    fn operation(&self) -> &Operation;
    /// The security schemes (by component name) any one of which admits a
    /// caller; none for a public endpoint.
    fn security(&self) -> &'static [&'static str];
    /// A sentence on the credential it needs beyond its schemes (a scope).
    fn credential_note(&self) -> Option<String>;
    /// The schema of its path parameters.
    fn path_parameter(&self, schemas: &mut Schemas) -> RefOr<Schema>;
    /// The codes its guard and path check can answer before its handler.
    fn guard_errors(&self) -> Vec<ErrorCode>;
    /// The schema of its error envelope.
    fn error_schema(&self, schemas: &mut Schemas) -> RefOr<Schema>;
    /// The description of its error answer carrying one of `codes`, all of
    /// one status.
    fn error_description(&self, codes: &[ErrorCode]) -> String {
        format!("An error: {}.", quoted(codes))
    }
    /// The headers (name, description) every answer carries; with
    /// `Some(status)`, those of its error answers of that status.
    fn common_headers(&self, error_status: Option<u16>) -> Vec<(&'static str, &'static str)>;

    /// Every code it can answer: its guard's, then its handler's.
    fn errors(&self) -> Vec<ErrorCode> {
        let mut codes = self.guard_errors();
        codes.extend(self.operation().errors);
        codes
    }
}

/// The document's `info`.
#[derive(Debug, Clone, Copy)]
pub struct Info {
    pub title: &'static str,
    pub version: &'static str,
    pub description: &'static str,
}

/// The document of `endpoints`, and the component names two different
/// schemas claimed (a document with clashes has lost one of them).
pub fn build<'a, E: Endpoint + 'a>(
    info: Info,
    security_schemes: Vec<(&'static str, SecurityScheme)>,
    endpoints: impl IntoIterator<Item = &'a E>,
) -> (OpenApi, Vec<String>) {
    let mut schemas = Schemas::default();
    let mut paths = Paths::new();
    for endpoint in endpoints {
        let path = endpoint.path().replace("{*", "{");
        let method = http_method(endpoint.method());
        let operation = operation(endpoint, &mut schemas);
        match paths.paths.get_mut(&path) {
            Some(item) => item.merge_operations(PathItem::new(method, operation)),
            None => {
                paths.paths.insert(path, PathItem::new(method, operation));
            }
        }
    }
    let mut components = ComponentsBuilder::new();
    for (name, scheme) in security_schemes {
        components = components.security_scheme(name, scheme);
    }
    for (name, schema) in schemas.by_name {
        components = components.schema(name, schema);
    }
    let document = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title(info.title)
                .version(info.version)
                .description(Some(info.description))
                .build(),
        )
        .paths(paths)
        .components(Some(components.build()))
        .build();
    (document, schemas.clashes)
}

fn http_method(method: &str) -> HttpMethod {
    match method {
        "POST" => HttpMethod::Post,
        "PATCH" => HttpMethod::Patch,
        "DELETE" => HttpMethod::Delete,
        "PUT" => HttpMethod::Put,
        _ => HttpMethod::Get,
    }
}

/// `` `a`, `b` `` for codes `a` and `b`, as error descriptions name them.
pub fn quoted(codes: &[ErrorCode]) -> String {
    let names: Vec<String> = codes.iter().map(|c| format!("`{}`", c.as_str())).collect();
    names.join(", ")
}

fn header(description: &str, schema: RefOr<Schema>) -> Header {
    HeaderBuilder::new()
        .schema(Some(schema))
        .description(Some(description))
        .build()
}

fn required(yes: bool) -> Required {
    if yes { Required::True } else { Required::False }
}

fn operation(endpoint: &impl Endpoint, schemas: &mut Schemas) -> utoipa::openapi::path::Operation {
    let api = endpoint.operation();
    let mut op = OperationBuilder::new()
        .summary(Some(api.summary))
        .tag(api.tag)
        .operation_id(Some(operation_id(endpoint.method(), endpoint.path())))
        .description(endpoint.credential_note());
    for name in endpoint.security() {
        op = op.security(SecurityRequirement::new(*name, Vec::<String>::new()));
    }
    for name in path_parameters(endpoint.path()) {
        op = op.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(endpoint.path_parameter(schemas)))
                .description(
                    endpoint
                        .path()
                        .contains("{*")
                        .then_some("May contain slashes."),
                ),
        );
    }
    for param in api.params {
        op = op.parameter(
            ParameterBuilder::new()
                .name(param.name)
                .parameter_in(match param.place {
                    In::Query => ParameterIn::Query,
                    In::Header => ParameterIn::Header,
                })
                .required(required(param.required))
                .schema(Some((param.schema)(schemas)))
                .description(Some(param.description)),
        );
    }
    if let Some(body) = api.body {
        let mut request = RequestBodyBuilder::new()
            .description(Some(body.description))
            .required(Some(required(body.required)));
        for (media, schema) in body.content {
            let mut content = ContentBuilder::new().schema(Some(schema(schemas)));
            if media.starts_with("multipart/") {
                for (part, types) in body.parts {
                    content = content.encoding(
                        *part,
                        EncodingBuilder::new().content_type(Some(*types)).build(),
                    );
                }
            }
            request = request.content(*media, content.build());
        }
        op = op.request_body(Some(request.build()));
    }
    let mut responses: BTreeMap<u16, ResponseBuilder> = BTreeMap::new();
    for reply in api.replies {
        let mut response = ResponseBuilder::new().description(reply.description);
        for (media, schema) in reply.content {
            response = response.content(
                *media,
                ContentBuilder::new().schema(Some(schema(schemas))).build(),
            );
        }
        for (name, description) in endpoint.common_headers(None) {
            response =
                response.header(name, header(description, crate::operation::string(schemas)));
        }
        for h in reply.headers {
            response = response.header(h.name, header(h.description, (h.schema)(schemas)));
        }
        responses.insert(reply.status, response);
    }
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in endpoint.errors() {
        let list = by_status.entry(code.http_status()).or_default();
        if !list.contains(&code) {
            list.push(code);
        }
    }
    let error = endpoint.error_schema(schemas);
    for (status, codes) in by_status {
        let mut response = ResponseBuilder::new()
            .description(endpoint.error_description(&codes))
            .content(
                crate::operation::JSON,
                ContentBuilder::new().schema(Some(error.clone())).build(),
            );
        for (name, description) in endpoint.common_headers(Some(status)) {
            response =
                response.header(name, header(description, crate::operation::string(schemas)));
        }
        responses.insert(status, response);
    }
    for (status, response) in responses {
        op = op.response(status.to_string(), response.build());
    }
    op.build()
}

/// The names of the path's parameters, in order.
pub fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| name.trim_start_matches('*'))
        .collect()
}

/// `get_v1_docs`, `post_admin_accounts_id_credits`, ...
pub fn operation_id(method: &str, path: &str) -> String {
    let mut id = method.to_lowercase();
    for part in path.split(|c: char| !c.is_ascii_alphanumeric()) {
        if !part.is_empty() {
            id.push('_');
            id.push_str(part);
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::operation::{JSON, Param, json, string};
    use utoipa::openapi::security::{ApiKey, ApiKeyValue};

    /// A route of a toy table: a keyed `GET /things/{*name}`.
    struct Thing {
        api: Operation,
    }

    impl Endpoint for Thing {
        fn method(&self) -> &str {
            "GET"
        }
        fn path(&self) -> &str {
            "/things/{*name}"
        }
        fn operation(&self) -> &Operation {
            &self.api
        }
        fn security(&self) -> &'static [&'static str] {
            &["key"]
        }
        fn credential_note(&self) -> Option<String> {
            Some("Needs a key.".into())
        }
        fn path_parameter(&self, schemas: &mut Schemas) -> RefOr<Schema> {
            string(schemas)
        }
        fn guard_errors(&self) -> Vec<ErrorCode> {
            vec![ErrorCode::InvalidApiKey]
        }
        fn error_schema(&self, schemas: &mut Schemas) -> RefOr<Schema> {
            schemas.of::<router_canonical::openai_error::ErrorEnvelope>()
        }
        fn common_headers(&self, error_status: Option<u16>) -> Vec<(&'static str, &'static str)> {
            let mut headers = vec![("x-request-id", "This request's ID.")];
            if error_status == Some(429) {
                headers.push(("retry-after", "Seconds to wait."));
            }
            headers
        }
    }

    const THING: Operation = Operation {
        summary: "A thing",
        tag: "things",
        params: &[Param {
            name: "limit",
            place: In::Query,
            required: true,
            schema: crate::operation::count,
            description: "How many.",
        }],
        body: None,
        replies: &[json(200, "The thing.", &[(JSON, string)])],
        errors: &[
            ErrorCode::NotFound,
            ErrorCode::RateLimitExceeded,
            ErrorCode::NotFound,
        ],
    };

    fn document() -> serde_json::Value {
        let schemes = vec![(
            "key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("x-key"))),
        )];
        let info = Info {
            title: "Toy",
            version: "1.2.3",
            description: "A toy table.",
        };
        let (document, clashes) = build(info, schemes, &[Thing { api: THING }]);
        assert!(clashes.is_empty(), "{clashes:?}");
        serde_json::to_value(document).unwrap()
    }

    #[test]
    fn an_endpoint_is_described_with_what_its_rules_imply() {
        let doc = document();
        assert_eq!(doc["openapi"], "3.1.0");
        assert_eq!(doc["info"]["version"], "1.2.3");
        let op = &doc["paths"]["/things/{name}"]["get"];
        assert_eq!(op["operationId"], "get_things_name");
        assert_eq!(op["summary"], "A thing");
        assert_eq!(op["description"], "Needs a key.");
        assert_eq!(op["security"], serde_json::json!([{"key": []}]));
        let params = op["parameters"].as_array().unwrap();
        assert_eq!(params[0]["in"], "path");
        assert_eq!(params[0]["required"], true);
        assert_eq!(params[0]["description"], "May contain slashes.");
        assert_eq!(params[1]["name"], "limit");
        assert_eq!(params[1]["required"], true);
        assert!(doc["components"]["securitySchemes"]["key"].is_object());
    }

    /// The guard's and the handler's codes are grouped by status, each
    /// named once, every answer with the common headers.
    #[test]
    fn errors_are_grouped_by_status_in_the_envelope() {
        let doc = document();
        let responses = &doc["paths"]["/things/{name}"]["get"]["responses"];
        assert_eq!(
            responses["401"]["description"],
            "An error: `invalid_api_key`."
        );
        assert_eq!(responses["404"]["description"], "An error: `not_found`.");
        let envelope = &responses["404"]["content"]["application/json"]["schema"]["$ref"];
        assert_eq!(envelope, "#/components/schemas/OpenAiError");
        assert!(responses["429"]["headers"]["retry-after"].is_object());
        assert!(responses["404"]["headers"]["retry-after"].is_null());
        for status in ["200", "401", "404", "429"] {
            assert!(
                responses[status]["headers"]["x-request-id"].is_object(),
                "{status}"
            );
        }
    }

    #[test]
    fn path_parameters_are_named_without_the_catch_all_star() {
        assert_eq!(path_parameters("/public/models/{*model_id}"), ["model_id"]);
        assert_eq!(
            path_parameters("/v1/channels/{channel_id}/send-report"),
            ["channel_id"]
        );
        assert_eq!(
            path_parameters("/admin/accounts/{id}/experiments/{slug}"),
            ["id", "slug"]
        );
        assert!(path_parameters("/v1/docs").is_empty());
    }

    #[test]
    fn operation_ids_read_as_method_and_path() {
        assert_eq!(operation_id("GET", "/v1/docs"), "get_v1_docs");
        assert_eq!(
            operation_id("POST", "/admin/accounts/{id}/credits"),
            "post_admin_accounts_id_credits"
        );
    }
}
