//! The route table: every path the router serves, one row per method, with
//! its auth rule, error envelope, path-parameter check, handler and its
//! description in the OpenAPI document (`router_openapi::Operation`).
//!
//! This table is the only place a route is declared. `dispatch` builds its
//! path router from it, guards each request by the row's rule, and the API
//! test `routes_matrix` derives every expected status from it, so a row
//! added here is routed, guarded, described and tested at once. The paths are the
//! service spec's (plus health and the operator API); `docs/routes.md`
//! lists them for people.

use crate::api_bodies as bodies;
use crate::body::input;
use crate::call::{Answer, Call, answer};
use crate::caller::Caller;
use crate::reply::{self, Envelope};
use crate::surfaces::{CHAT, COMPLETIONS, MESSAGES, RESPONSES};
use router_openapi::operation::{
    Header, JSON, Operation, Param, Reply, RequestBody, SchemaOf, Schemas, any_object, binary,
    closed_inference, count, empty, integer_range, json, non_empty, one_of, open_inference, schema,
    string, text_formatted, text_matching,
};
// The catalog's modules are named in full where used, one reference a line.
use crate::{
    admin, channels, dashboard, data_protection, health, images, inference, messages, metrics,
    sign_in, token_count, uploads, videos,
};
use http::Method;
use router_canonical::{ApiError, ErrorCode};
use router_core::store::{ApiKeyRecord, Scope};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Type};
use utoipa::openapi::{RefOr, Schema};

/// Who may call a route. The guard checks it in this order: credential
/// (401), then scope, session rule or origin (403); see `dispatch::guard`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthRule {
    /// No credential; any credential sent is ignored (A-13, GP-71).
    Public,
    /// No credential, but a mutation that changes what a browser is signed
    /// in as: it must come from the router's own origin (GP-36), like a
    /// session's mutation, so another site cannot sign a browser in.
    PublicSameOrigin,
    /// An API key, with `scope` when one is named (`None`: any valid key,
    /// as `GET /v1/docs`, A-12). A browser session is never a credential
    /// here (A-17).
    ApiKey { scope: Option<Scope> },
    /// An API key with `scope`, or a signed-in browser session; a session's
    /// mutations need the same origin (A-15, A-16). A key sent is the
    /// credential even when a session cookie rides along.
    ApiKeyOrSession { scope: Scope },
    /// A signed-in browser session only, its mutations from the same origin:
    /// an API key gets 403 `session_required`, no credential 401 (A-14,
    /// A-16, CF-18).
    Session,
    /// The operator token (`ROUTER_ADMIN_TOKEN`).
    Admin,
    /// `/metrics`: the operator token or the scraper's
    /// (`ROUTER_METRICS_TOKEN`); on the admin listener
    /// (`ROUTER_ADMIN_LISTEN`) no token unless a scraper token is set.
    Metrics,
}

/// What the guard checks of the path parameter after authorization, before
/// the handler runs: a malformed ID is a missing resource (404), like an
/// unknown or foreign one (A-22, GP-72).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamRule {
    /// Nothing (no parameter, or the handler checks it).
    None,
    /// A channel UUID (M-05): otherwise 404 `channel_not_found`.
    ChannelId,
    /// `slack`, `discord` or `telegram` (M-33): otherwise 404.
    Platform,
}

/// The code that answers once the guard has let a request through.
#[derive(Debug, Clone, Copy)]
pub enum Handler {
    /// Needs the caller's API key: its row's rule is `ApiKey` (a test
    /// checks), and the dispatcher hands it the key.
    Key(for<'a> fn(Call<'a>, ApiKeyRecord) -> Answer<'a>),
    /// Any caller the guard let through.
    Any(for<'a> fn(Call<'a>, Caller) -> Answer<'a>),
    /// `GET /openapi.json`, served by `dispatch`: the document is generated
    /// from this table, so the table cannot name its generator without a
    /// module cycle.
    Document,
}

/// A `Handler::Key`: `key!(|call, key| answer)`, the body an expression of
/// `Result<reply::Reply, ApiError>` that may `.await` and `?`.
macro_rules! key {
    (|$c:ident, $key:ident| $body:expr) => {
        Handler::Key(|$c, $key| {
            answer(move || async move {
                let answer: Result<reply::Reply, ApiError> = $body;
                answer
            })
        })
    };
}

/// A `Handler::Any`: `any!(|call, caller| answer)`.
macro_rules! any {
    (|$c:ident, $caller:pat_param| $body:expr) => {
        Handler::Any(|$c, $caller| {
            answer(move || async move {
                let answer: Result<reply::Reply, ApiError> = $body;
                answer
            })
        })
    };
}

/// One row of the table.
#[derive(Debug)]
pub struct Route {
    pub method: Method,
    /// A `matchit` pattern; the parameter, if any, is the last segment
    /// (`{*model_id}` takes slashes), except the experiment rows, whose
    /// `{slug}` follows the account's `{id}`.
    pub path: &'static str,
    pub auth: AuthRule,
    pub envelope: Envelope,
    pub param: ParamRule,
    pub handler: Handler,
    /// What `/openapi.json` says of it beyond what the columns above imply
    /// (security, path parameters, the guard's errors: `openapi.rs`).
    pub api: Operation,
}

const fn row(
    method: Method,
    path: &'static str,
    auth: AuthRule,
    envelope: Envelope,
    handler: Handler,
    api: Operation,
) -> Route {
    row_checked(method, path, auth, envelope, ParamRule::None, handler, api)
}

/// A row whose path parameter the guard checks.
const fn row_checked(
    method: Method,
    path: &'static str,
    auth: AuthRule,
    envelope: Envelope,
    param: ParamRule,
    handler: Handler,
    api: Operation,
) -> Route {
    Route {
        method,
        path,
        auth,
        envelope,
        param,
        handler,
        api,
    }
}

const fn key(scope: Scope) -> AuthRule {
    AuthRule::ApiKey { scope: Some(scope) }
}

const fn key_or_session(scope: Scope) -> AuthRule {
    AuthRule::ApiKeyOrSession { scope }
}

use AuthRule::{Admin, Metrics, Public, PublicSameOrigin, Session};
use Envelope::{Messages as MessagesEnv, OpenAi, Public as Detail, Video};
use ErrorCode as E;
use Handler::Document;
use Scope::{
    AccountRead as READ, AccountWrite as WRITE, Inference as INFERENCE, UsageRead as USAGE,
};
use router_core::product_codes as P;
const GET: Method = Method::GET;
const POST: Method = Method::POST;
const PATCH: Method = Method::PATCH;
const DELETE: Method = Method::DELETE;
/// Any valid API key, no scope (`GET /v1/docs`, A-12).
const ANY_KEY: AuthRule = AuthRule::ApiKey { scope: None };
use ParamRule::{ChannelId, Platform};

// ---------------------------------------------------------------------------
// What the rows' descriptions share.
// ---------------------------------------------------------------------------

const SSE: &str = "text/event-stream";

/// A JSON request body of `T`.
const fn body(
    description: &'static str,
    content: &'static [(&'static str, SchemaOf)],
) -> Option<RequestBody> {
    Some(RequestBody {
        description,
        required: true,
        content,
        parts: &[],
    })
}

