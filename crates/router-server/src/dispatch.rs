//! Dispatch by the route table (`routes.rs`): find the path (404 if none,
//! GP-68), the method's row (405 with `Allow`), run the guard in the
//! declared order, then the row's handler.
//!
//! The guard's order: credential (401) → scope, session rule or origin
//! (403) → the key's policies (403, once they land in `auth`) → the path
//! parameter (404) → the handler, which checks the body (400) or answers
//! 503 `not_available` for a feature that has not landed.

use crate::app::App;
use crate::body::Incoming;
use crate::caller::Caller;
use crate::messages;
use crate::ownership::{self, Resource};
use crate::reply::{self, Body};
use crate::request_log::{ReplyCode, RequestLog};
use crate::routes::{AuthRule, Handler, InferenceEndpoint, ParamRule, ROUTES, Route};
use crate::session::{self, Session};
use crate::surfaces::{CHAT, COMPLETIONS, MESSAGES, RESPONSES};
use crate::{
    admin, auth, catalog_api, channels, data_protection, health, images, inference, sign_in,
    uploads, videos,
};
use http::Response;
use http::header::HeaderValue;
use router_canonical::{ApiError, ErrorCode};
use router_core::store::ApiKeyRecord;
use std::sync::{Arc, OnceLock};
use uuid::Uuid;

/// The rows of one path and the `Allow` header of its 405.
struct PathRoutes {
    routes: Vec<&'static Route>,
    allow: HeaderValue,
}

fn table() -> &'static matchit::Router<PathRoutes> {
    static TABLE: OnceLock<matchit::Router<PathRoutes>> = OnceLock::new();
    TABLE.get_or_init(|| {
        let mut paths: Vec<(&'static str, Vec<&'static Route>)> = Vec::new();
        for route in &ROUTES {
            match paths.iter_mut().find(|(path, _)| *path == route.path) {
                Some((_, routes)) => routes.push(route),
                None => paths.push((route.path, vec![route])),
            }
        }
        let mut router = matchit::Router::new();
        for (path, routes) in paths {
            let allow = routes
                .iter()
                .map(|r| r.method.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            let allow = HeaderValue::from_str(&allow).unwrap_or(HeaderValue::from_static(""));
            // The table is static: an insert error is a programming error caught by tests.
            if let Err(e) = router.insert(path, PathRoutes { routes, allow }) {
                tracing::error!(path, error = %e, "invalid route table entry");
            }
        }
        router
    })
}

impl Caller {
    /// The key of a route whose rule demands one; `routes.rs` tests that
    /// every handler calling this sits behind a key rule.
    fn key(self) -> Result<ApiKeyRecord, ApiError> {
        match self {
            Caller::Key(key) => Ok(key),
            Caller::Anonymous | Caller::Operator | Caller::Session(_) => Err(misconfigured()),
        }
    }

    /// The key or session of an `ApiKeyOrSession` route.
    fn viewer(self) -> Result<router_catalog::Viewer, ApiError> {
        match self {
            Caller::Key(key) => Ok(router_catalog::Viewer::Key(key)),
            Caller::Session(session) => Ok(router_catalog::Viewer::Session(session.id)),
            Caller::Anonymous | Caller::Operator => Err(misconfigured()),
        }
    }

    /// The account of a key or a session.
    fn account_id(&self) -> Result<Uuid, ApiError> {
        match self {
            Caller::Key(key) => Ok(key.account_id),
            Caller::Session(session) => Ok(session.account_id),
            Caller::Anonymous | Caller::Operator => Err(misconfigured()),
        }
    }

    /// The session of a `Session` route.
    fn session(self) -> Result<Session, ApiError> {
        match self {
            Caller::Session(session) => Ok(session),
            Caller::Anonymous | Caller::Operator | Caller::Key(_) => Err(misconfigured()),
        }
    }
}

fn misconfigured() -> ApiError {
    ApiError::new(ErrorCode::InternalError, "This endpoint is misconfigured.")
}

/// An API key or its `Authorization` header is present, well-formed or not.
fn presents_key(headers: &http::HeaderMap) -> bool {
    headers.contains_key(http::header::AUTHORIZATION) || headers.contains_key("x-api-key")
}

