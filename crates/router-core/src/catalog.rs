//! The catalog: models, suppliers and routes, loaded from one TOML file.
//!
//! Prices are integers: nano-USD per million tokens, or nano-USD per image
//! for image models. Supplier API keys are never in the file: each supplier
//! names the environment variable to read.

use router_canonical::{Capability, CapabilitySet, NanoUsd, PricePerMTok, Protocol, Rates};
use serde::Deserialize;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read catalog {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("invalid catalog TOML: {0}")]
    Toml(#[from] toml::de::Error),
    #[error("duplicate {kind} id `{id}`")]
    Duplicate { kind: &'static str, id: String },
    #[error("route `{route}` names unknown {kind} `{id}`")]
    UnknownReference {
        route: String,
        kind: &'static str,
        id: String,
    },
    #[error(
        "route `{route}` uses protocol `completions`; routes speak chat, responses or messages"
    )]
    CompletionsRoute { route: String },
    #[error("model `{model}` is supply-priced but route `{route}` has no quote")]
    MissingQuote { model: String, route: String },
    #[error("model `{model}` is fixed-price but has no rates")]
    MissingRates { model: String },
    #[error("unknown capability `{name}` on route `{route}`")]
    UnknownCapability { route: String, name: String },
    #[error("model `{model}` has no `pricing`")]
    MissingPricing { model: String },
    #[error(
        "image model `{model}` needs `image_price` (nano-USD per image) and no token `pricing`, `rates` or `list_price`"
    )]
    ImagePricing { model: String },
    #[error("`image_price` is only for image models (model `{model}`)")]
    ImagePriceOnTextModel { model: String },
    #[error(
        "route `{route}`: image models take `protocol = \"images\"` routes with `image_cost`, and only image models do"
    )]
    ImageRoute { route: String },
    #[error("route `{route}` has no `internal_cost`")]
    MissingInternalCost { route: String },
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CatalogFile {
    #[serde(default)]
    suppliers: Vec<SupplierFile>,
    #[serde(default)]
    models: Vec<ModelFile>,
    #[serde(default)]
    routes: Vec<RouteFile>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SupplierFile {
    id: String,
    base_url: String,
    #[serde(default)]
    api_key_env: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RatesFile {
    input: i64,
    output: i64,
    #[serde(default)]
    cache_read: Option<i64>,
    #[serde(default)]
    cache_write: Option<i64>,
}

impl From<&RatesFile> for Rates {
    fn from(r: &RatesFile) -> Self {
        Rates {
            input: PricePerMTok(r.input),
            output: PricePerMTok(r.output),
            cache_read: r.cache_read.map(PricePerMTok),
            cache_write: r.cache_write.map(PricePerMTok),
        }
    }
}

#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum PricingKind {
    Fixed,
    Supply,
}

/// What a model produces. Image models are priced per image and served by
/// `images` routes only.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    #[default]
    Text,
    Image,
    Video,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    #[serde(default)]
    modality: Modality,
    /// Image models: the customer's fixed price per image, nano-USD.
    #[serde(default)]
    image_price: Option<i64>,
    /// Required for text models; image models are priced by `image_price`.
    #[serde(default)]
    pricing: Option<PricingKind>,
    #[serde(default)]
    rates: Option<RatesFile>,
    #[serde(default)]
    list_price: Option<RatesFile>,
    #[serde(default = "default_max_output_tokens")]
    max_output_tokens: u32,
}

fn default_max_output_tokens() -> u32 {
    4096
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteFile {
    id: String,
    model: String,
    supplier: String,
    upstream_model: String,
    protocol: Protocol,
    #[serde(default)]
    capabilities: Vec<String>,
    #[serde(default)]
    priority: i32,
    /// Token routes: what the route costs the operator.
    #[serde(default)]
    internal_cost: Option<RatesFile>,
    /// Images routes: what one image costs the operator, nano-USD.
    #[serde(default)]
    image_cost: Option<i64>,
    #[serde(default)]
    quote: Option<RatesFile>,
    #[serde(default = "default_true")]
    enabled: bool,
    /// A verified zero-data-retention route.
    #[serde(default)]
    zdr: bool,
    /// Beta feature identifiers (Messages `anthropic-beta`) a native request
    /// may send through this route (D-04, GP-32).
    #[serde(default)]
    betas: Vec<String>,
}

fn default_true() -> bool {
    true
}

/// A supplier endpoint. The API key is read from the environment at load
/// time and never printed.
#[derive(Clone)]
pub struct Supplier {
    pub id: String,
    pub base_url: String,
    pub api_key: Option<String>,
}

impl fmt::Debug for Supplier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supplier")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pricing {
    /// Customers pay these published rates whatever route serves them.
    Fixed(Rates),
    /// Customers pay the quote of the route actually used.
    Supply,
    /// An image model: customers pay this fixed price per image.
    PerImage(NanoUsd),
}