/// The inference codes every streaming surface may answer (B..G, P).
const INFERENCE_ERRORS: &[ErrorCode] = &[
    E::InvalidParameter,
    E::UnsupportedConversion,
    E::UnsupportedParameter,
    P::LIST_PRICE_UNKNOWN,
    P::INCOMPATIBLE_IMAGE_INPUT,
    P::INSUFFICIENT_CREDITS,
    P::MODEL_NOT_ALLOWED,
    P::POLICY_CHANGED,
    E::ModelNotFound,
    P::EXPERIMENT_NOT_FOUND,
    E::PayloadTooLarge,
    E::RequestTimeout,
    P::API_KEY_SPEND_LIMIT_EXCEEDED,
    P::API_KEY_MONTHLY_BUDGET_EXCEEDED,
    E::RateLimitExceeded,
    P::DAILY_REQUEST_LIMIT_EXCEEDED,
    P::CONCURRENCY_LIMIT_EXCEEDED,
    E::UpstreamError,
    E::InvalidUpstreamResponse,
    E::UpstreamUnavailable,
    E::RouteUnavailable,
    P::MIN_DISCOUNT_UNAVAILABLE,
    P::ZDR_CAPACITY_UNAVAILABLE,
    P::IMAGE_CAPACITY_UNAVAILABLE,
    P::IMAGE_INPUT_LIMIT,
    P::UPLOADS_UNAVAILABLE,
    E::InternalError,
];

const INFERENCE_BODY: &str = "The surface's request; fields this description does not list are accepted and passed on where the route's protocol has them.";
const MESSAGES_BODY: &str = "The Messages request; members it does not list are refused (400).";
const INFERENCE_REPLY: &str = "The reply; with `stream: true`, server-sent events.";

fn prompt_cache(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["on", "off", "passthrough"])
}
fn prompt_cache_scope(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["session", "user", "org"])
}
fn cache_session(_: &mut Schemas) -> RefOr<Schema> {
    text_matching("^[ -~]*[!-~][ -~]*$")
        .min_length(Some(1))
        .max_length(Some(256))
        .into()
}
fn end_user(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(200))
        .into()
}

/// The common inference headers (F-04..F-15, F-29, GP-33).
const X_CI: [Param; 5] = [
    Param::header(
        "x-ci-prompt-cache",
        prompt_cache,
        "Prompt caching: `on`, `off` or `passthrough` (the key's default when absent).",
    ),
    Param::header(
        "x-ci-prompt-cache-scope",
        prompt_cache_scope,
        "Whose requests share a cached prefix: `session` (default), `user` (with `X-CI-End-User`) or `org`.",
    ),
    Param::header(
        "x-ci-prompt-cache-session",
        cache_session,
        "The session label of the `session` scope: 1 to 256 printable ASCII characters, not only spaces.",
    ),
    Param::header(
        "x-ci-end-user",
        end_user,
        "Your end user's identifier, at most 200 characters.",
    ),
    Param::header(
        "x-ci-experiment",
        non_empty,
        "The slug of one of the account's experiments; unknown is 404 `experiment_not_found`.",
    ),
];
const OPENAI_INFERENCE_PARAMS: &[Param] = &X_CI;

fn anthropic_version(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["2023-06-01"])
}
fn only_true(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["true"])
}

const ANTHROPIC_VERSION: Param = Param::header(
    "anthropic-version",
    anthropic_version,
    "The Messages API version: `2023-06-01`.",
)
.required();
/// On `GET /v1/models`: any value marks an Anthropic client.
const ANTHROPIC_CLIENT: Param = Param::header(
    "anthropic-version",
    string,
    "Sent by Anthropic's clients: each model's `capabilities` then has Anthropic's shape (`{supported: bool, ...}` objects) instead of the router's flags.",
);
const ANTHROPIC_BETA: Param = Param::header(
    "anthropic-beta",
    string,
    "Beta features, comma-separated; passed on where the route's protocol has them.",
);
const BROWSER_ACCESS: Param = Param::header(
    "anthropic-dangerous-direct-browser-access",
    only_true,
    "`true` when present.",
);
const MESSAGES_PARAMS: &[Param] = &[
    ANTHROPIC_VERSION,
    ANTHROPIC_BETA,
    BROWSER_ACCESS,
    X_CI[0],
    X_CI[1],
    X_CI[2],
    X_CI[3],
    X_CI[4],
];
const COUNT_TOKENS_PARAMS: &[Param] = &[ANTHROPIC_VERSION, ANTHROPIC_BETA, BROWSER_ACCESS];

fn cache_state(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["hit", "miss"])
}
fn affinity_state(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["hit", "new", "stale", "miss"])
}

/// On a free local token count's answer.
const ESTIMATED: Header = Header::new(
    "x-ci-token-count-estimated",
    only_true,
    "`true`: a local estimate.",
);
const X_CI_CACHE: Header = Header::new(
    "x-ci-cache",
    cache_state,
    "Whether the exact-response cache answered (`hit`) or was asked and did not (`miss`); absent when it does not apply.",
);
const AFFINITY: Header = Header::new(
    "x-ci-prompt-cache-affinity",
    affinity_state,
    "What prompt-cache affinity did for this request's prefix.",
);
const INFERENCE_HEADERS: &[Header] = &[X_CI_CACHE, AFFINITY];
const NO_STORE: Header = Header::new("cache-control", string, "`no-store`.");
const CACHED: &[Header] = &[
    Header::new(
        "cache-control",
        string,
        "`public, max-age=0, must-revalidate`.",
    ),
    Header::new(
        "etag",
        string,
        "The body's entity tag; send it back in `If-None-Match`.",
    ),
];
const IF_NONE_MATCH: Param = Param::header(
    "if-none-match",
    string,
    "An `ETag` from an earlier answer: 304 without a body while it still holds.",
);
fn zdr_flag(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["true", "false"])
}
const ZDR: Param = Param::query(
    "zdr",
    zdr_flag,
    "`true`: only offers of zero-data-retention routes (`true` or `false`).",
);
/// The public lists read `zdr` leniently: only `true` filters.
const PUBLIC_ZDR: Param = Param::query(
    "zdr",
    string,
    "`true`: only models with a zero-data-retention route; any other value lists them all.",
);
const NOT_MODIFIED: Reply = Reply {
    status: 304,
    description: "Not modified: the `If-None-Match` tag still holds.",
    content: &[],
    headers: CACHED,
};

/// A streaming inference reply: JSON, or the surface's events.
const fn inference(
    status: u16,
    content: &'static [(&'static str, SchemaOf)],
    headers: &'static [Header],
) -> Reply {
    Reply {
        status,
        description: INFERENCE_REPLY,
        content,
        headers,
    }
}

const ADMIN_BODY: &str = "JSON; unknown fields are refused (400).";
const ADMIN: &str = "admin";

fn docs_query(_: &mut Schemas) -> RefOr<Schema> {
    ObjectBuilder::new()
        .schema_type(Type::String)
        .max_length(Some(router_docs::MAX_QUERY_CHARS))
        .into()
}
fn docs_limit(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(1, 10).default(Some(4.into())).into()
}
/// A percentage as `/v1/models/supply` reads it: plain decimal digits, at
/// most 12 after the point, from 0 to 99.99.
fn percent(_: &mut Schemas) -> RefOr<Schema> {
    text_matching(
        r"^(0{0,6}([0-9]|[1-8][0-9]|9[0-8])(\.[0-9]{1,12})?|0{0,6}99(\.[0-9]{1,2}0{0,10})?)$",
    )
    .into()
}
fn tokens(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(0, 10_000_000).into()
}
fn requests(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(1, 9_007_199_254_740_991).into()
}
fn model_names(_: &mut Schemas) -> RefOr<Schema> {
    text_matching("^[^,]+(,[^,]+){0,9}$")
        .min_length(Some(1))
        .into()
}
fn instant(_: &mut Schemas) -> RefOr<Schema> {
    text_formatted(KnownFormat::DateTime)
}
fn list_limit(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(1, 1000).into()
}
fn page_limit(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(1, 100).into()
}

