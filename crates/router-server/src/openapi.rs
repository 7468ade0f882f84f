//! `GET /openapi.json`: the OpenAPI 3.1 document of every route, built once
//! from the route table (`routes.rs`) and the types the handlers serialize.
//!
//! Each row gives the path, method, security (its auth rule), path
//! parameter and the errors its guard can answer, in the row's envelope;
//! [`handler`] adds what the handler takes and answers, with a `match` over
//! every `Handler`, so a new handler does not compile until it is
//! described. Routes whose feature has not landed (`NotAvailable`) are
//! described by their row (credential, scope, parameter, errors) and marked
//! `x-not-available: true`; their bodies are described when their types
//! exist. The test in `tests` checks that every row is in the document.

use crate::docs::{DocsList, DocsSection};
use crate::health::Health;
use crate::reply::{DetailError, Envelope, VideoError};
use crate::routes::{AuthRule, Handler, InferenceEndpoint, ParamRule, ROUTES, Route};
use crate::session;
use crate::sign_in;
use router_canonical::ErrorCode;
use router_core::store::Scope;
use router_operator as operator;
use std::collections::BTreeMap;
use std::sync::OnceLock;
use utoipa::ToSchema;
use utoipa::openapi::extensions::ExtensionsBuilder;
use utoipa::openapi::path::{
    HttpMethod, OperationBuilder, ParameterBuilder, ParameterIn, PathItem,
};
use utoipa::openapi::request_body::RequestBodyBuilder;
use utoipa::openapi::schema::{ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::security::{
    ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityRequirement, SecurityScheme,
};
use utoipa::openapi::{
    ComponentsBuilder, ContentBuilder, InfoBuilder, OpenApi, OpenApiBuilder, Paths, Ref, RefOr,
    Required, ResponseBuilder, Schema,
};

/// The channel record (GP-15).
const CHANNEL: &str = "The channel: `{id, object, platform, frequency, events, destination (masked), report_hour_utc, status, created_at, updated_at}`.";

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
    let mut schemas = Schemas::default();
    let mut paths = Paths::new();
    for route in &ROUTES {
        let path = route.path.replace("{*", "{");
        let method = http_method(route);
        let operation = operation(route, &mut schemas);
        match paths.paths.get_mut(&path) {
            Some(item) => item.merge_operations(PathItem::new(method, operation)),
            None => {
                paths.paths.insert(path, PathItem::new(method, operation));
            }
        }
    }
    let mut components = ComponentsBuilder::new()
        .security_scheme(
            BEARER,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("An API key: `Authorization: Bearer <API_KEY>`."))
                    .build(),
            ),
        )
        .security_scheme(
            X_API_KEY,
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::with_description(
                "x-api-key",
                "An API key in `x-api-key`; when both headers are sent they must carry the same key.",
            ))),
        )
        .security_scheme(
            SESSION,
            SecurityScheme::ApiKey(ApiKey::Cookie(ApiKeyValue::with_description(
                session::COOKIE_NAME,
                "A signed-in browser session (magic-link sign-in, POST /api/auth/sign-in); its mutations must come from the router's own origin.",
            ))),
        )
        .security_scheme(
            OPERATOR,
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .description(Some("The operator token (`ROUTER_ADMIN_TOKEN`) of the `/admin/` API."))
                    .build(),
            ),
        );
    for (name, schema) in schemas.by_name {
        components = components.schema(name, schema);
    }
    let document = OpenApiBuilder::new()
        .info(
            InfoBuilder::new()
                .title("Router")
                .version(VERSION)
                .description(Some(
                    "An LLM inference gateway: OpenAI Chat Completions, Responses and Completions, Anthropic Messages, and the account, catalog, documentation and media surfaces around them. The user manual is at /docs/guide/getting-started and searchable with GET /v1/docs.",
                ))
                .build(),
        )
        .paths(paths)
        .components(Some(components.build()))
        .build();
    (document, schemas.clashes)
}

/// The component schemas the operations reference, by name.
#[derive(Default)]
struct Schemas {
    by_name: BTreeMap<String, RefOr<Schema>>,
    /// Names given to two different schemas (a test keeps this empty: the
    /// wire crates prefix their types' names for that).
    clashes: Vec<String>,
}

impl Schemas {
    /// A reference to `T`'s schema, registered with the schemas it uses.
    fn of<T: ToSchema>(&mut self) -> RefOr<Schema> {
        let mut used = Vec::new();
        T::schemas(&mut used);
        let name = T::name().into_owned();
        used.push((name.clone(), T::schema()));
        for (name, schema) in used {
            if let Some(old) = self.by_name.insert(name.clone(), schema.clone())
                && old != schema
            {
                self.clashes.push(name);
            }
        }
        RefOr::Ref(Ref::from_schema_name(name))
    }
}

fn http_method(route: &Route) -> HttpMethod {
    match route.method.as_str() {
        "POST" => HttpMethod::Post,
        "PATCH" => HttpMethod::Patch,
        "DELETE" => HttpMethod::Delete,
        "PUT" => HttpMethod::Put,
        _ => HttpMethod::Get,
    }
}

