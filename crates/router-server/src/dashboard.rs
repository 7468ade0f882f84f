//! The account dashboard's HTTP side: its pages and assets (`/`,
//! `/account/...`, `/dashboard/assets/...`) and its session JSON
//! (`/api/keys`, `/api/usage`, `/api/requests`). Each handler reads the
//! request, makes one call of `router-dashboard` and renders the answer;
//! the pages, the views and their rules are the wing's.

use crate::app::App;
use crate::body::{ADMIN_BODY_LIMIT, Incoming, json_body};
use crate::reply::{self, Body};
use crate::session::Session;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use router_dashboard::{Dashboard, pages};

fn dashboard(app: &App) -> Dashboard<'_> {
    Dashboard::new(&app.operator)
}

fn no_such_page() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "No such page.")
}

/// A page or asset: its type, no caching of pages (they carry no secret but
/// change with each release), a day for assets.
fn document(
    content_type: &'static str,
    body: impl Into<bytes::Bytes>,
    cache: &'static str,
    request_id: &str,
) -> Response<Body> {
    let mut response = Response::new(reply::full(body));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static(cache));
    // The page runs only its own embedded code and is never framed.
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
        ),
    );
    headers.insert(
        "x-content-type-options",
        HeaderValue::from_static("nosniff"),
    );
    reply::set_request_id(headers, request_id);
    response
}

/// `GET /` and `GET /account/{page}`: the page shell.
pub fn page(page: Option<&str>, request_id: &str) -> Result<Response<Body>, ApiError> {
    let shell = pages::shell(page).ok_or_else(no_such_page)?;
    Ok(document(
        "text/html; charset=utf-8",
        shell,
        "no-cache",
        request_id,
    ))
}

/// `GET /dashboard/assets/{name}`.
pub fn asset(name: Option<&str>, request_id: &str) -> Result<Response<Body>, ApiError> {
    let asset = name.and_then(pages::asset).ok_or_else(no_such_page)?;
    Ok(document(
        asset.content_type,
        asset.body,
        "public, max-age=300",
        request_id,
    ))
}

/// `GET /api/keys`.
pub async fn list_keys(
    app: &App,
    session: &Session,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let keys = dashboard(app)
        .keys(session.account_id, chrono::Utc::now())
        .await?;
    Ok(reply::json_value(StatusCode::OK, &keys, request_id))
}

/// `POST /api/keys`.
pub async fn create_key(
    app: &App,
    session: &Session,
    request: http::Request<Incoming>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let new = router_operator::from_json(json_body(request, ADMIN_BODY_LIMIT).await?)?;
    let issued = dashboard(app)
        .create_key(&app.gateway.catalog(), session.account_id, new)
        .await?;
    let mut response = reply::json_value(StatusCode::CREATED, &issued, request_id);
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `PATCH /api/keys/{id}`.
pub async fn update_key(
    app: &App,
    session: &Session,
    request: http::Request<Incoming>,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = router_dashboard::keys::parse_key_id(id)?;
    let patch = router_operator::from_json(json_body(request, ADMIN_BODY_LIMIT).await?)?;
    let key = dashboard(app)
        .update_key(&app.gateway.catalog(), session.account_id, id, patch)
        .await?;
    Ok(reply::json_value(StatusCode::OK, &key, request_id))
}

/// `DELETE /api/keys/{id}`.
pub async fn revoke_key(
    app: &App,
    session: &Session,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let id = router_dashboard::keys::parse_key_id(id)?;
    dashboard(app).revoke_key(session.account_id, id).await?;
    Ok(reply::no_content(request_id))
}

/// `GET /api/usage`.
pub async fn usage(
    app: &App,
    session: &Session,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let usage = dashboard(app)
        .usage(session.account_id, chrono::Utc::now())
        .await?;
    Ok(reply::json_value(StatusCode::OK, &usage, request_id))
}

/// `GET /api/requests`.
pub async fn requests(
    app: &App,
    session: &Session,
    query: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let filter = router_dashboard::usage::parse_filter(query)?;
    let list = dashboard(app).requests(session.account_id, &filter).await?;
    Ok(reply::json_value(StatusCode::OK, &list, request_id))
}

/// `GET /api/requests/{id}`.
pub async fn request(
    app: &App,
    session: &Session,
    id: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let detail = dashboard(app).request(session.account_id, id).await?;
    Ok(reply::json_value(StatusCode::OK, &detail, request_id))
}