const VIDEO_RANGE: Param = Param::header(
    "range",
    string,
    "One range: `bytes=a-b`, `bytes=a-` or `bytes=-n`.",
);
const VIDEO_BYTES: &[Header] = &[
    Header::new("accept-ranges", string, "`bytes`."),
    Header::new("content-length", count, "The bytes in this answer."),
];
const VIDEO_RANGE_BYTES: &[Header] = &[
    Header::new("accept-ranges", string, "`bytes`."),
    Header::new("content-length", count, "The bytes in this answer."),
    Header::new("content-range", string, "`bytes a-b/size`."),
];
const SET_COOKIE: &[Header] = &[
    Header::new(
        "set-cookie",
        string,
        "The session cookie (`router_session`, HttpOnly, SameSite=Lax).",
    ),
    Header::new("cache-control", string, "`no-store`."),
];
const CLEAR_COOKIE: &[Header] = &[Header::new(
    "set-cookie",
    string,
    "The session cookie, expired.",
)];
const PAGE_HEADERS: &[Header] = &[
    Header::new("cache-control", string, "`no-cache`."),
    Header::new(
        "content-security-policy",
        string,
        "Only the router's own scripts and styles; never framed.",
    ),
];
const ASSET_HEADERS: &[Header] = &[Header::new(
    "cache-control",
    string,
    "`public, max-age=300`.",
)];
fn request_status(_: &mut Schemas) -> RefOr<Schema> {
    one_of(&["reserved", "succeeded", "failed"])
}
/// Printable text: no control characters (a NUL above all, which no id holds).
fn printable_text(_: &mut Schemas) -> RefOr<Schema> {
    text_matching("^[^\\x00-\\x1f\\x7f-\\x9f]*$").into()
}
fn uuid_text(_: &mut Schemas) -> RefOr<Schema> {
    text_formatted(KnownFormat::Uuid)
}
fn date(_: &mut Schemas) -> RefOr<Schema> {
    text_formatted(KnownFormat::Date)
}
fn request_limit(_: &mut Schemas) -> RefOr<Schema> {
    integer_range(1, 200).default(Some(50.into())).into()
}
/// The filters of `GET /api/requests`.
const REQUEST_FILTERS: &[Param] = &[
    Param::query("model", printable_text, "Only this model (as requested)."),
    Param::query(
        "key",
        uuid_text,
        "Only requests made with this key (its id).",
    ),
    Param::query("status", request_status, "Only requests in this state."),
    Param::query("from", date, "Created on or after this UTC day."),
    Param::query("to", date, "Created on or before this UTC day."),
    Param::query(
        "limit",
        request_limit,
        "At most this many (1 to 200, default 50).",
    ),
];

// ---------------------------------------------------------------------------
// The table.
// ---------------------------------------------------------------------------

