//! What the catalog shows to callers: the model entries of `/v1/models`,
//! `/public/models` and `/catalog/models` (GP-18, GP-19), built once per
//! release and kept with it, so serving a view costs a lookup.
//!
//! No view ever names a supplier, a route, a host or a key: routes are only
//! counted, or numbered per response (GP-30).

use ring::digest;
use router_canonical::{Capability, CapabilitySet, NanoUsd, Protocol, Rates};
use router_core::catalog::VideoSpec;
use router_core::{Catalog, Modality, Model, Pricing, Route};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Resolves supplier API-key variables when a catalog is parsed.
pub type CatalogEnv = Arc<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// The process environment, as production resolves supplier keys.
pub fn process_env() -> CatalogEnv {
    Arc::new(|name| std::env::var(name).ok())
}

/// A price of nano-USD (per million tokens, per image, per second) as an
/// exact decimal USD JSON number.
pub fn usd(nanos: i64) -> Value {
    NanoUsd(nanos).to_usd_json()
}

/// The routes a customer can be priced on: enabled, with a customer price.
pub fn priced_routes<'a>(catalog: &'a Catalog, model: &'a Model) -> Vec<&'a Arc<Route>> {
    catalog
        .routes(&model.id)
        .iter()
        .filter(|r| {
            r.enabled
                && (model.image_price().is_some()
                    || router_core::pricing::customer_rates(model, r).is_some())
        })
        .collect()
}

/// The token rates a catalog view quotes for `model`: the fixed rates, or
/// for a supply-priced model the lowest configured quote of its enabled
/// routes (by input + output), which is what compare estimates with (CF-28).
pub fn catalog_rates(catalog: &Catalog, model: &Model) -> Option<Rates> {
    match &model.pricing {
        Pricing::Fixed(rates) => Some(*rates),
        Pricing::Supply => catalog
            .routes(&model.id)
            .iter()
            .filter(|r| r.enabled)
            .filter_map(|r| r.quote)
            .min_by_key(|q| (q.input.0.saturating_add(q.output.0), q.input.0)),
        // Priced per image, not per token.
        Pricing::PerImage(_) => None,
    }
}

/// The `pricing` object of an entry (GP-18) and of a pricing change.
pub fn pricing_object(catalog: &Catalog, model: &Model) -> Value {
    let kind = match model.pricing {
        Pricing::Fixed(_) => "fixed",
        Pricing::Supply => "supply",
        Pricing::PerImage(_) => "per_image",
    };
    let mut pricing = Map::new();
    pricing.insert("kind".into(), kind.into());
    let rates = catalog_rates(catalog, model);
    let field = |f: fn(&Rates) -> Option<i64>| rates.as_ref().and_then(f).map_or(Value::Null, usd);
    pricing.insert("input_usd_per_mtok".into(), field(|r| Some(r.input.0)));
    pricing.insert("output_usd_per_mtok".into(), field(|r| Some(r.output.0)));
    pricing.insert(
        "cache_read_usd_per_mtok".into(),
        field(|r| Some(r.cache_read.unwrap_or(r.input).0)),
    );
    pricing.insert(
        "cache_write_usd_per_mtok".into(),
        field(|r| Some(r.cache_write.unwrap_or(r.input).0)),
    );
    if let Some(price) = model.image_price() {
        pricing.insert("image_usd".into(), usd(price.0));
    }
    if let Some(video) = &model.video {
        pricing.insert("video".into(), video_rates(video));
    }
    Value::Object(pricing)
}

/// `{"<resolution>": {minimumAmount, secondRate}}` in USD (GP-19).
fn video_rates(video: &VideoSpec) -> Value {
    let rates: Map<String, Value> = video
        .rates
        .iter()
        .map(|(resolution, rate)| {
            (
                resolution.clone(),
                json!({"minimumAmount": usd(rate.minimum), "secondRate": usd(rate.per_second)}),
            )
        })
        .collect();
    Value::Object(rates)
}

/// The route protocols a model is served through, in a fixed order.
fn protocols(routes: &[&Arc<Route>]) -> Vec<&'static str> {
    [
        Protocol::Chat,
        Protocol::Responses,
        Protocol::Messages,
        Protocol::Images,
        Protocol::Videos,
    ]
    .into_iter()
    .filter(|p| routes.iter().any(|r| r.protocol == *p))
    .map(Protocol::as_str)
    .collect()
}

