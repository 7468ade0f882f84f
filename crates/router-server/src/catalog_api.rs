//! The catalog endpoints (L): `/v1/models`, `/v1/models/supply`,
//! `/v1/models/compare`, and the public `/public/models`,
//! `/public/models/{model_id}` and `/catalog/models`.
//!
//! Each reads one release's views (`catalog_view`) once, so a reply never
//! mixes two catalogs.

use crate::catalog_view::{self, Cached, CatalogViews, usd};
use crate::query::{BadParam, Query, percent_decode};
use crate::reply::{self, Reply};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, HeaderValue, IF_NONE_MATCH};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode, NanoUsd, Percent, Usage};
use router_core::store::ApiKeyRecord;
use router_core::{Modality, Model};
use serde_json::{Value, json};
use std::sync::Arc;

/// Who reads a usage view (compare, pricing changes): a `usage:read` key,
/// or a signed-in browser session (A-15, CF-25), which has no model policy.
pub enum Viewer {
    Key(ApiKeyRecord),
    Session(crate::session::Session),
}

impl Viewer {
    /// The key's model policy; a session may see every model.
    pub fn allows_model(&self, model: &Model) -> bool {
        match self {
            Viewer::Key(key) => key.policy.allows_model(model),
            Viewer::Session(_) => true,
        }
    }

    /// The models a key's policy names; `None`: no restriction.
    pub fn allowed_models(&self) -> Option<&[String]> {
        match self {
            Viewer::Key(key) => key.policy.allowed_models.as_deref(),
            Viewer::Session(_) => None,
        }
    }

    /// What a cursor binds: the credential's kind and ID, and the model
    /// policy version (a session's is always 0).
    pub fn binding(&self) -> (u8, uuid::Uuid, i64) {
        match self {
            Viewer::Key(key) => (1, key.key_id, key.policy.version),
            Viewer::Session(session) => (2, session.id, 0),
        }
    }
}

/// L-31, L-37: pollers revalidate every time and get 304 when unchanged.
const PUBLIC_CACHE: &str = "public, max-age=0, must-revalidate";
/// L-19, L-30, CF-26.
pub const NO_STORE: &str = "no-store";

fn bad_param(BadParam(name): BadParam) -> ApiError {
    ApiError::invalid(name.clone(), format!("`{name}` cannot be read."))
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

/// Only the literal `true` turns the filter on (L-32).
fn zdr_filter(query: &Query) -> bool {
    matches!(query.one("zdr"), Ok(Some("true")))
}

fn public_not_found() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "No such model is available.")
}

/// `GET /public/models` (L-31, L-32).
pub fn public_models(
    views: &CatalogViews,
    uri: &http::Uri,
    headers: &http::HeaderMap,
    request_id: &str,
) -> Reply {
    let zdr = Query::parse(uri).is_ok_and(|q| zdr_filter(&q));
    public_reply(views.public_list(zdr), headers, request_id)
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
        .ok_or_else(public_not_found)?;
    let zdr = Query::parse(uri).is_ok_and(|q| zdr_filter(&q));
    let cached = views.public_model(&id, zdr).ok_or_else(public_not_found)?;
    Ok(public_reply(cached, headers, request_id))
}

/// `GET /catalog/models` (L-38, L-39).
pub fn catalog_models(views: &CatalogViews, headers: &http::HeaderMap, request_id: &str) -> Reply {
    public_reply(views.catalog_models(), headers, request_id)
}

/// `GET /v1/models` (L-01..L-04): the key's models only.
pub fn list_models(views: &CatalogViews, key: &ApiKeyRecord, request_id: &str) -> Reply {
    json_reply(views.listing(&key.policy), request_id)
}

/// The model a key asks about: unknown or hidden → 404, not allowed → 403
/// (L-08, GP-30).
fn allowed_model<'a>(
    views: &'a CatalogViews,
    key: &ApiKeyRecord,
    name: &str,
) -> Result<&'a Arc<Model>, ApiError> {
    let model = views.catalog.model(name).ok_or_else(|| {
        ApiError::new(
            ErrorCode::ModelNotFound,
            format!("The model `{name}` does not exist or is not available."),
        )
        .with_param("model")
    })?;
    if !key.policy.allows_model(model) {
        return Err(ApiError::new(
            ErrorCode::ModelNotAllowed,
            format!("This API key may not use the model `{name}`."),
        )
        .with_param("model"));
    }
    Ok(model)
}