/// What a handler adds to its row: summary, parameters, body, answers.
struct Described {
    summary: &'static str,
    tag: &'static str,
    query: Vec<(&'static str, bool, RefOr<Schema>, &'static str)>,
    body: Option<(RefOr<Schema>, &'static str)>,
    /// Status, description, content type and schema.
    success: Vec<(
        &'static str,
        &'static str,
        &'static str,
        Option<RefOr<Schema>>,
    )>,
    /// Codes the handler itself may answer (the guard's are added per row).
    errors: Vec<ErrorCode>,
}

impl Described {
    fn new(summary: &'static str, tag: &'static str) -> Described {
        Described {
            summary,
            tag,
            query: Vec::new(),
            body: None,
            success: Vec::new(),
            errors: Vec::new(),
        }
    }
}

fn string() -> RefOr<Schema> {
    ObjectBuilder::new().schema_type(Type::String).into()
}

fn any_object(description: &str) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::Object)
        .description(Some(description))
        .into()
}

/// The inference codes every surface may answer (B..G, P).
const INFERENCE_ERRORS: &[ErrorCode] = &[
    ErrorCode::InvalidParameter,
    ErrorCode::UnsupportedConversion,
    ErrorCode::UnsupportedParameter,
    ErrorCode::ListPriceUnknown,
    ErrorCode::IncompatibleImageInput,
    ErrorCode::InsufficientCredits,
    ErrorCode::ModelNotAllowed,
    ErrorCode::PolicyChanged,
    ErrorCode::ModelNotFound,
    ErrorCode::ExperimentNotFound,
    ErrorCode::PayloadTooLarge,
    ErrorCode::RequestTimeout,
    ErrorCode::ApiKeySpendLimitExceeded,
    ErrorCode::ApiKeyMonthlyBudgetExceeded,
    ErrorCode::RateLimitExceeded,
    ErrorCode::DailyRequestLimitExceeded,
    ErrorCode::ConcurrencyLimitExceeded,
    ErrorCode::UpstreamError,
    ErrorCode::InvalidUpstreamResponse,
    ErrorCode::UpstreamUnavailable,
    ErrorCode::RouteUnavailable,
    ErrorCode::MinDiscountUnavailable,
    ErrorCode::ZdrCapacityUnavailable,
    ErrorCode::ImageCapacityUnavailable,
    ErrorCode::ImageInputLimit,
    ErrorCode::UploadsUnavailable,
    ErrorCode::InternalError,
];

/// The request and reply types of each surface, as its wire crate declares
/// them; a stream is the same surface's server-sent events.
fn inference(endpoint: InferenceEndpoint, schemas: &mut Schemas) -> Described {
    let (summary, body, reply, stream): (_, _, _, Option<RefOr<Schema>>) = match endpoint {
        InferenceEndpoint::ChatCompletions => (
            "Create a chat completion (OpenAI Chat Completions)",
            schemas.of::<router_chat::wire::request::ChatRequest>(),
            schemas.of::<router_chat::wire::response::ChatCompletion>(),
            Some(schemas.of::<router_chat::wire::chunk::ChatCompletionChunk>()),
        ),
        InferenceEndpoint::Responses => (
            "Create a response (OpenAI Responses, stateless)",
            schemas.of::<router_responses::wire::request::ResponsesRequest>(),
            schemas.of::<router_responses::wire::response::ResponseObject>(),
            Some(schemas.of::<router_responses::wire::event::ServerEvent>()),
        ),
        InferenceEndpoint::Messages => (
            "Create a message (Anthropic Messages)",
            schemas.of::<router_messages::wire::request::MessagesRequest>(),
            schemas.of::<router_messages::wire::response::MessageObject>(),
            Some(schemas.of::<router_messages::wire::event::Event>()),
        ),
        InferenceEndpoint::CountTokens => (
            "Count input tokens (a free local estimate)",
            schemas.of::<router_messages::wire::request::MessagesRequest>(),
            schemas.of::<crate::messages::InputTokens>(),
            None,
        ),
        InferenceEndpoint::Completions => (
            "Create a completion (legacy OpenAI Completions)",
            schemas.of::<router_completions::wire::request::CompletionBody>(),
            schemas.of::<router_completions::wire::response::TextCompletion>(),
            Some(schemas.of::<router_completions::wire::response::TextCompletion>()),
        ),
    };
    let mut described = Described::new(summary, "inference");
    described.body = Some((
        body,
        "The surface's request; fields this description does not list are accepted and passed on where the route's protocol has them.",
    ));
    described.success.push((
        "200",
        "The reply; with `stream: true`, server-sent events.",
        "application/json",
        Some(reply),
    ));
    match stream {
        Some(event) => {
            described.success.push((
                "200",
                "The reply; with `stream: true`, server-sent events.",
                "text/event-stream",
                Some(event),
            ));
            described.errors = INFERENCE_ERRORS.to_vec();
        }
        None => {
            described.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::ModelNotAllowed,
                ErrorCode::ModelNotFound,
                ErrorCode::PayloadTooLarge,
                ErrorCode::RequestTimeout,
            ];
        }
    }
    described
}