/// `capabilities{...}`: a flag for every capability a route of the model
/// offers (vision also when the model accepts images publicly), and for a
/// video model its camelCase capability fields (GP-19).
fn capabilities(model: &Model, routes: &[&Arc<Route>]) -> Value {
    let offered: CapabilitySet = routes.iter().flat_map(|r| r.capabilities.iter()).collect();
    let mut caps = Map::new();
    for c in Capability::ALL {
        let on = offered.contains(c) || (c == Capability::Vision && model.image_input);
        caps.insert(c.as_str().into(), on.into());
    }
    if let Some(video) = &model.video {
        caps.insert("resolutions".into(), json!(video.resolutions));
        caps.insert("durations".into(), json!(video.durations));
        caps.insert("aspectRatios".into(), json!(video.aspect_ratios));
        caps.insert("maxPromptLength".into(), json!(video.max_prompt_length));
        caps.insert(
            "references".into(),
            json!({
                "images": video.references.images,
                "videos": video.references.videos,
                "audios": video.references.audios,
            }),
        );
        caps.insert("audioVideos".into(), json!(video.references.audio_videos));
        caps.insert("total".into(), json!(video.references.total));
        if !video.modes.is_empty() {
            caps.insert("modes".into(), json!(video.modes));
        }
    }
    Value::Object(caps)
}

/// A model entry's `capabilities` in the shape of Anthropic's
/// `ModelCapabilities` (every key present, each an object with
/// `supported`), read from the entry's router flags and protocols. Only
/// what the router carries is claimed: no batch API, citations, PDF input
/// or server tools; context management, effort levels and adaptive
/// thinking only where the model has a native Messages route, which is the
/// only way the router passes them on.
fn anthropic_capabilities(entry: &Value) -> Value {
    let flag = |name: &str| entry["capabilities"][name].as_bool().unwrap_or(false);
    let native = entry["protocols"]
        .as_array()
        .is_some_and(|protocols| protocols.iter().any(|p| p == "messages"));
    let on = |supported: bool| json!({ "supported": supported });
    let thinking = flag("thinking");
    let effort = flag("reasoning") || (native && thinking);
    json!({
        "batch": on(false),
        "citations": on(false),
        "code_execution": on(false),
        "context_management": { "supported": native },
        "effort": {
            "supported": effort,
            "low": on(effort),
            "medium": on(effort),
            "high": on(effort),
            "max": on(effort && native),
        },
        "image_input": on(flag("vision")),
        "pdf_input": on(false),
        "server_tools": {
            "supported": false,
            "code_execution": on(false),
            "web_search": on(false),
        },
        "structured_outputs": on(flag("response_format")),
        "thinking": {
            "supported": thinking,
            "types": {
                "enabled": on(thinking),
                "adaptive": on(thinking && native),
                "disabled": on(true),
                "between_tools": on(false),
            },
        },
    })
}

/// One model entry (GP-18): the OpenAI model object plus what the spec
/// names. Its routes are summarised, never identified.
pub fn model_entry(catalog: &Catalog, model: &Model) -> Value {
    let routes: Vec<&Arc<Route>> = catalog
        .routes(&model.id)
        .iter()
        .filter(|r| r.enabled)
        .collect();
    json!({
        "id": model.id,
        "object": "model",
        // Anthropic's model object too (`type`, `display_name`,
        // `created_at`), so both SDKs' `models.list()` read the list.
        "type": "model",
        "display_name": model.id,
        "created_at": unix_rfc3339(model.created),
        "lifecycle": "active",
        "max_input_tokens": model.context_length,
        "max_tokens": model.max_output_tokens,
        "created": model.created,
        "owned_by": model.vendor.as_deref().unwrap_or("router"),
        "aliases": model.aliases,
        "modality": model.modality.as_str(),
        "protocols": protocols(&routes),
        "capabilities": capabilities(model, &routes),
        "context_length": model.context_length,
        "max_output_tokens": model.max_output_tokens,
        "image_input": model.image_input,
        "zdr": routes.iter().any(|r| r.zdr),
        "pricing": pricing_object(catalog, model),
    })
}