/// `min_discount_percent` from a query: a decimal number 0 to 99.99.
fn parse_percent(text: &str) -> Option<Percent> {
    let (whole, frac) = text.split_once('.').unwrap_or((text, ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty()
        || !digits(whole)
        || !digits(frac)
        || (text.contains('.') && frac.is_empty())
    {
        return None;
    }
    let frac = frac.trim_end_matches('0');
    let scale = u32::try_from(frac.len()).ok().filter(|s| *s <= 12)?;
    let units: i64 = format!("{whole}{frac}").parse().ok()?;
    // units / 10^scale <= 99.99
    let within = i128::from(units) * 100 <= 9999 * 10i128.pow(scale);
    within.then_some(Percent { units, scale })
}

/// A discount of `price` against `list` in percent, two decimals, rounded
/// down (never overstated).
fn discount_percent(list: i64, price: i64) -> Value {
    if list <= 0 {
        return Value::Null;
    }
    let hundredths = (i128::from(list) - i128::from(price)) * 10_000 / i128::from(list);
    let sign = if hundredths < 0 { "-" } else { "" };
    let abs = hundredths.unsigned_abs();
    let text = format!("{sign}{}.{:02}", abs / 100, abs % 100);
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// `GET /v1/models/supply` (L-05..L-08, GP-30): the eligible supply of one
/// model, numbered per response, filtered like routing.
pub fn supply(
    views: &CatalogViews,
    key: &ApiKeyRecord,
    uri: &http::Uri,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = Query::parse(uri).map_err(bad_param)?;
    let name = query
        .one("model")
        .map_err(bad_param)?
        .ok_or_else(|| ApiError::invalid("model", "`model` is required."))?;
    let floor = match query.one("min_discount_percent").map_err(bad_param)? {
        None => None,
        Some(text) => Some(parse_percent(text).ok_or_else(|| {
            ApiError::invalid(
                "min_discount_percent",
                "`min_discount_percent` must be a number from 0 to 99.99.",
            )
        })?),
    };
    let zdr = match query.one("zdr").map_err(bad_param)? {
        None | Some("false") => false,
        Some("true") => true,
        Some(_) => return Err(ApiError::invalid("zdr", "`zdr` must be `true` or `false`.")),
    };
    let model = allowed_model(views, key, name)?;
    if floor.is_some() && model.list_price.is_none() {
        return Err(ApiError::new(
            ErrorCode::ListPriceUnknown,
            "This model's official list price is unknown, so a minimum discount cannot be verified.",
        )
        .with_param("min_discount_percent"));
    }
    let catalog = &views.catalog;
    let mut offers: Vec<(i64, i32, Value)> = Vec::new();
    for route in catalog_view::priced_routes(catalog, model) {
        let Some(rates) = router_core::pricing::customer_rates(model, route) else {
            continue;
        };
        if zdr && !route.zdr {
            continue;
        }
        if let (Some(floor), Some(list)) = (floor, &model.list_price)
            && !(floor.is_met(list.input.0, rates.input.0)
                && floor.is_met(list.output.0, rates.output.0))
        {
            continue;
        }
        let list = model.list_price.as_ref();
        let capabilities: Vec<&str> = route.capabilities.iter().map(|c| c.as_str()).collect();
        let entry = json!({
            "input_usd_per_mtok": usd(rates.input.0),
            "output_usd_per_mtok": usd(rates.output.0),
            "input_discount_percent": list.map_or(Value::Null, |l| discount_percent(l.input.0, rates.input.0)),
            "output_discount_percent": list.map_or(Value::Null, |l| discount_percent(l.output.0, rates.output.0)),
            "zdr": route.zdr,
            "capabilities": capabilities,
        });
        let rank = rates.input.0.saturating_add(rates.output.0);
        offers.push((rank, -route.priority, entry));
    }
    // Cheapest first; the ordinal is this response's only name for a route.
    offers.sort_by_key(|(rank, priority, _)| (*rank, *priority));
    let data: Vec<Value> = offers
        .into_iter()
        .enumerate()
        .map(|(i, (_, _, mut entry))| {
            if let Value::Object(map) = &mut entry {
                map.insert("supply".into(), format!("s{}", i + 1).into());
            }
            entry
        })
        .collect();
    let body = json!({"object": "list", "model": model.id, "data": data});
    Ok(json_reply(
        serde_json::to_vec(&body).unwrap_or_default(),
        request_id,
    ))
}

/// Compare limits (L-09..L-11, Q).
const MAX_COMPARE_MODELS: usize = 10;
const MAX_TOKENS: u64 = 10_000_000;
const MAX_REQUESTS: u64 = 9_007_199_254_740_991;

/// A non-negative decimal integer within `max`, or `None`.
fn parse_count(text: &str, max: u64) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse::<u64>().ok().filter(|n| *n <= max)
}

/// One request's estimated cost of `model` at catalog prices, rounded once
/// half-up to whole nano-USD; `None` when the model has no per-request
/// price (video is priced per second of output).
pub fn per_request_cost(
    views: &CatalogViews,
    model: &Model,
    prompt_tokens: u64,
    completion_tokens: u64,
) -> Option<NanoUsd> {
    match model.modality {
        Modality::Text => {
            let rates = catalog_view::catalog_rates(&views.catalog, model)?;
            let usage = Usage {
                input_tokens: prompt_tokens,
                output_tokens: completion_tokens,
                ..Usage::default()
            };
            // Tokens are capped at 10^7 and prices at i64: never overflows i64
            // after dividing by 10^6 unless prices are absurd; then no price.
            rates.charge(&usage).ok()
        }
        Modality::Image => model.image_price(),
        Modality::Video => None,
    }
}

/// `GET /v1/models/compare` (L-09..L-19, GP-29, CF-28): an estimate from
/// catalog prices; no supplier call, no reservation.
pub fn compare(
    views: &CatalogViews,
    viewer: &Viewer,
    uri: &http::Uri,
    request_id: &str,
) -> Result<Reply, ApiError> {
    let query = Query::parse(uri).map_err(bad_param)?;
    let models = query
        .one("models")
        .map_err(bad_param)?
        .ok_or_else(|| ApiError::invalid("models", "`models` is required."))?;
    let mut names: Vec<&str> = Vec::new();
    for name in models.split(',') {
        if name.is_empty() {
            return Err(ApiError::invalid("models", "`models` has an empty entry."));
        }
        if !names.contains(&name) {
            names.push(name);
        }
    }
    if names.len() > MAX_COMPARE_MODELS {
        return Err(ApiError::invalid(
            "models",
            "`models` names at most 10 distinct models.",
        ));
    }
    let count = |name: &'static str, default: u64, min: u64, max: u64| -> Result<u64, ApiError> {
        match query.one(name).map_err(bad_param)? {
            None => Ok(default),
            Some(text) => parse_count(text, max).filter(|n| *n >= min).ok_or_else(|| {
                ApiError::invalid(
                    name,
                    format!("`{name}` must be an integer from {min} to {max}."),
                )
            }),
        }
    };
    let prompt_tokens = count("prompt_tokens", 0, 0, MAX_TOKENS)?;
    let completion_tokens = count("completion_tokens", 0, 0, MAX_TOKENS)?;
    let requests = count("requests", 1, 1, MAX_REQUESTS)?;
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in names {
        let model = views.catalog.model(name).filter(|m| viewer.allows_model(m));
        let Some(model) = model else {
            missing.push(json!({
                "model": name, "id": null, "found": false,
                "billed_usd": null, "billed_nano_usd": null, "suppliers": null,
            }));
            continue;
        };
        let total = match per_request_cost(views, model, prompt_tokens, completion_tokens) {
            Some(cost) => Some(
                i64::try_from(requests)
                    .ok()
                    .and_then(|r| cost.0.checked_mul(r))
                    .ok_or_else(|| {
                        ApiError::invalid(
                            "requests",
                            "The total is beyond the supported range of nano-USD.",
                        )
                    })?,
            ),
            None => None,
        };
        let suppliers = catalog_view::priced_routes(&views.catalog, model).len();
        found.push((
            total,
            json!({
                "model": name,
                "id": model.id,
                "found": true,
                "billed_usd": total.map_or(Value::Null, usd),
                "billed_nano_usd": total,
                "suppliers": {"count": suppliers},
            }),
        ));
    }
    // Priced results ascending (stable: ties keep request order), then those
    // without a per-request price, then the not-found (GP-29).
    found.sort_by_key(|(total, _)| (total.is_none(), total.unwrap_or(0)));
    let data: Vec<Value> = found.into_iter().map(|(_, v)| v).chain(missing).collect();
    let body = json!({
        "object": "list",
        "estimate": true,
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "requests": requests,
        "data": data,
    });
    Ok(no_store(json_reply(
        serde_json::to_vec(&body).unwrap_or_default(),
        request_id,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_and_counts_parse_strictly() {
        assert_eq!(parse_percent("0"), Some(Percent { units: 0, scale: 0 }));
        assert_eq!(
            parse_percent("99.99"),
            Some(Percent {
                units: 9999,
                scale: 2
            })
        );
        assert_eq!(parse_percent("100"), None);
        assert_eq!(parse_percent("99.991"), None);
        assert_eq!(parse_percent("-1"), None);
        assert_eq!(parse_percent("1."), None);
        assert_eq!(parse_percent("abc"), None);
        assert_eq!(parse_count("10000000", MAX_TOKENS), Some(10_000_000));
        assert_eq!(parse_count("10000001", MAX_TOKENS), None);
        assert_eq!(parse_count("1.5", MAX_TOKENS), None);
        assert_eq!(parse_count("-1", MAX_TOKENS), None);
        assert_eq!(parse_count("+1", MAX_TOKENS), None);
        assert_eq!(parse_count("", MAX_TOKENS), None);
    }

    #[test]
    fn discounts_are_rounded_down_to_hundredths() {
        assert_eq!(discount_percent(3, 2), json!(33.33));
        assert_eq!(discount_percent(100, 100), json!(0.0));
        assert_eq!(discount_percent(100, 150), json!(-50.0));
        assert_eq!(discount_percent(0, 1), Value::Null);
    }
}