/// Every route. Scopes as the spec's Authentication section states them;
/// videos take `inference` (GP-73). Each row: method, path, auth rule,
/// envelope, handler (and path check), then its description; kept out of
/// rustfmt so each stays one block.
#[rustfmt::skip]
pub static ROUTES: [Route; 74] = [
    // Inference (B..E).
    row(POST, "/v1/chat/completions", key(INFERENCE), OpenAi,
        key!(|c, key| Ok(inference::handle(&CHAT, c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Create a chat completion (OpenAI Chat Completions)", tag: "inference",
            params: OPENAI_INFERENCE_PARAMS,
            body: body(INFERENCE_BODY, &[(JSON, schema::<router_chat::wire::request::ChatRequest>)]),
            replies: &[inference(200, &[(JSON, schema::<router_chat::wire::response::ChatCompletion>), (SSE, schema::<router_chat::wire::chunk::ChatCompletionChunk>)], INFERENCE_HEADERS)],
            errors: INFERENCE_ERRORS,
        }),
    row(POST, "/v1/responses", key(INFERENCE), OpenAi,
        key!(|c, key| Ok(inference::handle(&RESPONSES, c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Create a response (OpenAI Responses, stateless)", tag: "inference",
            params: OPENAI_INFERENCE_PARAMS,
            body: body(INFERENCE_BODY, &[(JSON, schema::<router_responses::wire::request::ResponsesRequest>)]),
            replies: &[inference(200, &[(JSON, schema::<router_responses::wire::response::ResponseObject>), (SSE, schema::<router_responses::wire::event::ServerEvent>)], INFERENCE_HEADERS)],
            errors: INFERENCE_ERRORS,
        }),
    row(POST, "/v1/responses/input_tokens", key(INFERENCE), OpenAi,
        key!(|c, key| Ok(token_count::handle_input_tokens(c.app, c.request, key, c.request_id).await)),
        Operation {
            summary: "Count a response's input tokens (a free local estimate)", tag: "inference",
            body: body(INFERENCE_BODY, &[(JSON, open_inference::<router_responses::wire::request::InputTokensRequest>)]),
            replies: &[Reply { status: 200, description: "The estimate: `{object: \"response.input_tokens\", input_tokens}`.", content: &[(JSON, schema::<crate::token_count::ResponseInputTokens>)], headers: &[ESTIMATED] }],
            errors: &[E::InvalidParameter, P::MODEL_NOT_ALLOWED, E::ModelNotFound, E::PayloadTooLarge, E::RequestTimeout],
            ..Operation::new("", "")
        }),
    row(POST, "/v1/messages", key(INFERENCE), MessagesEnv,
        key!(|c, key| Ok(inference::handle(&MESSAGES, c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Create a message (Anthropic Messages)", tag: "inference",
            params: MESSAGES_PARAMS,
            body: body(MESSAGES_BODY, &[(JSON, closed_inference::<router_messages::wire::request::MessagesRequest>)]),
            replies: &[inference(200, &[(JSON, schema::<router_messages::wire::response::MessageObject>), (SSE, schema::<router_messages::wire::event::Event>)], INFERENCE_HEADERS)],
            errors: INFERENCE_ERRORS,
        }),
    row(POST, "/v1/messages/count_tokens", key(INFERENCE), MessagesEnv,
        key!(|c, key| Ok(messages::handle_count_tokens(c.app, c.request, key, c.id).await)),
        Operation {
            summary: "Count input tokens (a free local estimate)", tag: "inference",
            params: COUNT_TOKENS_PARAMS,
            body: body(INFERENCE_BODY, &[(JSON, closed_inference::<router_messages::wire::request::CountTokensRequest>)]),
            replies: &[Reply { status: 200, description: "The estimate.", content: &[(JSON, schema::<crate::messages::InputTokens>)], headers: &[ESTIMATED] }],
            errors: &[E::InvalidParameter, P::MODEL_NOT_ALLOWED, E::ModelNotFound, E::PayloadTooLarge, E::RequestTimeout],
        }),
    row(POST, "/v1/completions", key(INFERENCE), OpenAi,
        key!(|c, key| Ok(inference::handle(&COMPLETIONS, c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Create a completion (legacy OpenAI Completions)", tag: "inference",
            params: OPENAI_INFERENCE_PARAMS,
            body: body(INFERENCE_BODY, &[(JSON, schema::<router_completions::wire::request::CompletionBody>)]),
            replies: &[inference(200, &[(JSON, schema::<router_completions::wire::response::TextCompletion>), (SSE, schema::<router_completions::wire::response::TextCompletion>)], &[X_CI_CACHE])],
            errors: INFERENCE_ERRORS,
        }),
    // Uploads (I).
    row(POST, "/v1/uploads", key_or_session(INFERENCE), OpenAi,
        any!(|c, caller| uploads::create(&c.app, caller.account_id()?, c.request, c.id).await),
        Operation {
            summary: "Upload a temporary image", tag: "uploads",
            body: Some(RequestBody {
                description: "multipart/form-data with exactly one part named `file`, at most 10 MiB + 64 KiB (docs/guide/uploads.md).",
                required: true,
                content: &[("multipart/form-data", schema::<bodies::UploadForm>)],
                parts: &[("file", "image/png, image/jpeg, image/webp, image/gif")],
            }),
            replies: &[json(201, "The upload record; `expires_at` is one hour after admission.", &[(JSON, schema::<router_uploads::UploadRecord>)])],
            errors: &[P::INVALID_UPLOAD, P::DATA_PROTECTION_RESTRICTION, P::UPLOAD_TOO_LARGE, P::UNSUPPORTED_FILE_TYPE, P::INVALID_CONTENT_TYPE, P::UPLOAD_RATE_LIMIT, P::UPLOAD_QUOTA_EXCEEDED, P::UPLOADS_UNAVAILABLE],
            ..Operation::new("", "")
        }),
    row(DELETE, "/v1/uploads/{id}", key_or_session(INFERENCE), OpenAi,
        any!(|c, caller| uploads::delete(&c.app, caller.account_id()?, c.param(), c.id).await),
        Operation {
            summary: "Delete an upload", tag: "uploads",
            replies: &[empty(204, "Deleted; the bytes are removed shortly after.")],
            errors: &[P::UPLOAD_NOT_FOUND],
            ..Operation::new("", "")
        }),
    // Data protection (J).
    row(GET, "/api/data-protection", key_or_session(READ), OpenAi,
        any!(|c, caller| data_protection::show(&c.app, caller.account_id()?, c.id).await),
        Operation {
            summary: "The account's zero-data-retention switch", tag: "data protection",
            replies: &[Reply { status: 200, description: "The record.", content: &[(JSON, schema::<crate::data_protection::DataProtection>)], headers: &[NO_STORE] }],
            ..Operation::new("", "")
        }),
    row(PATCH, "/api/data-protection", Session, OpenAi,
        any!(|c, caller| data_protection::change(&c.app, &caller.session()?, c.request, c.id).await),
        Operation {
            summary: "Turn the account's zero data retention on or off", tag: "data protection",
            body: body("Exactly `{\"zero_data_retention\": true|false}`; anything else is 400 `invalid_data_protection`.", &[(JSON, schema::<bodies::DataProtectionChange>)]),
            replies: &[Reply { status: 200, description: "The record.", content: &[(JSON, schema::<crate::data_protection::DataProtection>)], headers: &[NO_STORE] }],
            errors: &[P::INVALID_DATA_PROTECTION, E::PayloadTooLarge, E::RequestTimeout],
            ..Operation::new("", "")
        }),
    // Documentation (K).
    row(GET, "/v1/docs", ANY_KEY, OpenAi,
        any!(|c, _| crate::docs::search(&c.app.docs, c.request.uri().query(), c.id)),
        Operation {
            summary: "Search the user manual", tag: "documentation",
            params: &[
                Param::query("q", docs_query, "Search terms; empty or blank is the same as absent (all sections, no bodies)."),
                Param::query("limit", docs_limit, "How many sections at most, with `q` (1 to 10, default 4); ignored without `q`."),
            ],
            replies: &[json(200, "Without `q`: every section in reading order, without `body`. With `q`: at most `limit` matching sections with `body`, best first; none is `data: []`.", &[(JSON, schema::<router_docs::DocsList<'static>>)])],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row(GET, "/docs/guide/{page}", Public, OpenAi,
        any!(|c, _| crate::docs::page(&c.app.docs, c.param(), c.id)),
        Operation {
            summary: "A page of the user manual (Markdown)", tag: "documentation",
            replies: &[json(200, "The page's Markdown, as embedded in the router.", &[("text/markdown", string)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    // Catalog and pricing (L).
    row(GET, "/public/models", Public, Detail,
        any!(|c, _| Ok(crate::catalog_api::public_models(&c.app.catalog.current(), c.request.uri(), c.request.headers(), c.id))),
        Operation {
            summary: "The public model list", tag: "catalog",
            params: &[PUBLIC_ZDR, IF_NONE_MATCH],
            replies: &[Reply { status: 200, description: "Every listed model.", content: &[(JSON, schema::<router_catalog::schema::PublicModels>)], headers: CACHED }, NOT_MODIFIED],
            ..Operation::new("", "")
        }),
    row(GET, "/public/models/{*model_id}", Public, Detail,
        any!(|c, _| crate::catalog_api::public_model(&c.app.catalog.current(), c.param(), c.request.uri(), c.request.headers(), c.id)),
        Operation {
            summary: "One public model by ID or alias", tag: "catalog",
            params: &[PUBLIC_ZDR, IF_NONE_MATCH],
            replies: &[Reply { status: 200, description: "The model entry, with its canonical `id`.", content: &[(JSON, schema::<router_catalog::schema::ModelEntry>)], headers: CACHED }, NOT_MODIFIED],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/catalog/models", Public, Detail,
        any!(|c, _| Ok(crate::catalog_api::catalog_models(&c.app.catalog.current(), c.request.headers(), c.id))),
        Operation {
            summary: "Logical models, capabilities and public tariffs", tag: "catalog",
            params: &[IF_NONE_MATCH],
            replies: &[Reply { status: 200, description: "Every listed model.", content: &[(JSON, schema::<router_catalog::schema::CatalogModels>)], headers: CACHED }, NOT_MODIFIED],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/models", key(INFERENCE), OpenAi,
        key!(|c, key| crate::catalog_api::list_models(&c.app.catalog.current(), &key, c.request.uri(), c.request.headers(), c.id)),
        Operation {
            summary: "The models this key may use (OpenAI list envelope, Anthropic's too)", tag: "catalog",
            params: &[
                Param::query("limit", list_limit, "At most this many models (1 to 1000; default: all)."),
                Param::query("after_id", string, "Only the models after this ID."),
                Param::query("before_id", string, "Only the models before this ID."),
                ANTHROPIC_CLIENT,
            ],
            replies: &[json(200, "The models.", &[(JSON, schema::<router_catalog::schema::ModelList>)])],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/models/supply", key(INFERENCE), OpenAi,
        key!(|c, key| crate::catalog_api::supply(&c.app.catalog.current(), &key, c.request.uri(), c.id)),
        Operation {
            summary: "Anonymous eligible supply of one model", tag: "catalog",
            params: &[
                Param::query("model", non_empty, "A model ID or alias.").required(),
                Param::query("min_discount_percent", percent, "Only offers at least this far below the official list price (0 to 99.99)."),
                ZDR,
            ],
            replies: &[json(200, "The offers, cheapest first.", &[(JSON, schema::<router_catalog::schema::ModelSupply>)])],
            errors: &[E::InvalidParameter, P::LIST_PRICE_UNKNOWN, E::ModelNotFound, P::MODEL_NOT_ALLOWED],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/models/compare", key_or_session(USAGE), OpenAi,
        any!(|c, caller| crate::catalog_api::compare(&c.app.catalog.current(), &caller.viewer()?, c.request.uri(), c.id)),
        Operation {
            summary: "Estimate the cost of requests on up to 10 models", tag: "catalog",
            params: &[
                Param::query("models", model_names, "Up to 10 distinct model IDs or aliases, comma-separated.").required(),
                Param::query("prompt_tokens", tokens, "Input tokens per request (default 0)."),
                Param::query("completion_tokens", tokens, "Output tokens per request (default 0)."),
                Param::query("requests", requests, "How many requests (default 1)."),
            ],
            replies: &[Reply { status: 200, description: "The estimates; not cached.", content: &[(JSON, schema::<router_catalog::schema::ModelComparison>)], headers: &[NO_STORE] }],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/pricing/changes", key_or_session(USAGE), OpenAi,
        any!(|c, caller| crate::catalog_api::pricing_changes(&c.app, &caller.viewer()?, c.request.uri(), c.id).await),
        Operation {
            summary: "The latest price change per model since an instant", tag: "catalog",
            params: &[
                Param::query("since", instant, "An RFC 3339 timestamp with a timezone.").required(),
                Param::query("limit", page_limit, "At most this many changes (1 to 100, default 100)."),
                Param::query("cursor", string, "The `next_cursor` of the previous page, with the same `since` and credential."),
            ],
            replies: &[Reply { status: 200, description: "The changes; not cached.", content: &[(JSON, schema::<router_catalog::schema::PriceChanges>)], headers: &[NO_STORE] }],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    // Digest channels (M).
    row(GET, "/v1/channels", key_or_session(READ), OpenAi,
        any!(|c, caller| channels::ok(&c.app.notify.list(caller.account_id()?).await?, c.id)),
        Operation {
            summary: "List the account's digest channels", tag: "channels",
            replies: &[Reply { status: 200, description: "The connected channels and the selectable events.", content: &[(JSON, schema::<router_notify::channels::ChannelList>)], headers: &[NO_STORE] }],
            ..Operation::new("", "")
        }),
    row_checked(GET, "/v1/channels/{channel_id}", key_or_session(READ), OpenAi, ChannelId,
        any!(|c, caller| channels::ok(&c.app.notify.show(caller.account_id()?, channels::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Read a digest channel", tag: "channels",
            replies: &[json(200, "The channel.", &[(JSON, schema::<router_notify::channels::ChannelRecord>)])],
            ..Operation::new("", "")
        }),
    row_checked(PATCH, "/v1/channels/{channel_id}", key_or_session(WRITE), OpenAi, ChannelId,
        any!(|c, caller| channels::update(c, &caller).await),
        Operation {
            summary: "Change a channel's frequency or events", tag: "channels",
            body: body("JSON; other fields (a destination, the report hour) are refused (400).", &[(JSON, schema::<router_notify::schema::ChannelUpdate>)]),
            replies: &[json(200, "The channel.", &[(JSON, schema::<router_notify::channels::ChannelRecord>)])],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row_checked(POST, "/v1/channels/{channel_id}/send-report", key_or_session(WRITE), OpenAi, ChannelId,
        any!(|c, caller| channels::ok(&c.app.notify.send_report(caller.account_id()?, channels::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Send the previous period's report now", tag: "channels",
            replies: &[json(200, "`sent: false` means no activity in the period.", &[(JSON, schema::<router_notify::channels::ReportSent>)])],
            errors: &[P::RATE_LIMITED, P::EMAIL_UNAVAILABLE, P::CHANNEL_UNAVAILABLE, P::REPORT_UNAVAILABLE, P::REPORT_PENDING, P::EMAIL_DELIVERY_FAILED, P::REPORT_DELIVERY_FAILED],
            ..Operation::new("", "")
        }),
    row(GET, "/api/channels/email", Session, OpenAi,
        any!(|c, caller| channels::ok(&c.app.notify.email_status(caller.account_id()?).await?, c.id)),
        Operation {
            summary: "The email channel's status", tag: "channels",
            replies: &[Reply { status: 200, description: "Email availability and the connected channel.", content: &[(JSON, schema::<router_notify::channels::EmailStatus>)], headers: &[NO_STORE] }],
            ..Operation::new("", "")
        }),
    row(POST, "/api/channels/email", Session, OpenAi,
        any!(|c, caller| channels::email_connect(c, &caller).await),
        Operation {
            summary: "Connect the email channel (with consent)", tag: "channels",
            body: body("JSON; a destination is refused (400): it is always the verified email.", &[(JSON, schema::<router_notify::schema::EmailConnect>)]),
            replies: &[
                json(201, "Connected.", &[(JSON, schema::<router_notify::channels::ChannelRecord>)]),
                json(200, "Already connected with this frequency, or reconnected (same id).", &[(JSON, schema::<router_notify::channels::ChannelRecord>)]),
            ],
            errors: &[E::InvalidParameter, P::EMAIL_VERIFICATION_REQUIRED, P::CHANNEL_ALREADY_CONNECTED, P::EMAIL_UNAVAILABLE],
            ..Operation::new("", "")
        }),
    row_checked(DELETE, "/api/channels/email/{id}", Session, OpenAi, ChannelId,
        any!(|c, caller| channels::ok(&c.app.notify.disconnect_email(caller.account_id()?, channels::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Disconnect the email channel", tag: "channels",
            replies: &[json(200, "Disconnected.", &[(JSON, schema::<router_notify::channels::Disconnected>)])],
            ..Operation::new("", "")
        }),
    row_checked(GET, "/api/channels/{platform}", Session, OpenAi, Platform,
        any!(|c, caller| channels::ok(&c.app.notify.platform_status(caller.account_id()?, channels::external_platform(c.param())?).await?, c.id)),
        Operation {
            summary: "A Slack, Discord or Telegram channel's status", tag: "channels",
            replies: &[json(200, "The platform's status.", &[(JSON, schema::<router_notify::channels::PlatformStatus>)])],
            ..Operation::new("", "")
        }),
    // Image generation (N).
    row(POST, "/v1/images/generations", key(INFERENCE), OpenAi,
        key!(|c, key| Ok(images::handle(c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Generate one PNG image", tag: "images",
            body: body("JSON; unknown fields are refused (400).", &[(JSON, schema::<router_images::schema::ImageGenerationRequest>)]),
            replies: &[json(200, "The image and its receipt.", &[(JSON, schema::<router_images::schema::ImageGeneration>)])],
            errors: &[E::InvalidParameter, P::INSUFFICIENT_CREDITS, P::MODEL_NOT_ALLOWED, E::ModelNotFound, E::PayloadTooLarge, E::RequestTimeout, P::GENERATION_TIMEOUT, E::InvalidUpstreamResponse, E::UpstreamError, E::RouteUnavailable],
            ..Operation::new("", "")
        }),
    // A request's final status, owner only (N-10, GP-62).
    row(GET, "/v1/requests/{id}", key(INFERENCE), OpenAi,
        key!(|c, key| images::request_status(&c.app, &key, c.param(), c.id).await),
        Operation {
            summary: "A request's final status", tag: "images",
            replies: &[json(200, "The request's status and charge, for the account that made it.", &[(JSON, schema::<router_operator::RequestStatus>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    // Videos (O).
    row(POST, "/v1/videos", key(INFERENCE), Video,
        key!(|c, key| Ok(videos::create(c.app, c.request, key, c.request_id, c.log).await)),
        Operation {
            summary: "Create a video job", tag: "videos",
            body: body("JSON (`Content-Type: application/json`), at most 256 KiB.", &[(JSON, schema::<router_videos::schema::VideoCreateRequest>)]),
            replies: &[json(200, "The video, `status: \"queued\"`; a replay of the same `client_task_id` and request returns the same video.", &[(JSON, schema::<router_videos::schema::Video>)])],
            errors: &[E::InvalidParameter, P::INSUFFICIENT_CREDITS, P::MODEL_NOT_ALLOWED, E::ModelNotFound, P::IDEMPOTENCY_CONFLICT, E::PayloadTooLarge, E::RequestTimeout, E::UpstreamError, E::UpstreamUnavailable, E::RouteUnavailable, P::ZDR_CAPACITY_UNAVAILABLE, P::SUBMISSION_UNKNOWN],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/videos/{video_id}", key(INFERENCE), Video,
        key!(|c, key| videos::show(&c.app, &key, c.param(), c.id).await),
        Operation {
            summary: "Read a video job", tag: "videos",
            replies: &[json(200, "The video: `status`, `progress`, `metadata.url` once completed.", &[(JSON, schema::<router_videos::schema::Video>)])],
            errors: &[P::TASK_NOT_FOUND],
            ..Operation::new("", "")
        }),
    row(GET, "/v1/videos/{video_id}/content", key(INFERENCE), Video,
        key!(|c, key| videos::content(&c.app, &key, c.param(), c.range(), c.id).await),
        Operation {
            summary: "Download a video (byte ranges supported)", tag: "videos",
            params: &[VIDEO_RANGE],
            replies: &[
                Reply { status: 200, description: "The whole video.", content: &[("video/mp4", binary)], headers: VIDEO_BYTES },
                Reply { status: 206, description: "One range.", content: &[("video/mp4", binary)], headers: VIDEO_RANGE_BYTES },
            ],
            errors: &[P::TASK_NOT_FOUND, P::VIDEO_NOT_READY, P::INVALID_RANGE],
            ..Operation::new("", "")
        }),
    // The API description (R-01).
    row(GET, "/openapi.json", Public, OpenAi,
        Document,
        Operation {
            summary: "This OpenAPI document", tag: "meta",
            replies: &[json(200, "The OpenAPI 3.1 document of the router.", &[(JSON, any_object)])],
            ..Operation::new("", "")
        }),
    // Browser sign-in (SessionAuth; sign_in.rs).
    row(POST, "/api/auth/magic-link", Public, OpenAi,
        any!(|c, _| sign_in::request_link(c.app.clone(), c.request, c.id).await),
        Operation {
            summary: "Email a sign-in link", tag: "sessions",
            body: body("The address to sign in.", &[(JSON, schema::<crate::sign_in::LinkRequest>)]),
            replies: &[json(202, "The same answer whether an account has that address or not.", &[(JSON, schema::<router_dashboard::sign_in::LinkSent>)])],
            errors: &[E::InvalidParameter, P::EMAIL_UNAVAILABLE],
            ..Operation::new("", "")
        }),
    row(GET, "/api/auth/sign-in", Public, OpenAi,
        any!(|c, _| sign_in::sign_in_page(&c.app, &c.request, c.id).await),
        Operation {
            summary: "The sign-in page a link opens (spends nothing)", tag: "sessions",
            params: &[Param::query("token", string, "The token of the emailed link; without a well-formed one the page says the link is incomplete.")],
            replies: &[json(200, "An HTML page: the account the link signs into and one button that signs in, or a note that the link is incomplete, unknown, used or expired. Never framed (`frame-ancestors 'none'`, `X-Frame-Options: DENY`), `nosniff`, `Referrer-Policy: no-referrer`.", &[("text/html", string)])],
            ..Operation::new("", "")
        }),
    row(POST, "/api/auth/sign-in", PublicSameOrigin, OpenAi,
        any!(|c, _| sign_in::redeem(&c.app, c.request, c.id).await),
        Operation {
            summary: "Redeem a sign-in link and set the session cookie", tag: "sessions",
            body: body("JSON `{token}`, or the page's form post `token=...`.", &[(JSON, schema::<crate::sign_in::Redeem>), ("application/x-www-form-urlencoded", schema::<crate::sign_in::Redeem>)]),
            replies: &[Reply { status: 200, description: "Signed in: an HTML page, and the session cookie.", content: &[("text/html", string)], headers: SET_COOKIE }],
            errors: &[E::InvalidParameter, P::SIGN_IN_LINK_INVALID],
            ..Operation::new("", "")
        }),
    row(GET, "/api/auth/session", Session, OpenAi,
        any!(|c, caller| Ok(sign_in::show(&caller.session()?, c.id))),
        Operation {
            summary: "Who is signed in", tag: "sessions",
            replies: &[json(200, "The session.", &[(JSON, schema::<router_dashboard::sign_in::SessionView>)])],
            ..Operation::new("", "")
        }),
    row(POST, "/api/auth/sign-out", Session, OpenAi,
        any!(|c, caller| sign_in::sign_out(&c.app, &caller.session()?, c.id).await),
        Operation {
            summary: "Sign out: end the session and clear the cookie", tag: "sessions",
            replies: &[Reply { status: 204, description: "Signed out.", content: &[], headers: CLEAR_COOKIE }],
            ..Operation::new("", "")
        }),
    // The account dashboard (router-dashboard; dashboard.rs).
    row(GET, "/", Public, OpenAi,
        any!(|c, _| dashboard::page(None, c.id)),
        Operation {
            summary: "The account dashboard: sign in, or your usage once signed in", tag: "dashboard",
            replies: &[Reply { status: 200, description: "The dashboard's HTML page.", content: &[("text/html", string)], headers: PAGE_HEADERS }],
            ..Operation::new("", "")
        }),
    row(GET, "/account/{*page}", Public, OpenAi,
        any!(|c, _| dashboard::page(c.param(), c.id)),
        Operation {
            summary: "A page of the account dashboard", tag: "dashboard",
            replies: &[Reply { status: 200, description: "The dashboard's HTML page: `sign-in`, `usage`, `requests`, `requests/{id}`, `keys`, `data-protection` or `digests`.", content: &[("text/html", string)], headers: PAGE_HEADERS }],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/dashboard/assets/{name}", Public, OpenAi,
        any!(|c, _| dashboard::asset(c.param(), c.id)),
        Operation {
            summary: "A stylesheet or script of the dashboard (embedded)", tag: "dashboard",
            replies: &[Reply { status: 200, description: "The file.", content: &[("text/css", string), ("text/javascript", string)], headers: ASSET_HEADERS }],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/api/keys", Session, OpenAi,
        any!(|c, caller| reply::ok(&dashboard::of(&c.app).keys(caller.session()?.account_id, chrono::Utc::now()).await?, c.id)),
        Operation {
            summary: "Your API keys, with this month's spend and last use", tag: "dashboard",
            replies: &[json(200, "The account's keys, live ones first; revoked ones carry `revoked_at`.", &[(JSON, schema::<router_dashboard::keys::KeyList>)])],
            ..Operation::new("", "")
        }),
    row(POST, "/api/keys", Session, OpenAi,
        any!(|c, caller| dashboard::create_key(c, &caller.session()?).await),
        Operation {
            summary: "Create an API key for your account", tag: "dashboard",
            body: body("JSON: scopes and the key's policy; unknown fields are refused (400).", &[(JSON, schema::<router_dashboard::keys::NewKey>)]),
            replies: &[Reply { status: 201, description: "The key; its secret is shown in this answer only.", content: &[(JSON, schema::<router_operator::IssuedKey>)], headers: &[NO_STORE] }],
            errors: &[E::InvalidParameter, E::PayloadTooLarge, E::RequestTimeout],
            ..Operation::new("", "")
        }),
    row(PATCH, "/api/keys/{id}", Session, OpenAi,
        any!(|c, caller| reply::ok(&dashboard::of(&c.app).update_key(&c.app.gateway.catalog(), caller.session()?.account_id, router_dashboard::keys::parse_key_id(c.param())?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Change one of your keys' scopes or policy", tag: "dashboard",
            body: body("JSON: each field present is changed, `null` clears it; unknown fields are refused (400).", &[(JSON, schema::<router_operator::ApiKeyPatch>)]),
            replies: &[json(200, "The key.", &[(JSON, schema::<router_operator::ApiKey>)])],
            errors: &[E::InvalidParameter, E::NotFound, E::PayloadTooLarge, E::RequestTimeout],
            ..Operation::new("", "")
        }),
    row(DELETE, "/api/keys/{id}", Session, OpenAi,
        any!(|c, caller| { dashboard::of(&c.app).revoke_key(caller.session()?.account_id, router_dashboard::keys::parse_key_id(c.param())?).await?; reply::removed(c.id) }),
        Operation {
            summary: "Revoke one of your keys", tag: "dashboard",
            replies: &[empty(204, "Revoked: requests with it are refused at once.")],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/api/usage", Session, OpenAi,
        any!(|c, caller| reply::ok(&dashboard::of(&c.app).usage(caller.session()?.account_id, chrono::Utc::now()).await?, c.id)),
        Operation {
            summary: "Your balance and the last 30 days' spend by day, model and key", tag: "dashboard",
            replies: &[json(200, "Amounts from the ledger, as integer nano-USD and USD text.", &[(JSON, schema::<router_dashboard::usage::UsageView>)])],
            ..Operation::new("", "")
        }),
    row(GET, "/api/requests", Session, OpenAi,
        any!(|c, caller| reply::ok(&dashboard::of(&c.app).requests(caller.session()?.account_id, &router_dashboard::usage::parse_filter(c.request.uri().query())?).await?, c.id)),
        Operation {
            summary: "Your requests, newest first, with filters", tag: "dashboard",
            params: REQUEST_FILTERS,
            replies: &[json(200, "The requests, each with its charge from the ledger.", &[(JSON, schema::<router_dashboard::usage::RequestList>)])],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row(GET, "/api/requests/{id}", Session, OpenAi,
        any!(|c, caller| reply::ok(&dashboard::of(&c.app).request(caller.session()?.account_id, c.param()).await?, c.id)),
        Operation {
            summary: "One of your requests: attempts by route protocol, tokens, charge", tag: "dashboard",
            replies: &[json(200, "The request, without any supplier identity.", &[(JSON, schema::<router_dashboard::usage::RequestDetail>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    // Health.
    row(GET, "/healthz", Public, OpenAi,
        any!(|c, _| Ok(health::healthz(c.id))),
        Operation {
            summary: "Liveness: the process answers", tag: "health",
            replies: &[json(200, "Healthy.", &[(JSON, schema::<crate::health::Health>)])],
            ..Operation::new("", "")
        }),
    row(GET, "/readyz", Public, OpenAi,
        any!(|c, _| Ok(health::readyz(&c.app, c.id).await)),
        Operation {
            summary: "Readiness: the router can reach PostgreSQL", tag: "health",
            replies: &[
                json(200, "Healthy.", &[(JSON, schema::<crate::health::Health>)]),
                json(503, "The database does not answer.", &[(JSON, schema::<crate::health::Health>)]),
            ],
            ..Operation::new("", "")
        }),
    row(GET, "/metrics", Metrics, OpenAi,
        any!(|c, _| metrics::reply(&c.app, c.id).await),
        Operation {
            summary: "Metrics in the Prometheus text format", tag: "operations",
            replies: &[json(200, "Counters, gauges and histograms prefixed `router_` (docs/operations.md).", &[("text/plain", string)])],
            errors: &[P::NOT_AVAILABLE],
            ..Operation::new("", "")
        }),
    // The operator API (docs/admin-api.md).
    row(POST, "/admin/accounts", Admin, OpenAi,
        any!(|c, _| reply::created(&c.app.operator.create_account(input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Create an account", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::NewAccount>)]),
            replies: &[json(201, "The account, its wallet empty.", &[(JSON, schema::<router_operator::OpenedAccount>)])],
            errors: &[E::InvalidParameter, E::Conflict],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/accounts/{id}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.account(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Read an account and its wallet", tag: ADMIN,
            replies: &[json(200, "The account.", &[(JSON, schema::<router_operator::Account>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/accounts/{id}/credits", Admin, OpenAi,
        any!(|c, _| admin::grant_credits(c).await),
        Operation {
            summary: "Grant credits to an account", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::Credits>)]),
            replies: &[json(200, "The new balance.", &[(JSON, schema::<router_operator::Balance>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/api-keys", Admin, OpenAi,
        any!(|c, _| reply::created(&c.app.operator.create_api_key(&c.app.gateway.catalog(), input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Issue an API key", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::NewApiKey>)]),
            replies: &[json(201, "The key, its secret shown once, with its policy.", &[(JSON, schema::<router_operator::IssuedKey>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/api-keys/{id}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.api_key(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Read an API key, its policy and spend", tag: ADMIN,
            replies: &[json(200, "The key.", &[(JSON, schema::<router_operator::ApiKeyWithSpend>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/accounts/{id}/api-keys", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.api_keys(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "List an account's API keys", tag: ADMIN,
            replies: &[json(200, "The keys.", &[(JSON, schema::<bodies::AdminApiKeyList>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(PATCH, "/admin/api-keys/{id}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.update_api_key(&c.app.gateway.catalog(), admin::id(&c.params)?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Change an API key's scopes or policy", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::ApiKeyPatch>)]),
            replies: &[json(200, "The key.", &[(JSON, schema::<router_operator::ApiKey>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(DELETE, "/admin/api-keys/{id}", Admin, OpenAi,
        any!(|c, _| { c.app.operator.delete_api_key(admin::id(&c.params)?).await?; reply::removed(c.id) }),
        Operation {
            summary: "Delete an API key", tag: ADMIN,
            replies: &[empty(204, "Deleted.")],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/requests/{id}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.request(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "A request's history: attempts, hold, ledger", tag: ADMIN,
            replies: &[json(200, "The request.", &[(JSON, schema::<router_operator::RequestRecord>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/catalog", Admin, OpenAi,
        any!(|c, _| Ok(crate::catalog_api::describe(&c.app, c.id))),
        Operation {
            summary: "The catalog release in force", tag: ADMIN,
            replies: &[json(200, "The release.", &[(JSON, schema::<router_catalog::Described>)])],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/catalog/reload", Admin, OpenAi,
        any!(|c, _| crate::catalog_api::reload(&c.app, c.id).await),
        Operation {
            summary: "Reload the catalog file as a new release", tag: ADMIN,
            replies: &[json(200, "The release now in force.", &[(JSON, schema::<router_catalog::Reloaded>)])],
            errors: &[E::InvalidParameter],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/accounts/{id}/sessions", Admin, OpenAi,
        any!(|c, _| reply::created(&c.app.operator.create_session(admin::id(&c.params)?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Open a browser session for an account", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::NewSession>)]),
            replies: &[json(201, "The session; its cookie value is shown once.", &[(JSON, schema::<router_operator::OpenedSession>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(DELETE, "/admin/sessions/{id}", Admin, OpenAi,
        any!(|c, _| { c.app.operator.revoke_session(admin::id(&c.params)?).await?; reply::removed(c.id) }),
        Operation {
            summary: "End a browser session", tag: ADMIN,
            replies: &[empty(204, "Ended.")],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/accounts/{id}/experiments", Admin, OpenAi,
        any!(|c, _| reply::created(&c.app.operator.create_experiment(&c.app.gateway.catalog(), admin::id(&c.params)?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Create an A/B experiment (a draft)", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::NewExperiment>)]),
            replies: &[json(201, "The experiment, status `draft`.", &[(JSON, schema::<router_operator::ExperimentView>)])],
            errors: &[E::InvalidParameter, E::NotFound, E::Conflict],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/accounts/{id}/experiments", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.experiments(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "List an account's experiments", tag: ADMIN,
            replies: &[json(200, "The experiments with assignment counts.", &[(JSON, schema::<bodies::AdminExperimentList>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/accounts/{id}/experiments/{slug}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.experiment(admin::id(&c.params)?, admin::slug(&c.params)?).await?, c.id)),
        Operation {
            summary: "Read an experiment and its assignment counts", tag: ADMIN,
            replies: &[json(200, "The experiment.", &[(JSON, schema::<router_operator::ExperimentView>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(PATCH, "/admin/accounts/{id}/experiments/{slug}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.operator.update_experiment(admin::id(&c.params)?, admin::slug(&c.params)?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Run, pause, complete or promote an experiment", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_operator::ExperimentPatch>)]),
            replies: &[json(200, "The experiment.", &[(JSON, schema::<router_operator::ExperimentView>)])],
            errors: &[E::InvalidParameter, E::NotFound, E::Conflict],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/jobs/{name}/run", Admin, OpenAi,
        any!(|c, _| channels::jobs::run_job(&c.app, c.request, c.params.first.as_deref(), c.id).await),
        Operation {
            summary: "Run one pass of a background job now", tag: ADMIN,
            body: Some(RequestBody {
                description: "Empty, or JSON `{as_of}`: only for `digest-scheduler` with ROUTER_ADMIN_TEST_HOOKS=1 (else 404).",
                required: false,
                content: &[(JSON, schema::<crate::channels::jobs::JobRun>)],
                parts: &[],
            }),
            replies: &[json(200, "The job and how many items its pass processed.", &[(JSON, schema::<crate::jobs::JobPassView>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/accounts/{id}/channels", Admin, OpenAi,
        any!(|c, _| channels::connected(c.app.notify.provision(admin::id(&c.params)?, input(c.request).await?).await?, c.id)),
        Operation {
            summary: "Provision a Slack, Discord or Telegram channel", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<router_notify::channels::Provision>)]),
            replies: &[
                json(201, "Connected.", &[(JSON, schema::<router_notify::channels::ChannelRecord>)]),
                json(200, "Already connected with this frequency, or reconnected.", &[(JSON, schema::<router_notify::channels::ChannelRecord>)]),
            ],
            errors: &[E::InvalidParameter, E::NotFound, P::CHANNEL_ALREADY_CONNECTED],
            ..Operation::new("", "")
        }),
    row(DELETE, "/admin/channels/{id}", Admin, OpenAi,
        any!(|c, _| reply::ok(&c.app.notify.deprovision(admin::id(&c.params)?).await?, c.id)),
        Operation {
            summary: "Disconnect a channel", tag: ADMIN,
            replies: &[json(200, "Disconnected.", &[(JSON, schema::<router_notify::channels::Disconnected>)])],
            errors: &[E::NotFound],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/requests/backdate", Admin, OpenAi,
        any!(|c, _| channels::jobs::backdate_requests(&c.app, c.request, c.id).await),
        Operation {
            summary: "Move finished requests in time (test hooks only)", tag: ADMIN,
            body: body("JSON; only with ROUTER_ADMIN_TEST_HOOKS=1, else 404.", &[(JSON, schema::<crate::channels::jobs::Backdate>)]),
            replies: &[json(200, "How many finished requests moved.", &[(JSON, schema::<crate::channels::jobs::Backdated>)])],
            errors: &[E::InvalidParameter, E::NotFound],
            ..Operation::new("", "")
        }),
    row(GET, "/admin/videos/{id}", Admin, OpenAi,
        any!(|c, _| videos::admin_show(&c.app, c.param(), c.id).await),
        Operation {
            summary: "A video job as the operator sees it", tag: ADMIN,
            replies: &[json(200, "The video job.", &[(JSON, schema::<router_operator::videos::VideoRecord>)])],
            errors: &[P::TASK_NOT_FOUND],
            ..Operation::new("", "")
        }),
    row(POST, "/admin/videos/{id}/reconcile", Admin, OpenAi,
        any!(|c, _| videos::admin_reconcile(&c.app, c.request, c.params.first.as_deref(), c.id).await),
        Operation {
            summary: "Reconcile a video whose submission is unknown", tag: ADMIN,
            body: body(ADMIN_BODY, &[(JSON, schema::<bodies::AdminReconcile>)]),
            replies: &[json(200, "The video job after reconciliation.", &[(JSON, schema::<router_operator::videos::VideoRecord>)])],
            errors: &[E::InvalidParameter, P::TASK_NOT_FOUND, E::Conflict],
            ..Operation::new("", "")
        }),
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn one_row_per_path_and_method() {
        let mut seen = HashSet::new();
        for route in &ROUTES {
            assert!(
                seen.insert((route.method.clone(), route.path)),
                "{} {} declared twice",
                route.method,
                route.path
            );
        }
    }

    /// `docs/routes.md` lists every row, so it cannot drift from the table.
    #[test]
    fn the_docs_list_every_route() {
        let docs = include_str!("../../../docs/routes.md");
        for route in &ROUTES {
            assert!(
                docs.contains(&format!("| {} ", route.path))
                    || docs.contains(&format!("{},", route.path))
                    || docs.contains(&format!("{} |", route.path)),
                "docs/routes.md does not list {} {}",
                route.method,
                route.path
            );
        }
    }

    /// A handler handed the caller's key sits behind a key rule; the
    /// inference, image, video and request-status rows need `inference`.
    #[test]
    fn key_handlers_sit_behind_a_key_rule() {
        for route in &ROUTES {
            if matches!(route.handler, Handler::Key(_)) {
                assert!(
                    matches!(route.auth, AuthRule::ApiKey { .. }),
                    "{} {}",
                    route.method,
                    route.path
                );
            }
            let inference = [
                "/v1/chat/",
                "/v1/responses",
                "/v1/messages",
                "/v1/completions",
                "/v1/images/",
                "/v1/videos",
                "/v1/requests/",
            ];
            if inference.iter().any(|p| route.path.starts_with(p)) {
                assert_eq!(route.auth, key(INFERENCE), "{}", route.path);
                assert!(matches!(route.handler, Handler::Key(_)), "{}", route.path);
            }
            if route.path.starts_with("/admin/") {
                assert_eq!(route.auth, Admin, "{}", route.path);
            }
            if route.path == "/metrics" {
                assert_eq!(route.auth, Metrics, "{}", route.path);
            }
        }
    }
}