/// One `/catalog/models` entry: logical model, capabilities and public
/// tariff, camelCase like the spec's video fields (GP-19).
fn catalog_entry(catalog: &Catalog, model: &Model) -> Value {
    let routes: Vec<&Arc<Route>> = catalog
        .routes(&model.id)
        .iter()
        .filter(|r| r.enabled)
        .collect();
    let mut pricing = Map::new();
    pricing.insert("currency".into(), "USD".into());
    match model.modality {
        Modality::Text => {
            let rates = catalog_rates(catalog, model);
            let field = |f: fn(&Rates) -> i64| rates.as_ref().map_or(Value::Null, |r| usd(f(r)));
            pricing.insert(
                "kind".into(),
                match model.pricing {
                    Pricing::Fixed(_) => "fixed",
                    Pricing::Supply => "supply",
                    Pricing::PerImage(_) => "per_image",
                }
                .into(),
            );
            pricing.insert("inputPerMillionTokens".into(), field(|r| r.input.0));
            pricing.insert("outputPerMillionTokens".into(), field(|r| r.output.0));
            pricing.insert(
                "cacheReadPerMillionTokens".into(),
                field(|r| r.cache_read.unwrap_or(r.input).0),
            );
            pricing.insert(
                "cacheWritePerMillionTokens".into(),
                field(|r| r.cache_write.unwrap_or(r.input).0),
            );
        }
        Modality::Image => {
            pricing.insert(
                "perImage".into(),
                model.image_price().map_or(Value::Null, |p| usd(p.0)),
            );
        }
        Modality::Video => {
            if let Some(video) = &model.video {
                pricing.insert("rates".into(), video_rates(video));
            }
        }
    }
    json!({
        "id": model.id,
        "aliases": model.aliases,
        "vendor": model.vendor,
        "modality": model.modality.as_str(),
        "protocols": protocols(&routes),
        "capabilities": capabilities(model, &routes),
        "contextLength": model.context_length,
        "maxOutputTokens": model.max_output_tokens,
        "imageInput": model.image_input,
        "publicPricing": Value::Object(pricing),
    })
}

/// JSON with sorted keys and no whitespace (GP-59's canonical form).
pub fn canonical_json(value: &Value) -> String {
    fn write(value: &Value, out: &mut String) {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                out.push('{');
                for (i, key) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    out.push_str(&Value::String(key.clone()).to_string());
                    out.push(':');
                    write(&map[key], out);
                }
                out.push('}');
            }
            Value::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    write(item, out);
                }
                out.push(']');
            }
            scalar => out.push_str(&scalar.to_string()),
        }
    }
    let mut out = String::new();
    write(value, &mut out);
    out
}