#[derive(Debug, Clone)]
pub struct Model {
    pub id: String,
    pub aliases: Vec<String>,
    pub pricing: Pricing,
    pub list_price: Option<Rates>,
    pub max_output_tokens: u32,
    pub modality: Modality,
}

impl Model {
    /// The customer's fixed price per image, for an image model.
    pub fn image_price(&self) -> Option<NanoUsd> {
        match self.pricing {
            Pricing::PerImage(price) => Some(price),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Route {
    pub id: String,
    pub model: String,
    pub supplier: Arc<Supplier>,
    pub upstream_model: String,
    pub protocol: Protocol,
    pub capabilities: CapabilitySet,
    /// Higher is preferred.
    pub priority: i32,
    /// Token routes' operator cost (zero on `images` routes).
    pub internal_cost: Rates,
    /// What one image costs the operator on an `images` route.
    pub image_cost: Option<NanoUsd>,
    pub quote: Option<Rates>,
    pub enabled: bool,
    pub zdr: bool,
    /// Beta identifiers this route forwards; a request naming any other is
    /// not servable here.
    pub betas: Vec<String>,
    /// The model's output-token maximum, for protocols that require an
    /// explicit limit (Messages `max_tokens`).
    pub max_output_tokens: u32,
}

impl Route {
    /// Whether this route forwards every beta identifier in `betas`.
    pub fn allows_betas(&self, betas: &[String]) -> bool {
        betas.iter().all(|b| self.betas.contains(b))
    }

    /// The scalar used to order routes of equal priority: cheaper first.
    pub fn internal_cost_rank(&self) -> i64 {
        if let Some(cost) = self.image_cost {
            return cost.0;
        }
        self.internal_cost
            .input
            .0
            .saturating_add(self.internal_cost.output.0)
    }
}

/// A model's pricing as the file states it, checked against its modality.
fn model_pricing(m: &ModelFile) -> Result<Pricing, CatalogError> {
    if m.modality == Modality::Image {
        return match (m.image_price, m.pricing, &m.rates, &m.list_price) {
            (Some(price), None | Some(PricingKind::Fixed), None, None) if price >= 0 => {
                Ok(Pricing::PerImage(NanoUsd(price)))
            }
            _ => Err(CatalogError::ImagePricing {
                model: m.id.clone(),
            }),
        };
    }
    if m.image_price.is_some() {
        return Err(CatalogError::ImagePriceOnTextModel {
            model: m.id.clone(),
        });
    }
    match m.pricing {
        Some(PricingKind::Fixed) => {
            let rates = m.rates.as_ref().ok_or_else(|| CatalogError::MissingRates {
                model: m.id.clone(),
            })?;
            Ok(Pricing::Fixed(rates.into()))
        }
        Some(PricingKind::Supply) => Ok(Pricing::Supply),
        None => Err(CatalogError::MissingPricing {
            model: m.id.clone(),
        }),
    }
}

/// The loaded catalog. Immutable; reloads build a new one.
#[derive(Debug, Default)]
pub struct Catalog {
    models: HashMap<String, Arc<Model>>,
    /// Alias or canonical ID -> canonical ID.
    names: HashMap<String, String>,
    /// Routes per canonical model ID, in file order.
    routes: HashMap<String, Vec<Arc<Route>>>,
}

impl Catalog {
    pub fn load(path: &str) -> Result<Catalog, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Catalog::from_toml(&text, |name| std::env::var(name).ok())
    }

    /// Parse a catalog; `env` resolves supplier API-key variables.
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Catalog, CatalogError> {
        let file: CatalogFile = toml::from_str(text)?;
        let mut suppliers = HashMap::new();
        for s in file.suppliers {
            let supplier = Supplier {
                api_key: s.api_key_env.as_deref().and_then(&env),
                id: s.id.clone(),
                base_url: s.base_url.trim_end_matches('/').to_owned(),
            };
            if suppliers.insert(s.id.clone(), Arc::new(supplier)).is_some() {
                return Err(CatalogError::Duplicate {
                    kind: "supplier",
                    id: s.id,
                });
            }
        }
        let mut catalog = Catalog::default();
        for m in file.models {
            let pricing = model_pricing(&m)?;
            for name in std::iter::once(&m.id).chain(&m.aliases) {
                if catalog.names.insert(name.clone(), m.id.clone()).is_some() {
                    return Err(CatalogError::Duplicate {
                        kind: "model or alias",
                        id: name.clone(),
                    });
                }
            }
            let model = Model {
                id: m.id.clone(),
                aliases: m.aliases,
                pricing,
                list_price: m.list_price.as_ref().map(Rates::from),
                max_output_tokens: m.max_output_tokens,
                modality: m.modality,
            };
            catalog.models.insert(m.id, Arc::new(model));
        }
        let mut route_ids = std::collections::HashSet::new();
        for r in file.routes {
            if !route_ids.insert(r.id.clone()) {
                return Err(CatalogError::Duplicate {
                    kind: "route",
                    id: r.id,
                });
            }
            let model =
                catalog
                    .models
                    .get(&r.model)
                    .ok_or_else(|| CatalogError::UnknownReference {
                        route: r.id.clone(),
                        kind: "model",
                        id: r.model.clone(),
                    })?;
            let supplier = suppliers.get(&r.supplier).cloned().ok_or_else(|| {
                CatalogError::UnknownReference {
                    route: r.id.clone(),
                    kind: "supplier",
                    id: r.supplier.clone(),
                }
            })?;
            if r.protocol == Protocol::Completions {
                return Err(CatalogError::CompletionsRoute { route: r.id });
            }
            let images_route = r.protocol == Protocol::Images;
            if images_route != (model.modality == Modality::Image)
                || images_route != r.image_cost.is_some()
                || r.image_cost.is_some_and(|c| c < 0)
            {
                return Err(CatalogError::ImageRoute { route: r.id });
            }
            let internal_cost = match (&r.internal_cost, images_route) {
                (Some(cost), _) => cost.into(),
                (None, true) => Rates::default(),
                (None, false) => return Err(CatalogError::MissingInternalCost { route: r.id }),
            };
            if model.pricing == Pricing::Supply && r.quote.is_none() {
                return Err(CatalogError::MissingQuote {
                    model: r.model,
                    route: r.id,
                });
            }
            let mut capabilities = CapabilitySet::default();
            for name in &r.capabilities {
                let c: Capability = name.parse().map_err(|_| CatalogError::UnknownCapability {
                    route: r.id.clone(),
                    name: name.clone(),
                })?;
                capabilities.insert(c);
            }
            let route = Route {
                id: r.id,
                model: r.model.clone(),
                supplier,
                upstream_model: r.upstream_model,
                protocol: r.protocol,
                capabilities,
                priority: r.priority,
                internal_cost,
                image_cost: r.image_cost.map(NanoUsd),
                quote: r.quote.as_ref().map(Rates::from),
                enabled: r.enabled,
                zdr: r.zdr,
                betas: r.betas,
                max_output_tokens: model.max_output_tokens,
            };
            catalog
                .routes
                .entry(r.model)
                .or_default()
                .push(Arc::new(route));
        }
        Ok(catalog)
    }

    /// Resolve a public model ID or alias (exact match, no case folding).
    pub fn model(&self, name: &str) -> Option<&Arc<Model>> {
        self.names.get(name).and_then(|id| self.models.get(id))
    }

    pub fn routes(&self, model_id: &str) -> &[Arc<Route>] {
        self.routes.get(model_id).map_or(&[], Vec::as_slice)
    }

    pub fn models(&self) -> impl Iterator<Item = &Arc<Model>> {
        self.models.values()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = r#"
[[suppliers]]
id = "s1"
base_url = "http://127.0.0.1:9/v1/"
api_key_env = "S1_KEY"

[[models]]
id = "m-fixed"
aliases = ["fixed"]
pricing = "fixed"
rates = { input = 1000, output = 2000 }

[[models]]
id = "m-supply"
pricing = "supply"

[[routes]]
id = "r1"
model = "m-fixed"
supplier = "s1"
upstream_model = "up-1"
protocol = "chat"
capabilities = ["tools", "stop"]
priority = 1
internal_cost = { input = 10, output = 20 }

[[routes]]
id = "r2"
model = "m-supply"
supplier = "s1"
upstream_model = "up-2"
protocol = "chat"
internal_cost = { input = 10, output = 20 }
quote = { input = 30, output = 40 }
"#;

    #[test]
    fn shipped_catalogs_load() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../fixtures/");
        let demo = Catalog::load(&format!("{root}demo-catalog.toml")).unwrap();
        let protocols: std::collections::HashSet<Protocol> = demo
            .models()
            .flat_map(|m| demo.routes(&m.id).iter().map(|r| r.protocol))
            .collect();
        assert_eq!(protocols.len(), 4, "the demo serves every route protocol");
    }

    #[test]
    fn loads_models_aliases_routes_and_secrets_from_env() {
        let cat =
            Catalog::from_toml(SAMPLE, |k| (k == "S1_KEY").then(|| "secret".to_owned())).unwrap();
        assert_eq!(cat.model("fixed").unwrap().id, "m-fixed");
        assert!(cat.model("FIXED").is_none());
        let routes = cat.routes("m-fixed");
        assert_eq!(routes.len(), 1);
        assert_eq!(routes[0].supplier.base_url, "http://127.0.0.1:9/v1");
        assert_eq!(routes[0].supplier.api_key.as_deref(), Some("secret"));
        assert!(routes[0].capabilities.contains(Capability::Stop));
        assert!(!format!("{:?}", routes[0].supplier).contains("secret"));
    }

    #[test]
    fn supply_priced_route_needs_a_quote() {
        let text = SAMPLE.replace("quote = { input = 30, output = 40 }", "");
        assert!(matches!(
            Catalog::from_toml(&text, |_| None),
            Err(CatalogError::MissingQuote { .. })
        ));
    }

    const IMAGES: &str = r#"
[[suppliers]]
id = "s1"
base_url = "http://127.0.0.1:9/v1"

[[models]]
id = "m-img"
modality = "image"
image_price = 40_000_000

[[routes]]
id = "r-img"
model = "m-img"
supplier = "s1"
upstream_model = "up-img"
protocol = "images"
image_cost = 30_000_000
"#;

    #[test]
    fn image_models_are_priced_per_image_on_images_routes() {
        let cat = Catalog::from_toml(IMAGES, |_| None).unwrap();
        let model = cat.model("m-img").unwrap();
        assert_eq!(model.modality, Modality::Image);
        assert_eq!(model.image_price(), Some(NanoUsd(40_000_000)));
        let route = &cat.routes("m-img")[0];
        assert_eq!(route.protocol, Protocol::Images);
        assert_eq!(route.image_cost, Some(NanoUsd(30_000_000)));
        assert_eq!(route.internal_cost_rank(), 30_000_000);
        let text = Catalog::from_toml(SAMPLE, |_| None).unwrap();
        assert_eq!(text.model("m-fixed").unwrap().modality, Modality::Text);
        assert_eq!(text.model("m-fixed").unwrap().image_price(), None);
    }

    #[test]
    fn image_pricing_and_routes_are_checked() {
        let bad = [
            IMAGES.replace("image_price = 40_000_000", ""),
            IMAGES.replace(
                "image_price = 40_000_000",
                "image_price = 1\nrates = { input = 1, output = 1 }",
            ),
            IMAGES.replace(
                "image_price = 40_000_000",
                "image_price = 1\npricing = \"supply\"",
            ),
            IMAGES.replace("image_price = 40_000_000", "image_price = -1"),
            IMAGES.replace("image_cost = 30_000_000", ""),
            IMAGES.replace("protocol = \"images\"", "protocol = \"chat\""),
            IMAGES.replace(
                "modality = \"image\"",
                "pricing = \"fixed\"\nrates = { input = 1, output = 1 }",
            ),
            SAMPLE.replace(
                "protocol = \"chat\"\ncapabilities",
                "protocol = \"images\"\ncapabilities",
            ),
            SAMPLE.replace(
                "pricing = \"supply\"",
                "pricing = \"supply\"\nimage_price = 5",
            ),
        ];
        for text in bad {
            assert!(Catalog::from_toml(&text, |_| None).is_err(), "{text}");
        }
    }

    #[test]
    fn unknown_references_are_rejected() {
        let text = SAMPLE.replace(
            "supplier = \"s1\"\nupstream_model = \"up-2\"",
            "supplier = \"nope\"\nupstream_model = \"up-2\"",
        );
        assert!(matches!(
            Catalog::from_toml(&text, |_| None),
            Err(CatalogError::UnknownReference { .. })
        ));
    }
}