fn handler(route: &Route, schemas: &mut Schemas) -> Described {
    let admin_body = |d: &mut Described, schema: RefOr<Schema>| {
        d.body = Some((schema, "JSON; unknown fields are refused (400)."));
    };
    let admin_reply = "See docs/admin-api.md for the fields.";
    match route.handler {
        Handler::Inference(endpoint) => inference(endpoint, schemas),
        Handler::DocsSearch => {
            let mut d = Described::new("Search the user manual", "documentation");
            d.query = vec![
                (
                    "q",
                    false,
                    ObjectBuilder::new()
                        .schema_type(Type::String)
                        .max_length(Some(router_docs::MAX_QUERY_CHARS))
                        .into(),
                    "Search terms; empty or blank is the same as absent (all sections, no bodies).",
                ),
                (
                    "limit",
                    false,
                    ObjectBuilder::new()
                        .schema_type(Type::Integer)
                        .minimum(Some(1))
                        .maximum(Some(10))
                        .default(Some(4.into()))
                        .into(),
                    "How many sections at most, with `q` (1 to 10, default 4); ignored without `q`.",
                ),
            ];
            d.success.push((
                "200",
                "Without `q`: every section in reading order, without `body`. With `q`: at most `limit` matching sections with `body`, best first; none is `data: []`.",
                "application/json",
                Some(schemas.of::<DocsList<'static>>()),
            ));
            let _ = schemas.of::<DocsSection<'static>>();
            d.errors = vec![ErrorCode::InvalidParameter];
            d
        }
        Handler::DocsPage => {
            let mut d = Described::new("A page of the user manual (Markdown)", "documentation");
            d.success.push((
                "200",
                "The page's Markdown, as embedded in the router.",
                "text/markdown",
                Some(string()),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::OpenApi => {
            let mut d = Described::new("This OpenAPI document", "meta");
            d.success.push((
                "200",
                "The OpenAPI 3.1 document of the router.",
                "application/json",
                Some(any_object("An OpenAPI 3.1 document.")),
            ));
            d
        }
        Handler::AdminBackdateRequests => {
            let mut d = Described::new("Move finished requests in time (test hooks only)", "admin");
            d.body = Some((
                any_object("`{request_ids: [uuid], finished_at: RFC 3339}`"),
                "JSON; only with ROUTER_ADMIN_TEST_HOOKS=1, else 404.",
            ));
            d.success.push((
                "200",
                "`{moved}`: how many finished requests moved.",
                "application/json",
                Some(any_object("The count.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::NotFound];
            d
        }
        Handler::AdminRunJob => {
            let mut d = Described::new("Run one pass of a background job now", "admin");
            d.body = Some((
                any_object(
                    "Optional `{as_of: RFC 3339}` for `digest-scheduler`, only with ROUTER_ADMIN_TEST_HOOKS=1.",
                ),
                "Empty, or JSON.",
            ));
            d.success.push((
                "200",
                "`{name, processed}`: the job and how many items its pass processed.",
                "application/json",
                Some(any_object("The pass.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::Metrics => {
            let mut d = Described::new("Metrics in the Prometheus text format", "operations");
            d.success.push((
                "200",
                "Counters, gauges and histograms prefixed `router_` (docs/operations.md).",
                "text/plain",
                Some(string()),
            ));
            d
        }
        Handler::ImagesGenerations => {
            let mut d = Described::new("Generate one PNG image", "images");
            d.body = Some((
                any_object(
                    "The OpenAI Images request: `model`, `prompt`; `n` 1, `size`/`quality` `auto`, `response_format` `b64_json`, `output_format` `png` (docs/images.md).",
                ),
                "JSON; unknown fields are refused (400).",
            ));
            d.success.push((
                "200",
                "`{created, data: [{b64_json}], receipt: {request_id, charged_usd, status}}`.",
                "application/json",
                Some(any_object("The generated image and its receipt.")),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::InsufficientCredits,
                ErrorCode::ModelNotAllowed,
                ErrorCode::ModelNotFound,
                ErrorCode::PayloadTooLarge,
                ErrorCode::RequestTimeout,
                ErrorCode::GenerationTimeout,
                ErrorCode::InvalidUpstreamResponse,
                ErrorCode::UpstreamError,
                ErrorCode::RouteUnavailable,
            ];
            d
        }
        Handler::RequestStatus => {
            let mut d = Described::new("A request's final status", "images");
            d.success.push((
                "200",
                "The request's status and charge, for the account that made it.",
                "application/json",
                Some(any_object("The request's status.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::Healthz | Handler::Readyz => {
            let ready = route.handler == Handler::Readyz;
            let mut d = Described::new(
                if ready {
                    "Readiness: the router can reach PostgreSQL"
                } else {
                    "Liveness: the process answers"
                },
                "health",
            );
            let health = schemas.of::<Health>();
            d.success
                .push(("200", "Healthy.", "application/json", Some(health.clone())));
            if ready {
                d.success.push((
                    "503",
                    "The database does not answer.",
                    "application/json",
                    Some(health),
                ));
            }
            d
        }
        Handler::AdminCreateAccount => {
            let mut d = Described::new("Create an account", "admin");
            admin_body(&mut d, schemas.of::<operator::NewAccount>());
            d.success.push((
                "201",
                admin_reply,
                "application/json",
                Some(any_object("The account.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::Conflict];
            d
        }
        Handler::AdminGetAccount => {
            let mut d = Described::new("Read an account and its wallet", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The account.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminGrantCredits => {
            let mut d = Described::new("Grant credits to an account", "admin");
            admin_body(&mut d, schemas.of::<operator::Credits>());
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The new balance.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::NotFound];
            d
        }
        Handler::AdminCreateApiKey => {
            let mut d = Described::new("Issue an API key", "admin");
            admin_body(&mut d, schemas.of::<operator::NewApiKey>());
            d.success.push((
                "201",
                "The key, shown once, with its policy.",
                "application/json",
                Some(any_object("The new key.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::NotFound];
            d
        }
        Handler::AdminGetApiKey => {
            let mut d = Described::new("Read an API key, its policy and spend", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The key.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminUpdateApiKey => {
            let mut d = Described::new("Change an API key's scopes or policy", "admin");
            admin_body(&mut d, schemas.of::<operator::ApiKeyPatch>());
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The key.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::NotFound];
            d
        }
        Handler::AdminDeleteApiKey => {
            let mut d = Described::new("Delete an API key", "admin");
            d.success.push(("204", "Deleted.", "", None));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminListApiKeys => {
            let mut d = Described::new("List an account's API keys", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The keys.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminCreateSession => {
            let mut d = Described::new("Open a browser session for an account", "admin");
            admin_body(&mut d, schemas.of::<operator::NewSession>());
            d.success.push((
                "201",
                "The session; its cookie value is shown once.",
                "application/json",
                Some(any_object("The session.")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::NotFound];
            d
        }
        Handler::AdminCreateExperiment => {
            let mut d = Described::new("Create an A/B experiment (a draft)", "admin");
            admin_body(&mut d, schemas.of::<operator::NewExperiment>());
            d.success.push((
                "201",
                admin_reply,
                "application/json",
                Some(any_object("The experiment, status draft.")),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::NotFound,
                ErrorCode::Conflict,
            ];
            d
        }
        Handler::AdminListExperiments => {
            let mut d = Described::new("List an account's experiments", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The experiments with assignment counts.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminGetExperiment => {
            let mut d = Described::new("Read an experiment and its assignment counts", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The experiment.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::AdminUpdateExperiment => {
            let mut d = Described::new("Run, pause, complete or promote an experiment", "admin");
            admin_body(&mut d, schemas.of::<operator::ExperimentPatch>());
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The experiment.")),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::NotFound,
                ErrorCode::Conflict,
            ];
            d
        }
        Handler::AdminDeleteSession => {
            let mut d = Described::new("End a browser session", "admin");
            d.success.push(("204", "Ended.", "", None));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::SignInRequestLink => {
            let mut d = Described::new("Email a sign-in link", "sessions");
            d.body = Some((
                schemas.of::<sign_in::LinkRequest>(),
                "The address to sign in.",
            ));
            d.success.push((
                "202",
                "The same answer whether an account has that address or not.",
                "application/json",
                Some(any_object("`{\"object\": \"sign_in_link\", \"message\"}`")),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::EmailUnavailable];
            d
        }
        Handler::SignInPage => {
            let mut d =
                Described::new("The sign-in page a link opens (spends nothing)", "sessions");
            d.query = vec![("token", true, string(), "The token of the emailed link.")];
            d.success.push((
                "200",
                "An HTML page with one button.",
                "text/html",
                Some(string()),
            ));
            d
        }
        Handler::SignInRedeem => {
            let mut d = Described::new(
                "Redeem a sign-in link and set the session cookie",
                "sessions",
            );
            d.body = Some((
                schemas.of::<sign_in::Redeem>(),
                "JSON `{token}`, or the page's form post `token=...`.",
            ));
            d.success.push((
                "200",
                "Signed in: an HTML page, and `Set-Cookie` with the session.",
                "text/html",
                Some(string()),
            ));
            d.errors = vec![ErrorCode::InvalidParameter, ErrorCode::SignInLinkInvalid];
            d
        }
        Handler::SessionShow => {
            let mut d = Described::new("Who is signed in", "sessions");
            d.success.push((
                "200",
                "The session.",
                "application/json",
                Some(any_object(
                    "`{object: \"session\", id, account_id, email, expires_at}`",
                )),
            ));
            d
        }
        Handler::SignOut => {
            let mut d =
                Described::new("Sign out: end the session and clear the cookie", "sessions");
            d.success.push(("204", "Signed out.", "", None));
            d
        }
        Handler::AdminGetRequest => {
            let mut d = Described::new("A request's history: attempts, hold, ledger", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The request.")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::ListModels
        | Handler::ModelSupply
        | Handler::CompareModels
        | Handler::PricingChanges
        | Handler::PublicModels
        | Handler::PublicModel
        | Handler::CatalogModels
        | Handler::AdminGetCatalog
        | Handler::AdminReloadCatalog => catalog_described(route.handler),
        Handler::ChannelsList => {
            let mut d = Described::new("List the account's digest channels", "channels");
            d.success.push((
                "200",
                "`{object: \"list\", data: [channel], available_events: [9 ids]}`; `Cache-Control: no-store`.",
                "application/json",
                Some(any_object("The connected channels and the selectable events.")),
            ));
            d
        }
        Handler::ChannelShow => {
            let mut d = Described::new("Read a digest channel", "channels");
            d.success.push((
                "200",
                CHANNEL,
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d
        }
        Handler::ChannelUpdate => {
            let mut d = Described::new("Change a channel's frequency or events", "channels");
            d.body = Some((
                any_object("`{frequency?, events?}`: at least one; nothing else."),
                "JSON; other fields (a destination, the report hour) are refused (400).",
            ));
            d.success.push((
                "200",
                CHANNEL,
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d.errors = vec![ErrorCode::InvalidParameter];
            d
        }
        Handler::ChannelSendReport => {
            let mut d = Described::new("Send the previous period's report now", "channels");
            d.success.push((
                "200",
                "`{sent, message|null, period_start, period_end}`; `sent: false` means no activity.",
                "application/json",
                Some(any_object("The report's outcome.")),
            ));
            d.errors = vec![
                ErrorCode::RateLimited,
                ErrorCode::EmailUnavailable,
                ErrorCode::ChannelUnavailable,
                ErrorCode::ReportUnavailable,
                ErrorCode::ReportPending,
                ErrorCode::EmailDeliveryFailed,
                ErrorCode::ReportDeliveryFailed,
            ];
            d
        }
        Handler::EmailChannelStatus => {
            let mut d = Described::new("The email channel's status", "channels");
            d.success.push((
                "200",
                "`{configured, email, email_verified, channel|null}`; `Cache-Control: no-store`.",
                "application/json",
                Some(any_object("Email availability and the connected channel.")),
            ));
            d
        }
        Handler::EmailChannelConnect => {
            let mut d = Described::new("Connect the email channel (with consent)", "channels");
            d.body = Some((
                any_object("`{consent: true, frequency}`"),
                "JSON; a destination is refused (400): it is always the verified email.",
            ));
            d.success.push((
                "201",
                "Connected.",
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d.success.push((
                "200",
                "Already connected with this frequency, or reconnected (same id).",
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::EmailVerificationRequired,
                ErrorCode::ChannelAlreadyConnected,
                ErrorCode::EmailUnavailable,
            ];
            d
        }
        Handler::EmailChannelDisconnect => {
            let mut d = Described::new("Disconnect the email channel", "channels");
            d.success.push((
                "200",
                "`{id, status: \"disconnected\"}`",
                "application/json",
                Some(any_object("The disconnected channel.")),
            ));
            d
        }
        Handler::PlatformChannelStatus => {
            let mut d = Described::new("A Slack, Discord or Telegram channel's status", "channels");
            d.success.push((
                "200",
                "`{platform, configured, connected, channel|null}`",
                "application/json",
                Some(any_object("The platform's status.")),
            ));
            d
        }
        Handler::AdminProvisionChannel => {
            let mut d = Described::new("Provision a Slack, Discord or Telegram channel", "admin");
            admin_body(&mut d, schemas.of::<crate::channels::Provision>());
            d.success.push((
                "201",
                admin_reply,
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d.success.push((
                "200",
                "Already connected with this frequency, or reconnected.",
                "application/json",
                Some(any_object(CHANNEL)),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::NotFound,
                ErrorCode::ChannelAlreadyConnected,
            ];
            d
        }
        Handler::AdminDeprovisionChannel => {
            let mut d = Described::new("Disconnect a channel", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("`{id, status: \"disconnected\"}`")),
            ));
            d.errors = vec![ErrorCode::NotFound];
            d
        }
        Handler::UploadCreate => {
            let mut d = Described::new("Upload a temporary image", "uploads");
            d.body = Some((
                any_object(
                    "multipart/form-data with exactly one part named `file`: a PNG, JPEG, WebP or GIF of 1 byte to 10 MiB whose declared type matches its content (docs/guide/uploads.md).",
                ),
                "multipart/form-data, at most 10 MiB + 64 KiB.",
            ));
            d.success.push((
                "201",
                "The upload record; `expires_at` is one hour after admission.",
                "application/json",
                Some(schemas.of::<router_uploads::UploadRecord>()),
            ));
            d.errors = vec![
                ErrorCode::InvalidUpload,
                ErrorCode::DataProtectionRestriction,
                ErrorCode::UploadTooLarge,
                ErrorCode::UnsupportedFileType,
                ErrorCode::InvalidContentType,
                ErrorCode::UploadRateLimit,
                ErrorCode::UploadQuotaExceeded,
                ErrorCode::UploadsUnavailable,
            ];
            d
        }
        Handler::UploadDelete => {
            let mut d = Described::new("Delete an upload", "uploads");
            d.success.push((
                "204",
                "Deleted; the bytes are removed shortly after.",
                "",
                None,
            ));
            d.errors = vec![ErrorCode::UploadNotFound];
            d
        }
        Handler::DataProtectionShow | Handler::DataProtectionChange => {
            let change = route.handler == Handler::DataProtectionChange;
            let mut d = Described::new(
                if change {
                    "Turn the account's zero data retention on or off"
                } else {
                    "The account's zero-data-retention switch"
                },
                "data protection",
            );
            let record = schemas.of::<crate::data_protection::DataProtection>();
            if change {
                d.body = Some((
                    record.clone(),
                    "Exactly `{\"zero_data_retention\": true|false}`; anything else is 400 `invalid_data_protection`.",
                ));
                d.errors = vec![
                    ErrorCode::InvalidDataProtection,
                    ErrorCode::PayloadTooLarge,
                    ErrorCode::RequestTimeout,
                ];
            }
            d.success.push((
                "200",
                "The record, with `Cache-Control: no-store`.",
                "application/json",
                Some(record),
            ));
            d
        }
        Handler::VideoCreate => {
            let mut d = Described::new("Create a video job", "videos");
            d.body = Some((
                any_object(
                    "`model`, `prompt`, `mode`, `resolution`, `duration` (seconds), `client_task_id`; optional `aspect_ratio`, `references` (docs/guide/videos.md).",
                ),
                "JSON (`Content-Type: application/json`), at most 256 KiB.",
            ));
            d.success.push((
                "200",
                "The video object, `status: \"queued\"`; a replay of the same `client_task_id` and request returns the same video.",
                "application/json",
                Some(any_object("The video object.")),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::InsufficientCredits,
                ErrorCode::ModelNotAllowed,
                ErrorCode::ModelNotFound,
                ErrorCode::IdempotencyConflict,
                ErrorCode::PayloadTooLarge,
                ErrorCode::RequestTimeout,
                ErrorCode::UpstreamError,
                ErrorCode::UpstreamUnavailable,
                ErrorCode::RouteUnavailable,
                ErrorCode::ZdrCapacityUnavailable,
                ErrorCode::SubmissionUnknown,
            ];
            d
        }
        Handler::VideoShow => {
            let mut d = Described::new("Read a video job", "videos");
            d.success.push((
                "200",
                "The video object: `status`, `progress`, `metadata.url` once completed.",
                "application/json",
                Some(any_object("The video object.")),
            ));
            d.errors = vec![ErrorCode::TaskNotFound];
            d
        }
        Handler::VideoContent => {
            let mut d = Described::new("Download a video (byte ranges supported)", "videos");
            d.success.push((
                "200",
                "The whole video, `Accept-Ranges: bytes`.",
                "video/mp4",
                Some(string()),
            ));
            d.success.push((
                "206",
                "One range (`Range: bytes=a-b`, `a-` or `-n`), with `Content-Range`.",
                "video/mp4",
                Some(string()),
            ));
            d.errors = vec![
                ErrorCode::TaskNotFound,
                ErrorCode::VideoNotReady,
                ErrorCode::InvalidRange,
            ];
            d
        }
        Handler::AdminGetVideo => {
            let mut d = Described::new("A video job as the operator sees it", "admin");
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The video job.")),
            ));
            d.errors = vec![ErrorCode::TaskNotFound];
            d
        }
        Handler::AdminReconcileVideo => {
            let mut d = Described::new("Reconcile a video whose submission is unknown", "admin");
            admin_body(
                &mut d,
                any_object(
                    "`{upstream_task_id}` (resume polling) or `{outcome: \"failed\", reason}` (release the hold).",
                ),
            );
            d.success.push((
                "200",
                admin_reply,
                "application/json",
                Some(any_object("The video job after reconciliation.")),
            ));
            d.errors = vec![
                ErrorCode::InvalidParameter,
                ErrorCode::TaskNotFound,
                ErrorCode::Conflict,
            ];
            d
        }
        Handler::NotAvailable => Described::new(not_available_summary(route), tag_of(route.path)),
    }
}

/// The catalog endpoints (docs/catalog.md describes their bodies).
fn catalog_described(handler: Handler) -> Described {
    let (summary, tag, body, errors): (&'static str, &'static str, &'static str, Vec<ErrorCode>) =
        match handler {
            Handler::ListModels => (
                "The models this key may use (OpenAI list envelope)",
                "catalog",
                "`{object:\"list\", data, pricing_version, pricing_checked_at:null, pricing_observed_at, pricing_updated_at, release}`.",
                vec![],
            ),
            Handler::ModelSupply => (
                "Anonymous eligible supply of one model",
                "catalog",
                "`{object:\"list\", model, data:[{supply, input_usd_per_mtok, output_usd_per_mtok, input_discount_percent, output_discount_percent, zdr, capabilities}]}`.",
                vec![
                    ErrorCode::InvalidParameter,
                    ErrorCode::ListPriceUnknown,
                    ErrorCode::ModelNotFound,
                    ErrorCode::ModelNotAllowed,
                ],
            ),
            Handler::CompareModels => (
                "Estimate the cost of requests on up to 10 models",
                "catalog",
                "`{object:\"list\", data:[{model, id, found, billed_usd, billed_nano_usd, suppliers}]}`; not cached.",
                vec![ErrorCode::InvalidParameter],
            ),
            Handler::PricingChanges => (
                "The latest price change per model since an instant",
                "catalog",
                "`{data:[{model_id, kind, changed_at, model, previous, current}], next_cursor, source:\"configured_catalog\", pricing_checked_at:null}`; not cached.",
                vec![ErrorCode::InvalidParameter],
            ),
            Handler::PublicModels => (
                "The public model list",
                "catalog",
                "`{models:[...]}`; `Cache-Control: public, max-age=0, must-revalidate` with an `ETag`.",
                vec![],
            ),
            Handler::PublicModel => (
                "One public model by ID or alias",
                "catalog",
                "The model entry, with its canonical `id`.",
                vec![ErrorCode::NotFound],
            ),
            Handler::CatalogModels => (
                "Logical models, capabilities and public tariffs",
                "catalog",
                "`{models:[{id, modality, protocols, capabilities, publicPricing, ...}]}`.",
                vec![],
            ),
            Handler::AdminReloadCatalog => (
                "Reload the catalog file as a new release",
                "admin",
                "`{release, changed, pricing_version, observed_at}`.",
                vec![ErrorCode::InvalidParameter],
            ),
            _ => (
                "The catalog release in force",
                "admin",
                "`{release, observed_at, path, pricing_version, models}`.",
                vec![],
            ),
        };
    let mut d = Described::new(summary, tag);
    d.success.push((
        "200",
        body,
        "application/json",
        Some(any_object("See docs/catalog.md.")),
    ));
    d.errors = errors;
    d
}

/// What a route whose handler has not landed will do (the service spec's
/// endpoint), for its summary.
fn not_available_summary(route: &Route) -> &'static str {
    const SUMMARIES: &[(&str, &str, &str)] = &[
        (
            "POST",
            "/v1/uploads",
            "Upload a temporary image (not available yet)",
        ),
        (
            "DELETE",
            "/v1/uploads/{id}",
            "Delete a temporary upload (not available yet)",
        ),
        (
            "GET",
            "/api/data-protection",
            "Read the account's zero-data-retention setting (not available yet)",
        ),
        (
            "PATCH",
            "/api/data-protection",
            "Change the account's zero-data-retention setting (not available yet)",
        ),
        (
            "GET",
            "/public/models",
            "List the public catalog (not available yet)",
        ),
        (
            "GET",
            "/public/models/{*model_id}",
            "One model of the public catalog (not available yet)",
        ),
        (
            "GET",
            "/catalog/models",
            "List logical models, capabilities and public tariffs (not available yet)",
        ),
        (
            "GET",
            "/v1/models",
            "List the models this key may use (not available yet)",
        ),
        (
            "GET",
            "/v1/models/supply",
            "Anonymous eligible supply of a model (not available yet)",
        ),
        (
            "GET",
            "/v1/models/compare",
            "Compare what models would bill for a workload (not available yet)",
        ),
        (
            "GET",
            "/v1/pricing/changes",
            "The catalog's price changes since a time (not available yet)",
        ),
        (
            "POST",
            "/v1/images/generations",
            "Generate one PNG image (not available yet)",
        ),
    ];
    SUMMARIES
        .iter()
        .find(|(method, path, _)| *method == route.method.as_str() && *path == route.path)
        .map_or("Not available on this router yet", |(_, _, summary)| {
            summary
        })
}

/// The tag of a route whose handler has not landed, from its path.
fn tag_of(path: &str) -> &'static str {
    const TAGS: &[(&str, &str)] = &[
        ("/v1/uploads", "uploads"),
        ("/api/data-protection", "data protection"),
        ("/v1/channels", "channels"),
        ("/api/channels", "channels"),
        ("/v1/images", "images"),
        ("/v1/videos", "videos"),
        ("/v1/pricing", "catalog"),
        ("/v1/models", "catalog"),
        ("/public/", "catalog"),
        ("/catalog/", "catalog"),
    ];
    TAGS.iter()
        .find(|(prefix, _)| path.starts_with(prefix))
        .map_or("other", |(_, tag)| tag)
}

/// The codes the row's guard and path check can answer.
fn guard_errors(route: &Route) -> Vec<ErrorCode> {
    let mutation = !matches!(route.method.as_str(), "GET" | "HEAD");
    let mut codes = match route.auth {
        AuthRule::Public => vec![],
        AuthRule::PublicSameOrigin => vec![ErrorCode::CrossOriginForbidden],
        AuthRule::Admin => vec![ErrorCode::InvalidApiKey],
        AuthRule::ApiKey { scope } => {
            let mut codes = vec![ErrorCode::InvalidApiKey, ErrorCode::IpNotAllowed];
            if scope.is_some() {
                codes.push(ErrorCode::InsufficientScope);
            }
            codes
        }
        AuthRule::ApiKeyOrSession { .. } => vec![
            ErrorCode::InvalidApiKey,
            ErrorCode::IpNotAllowed,
            ErrorCode::InsufficientScope,
        ],
        AuthRule::Session => vec![
            ErrorCode::AuthenticationRequired,
            ErrorCode::SessionRequired,
        ],
    };
    // A session's mutation must come from the router's own origin (GP-36).
    if mutation
        && matches!(
            route.auth,
            AuthRule::ApiKeyOrSession { .. } | AuthRule::Session
        )
    {
        codes.push(ErrorCode::CrossOriginForbidden);
    }
    match route.param {
        ParamRule::None => {}
        ParamRule::ChannelId => codes.push(ErrorCode::ChannelNotFound),
        ParamRule::Platform => codes.push(ErrorCode::NotFound),
    }
    if route.handler == Handler::NotAvailable {
        codes.push(ErrorCode::NotAvailable);
    }
    codes
}

fn security(route: &Route) -> Vec<SecurityRequirement> {
    let names: &[&str] = match route.auth {
        AuthRule::Public | AuthRule::PublicSameOrigin => &[],
        AuthRule::Admin => &[OPERATOR],
        AuthRule::ApiKey { .. } => &[BEARER, X_API_KEY],
        AuthRule::ApiKeyOrSession { .. } => &[BEARER, X_API_KEY, SESSION],
        AuthRule::Session => &[SESSION],
    };
    names
        .iter()
        .map(|name| SecurityRequirement::new(*name, Vec::<String>::new()))
        .collect()
}

fn scope_of(route: &Route) -> Option<Scope> {
    match route.auth {
        AuthRule::ApiKey { scope } => scope,
        AuthRule::ApiKeyOrSession { scope } => Some(scope),
        _ => None,
    }
}

fn error_schema(envelope: Envelope, schemas: &mut Schemas) -> RefOr<Schema> {
    match envelope {
        Envelope::OpenAi => schemas.of::<router_canonical::openai_error::ErrorEnvelope>(),
        Envelope::Messages => schemas.of::<router_messages::client::ErrorEnvelope>(),
        Envelope::Video => schemas.of::<VideoError<'static>>(),
        Envelope::Public => schemas.of::<DetailError<'static>>(),
    }
}

fn operation(route: &Route, schemas: &mut Schemas) -> utoipa::openapi::path::Operation {
    let described = handler(route, schemas);
    let mut op = OperationBuilder::new()
        .summary(Some(described.summary))
        .tag(described.tag)
        .operation_id(Some(operation_id(route)));
    if let Some(scope) = scope_of(route) {
        op = op.description(Some(format!(
            "Needs an API key with the `{}` scope.",
            scope.as_str()
        )));
    } else if matches!(route.auth, AuthRule::ApiKey { scope: None }) {
        op = op.description(Some("Any valid API key; no scope, no credit needed."));
    }
    for requirement in security(route) {
        op = op.security(requirement);
    }
    for name in path_parameters(route.path) {
        op = op.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Path)
                .required(Required::True)
                .schema(Some(match route.param {
                    ParamRule::ChannelId => ObjectBuilder::new()
                        .schema_type(Type::String)
                        .format(Some(SchemaFormat::Custom("uuid".into())))
                        .into(),
                    ParamRule::Platform => ObjectBuilder::new()
                        .schema_type(Type::String)
                        .enum_values(Some(
                            router_notify::Platform::EXTERNAL.map(router_notify::Platform::as_str),
                        ))
                        .into(),
                    ParamRule::None => string(),
                }))
                .description(route.path.contains("{*").then_some("May contain slashes.")),
        );
    }
    for (name, required, schema, description) in described.query {
        op = op.parameter(
            ParameterBuilder::new()
                .name(name)
                .parameter_in(ParameterIn::Query)
                .required(if required {
                    Required::True
                } else {
                    Required::False
                })
                .schema(Some(schema))
                .description(Some(description)),
        );
    }
    if let Some((schema, description)) = described.body {
        op = op.request_body(Some(
            RequestBodyBuilder::new()
                .description(Some(description))
                .required(Some(Required::True))
                .content(
                    "application/json",
                    ContentBuilder::new().schema(Some(schema)).build(),
                )
                .build(),
        ));
    }
    let mut responses: BTreeMap<String, ResponseBuilder> = BTreeMap::new();
    for (status, description, content_type, schema) in described.success {
        let entry = responses
            .entry(status.to_owned())
            .or_insert_with(|| ResponseBuilder::new().description(description));
        if let Some(schema) = schema {
            let taken = std::mem::take(entry);
            *entry = taken.content(
                content_type,
                ContentBuilder::new().schema(Some(schema)).build(),
            );
        }
    }
    let mut codes = guard_errors(route);
    codes.extend(described.errors);
    let mut by_status: BTreeMap<u16, Vec<ErrorCode>> = BTreeMap::new();
    for code in codes {
        let list = by_status.entry(code.http_status()).or_default();
        if !list.contains(&code) {
            list.push(code);
        }
    }
    let error = error_schema(route.envelope, schemas);
    for (status, codes) in by_status {
        let names: Vec<String> = codes.iter().map(|c| format!("`{}`", c.as_str())).collect();
        let description = if route.envelope == Envelope::Messages {
            format!(
                "An error ({}); the Messages envelope has no `code`, its `error.type` follows from the status.",
                names.join(", ")
            )
        } else {
            format!("An error: {}.", names.join(", "))
        };
        responses.insert(
            status.to_string(),
            ResponseBuilder::new().description(description).content(
                "application/json",
                ContentBuilder::new().schema(Some(error.clone())).build(),
            ),
        );
    }
    for (status, response) in responses {
        op = op.response(status, response.build());
    }
    if route.handler == Handler::NotAvailable {
        op = op.extensions(Some(
            ExtensionsBuilder::new()
                .add("x-not-available", true)
                .build(),
        ));
    }
    op.build()
}

/// The names of the path's parameters, in order.
fn path_parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .map(|name| name.trim_start_matches('*'))
        .collect()
}

/// `get_v1_docs`, `post_admin_accounts_id_credits`, ...
fn operation_id(route: &Route) -> String {
    let mut id = route.method.as_str().to_lowercase();
    for part in route.path.split(|c: char| !c.is_ascii_alphanumeric()) {
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

    #[test]
    fn operation_ids_are_unique_and_readable() {
        let route = ROUTES.iter().find(|r| r.path == "/v1/docs").unwrap();
        assert_eq!(operation_id(route), "get_v1_docs");
        let mut ids: Vec<String> = ROUTES.iter().map(operation_id).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n);
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
            if route.handler == Handler::NotAvailable {
                assert_eq!(op["x-not-available"], true, "{path}");
                assert!(responses.contains_key("503"), "{path}");
            } else {
                assert!(op.get("x-not-available").is_none(), "{path}");
                assert!(
                    responses.keys().any(|s| s.starts_with('2')),
                    "{method} {path} has no success"
                );
            }
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

    /// A route that has not landed says what it will do.
    #[test]
    fn routes_not_available_yet_have_their_own_summary() {
        for route in ROUTES.iter().filter(|r| r.handler == Handler::NotAvailable) {
            assert_ne!(
                not_available_summary(route),
                "Not available on this router yet",
                "{} {}: add it to not_available_summary",
                route.method,
                route.path
            );
        }
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