/// Lowercase hex SHA-256.
pub fn sha256_hex(bytes: &[u8]) -> String {
    digest::digest(&digest::SHA256, bytes)
        .as_ref()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A public body with its `ETag`.
#[derive(Debug, Clone)]
pub struct Cached {
    pub body: bytes::Bytes,
    pub etag: String,
}

impl Cached {
    fn new(value: &Value) -> Cached {
        let body = serde_json::to_vec(value).unwrap_or_default();
        let etag = format!("\"{}\"", &sha256_hex(&body)[..32]);
        Cached {
            body: body.into(),
            etag,
        }
    }
}

/// Unix seconds as RFC 3339 UTC, to the second (Anthropic's `created_at`).
fn unix_rfc3339(seconds: i64) -> String {
    chrono::DateTime::from_timestamp(seconds, 0)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// An instant as the views and the feed write it: RFC 3339, UTC, in
/// microseconds (one format, so such strings order as their instants).
pub(crate) fn rfc3339(at: chrono::DateTime<chrono::Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Micros, true)
}

/// What a release says about its own history: its number, when it was
/// loaded, and when each model's price last changed.
#[derive(Debug, Clone, Default)]
pub struct ReleaseInfo {
    pub release: i64,
    /// RFC 3339.
    pub observed_at: String,
    /// Model ID -> RFC 3339 time of its latest price change (initial
    /// observations are not price changes).
    pub price_changed_at: HashMap<String, String>,
}

/// The views of one release. Immutable, except for the per-policy cache of
/// `/v1/models` bodies, which dies with the release.
pub struct CatalogViews {
    pub catalog: Arc<Catalog>,
    pub info: ReleaseInfo,
    /// Visible models with their entries, in file order.
    entries: Vec<(Arc<Model>, Value)>,
    /// `/public/models` without and with `?zdr=true`.
    public_all: Cached,
    public_zdr: Cached,
    /// Canonical ID -> `(entry body, zdr-eligible)` of each public model.
    public_models: HashMap<String, (Cached, bool)>,
    catalog_models: Cached,
    /// `/v1/models` bodies per allowed-models policy.
    listings: Mutex<HashMap<Option<Vec<String>>, bytes::Bytes>>,
}

/// At most this many distinct policies' listings are kept per release.
const LISTING_CACHE_LIMIT: usize = 4096;

impl CatalogViews {
    pub fn build(catalog: Arc<Catalog>, info: ReleaseInfo) -> CatalogViews {
        let visible: Vec<&Arc<Model>> = catalog.models().filter(|m| !m.hidden).collect();
        let entries: Vec<(Arc<Model>, Value)> = visible
            .iter()
            .map(|m| ((*m).clone(), model_entry(&catalog, m)))
            .collect();
        let mut public = Vec::new();
        let mut public_zdr = Vec::new();
        let mut public_models = HashMap::new();
        for (model, entry) in &entries {
            // L-31: visible models with price-eligible configured supply.
            let priced = priced_routes(&catalog, model);
            if priced.is_empty() {
                continue;
            }
            let zdr = priced.iter().any(|r| r.zdr);
            public.push(entry.clone());
            if zdr {
                public_zdr.push(entry.clone());
            }
            public_models.insert(model.id.clone(), (Cached::new(entry), zdr));
        }
        let catalog_models: Vec<Value> = visible
            .iter()
            .filter(|m| !priced_routes(&catalog, m).is_empty())
            .map(|m| catalog_entry(&catalog, m))
            .collect();
        CatalogViews {
            public_all: Cached::new(&json!({ "models": public })),
            public_zdr: Cached::new(&json!({ "models": public_zdr })),
            public_models,
            catalog_models: Cached::new(&json!({ "models": catalog_models })),
            entries,
            catalog,
            info,
            listings: Mutex::new(HashMap::new()),
        }
    }

    pub fn public_list(&self, zdr: bool) -> &Cached {
        if zdr {
            &self.public_zdr
        } else {
            &self.public_all
        }
    }

    /// A public model by canonical ID or alias (exact), or `None` when it is
    /// unknown, hidden, unpriced or excluded by `zdr` (L-34..L-36).
    pub fn public_model(&self, name: &str, zdr: bool) -> Option<&Cached> {
        let model = self.catalog.model(name)?;
        let (cached, eligible) = self.public_models.get(&model.id)?;
        (!zdr || *eligible).then_some(cached)
    }

    pub fn catalog_models(&self) -> &Cached {
        &self.catalog_models
    }

    /// Visible models with their entries.
    pub fn entries(&self) -> impl Iterator<Item = &(Arc<Model>, Value)> {
        self.entries.iter()
    }

    /// The `/v1/models` body for a key with this policy (L-01..L-03).
    pub fn listing(&self, policy: &router_core::KeyPolicy) -> bytes::Bytes {
        let key = policy.allowed_models.clone();
        if let Ok(cache) = self.listings.lock()
            && let Some(body) = cache.get(&key)
        {
            return body.clone();
        }
        let body = self.render_listing(policy);
        if let Ok(mut cache) = self.listings.lock() {
            if cache.len() >= LISTING_CACHE_LIMIT {
                cache.clear();
            }
            cache.insert(key, body.clone());
        }
        body
    }

    /// The `pricing_version` of a key without a model policy.
    pub fn pricing_version(&self) -> String {
        let data = Value::Array(self.entries.iter().map(|(_, e)| e.clone()).collect());
        sha256_hex(canonical_json(&data).as_bytes())
    }

    /// `GET /v1/models` with Anthropic's paging: the page `query` asks
    /// for, in list order, `has_more` when models follow it.
    pub fn listing_page(
        &self,
        policy: &router_core::KeyPolicy,
        query: &crate::ListQuery,
    ) -> bytes::Bytes {
        if !query.pages() {
            return self.listing(policy);
        }
        self.render(policy, query, false)
    }

    /// The listing as an Anthropic client reads it (a request carrying
    /// `anthropic-version`): each model's `capabilities` in Anthropic's
    /// shape ([`anthropic_capabilities`]) instead of the router's flags
    /// (GP-18), so a strict `ModelInfo` parses. Rendered on each call:
    /// clients list models rarely.
    pub fn anthropic_listing_page(
        &self,
        policy: &router_core::KeyPolicy,
        query: &crate::ListQuery,
    ) -> bytes::Bytes {
        self.render(policy, query, true)
    }

    fn render_listing(&self, policy: &router_core::KeyPolicy) -> bytes::Bytes {
        self.render(policy, &crate::ListQuery::default(), false)
    }

    fn render(
        &self,
        policy: &router_core::KeyPolicy,
        query: &crate::ListQuery,
        anthropic: bool,
    ) -> bytes::Bytes {
        let mut allowed: Vec<&(Arc<Model>, Value)> = self
            .entries
            .iter()
            .filter(|(m, _)| policy.allows_model(m))
            .collect();
        let position =
            |id: &str, list: &[&(Arc<Model>, Value)]| list.iter().position(|(m, _)| m.id == id);
        if let Some(after) = &query.after_id {
            let start = position(after, &allowed).map_or(allowed.len(), |i| i + 1);
            allowed.drain(..start);
        }
        let mut more_before = false;
        if let Some(before) = &query.before_id {
            let end = position(before, &allowed).unwrap_or(0);
            allowed.truncate(end);
            // Paging backwards: the page is the last `limit` before the ID.
            if let Some(limit) = query.limit
                && allowed.len() > limit
            {
                allowed.drain(..allowed.len() - limit);
                more_before = true;
            }
        }
        let mut has_more = more_before;
        if let Some(limit) = query.limit
            && allowed.len() > limit
        {
            allowed.truncate(limit);
            has_more = true;
        }
        let first_id = allowed.first().map(|(m, _)| m.id.clone());
        let last_id = allowed.last().map(|(m, _)| m.id.clone());
        let data: Vec<Value> = allowed
            .iter()
            .map(|(_, e)| {
                let mut entry = e.clone();
                if anthropic {
                    entry["capabilities"] = anthropic_capabilities(e);
                }
                entry
            })
            .collect();
        let data = Value::Array(data);
        // L-02, GP-59: the hash of exactly the `data` returned.
        let version = sha256_hex(canonical_json(&data).as_bytes());
        // RFC 3339 UTC strings of one format order as their instants.
        let updated = allowed
            .iter()
            .filter_map(|(m, _)| self.info.price_changed_at.get(&m.id))
            .max()
            .cloned();
        let body = json!({
            "object": "list",
            "data": data,
            // Anthropic's list envelope too.
            "has_more": has_more,
            "first_id": first_id,
            "last_id": last_id,
            "pricing_version": version,
            "pricing_checked_at": null,
            "pricing_observed_at": self.info.observed_at,
            "pricing_updated_at": updated,
            "release": self.info.release,
        });
        serde_json::to_vec(&body).unwrap_or_default().into()
    }
}

/// The release in force: swapped whole on reload, so a reader holds one
/// release for as long as it needs it.
pub struct CatalogCell(std::sync::RwLock<Arc<CatalogViews>>);

impl CatalogCell {
    pub fn new(views: CatalogViews) -> CatalogCell {
        CatalogCell(std::sync::RwLock::new(Arc::new(views)))
    }

    /// The current release's views.
    pub fn current(&self) -> Arc<CatalogViews> {
        match self.0.read() {
            Ok(guard) => guard.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Install `views` unless the release in force is newer, calling
    /// `also` with its catalog under the same lock (the gateway's swap), so
    /// two installs cannot interleave. Returns whether it was installed.
    pub fn install_forward(
        &self,
        views: Arc<CatalogViews>,
        also: impl FnOnce(&Arc<Catalog>),
    ) -> bool {
        let mut guard = match self.0.write() {
            Ok(guard) => guard,
            Err(poisoned) => poisoned.into_inner(),
        };
        if views.info.release < guard.info.release {
            return false;
        }
        also(&views.catalog);
        *guard = views;
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_without_whitespace() {
        let v = json!({"b": [1, {"z": 1, "a": "x"}], "a": null});
        assert_eq!(canonical_json(&v), r#"{"a":null,"b":[1,{"a":"x","z":1}]}"#);
    }

    #[test]
    fn sha256_is_lowercase_hex() {
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