/// Apply the row's auth rule: 401 without a credential the rule accepts,
/// 403 for a missing scope, the wrong kind of credential or a session's
/// mutation from another origin.
pub async fn guard(
    app: &App,
    rule: AuthRule,
    method: &http::Method,
    headers: &http::HeaderMap,
    extensions: &http::Extensions,
) -> Result<Caller, ApiError> {
    match rule {
        AuthRule::Public => Ok(Caller::Anonymous),
        AuthRule::PublicSameOrigin => {
            session::check_origin(&app.public_base, method, headers).map(|()| Caller::Anonymous)
        }
        AuthRule::Admin => admin::authorize(app, headers).map(|()| Caller::Operator),
        AuthRule::ApiKey { scope } => auth::authenticate(app, headers, extensions, scope)
            .await
            .map(Caller::Key),
        AuthRule::ApiKeyOrSession { scope } => {
            // A key sent is the credential; otherwise a session may be.
            if !presents_key(headers)
                && let Some(session) = session::find(app, headers).await?
            {
                session::check_origin(&app.public_base, method, headers)?;
                return Ok(Caller::Session(session));
            }
            auth::authenticate(app, headers, extensions, Some(scope))
                .await
                .map(Caller::Key)
        }
        AuthRule::Session => {
            if presents_key(headers) {
                return Err(ApiError::new(
                    ErrorCode::SessionRequired,
                    "This endpoint accepts only a signed-in browser session, not an API key.",
                ));
            }
            match session::find(app, headers).await? {
                Some(session) => {
                    session::check_origin(&app.public_base, method, headers)?;
                    Ok(Caller::Session(session))
                }
                None => Err(ApiError::new(
                    ErrorCode::AuthenticationRequired,
                    "Sign in: this endpoint needs a browser session.",
                )),
            }
        }
    }
}

/// The row's path-parameter check (404 for a malformed ID).
fn check_param(rule: ParamRule, param: Option<&str>) -> Result<(), ApiError> {
    match rule {
        ParamRule::None => Ok(()),
        ParamRule::ChannelId => {
            ownership::parse_id(Resource::Channel, param.unwrap_or_default()).map(|_| ())
        }
        ParamRule::Platform => channels::external_platform(param).map(|_| ()),
    }
}

pub async fn dispatch(app: Arc<App>, request: http::Request<Incoming>) -> Response<Body> {
    let request_id = Uuid::now_v7();
    let log = RequestLog::new(request_id, request.method().clone());
    let response = route(app, request, request_id, &log).await;
    let code = response.extensions().get::<ReplyCode>().map(|c| c.0);
    log.head(response.status().as_u16(), code);
    // The line is written when `log` is dropped: here, or when a stream's
    // relay, which holds a copy, ends.
    response
}

