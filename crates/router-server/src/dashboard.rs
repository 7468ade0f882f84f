//! The account dashboard's HTTP side: its pages and assets (`/`,
//! `/account/...`, `/dashboard/assets/...`) and its session JSON
//! (`/api/keys`, `/api/usage`, `/api/requests`). Each JSON route's row
//! makes its one call of `router-dashboard` (`of`) and answers with
//! `reply::ok` or `removed`; a new key's answer is [`create_key`]'s. The
//! pages, the views and their rules are the wing's.

use crate::app::App;
use crate::call::Call;
use crate::reply::{self, Body, Reply};
use crate::session::Session;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use router_dashboard::{Dashboard, pages};

/// The dashboard wing over this router's operator.
pub fn of(app: &App) -> Dashboard<'_> {
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

/// `POST /api/keys`: the new key's secret is in the answer, so no cache
/// keeps it (`no-store`).
pub async fn create_key(call: Call<'_>, session: &Session) -> Result<Reply, ApiError> {
    let new = crate::body::input(call.request).await?;
    let issued = of(&call.app)
        .create_key(&call.app.gateway.catalog(), session.account_id, new)
        .await?;
    Ok(reply::no_store(reply::json_value(
        StatusCode::CREATED,
        &issued,
        call.id,
    )))
}
