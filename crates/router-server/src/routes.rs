//! The route table: every path the router serves, one row per method, with
//! its auth rule, error envelope, path-parameter check and handler.
//!
//! This table is the only place a route is declared. `dispatch` builds its
//! path router from it, guards each request by the row's rule, and the API
//! test `routes_matrix` derives every expected status from it, so a row
//! added here is routed, guarded and tested at once. The paths are the
//! service spec's (plus health and the operator API); `docs/routes.md`
//! lists them for people.

use crate::reply::Envelope;
use http::Method;
use router_core::store::Scope;

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
    /// here.
    ApiKey { scope: Option<Scope> },
    /// An API key with `scope`, or a signed-in browser session; a session's
    /// mutations need the same origin. A key sent is the
    /// credential even when a session cookie rides along.
    ApiKeyOrSession { scope: Scope },
    /// A signed-in browser session only, its mutations from the same origin:
    /// an API key gets 403 `session_required`, no credential 401 (A-14,
    /// A-16, CF-18).
    Session,
    /// The operator token (`ROUTER_ADMIN_TOKEN`).
    Admin,
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handler {
    /// An inference endpoint: needs the caller's API key.
    Inference(InferenceEndpoint),
    Healthz,
    Readyz,
    /// `GET /metrics` (`metrics.rs`).
    Metrics,
    AdminCreateAccount,
    AdminGetAccount,
    AdminGrantCredits,
    AdminCreateApiKey,
    AdminGetApiKey,
    AdminListApiKeys,
    AdminUpdateApiKey,
    AdminDeleteApiKey,
    AdminGetRequest,
    AdminGetCatalog,
    AdminReloadCatalog,
    /// `GET /v1/models`.
    ListModels,
    /// `GET /v1/models/supply`.
    ModelSupply,
    /// `GET /v1/models/compare`.
    CompareModels,
    /// `GET /v1/pricing/changes`.
    PricingChanges,
    /// `GET /public/models`.
    PublicModels,
    /// `GET /public/models/{*model_id}`.
    PublicModel,
    /// `GET /catalog/models`.
    CatalogModels,
    /// `POST /v1/images/generations` (`images.rs`): needs the caller's API key.
    ImagesGenerations,
    /// `GET /v1/requests/{id}`: a request's final status, for the account
    /// that made it (N-10, GP-62; `images.rs`).
    RequestStatus,
    /// `GET /v1/docs`: search the user manual (`docs.rs`).
    DocsSearch,
    /// `GET /docs/guide/{page}`: one page of the manual, where the search's
    /// `url`s point.
    DocsPage,
    /// `GET /openapi.json`: the OpenAPI document (`openapi.rs`).
    OpenApi,
    AdminCreateSession,
    /// `POST /admin/jobs/{name}/run` (`jobs.rs`).
    AdminRunJob,
    AdminDeleteSession,
    /// An account's A/B experiments (`router-operator`, docs/admin-api.md).
    AdminCreateExperiment,
    AdminListExperiments,
    AdminGetExperiment,
    AdminUpdateExperiment,
    /// `sign_in.rs`: ask for a link, its page, redeem it, who am I, sign out.
    SignInRequestLink,
    SignInPage,
    SignInRedeem,
    SessionShow,
    SignOut,
    /// Digest channels (`channels.rs`, section M).
    ChannelsList,
    ChannelShow,
    ChannelUpdate,
    ChannelSendReport,
    EmailChannelStatus,
    EmailChannelConnect,
    EmailChannelDisconnect,
    PlatformChannelStatus,
    /// The operator provisions Slack, Discord and Telegram channels (GP-17).
    AdminProvisionChannel,
    AdminDeprovisionChannel,
    /// `POST /admin/requests/backdate`: moves finished requests in time,
    /// only with `ROUTER_ADMIN_TEST_HOOKS=1` (404 otherwise).
    AdminBackdateRequests,
    /// Video jobs (`videos.rs`, section O): need the caller's API key.
    VideoCreate,
    VideoShow,
    VideoContent,
    /// The operator's view of a video job and its reconciliation (GP-25).
    AdminGetVideo,
    AdminReconcileVideo,
    /// `POST /v1/uploads` (`uploads.rs`): a key or a same-origin session.
    UploadCreate,
    /// `DELETE /v1/uploads/{id}`.
    UploadDelete,
    /// `GET /api/data-protection` (`data_protection.rs`): a key or a session.
    DataProtectionShow,
    /// `PATCH /api/data-protection`: a same-origin session only.
    DataProtectionChange,
    /// The feature has not landed: 503 `not_available` after the guard. Its
    /// own issue puts a real handler in the row.
    NotAvailable,
}

/// The inference endpoints (`inference.rs`, `messages.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InferenceEndpoint {
    ChatCompletions,
    Responses,
    Messages,
    CountTokens,
    Completions,
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
}

