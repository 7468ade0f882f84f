//! Dispatch by the route table (`routes.rs`): find the path (404 if none,
//! GP-68), the method's row (405 with `Allow`), run the guard in the
//! declared order, then the row's handler.
//!
//! The guard's order: credential (401) → scope, session rule or origin
//! (403) → the key's policies (403, once they land in `auth`) → the path
//! parameter (404) → the row's handler, which checks the body (400).

use crate::admin_listener::Listener;
use crate::app::App;
use crate::body::Incoming;
use crate::call::{Call, Params};
use crate::caller::{Caller, misconfigured};
use crate::reply::{self, Body, ReplyCode};
use crate::routes::{AuthRule, Handler, ParamRule, ROUTES, Route};
use crate::session;
use crate::{admin, auth, channels};
use http::Response;
use http::header::HeaderValue;
use router_canonical::{ApiError, ErrorCode};
use router_core::ownership::{self, Resource};
use router_core::product_codes;
use router_telemetry::request_log::RequestLog;
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
        AuthRule::Admin | AuthRule::Metrics => {
            // An address that failed too often is refused before its token
            // is compared (`router_http::admin_throttle`).
            let client = extensions
                .get::<router_http::client_addr::ClientAddr>()
                .map(|c| c.logged());
            let now = std::time::Instant::now();
            if let Some(wait) = client.and_then(|c| app.admin_failures.blocked(c, now)) {
                return Err(ApiError::new(
                    product_codes::RATE_LIMITED,
                    "Too many failed operator authentications from this address; try again later.",
                )
                .with_retry_after(Some(wait)));
            }
            let authorized = if rule == AuthRule::Admin {
                admin::authorize(app, headers)
            } else {
                admin::authorize_scrape(app, headers, Listener::of(extensions))
            };
            if authorized.is_err()
                && let Some(client) = client
            {
                app.admin_failures.failed(client, now);
            }
            authorized.map(|()| Caller::Operator)
        }
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
                    product_codes::SESSION_REQUIRED,
                    "This endpoint accepts only a signed-in browser session, not an API key.",
                ));
            }
            match session::find(app, headers).await? {
                Some(session) => {
                    session::check_origin(&app.public_base, method, headers)?;
                    Ok(Caller::Session(session))
                }
                None => Err(ApiError::new(
                    product_codes::AUTHENTICATION_REQUIRED,
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

/// The error envelope of the route at `path` (the OpenAI one when no
/// route is there).
pub fn envelope_of(path: &str) -> reply::Envelope {
    table()
        .at(path)
        .map_or(reply::Envelope::OpenAi, |m| m.value.routes[0].envelope)
}

pub async fn dispatch(app: Arc<App>, request: http::Request<Incoming>) -> Response<Body> {
    let request_id = Uuid::now_v7();
    let log = RequestLog::new(request_id, request.method().clone());
    if let Some(client) = request
        .extensions()
        .get::<router_http::client_addr::ClientAddr>()
    {
        log.client(client.logged());
    }
    let id_text = crate::correlation::begin(request.headers(), &log);
    let mut response = router_telemetry::panic::for_request(
        request_id,
        route(app, request, request_id, id_text, &log),
    )
    .await;
    let code = response.extensions().get::<ReplyCode>().map(|c| c.0);
    log.head(response.status().as_u16(), code);
    // The line is written when the last copy of `log` is dropped: the
    // connection's, which counts the body's bytes (`router_http::connection::Tracked`),
    // or a stream's relay's.
    response.extensions_mut().insert(log);
    response
}

/// Route, guard and handle one request.
async fn route(
    app: Arc<App>,
    request: http::Request<Incoming>,
    request_id: Uuid,
    id_text: String,
    log: &RequestLog,
) -> Response<Body> {
    let path = request.uri().path();
    let Ok(matched) = table().at(path) else {
        let error = ApiError::new(ErrorCode::NotFound, format!("No endpoint at `{path}`."));
        return reply::error(reply::Envelope::OpenAi, &error, &id_text);
    };
    let entry = matched.value;
    // With `ROUTER_ADMIN_LISTEN`, each listener has only its side's routes.
    let listener = Listener::of(request.extensions());
    if !listener.serves(entry.routes[0].path) {
        let error = ApiError::new(ErrorCode::NotFound, format!("No endpoint at `{path}`."));
        return reply::error(reply::Envelope::OpenAi, &error, &id_text);
    }
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
    let call = Call {
        app,
        request,
        params: Params {
            first: param,
            second,
        },
        request_id,
        id: &id_text,
        log,
    };
    let result = match route.handler {
        Handler::Key(handle) => match caller {
            Caller::Key(key) => handle(call, key).await,
            Caller::Anonymous | Caller::Operator | Caller::Session(_) => Err(misconfigured()),
        },
        Handler::Any(handle) => handle(call, caller).await,
        Handler::Document => Ok(reply::json(
            http::StatusCode::OK,
            bytes::Bytes::from_static(crate::openapi::json()),
            &id_text,
        )),
    };
    result.unwrap_or_else(|e| reply::error(route.envelope, &e, &id_text))
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

    /// `ROUTER_ADMIN_LISTEN`: each route is on one listener, the health
    /// checks on both, the operator's routes on the admin one.
    #[test]
    fn each_route_is_on_exactly_one_listener_but_health_on_both() {
        for route in &ROUTES {
            assert!(Listener::Both.serves(route.path));
            let public = Listener::Public.serves(route.path);
            let admin = Listener::Admin.serves(route.path);
            if matches!(route.path, "/healthz" | "/readyz") {
                assert!(public && admin, "{}", route.path);
            } else {
                assert!(public != admin, "{}", route.path);
            }
            let operator = matches!(route.auth, AuthRule::Admin | AuthRule::Metrics);
            assert_eq!(admin && !public, operator, "{}", route.path);
        }
    }

    #[test]
    fn allow_lists_the_methods_of_a_path() {
        let m = table().at("/v1/channels/x").unwrap();
        assert_eq!(m.value.allow, "GET, PATCH");
    }
}
