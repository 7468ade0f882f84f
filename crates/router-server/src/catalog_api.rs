//! The catalog endpoints (L): `/v1/models`, `/v1/models/supply`,
//! `/v1/models/compare`, `/v1/pricing/changes`, the public
//! `/public/models`, `/public/models/{model_id}` and `/catalog/models`, and
//! the operator's `/admin/catalog` and `/admin/catalog/reload`: HTTP in and
//! out of the catalog wing (`router_catalog`), which holds the views, the
//! releases and the rules.
//!
//! Each reads one release's views once, so a reply never mixes two
//! catalogs.

use crate::app::App;
use crate::reply::{self, Reply};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderValue, IF_NONE_MATCH};
use http::{Response, StatusCode};
use router_canonical::ApiError;
use router_catalog::models::{self, CompareQuery, ListQuery, SupplyQuery};
use router_catalog::{Cached, CatalogError, CatalogViews, ChangesQuery, Params, Viewer};
use router_core::store::ApiKeyRecord;
use router_http::query::{BadParam, Query, percent_decode};

/// L-31, L-37: pollers revalidate every time and get 304 when unchanged.
const PUBLIC_CACHE: &str = "public, max-age=0, must-revalidate";
/// L-19, L-30, CF-26.
const NO_STORE: &str = "no-store";

fn unreadable(BadParam(param): BadParam) -> CatalogError {
    CatalogError::UnreadableParam { param }
}

/// A query string as the catalog wing reads its parameters.
struct QueryParams(Query);

impl Params for QueryParams {
    fn one(&self, name: &str) -> Result<Option<&str>, CatalogError> {
        self.0.one(name).map_err(unreadable)
    }
}

/// The request's query string, decoded.
fn query(uri: &http::Uri) -> Result<QueryParams, CatalogError> {
    Query::parse(uri).map(QueryParams).map_err(unreadable)
}

fn json_reply(body: impl Into<bytes::Bytes>, request_id: &str) -> Reply {
    let mut response = Response::new(reply::full(body.into()));
    response
        .headers_mut()
        .insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    reply::set_request_id(response.headers_mut(), request_id);
    response
}

fn no_store(mut response: Reply) -> Reply {
    response
        .headers_mut()
        .insert(CACHE_CONTROL, HeaderValue::from_static(NO_STORE));
    response
}

/// A public body with its validators; 304 when the client has it (L-31).
fn public_reply(cached: &Cached, headers: &http::HeaderMap, request_id: &str) -> Reply {
    let fresh = headers
        .get_all(IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|tag| {
            let tag = tag.trim();
            tag == "*" || tag.trim_start_matches("W/") == cached.etag
        });
    let mut response = if fresh {
        let mut r = Response::new(reply::full(bytes::Bytes::new()));
        *r.status_mut() = StatusCode::NOT_MODIFIED;
        reply::set_request_id(r.headers_mut(), request_id);
        r
    } else {
        json_reply(cached.body.clone(), request_id)
    };
    let h = response.headers_mut();
    h.insert(CACHE_CONTROL, HeaderValue::from_static(PUBLIC_CACHE));
    if let Ok(etag) = HeaderValue::from_str(&cached.etag) {
        h.insert(ETAG, etag);
    }
    response
}

/// The public views' `zdr` filter; a query that cannot be read leaves it off.
fn public_zdr(uri: &http::Uri) -> bool {
    query(uri).is_ok_and(|q| models::public_zdr(&q))
}

/// `GET /public/models` (L-31, L-32).
pub fn public_models(
    views: &CatalogViews,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    request_id: &str,
) -> Reply {
    public_reply(views.public_list(public_zdr(uri)), headers, request_id)
}

/// `GET /public/models/{model_id}`: the percent-decoded rest of the path,
/// verbatim (L-34, L-35, GP-58).
pub fn public_model(
    views: &CatalogViews,
    raw_id: Option<&str>,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let id = raw_id
        .and_then(|raw| percent_decode(raw, false))
        .ok_or(CatalogError::PublicModelNotFound)?;
    let cached = models::public_model(views, &id, public_zdr(uri))?;
    Ok(public_reply(cached, headers, request_id))
}

/// `GET /catalog/models` (L-38, L-39).
pub fn catalog_models(views: &CatalogViews, headers: &http::HeaderMap, request_id: &str) -> Reply {
    public_reply(views.catalog_models(), headers, request_id)
}

/// `GET /v1/models` (L-01..L-04): the key's models only, in one page
/// unless Anthropic's `limit`, `after_id` or `before_id` ask for less.
///
/// An Anthropic client (a request with `anthropic-version`) gets each
/// model's `capabilities` in Anthropic's shape; every other client the
/// router's flags (GP-18).
pub fn list_models(
    views: &CatalogViews,
    key: &ApiKeyRecord,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = ListQuery::read(&query(uri)?)?;
    let body = if headers.contains_key("anthropic-version") {
        views.anthropic_listing_page(&key.policy, &query)
    } else {
        views.listing_page(&key.policy, &query)
    };
    Ok(json_reply(body, request_id))
}

/// `GET /v1/models/supply` (L-05..L-08, GP-30).
pub fn supply(
    views: &CatalogViews,
    key: &ApiKeyRecord,
    uri: &http::Uri,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = SupplyQuery::read(&query(uri)?)?;
    let body = models::supply(views, &key.policy, &query)?;
    Ok(json_reply(
        serde_json::to_vec(&body).unwrap_or_default(),
        request_id,
    ))
}

/// `GET /v1/models/compare` (L-09..L-19, GP-29, CF-28): not cached.
pub fn compare(
    views: &CatalogViews,
    viewer: &Viewer,
    uri: &http::Uri,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = CompareQuery::read(&query(uri)?)?;
    let body = models::compare(views, viewer, &query)?;
    Ok(no_store(json_reply(
        serde_json::to_vec(&body).unwrap_or_default(),
        request_id,
    )))
}

/// `GET /v1/pricing/changes` (L-20..L-30, GP-28, CF-25): not cached.
pub async fn pricing_changes(
    app: &App,
    viewer: &Viewer,
    uri: &http::Uri,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = ChangesQuery::read(&query(uri)?)?;
    let body = app.catalog.pricing_changes(viewer, &query).await?;
    Ok(no_store(reply::json_value(
        StatusCode::OK,
        &body,
        request_id,
    )))
}

/// `GET /admin/catalog`: the release in force.
pub fn describe(app: &App, request_id: &str) -> Reply {
    let body = serde_json::to_vec(&app.catalog.describe()).unwrap_or_default();
    reply::json(StatusCode::OK, body, request_id)
}

/// `POST /admin/catalog/reload`: an invalid file is 400 naming the file and
/// line, and the old catalog keeps serving.
pub async fn reload(app: &App, request_id: &str) -> Result<Reply, ApiError> {
    let reloaded = app.catalog.reload().await?;
    let body = serde_json::to_vec(&reloaded).unwrap_or_default();
    Ok(reply::json(StatusCode::OK, body, request_id))
}