const fn row(
    method: Method,
    path: &'static str,
    auth: AuthRule,
    envelope: Envelope,
    handler: Handler,
) -> Route {
    row_checked(method, path, auth, envelope, handler, ParamRule::None)
}

/// A row whose path parameter the guard checks.
const fn row_checked(
    method: Method,
    path: &'static str,
    auth: AuthRule,
    envelope: Envelope,
    handler: Handler,
    param: ParamRule,
) -> Route {
    Route {
        method,
        path,
        auth,
        envelope,
        param,
        handler,
    }
}

const fn key(scope: Scope) -> AuthRule {
    AuthRule::ApiKey { scope: Some(scope) }
}

const fn key_or_session(scope: Scope) -> AuthRule {
    AuthRule::ApiKeyOrSession { scope }
}

use AuthRule::{Admin, Public, PublicSameOrigin, Session};
use Envelope::{Messages as MessagesEnv, OpenAi, Public as Detail, Video};
use Handler::{Inference as Infer, *};
use InferenceEndpoint::*;
use Scope::{
    AccountRead as READ, AccountWrite as WRITE, Inference as INFERENCE, UsageRead as USAGE,
};
const GET: Method = Method::GET;
const POST: Method = Method::POST;
const PATCH: Method = Method::PATCH;
const DELETE: Method = Method::DELETE;
/// Any valid API key, no scope (`GET /v1/docs`, A-12).
const ANY_KEY: AuthRule = AuthRule::ApiKey { scope: None };
use ParamRule::{ChannelId, Platform};

