//! The rules of the model views a caller asks questions of: the eligible
//! supply of one model (`/v1/models/supply`, L-05..L-08, GP-30), the cost
//! estimate of several (`/v1/models/compare`, L-09..L-19, GP-29, CF-28),
//! and the public views' filter (L-32). The listings themselves are
//! precomputed per release (`view.rs`).
//!
//! Each reads one release's views once, so an answer never mixes two
//! catalogs.

use crate::view::{CatalogViews, catalog_rates, priced_routes, usd};
use crate::{CatalogError, Params, Viewer};
use router_canonical::{NanoUsd, Usage};
use router_core::Percent;
use router_core::{KeyPolicy, Modality, Model};
use serde_json::{Value, json};
use std::sync::Arc;

/// Only the literal `true` turns the public views' `zdr` filter on (L-32);
/// a parameter that cannot be read leaves it off.
pub fn public_zdr(params: &(impl Params + ?Sized)) -> bool {
    matches!(params.one("zdr"), Ok(Some("true")))
}

/// The public model named `name` (canonical ID or alias, exactly), unless
/// it is unknown, hidden, unpriced or excluded by `zdr` (L-34..L-36).
pub fn public_model<'a>(
    views: &'a CatalogViews,
    name: &str,
    zdr: bool,
) -> Result<&'a crate::Cached, CatalogError> {
    views
        .public_model(name, zdr)
        .ok_or(CatalogError::PublicModelNotFound)
}

/// The model a key asks about: unknown or hidden → 404, not allowed → 403
/// (L-08, GP-30).
fn allowed_model<'a>(
    views: &'a CatalogViews,
    policy: &KeyPolicy,
    name: &str,
) -> Result<&'a Arc<Model>, CatalogError> {
    let model = views
        .catalog
        .model(name)
        .ok_or_else(|| CatalogError::ModelNotFound {
            name: name.to_owned(),
        })?;
    if !policy.allows_model(model) {
        return Err(CatalogError::ModelNotAllowed {
            name: name.to_owned(),
        });
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

/// What `/v1/models/supply` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupplyQuery {
    /// A canonical ID or alias.
    pub model: String,
    /// Only supply at least this far below the model's list price.
    pub min_discount: Option<Percent>,
    /// Only zero-data-retention supply.
    pub zdr: bool,
}

impl SupplyQuery {
    /// `model` (required), `min_discount_percent` and `zdr`, in that order.
    pub fn read(params: &(impl Params + ?Sized)) -> Result<SupplyQuery, CatalogError> {
        let model = params.required("model")?.to_owned();
        let min_discount = match params.one("min_discount_percent")? {
            None => None,
            Some(text) => Some(parse_percent(text).ok_or(CatalogError::MinDiscount)?),
        };
        let zdr = match params.one("zdr")? {
            None | Some("false") => false,
            Some("true") => true,
            Some(_) => return Err(CatalogError::ZdrFlag),
        };
        Ok(SupplyQuery {
            model,
            min_discount,
            zdr,
        })
    }
}