/// Route, guard and handle one request.
async fn route(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
    log: &RequestLog,
) -> Response<Body> {
    let id_text = request_id.to_string();
    let path = request.uri().path();
    let Ok(matched) = table().at(path) else {
        let error = ApiError::new(ErrorCode::NotFound, format!("No endpoint at `{path}`."));
        return reply::error(reply::Envelope::OpenAi, &error, &id_text);
    };
    let entry = matched.value;
    let Some(route) = entry
        .routes
        .iter()
        .copied()
        .find(|r| r.method == request.method())
    else {
        let error = ApiError::new(
            ErrorCode::MethodNotAllowed,
            format!("`{}` is not allowed on `{path}`.", request.method()),
        );
        let mut response = reply::error(entry.routes[0].envelope, &error, &id_text);
        response
            .headers_mut()
            .insert(http::header::ALLOW, entry.allow.clone());
        return response;
    };
    log.route(route.path);
    // A pattern's first parameter is the one the guard checks; only the
    // experiment rows have a second (`{slug}` after the account's `{id}`).
    let mut params = matched.params.iter().map(|(_, v)| v.to_owned());
    let param = params.next();
    let second = params.next();
    let caller = match guard(
        &app,
        route.auth,
        request.method(),
        request.headers(),
        request.extensions(),
    )
    .await
    {
        Ok(caller) => caller,
        Err(e) => return reply::error(route.envelope, &e, &id_text),
    };
    match &caller {
        Caller::Key(key) => log.caller(key.account_id, Some(key.key_id)),
        Caller::Session(session) => log.caller(session.account_id, None),
        Caller::Anonymous | Caller::Operator => {}
    }
    if let Err(e) = check_param(route.param, param.as_deref()) {
        return reply::error(route.envelope, &e, &id_text);
    }
    let result = match route.handler {
        Handler::Inference(endpoint) => {
            return match caller.key() {
                Ok(key) => run_inference(endpoint, app, request, key, request_id, log).await,
                Err(e) => reply::error(route.envelope, &e, &id_text),
            };
        }
        Handler::ImagesGenerations => {
            return match caller.key() {
                Ok(key) => images::handle(app, request, key, request_id, log).await,
                Err(e) => reply::error(route.envelope, &e, &id_text),
            };
        }
        Handler::VideoCreate => {
            return match caller.key() {
                Ok(key) => videos::create(app, request, key, request_id, log).await,
                Err(e) => reply::error(route.envelope, &e, &id_text),
            };
        }
        Handler::VideoShow => match caller.key() {
            Ok(key) => videos::show(&app, &key, param.as_deref(), &id_text).await,
            Err(e) => Err(e),
        },
        Handler::VideoContent => match caller.key() {
            Ok(key) => {
                let range = request
                    .headers()
                    .get(http::header::RANGE)
                    .map(|v| v.to_str().unwrap_or("\u{0}"));
                videos::content(&app, &key, param.as_deref(), range, &id_text).await
            }
            Err(e) => Err(e),
        },
        Handler::AdminGetVideo => videos::admin_show(&app, param.as_deref(), &id_text).await,
        Handler::AdminReconcileVideo => {
            videos::admin_reconcile(&app, request, param.as_deref(), &id_text).await
        }
        Handler::RequestStatus => match caller.key() {
            Ok(key) => images::request_status(&app, &key, param.as_deref(), &id_text).await,
            Err(e) => Err(e),
        },
        Handler::Healthz => Ok(health::healthz(&id_text)),
        Handler::Readyz => Ok(health::readyz(&app, &id_text).await),
        Handler::Metrics => metrics_reply(&app, &id_text),
        Handler::AdminCreateAccount => admin::create_account(&app, request, &id_text).await,
        Handler::AdminGetAccount => admin::get_account(&app, param.as_deref(), &id_text).await,
        Handler::AdminGrantCredits => {
            admin::grant_credits(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminCreateApiKey => admin::create_api_key(&app, request, &id_text).await,
        Handler::AdminGetApiKey => admin::get_api_key(&app, param.as_deref(), &id_text).await,
        Handler::AdminListApiKeys => admin::list_api_keys(&app, param.as_deref(), &id_text).await,
        Handler::AdminUpdateApiKey => {
            admin::update_api_key(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminDeleteApiKey => admin::delete_api_key(&app, param.as_deref(), &id_text).await,
        Handler::AdminGetRequest => admin::get_request(&app, param.as_deref(), &id_text).await,
        Handler::AdminGetCatalog => Ok(catalog_api::describe(&app, &id_text)),
        Handler::AdminReloadCatalog => catalog_api::reload(&app, &id_text).await,
        Handler::ListModels => caller
            .key()
            .map(|key| catalog_api::list_models(&app.catalog.current(), &key, &id_text)),
        Handler::ModelSupply => caller.key().and_then(|key| {
            catalog_api::supply(&app.catalog.current(), &key, request.uri(), &id_text)
        }),
        Handler::CompareModels => caller.viewer().and_then(|viewer| {
            catalog_api::compare(&app.catalog.current(), &viewer, request.uri(), &id_text)
        }),
        Handler::PricingChanges => match caller.viewer() {
            Ok(viewer) => {
                catalog_api::pricing_changes(&app, &viewer, request.uri(), &id_text).await
            }
            Err(e) => Err(e),
        },
        Handler::PublicModels => Ok(catalog_api::public_models(
            &app.catalog.current(),
            request.uri(),
            request.headers(),
            &id_text,
        )),
        Handler::PublicModel => catalog_api::public_model(
            &app.catalog.current(),
            param.as_deref(),
            request.uri(),
            request.headers(),
            &id_text,
        ),
        Handler::CatalogModels => Ok(catalog_api::catalog_models(
            &app.catalog.current(),
            request.headers(),
            &id_text,
        )),
        Handler::DocsSearch => app.docs.search(request.uri().query(), &id_text),
        Handler::DocsPage => app.docs.page(param.as_deref(), &id_text),
        Handler::OpenApi => Ok(reply::json(
            http::StatusCode::OK,
            bytes::Bytes::from_static(crate::openapi::json()),
            &id_text,
        )),
        Handler::AdminCreateSession => {
            admin::create_session(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminRunJob => {
            channels::jobs::run_job(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminBackdateRequests => {
            channels::jobs::backdate_requests(&app, request, &id_text).await
        }
        Handler::AdminCreateExperiment => {
            admin::create_experiment(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminListExperiments => {
            admin::list_experiments(&app, param.as_deref(), &id_text).await
        }
        Handler::AdminGetExperiment => {
            admin::get_experiment(&app, param.as_deref(), second.as_deref(), &id_text).await
        }
        Handler::AdminUpdateExperiment => {
            admin::update_experiment(&app, request, param.as_deref(), second.as_deref(), &id_text)
                .await
        }
        Handler::AdminDeleteSession => {
            admin::delete_session(&app, param.as_deref(), &id_text).await
        }
        Handler::SignInRequestLink => sign_in::request_link(app.clone(), request, &id_text).await,
        Handler::SignInPage => Ok(sign_in::sign_in_page(&app, &request, &id_text)),
        Handler::SignInRedeem => sign_in::redeem(&app, request, &id_text).await,
        Handler::SessionShow => caller.session().map(|s| sign_in::show(&s, &id_text)),
        Handler::SignOut => match caller.session() {
            Ok(s) => sign_in::sign_out(&app, &s, &id_text).await,
            Err(e) => Err(e),
        },
        Handler::ChannelsList => channels::list(&app, &caller, &id_text).await,
        Handler::ChannelShow => channels::show(&app, &caller, param.as_deref(), &id_text).await,
        Handler::ChannelUpdate => {
            channels::update(&app, &caller, request, param.as_deref(), &id_text).await
        }
        Handler::ChannelSendReport => {
            channels::send_report(&app, &caller, param.as_deref(), &id_text).await
        }
        Handler::EmailChannelStatus => channels::email_status(&app, &caller, &id_text).await,
        Handler::EmailChannelConnect => {
            channels::email_connect(&app, &caller, request, &id_text).await
        }
        Handler::EmailChannelDisconnect => {
            channels::email_disconnect(&app, &caller, param.as_deref(), &id_text).await
        }
        Handler::PlatformChannelStatus => {
            channels::platform_status(&app, &caller, param.as_deref(), &id_text).await
        }
        Handler::AdminProvisionChannel => {
            admin::provision_channel(&app, request, param.as_deref(), &id_text).await
        }
        Handler::AdminDeprovisionChannel => {
            admin::deprovision_channel(&app, param.as_deref(), &id_text).await
        }
        Handler::UploadCreate => match caller.account_id() {
            Ok(account_id) => uploads::create(&app, account_id, request, &id_text).await,
            Err(e) => Err(e),
        },
        Handler::UploadDelete => match caller.account_id() {
            Ok(account_id) => uploads::delete(&app, account_id, param.as_deref(), &id_text).await,
            Err(e) => Err(e),
        },
        Handler::DataProtectionShow => match caller.account_id() {
            Ok(account_id) => data_protection::show(&app, account_id, &id_text).await,
            Err(e) => Err(e),
        },
        Handler::DataProtectionChange => match caller.session() {
            Ok(s) => data_protection::change(&app, &s, request, &id_text).await,
            Err(e) => Err(e),
        },
        Handler::NotAvailable => Err(not_available(route)),
    };
    result.unwrap_or_else(|e| reply::error(route.envelope, &e, &id_text))
}

async fn run_inference(
    endpoint: InferenceEndpoint,
    app: Arc<App>,
    request: http::Request<Incoming>,
    key: ApiKeyRecord,
    request_id: Uuid,
    log: &RequestLog,
) -> Response<Body> {
    match endpoint {
        InferenceEndpoint::ChatCompletions => {
            inference::handle(&CHAT, app, request, key, request_id, log).await
        }
        InferenceEndpoint::Responses => {
            inference::handle(&RESPONSES, app, request, key, request_id, log).await
        }
        InferenceEndpoint::Messages => {
            inference::handle(&MESSAGES, app, request, key, request_id, log).await
        }
        InferenceEndpoint::CountTokens => {
            messages::handle_count_tokens(app, request, key, request_id).await
        }
        InferenceEndpoint::Completions => {
            inference::handle(&COMPLETIONS, app, request, key, request_id, log).await
        }
    }
}

/// The Prometheus text exposition.
fn metrics_reply(app: &App, request_id: &str) -> Result<Response<Body>, ApiError> {
    let text = crate::metrics::render(app).ok_or_else(|| {
        ApiError::new(
            ErrorCode::NotAvailable,
            "Metrics are not recorded in this process.",
        )
    })?;
    let mut response = Response::new(reply::full(text));
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    reply::set_request_id(response.headers_mut(), request_id);
    Ok(response)
}

/// The answer of a route whose feature has not landed.
fn not_available(route: &Route) -> ApiError {
    ApiError::new(
        ErrorCode::NotAvailable,
        format!(
            "`{} {}` is not available yet on this router.",
            route.method, route.path
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_row_is_routed_and_matches() {
        for route in &ROUTES {
            let path = route
                .path
                .replace("{*model_id}", "vendor/model-x")
                .replace("{id}", "p")
                .replace("{channel_id}", "p")
                .replace("{video_id}", "p")
                .replace("{platform}", "slack")
                .replace("{page}", "errors");
            let matched = table().at(&path).expect(route.path);
            assert!(
                matched.value.routes.iter().any(|r| std::ptr::eq(*r, route)),
                "{path} does not reach its row"
            );
        }
        let m = table().at("/admin/accounts/abc/credits").unwrap();
        assert_eq!(m.params.iter().next().map(|(_, v)| v), Some("abc"));
        assert_eq!(
            table().at("/api/channels/email").unwrap().value.routes[0].param,
            ParamRule::None
        );
        assert!(table().at("/v1/files").is_err());
        assert!(table().at("/public/models/").is_err());
    }

    #[test]
    fn allow_lists_the_methods_of_a_path() {
        let m = table().at("/v1/channels/x").unwrap();
        assert_eq!(m.value.allow, "GET, PATCH");
    }
}