/// Every route. Scopes as the spec's Authentication section states them;
/// videos take `inference` (GP-73). One row per line, so kept out of rustfmt.
#[rustfmt::skip]
pub static ROUTES: [Route; 63] = [
    // Inference (B..E).
    row(POST,   "/v1/chat/completions",          key(INFERENCE),            OpenAi,      Infer(ChatCompletions)),
    row(POST,   "/v1/responses",                 key(INFERENCE),            OpenAi,      Infer(Responses)),
    row(POST,   "/v1/messages",                  key(INFERENCE),            MessagesEnv, Infer(Messages)),
    row(POST,   "/v1/messages/count_tokens",     key(INFERENCE),            MessagesEnv, Infer(CountTokens)),
    row(POST,   "/v1/completions",               key(INFERENCE),            OpenAi,      Infer(Completions)),
    // Uploads (I).
    row(POST,   "/v1/uploads",                   key_or_session(INFERENCE), OpenAi,      UploadCreate),
    row(DELETE, "/v1/uploads/{id}",              key_or_session(INFERENCE), OpenAi,      UploadDelete),
    // Data protection (J).
    row(GET,    "/api/data-protection",          key_or_session(READ),      OpenAi,      DataProtectionShow),
    row(PATCH,  "/api/data-protection",          Session,                   OpenAi,      DataProtectionChange),
    // Documentation (K).
    row(GET,    "/v1/docs",                      ANY_KEY,                   OpenAi,      DocsSearch),
    row(GET,    "/docs/guide/{page}",            Public,                    OpenAi,      DocsPage),
    // Catalog and pricing (L).
    row(GET,    "/public/models",                Public,                    Detail,      PublicModels),
    row(GET,    "/public/models/{*model_id}",    Public,                    Detail,      PublicModel),
    row(GET,    "/catalog/models",               Public,                    Detail,      CatalogModels),
    row(GET,    "/v1/models",                    key(INFERENCE),            OpenAi,      ListModels),
    row(GET,    "/v1/models/supply",             key(INFERENCE),            OpenAi,      ModelSupply),
    row(GET,    "/v1/models/compare",            key_or_session(USAGE),     OpenAi,      CompareModels),
    row(GET,    "/v1/pricing/changes",           key_or_session(USAGE),     OpenAi,      PricingChanges),
    // Digest channels (M).
    row(GET,    "/v1/channels",                  key_or_session(READ),      OpenAi,      ChannelsList),
    row_checked(GET,    "/v1/channels/{channel_id}",             key_or_session(READ),  OpenAi, ChannelShow, ChannelId),
    row_checked(PATCH,  "/v1/channels/{channel_id}",             key_or_session(WRITE), OpenAi, ChannelUpdate, ChannelId),
    row_checked(POST,   "/v1/channels/{channel_id}/send-report", key_or_session(WRITE), OpenAi, ChannelSendReport, ChannelId),
    row(GET,    "/api/channels/email",           Session,                   OpenAi,      EmailChannelStatus),
    row(POST,   "/api/channels/email",           Session,                   OpenAi,      EmailChannelConnect),
    row_checked(DELETE, "/api/channels/email/{id}",              Session,               OpenAi, EmailChannelDisconnect, ChannelId),
    row_checked(GET,    "/api/channels/{platform}",              Session,               OpenAi, PlatformChannelStatus, Platform),
    // Image generation (N).
    row(POST,   "/v1/images/generations",        key(INFERENCE),            OpenAi,      ImagesGenerations),
    // A request's final status, owner only (N-10, GP-62).
    row(GET,    "/v1/requests/{id}",             key(INFERENCE),            OpenAi,      RequestStatus),
    // Videos (O).
    row(POST,   "/v1/videos",                    key(INFERENCE),            Video,       VideoCreate),
    row(GET,    "/v1/videos/{video_id}",         key(INFERENCE),            Video,       VideoShow),
    row(GET,    "/v1/videos/{video_id}/content", key(INFERENCE),            Video,       VideoContent),
    // The API description.
    row(GET,    "/openapi.json",                 Public,                    OpenAi,      OpenApi),
    // Browser sign-in (SessionAuth; sign_in.rs).
    row(POST,   "/api/auth/magic-link",          Public,                    OpenAi,      SignInRequestLink),
    row(GET,    "/api/auth/sign-in",             Public,                    OpenAi,      SignInPage),
    row(POST,   "/api/auth/sign-in",             PublicSameOrigin,          OpenAi,      SignInRedeem),
    row(GET,    "/api/auth/session",             Session,                   OpenAi,      SessionShow),
    row(POST,   "/api/auth/sign-out",            Session,                   OpenAi,      SignOut),
    // Health.
    row(GET,    "/healthz",                      Public,                    OpenAi,      Healthz),
    row(GET,    "/readyz",                       Public,                    OpenAi,      Readyz),
    row(GET,    "/metrics",                      Admin,                     OpenAi,      Metrics),
    // The operator API (docs/admin-api.md).
    row(POST,   "/admin/accounts",               Admin,                     OpenAi,      AdminCreateAccount),
    row(GET,    "/admin/accounts/{id}",          Admin,                     OpenAi,      AdminGetAccount),
    row(POST,   "/admin/accounts/{id}/credits",  Admin,                     OpenAi,      AdminGrantCredits),
    row(POST,   "/admin/api-keys",               Admin,                     OpenAi,      AdminCreateApiKey),
    row(GET,    "/admin/api-keys/{id}",          Admin,                     OpenAi,      AdminGetApiKey),
    row(GET,    "/admin/accounts/{id}/api-keys", Admin,                     OpenAi,      AdminListApiKeys),
    row(PATCH,  "/admin/api-keys/{id}",          Admin,                     OpenAi,      AdminUpdateApiKey),
    row(DELETE, "/admin/api-keys/{id}",          Admin,                     OpenAi,      AdminDeleteApiKey),
    row(GET,    "/admin/requests/{id}",          Admin,                     OpenAi,      AdminGetRequest),
    row(GET,    "/admin/catalog",                Admin,                     OpenAi,      AdminGetCatalog),
    row(POST,   "/admin/catalog/reload",         Admin,                     OpenAi,      AdminReloadCatalog),
    row(POST,   "/admin/accounts/{id}/sessions", Admin,                     OpenAi,      AdminCreateSession),
    row(DELETE, "/admin/sessions/{id}",          Admin,                     OpenAi,      AdminDeleteSession),
    row(POST,   "/admin/accounts/{id}/experiments",        Admin,       OpenAi,      AdminCreateExperiment),
    row(GET,    "/admin/accounts/{id}/experiments",        Admin,       OpenAi,      AdminListExperiments),
    row(GET,    "/admin/accounts/{id}/experiments/{slug}", Admin,       OpenAi,      AdminGetExperiment),
    row(PATCH,  "/admin/accounts/{id}/experiments/{slug}", Admin,       OpenAi,      AdminUpdateExperiment),
    row(POST,   "/admin/jobs/{name}/run",        Admin,                     OpenAi,      AdminRunJob),
    row(POST,   "/admin/accounts/{id}/channels", Admin,                     OpenAi,      AdminProvisionChannel),
    row(DELETE, "/admin/channels/{id}",          Admin,                     OpenAi,      AdminDeprovisionChannel),
    row(POST,   "/admin/requests/backdate",      Admin,                     OpenAi,      AdminBackdateRequests),
    row(GET,    "/admin/videos/{id}",            Admin,                     OpenAi,      AdminGetVideo),
    row(POST,   "/admin/videos/{id}/reconcile",  Admin,                     OpenAi,      AdminReconcileVideo),
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

    /// Handlers that need an API key's account sit only behind a key rule.
    #[test]
    fn inference_handlers_need_an_inference_key() {
        for route in &ROUTES {
            if matches!(
                route.handler,
                Handler::Inference(_)
                    | Handler::ImagesGenerations
                    | Handler::RequestStatus
                    | Handler::VideoCreate
                    | Handler::VideoShow
                    | Handler::VideoContent
            ) {
                assert_eq!(route.auth, key(INFERENCE), "{}", route.path);
            }
            if route.path.starts_with("/admin/") || route.path == "/metrics" {
                assert_eq!(route.auth, Admin, "{}", route.path);
            }
        }
    }
}