/// The eligible supply of one model for a key with `policy`, numbered per
/// answer (the ordinal is its only name for a route), cheapest first,
/// filtered like routing: `{object: "list", model, data}`.
pub fn supply(
    views: &CatalogViews,
    policy: &KeyPolicy,
    query: &SupplyQuery,
) -> Result<Value, CatalogError> {
    let floor = query.min_discount;
    let model = allowed_model(views, policy, &query.model)?;
    if floor.is_some() && model.list_price.is_none() {
        return Err(CatalogError::ListPriceUnknown);
    }
    let catalog = &views.catalog;
    let mut offers: Vec<(i64, i32, Value)> = Vec::new();
    for route in priced_routes(catalog, model) {
        let Some(rates) = router_core::pricing::customer_rates(model, route) else {
            continue;
        };
        if query.zdr && !route.zdr {
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
    Ok(json!({"object": "list", "model": model.id, "data": data}))
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

/// What `GET /v1/models` asks beyond the key: Anthropic's list paging
/// (`limit`, `after_id`, `before_id`), which Claude Code's model discovery
/// sends. Without them the whole list is one page.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListQuery {
    /// At most this many models (1 to [`MAX_LIST_LIMIT`]).
    pub limit: Option<usize>,
    /// Only the models after this ID, in list order.
    pub after_id: Option<String>,
    /// Only the models before this ID, in list order.
    pub before_id: Option<String>,
}

/// The largest `limit` of `GET /v1/models`, as on Anthropic's list.
pub const MAX_LIST_LIMIT: u64 = 1000;

impl ListQuery {
    /// `limit`, `after_id` and `before_id`, in that order.
    pub fn read(params: &(impl Params + ?Sized)) -> Result<ListQuery, CatalogError> {
        let limit = match params.one("limit")? {
            None => None,
            Some(text) => Some(
                parse_count(text, MAX_LIST_LIMIT)
                    .filter(|n| *n >= 1)
                    .ok_or(CatalogError::Count {
                        param: "limit",
                        min: 1,
                        max: MAX_LIST_LIMIT,
                    })? as usize,
            ),
        };
        let id = |name: &'static str| -> Result<Option<String>, CatalogError> {
            Ok(params.one(name)?.map(str::to_owned))
        };
        Ok(ListQuery {
            limit,
            after_id: id("after_id")?,
            before_id: id("before_id")?,
        })
    }

    /// Whether the query asks for less than the whole list.
    pub fn pages(&self) -> bool {
        self.limit.is_some() || self.after_id.is_some() || self.before_id.is_some()
    }
}

/// What `/v1/models/compare` asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompareQuery {
    /// Distinct names (canonical IDs or aliases), in the order asked.
    pub models: Vec<String>,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub requests: u64,
}

impl CompareQuery {
    /// `models` (required, comma-separated, at most 10 distinct), then
    /// `prompt_tokens`, `completion_tokens` and `requests`.
    pub fn read(params: &(impl Params + ?Sized)) -> Result<CompareQuery, CatalogError> {
        let mut models: Vec<String> = Vec::new();
        for name in params.required("models")?.split(',') {
            if name.is_empty() {
                return Err(CatalogError::EmptyModelName);
            }
            if !models.iter().any(|m| m == name) {
                models.push(name.to_owned());
            }
        }
        if models.len() > MAX_COMPARE_MODELS {
            return Err(CatalogError::TooManyModels {
                max: MAX_COMPARE_MODELS,
            });
        }
        let count =
            |param: &'static str, default: u64, min: u64, max: u64| match params.one(param)? {
                None => Ok(default),
                Some(text) => parse_count(text, max)
                    .filter(|n| *n >= min)
                    .ok_or(CatalogError::Count { param, min, max }),
            };
        Ok(CompareQuery {
            prompt_tokens: count("prompt_tokens", 0, 0, MAX_TOKENS)?,
            completion_tokens: count("completion_tokens", 0, 0, MAX_TOKENS)?,
            requests: count("requests", 1, 1, MAX_REQUESTS)?,
            models,
        })
    }
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
            let rates = catalog_rates(&views.catalog, model)?;
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

/// An estimate from catalog prices for `viewer`; no supplier call, no
/// reservation: `{object: "list", estimate: true, prompt_tokens,
/// completion_tokens, requests, data}`.
pub fn compare(
    views: &CatalogViews,
    viewer: &Viewer,
    query: &CompareQuery,
) -> Result<Value, CatalogError> {
    let mut found = Vec::new();
    let mut missing = Vec::new();
    for name in &query.models {
        let model = views.catalog.model(name).filter(|m| viewer.allows_model(m));
        let Some(model) = model else {
            missing.push(json!({
                "model": name, "id": null, "found": false,
                "billed_usd": null, "billed_nano_usd": null, "suppliers": null,
            }));
            continue;
        };
        let total =
            match per_request_cost(views, model, query.prompt_tokens, query.completion_tokens) {
                Some(cost) => Some(
                    i64::try_from(query.requests)
                        .ok()
                        .and_then(|r| cost.0.checked_mul(r))
                        .ok_or(CatalogError::TotalOutOfRange)?,
                ),
                None => None,
            };
        let suppliers = priced_routes(&views.catalog, model).len();
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
    Ok(json!({
        "object": "list",
        "estimate": true,
        "prompt_tokens": query.prompt_tokens,
        "completion_tokens": query.completion_tokens,
        "requests": query.requests,
        "data": data,
    }))
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
