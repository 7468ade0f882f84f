//! The catalog: models, suppliers and routes, loaded from one TOML file.
//!
//! Prices are integers: nano-USD per million tokens. Supplier API keys are
//! never in the file: each supplier names the environment variable to read.

use router_canonical::{Capability, CapabilitySet, PricePerMTok, Protocol, Rates};
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

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelFile {
    id: String,
    #[serde(default)]
    aliases: Vec<String>,
    pricing: PricingKind,
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
    internal_cost: RatesFile,
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
}

#[derive(Debug, Clone)]
pub struct Model {
    pub id: String,
    pub aliases: Vec<String>,
    pub pricing: Pricing,
    pub list_price: Option<Rates>,
    pub max_output_tokens: u32,
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
    pub internal_cost: Rates,
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
        self.internal_cost
            .input
            .0
            .saturating_add(self.internal_cost.output.0)
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
            let pricing = match m.pricing {
                PricingKind::Fixed => {
                    let rates = m.rates.as_ref().ok_or_else(|| CatalogError::MissingRates {
                        model: m.id.clone(),
                    })?;
                    Pricing::Fixed(rates.into())
                }
                PricingKind::Supply => Pricing::Supply,
            };
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
                internal_cost: (&r.internal_cost).into(),
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
        assert_eq!(protocols.len(), 3, "the demo serves every route protocol");
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
