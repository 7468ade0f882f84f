//! The catalog: models, suppliers and routes, loaded from one TOML file.
//!
//! Prices are integers: nano-USD per million tokens, or nano-USD per image
//! for image models. Supplier API keys are never in the file: each supplier
//! names the environment variable to read.

use crate::connection::{Auth, AuthFile, ConnectionProblem};
use router_canonical::{Capability, CapabilitySet, NanoUsd, PricePerMTok, Protocol, Rates};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::Arc;

/// A catalog that cannot be served: the file, the line and what is wrong.
#[derive(Debug, thiserror::Error)]
pub enum CatalogError {
    #[error("cannot read catalog {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}, line {line}: {problem}")]
    Invalid {
        path: String,
        /// 1-based line of the offending entry.
        line: usize,
        problem: Problem,
    },
}

impl CatalogError {
    /// What is wrong, when the file was read.
    pub fn problem(&self) -> Option<&Problem> {
        match self {
            CatalogError::Read { .. } => None,
            CatalogError::Invalid { problem, .. } => Some(problem),
        }
    }
}

/// What makes a catalog invalid. Each names the entry and field.
#[derive(Debug, thiserror::Error)]
pub enum Problem {
    /// TOML syntax, a wrong type, a missing or unknown field; the message
    /// names the field.
    #[error("{0}")]
    Toml(String),
    #[error("duplicate {kind} id `{id}`")]
    Duplicate { kind: &'static str, id: String },
    #[error("route `{route}` names unknown {kind} `{id}`")]
    UnknownReference {
        route: String,
        kind: &'static str,
        id: String,
    },
    #[error(
        "route `{route}` uses protocol `completions`; routes speak chat, responses, messages, images or videos"
    )]
    CompletionsRoute { route: String },
    #[error("model `{model}` is supply-priced but route `{route}` has no quote")]
    MissingQuote { model: String, route: String },
    #[error("model `{model}` is fixed-price but has no rates")]
    MissingRates { model: String },
    #[error("unknown capability `{name}` on route `{route}`")]
    UnknownCapability { route: String, name: String },
    #[error("model `{model}`: field `{field}` is required for a{article} {modality} model")]
    MissingModalityField {
        model: String,
        field: &'static str,
        article: &'static str,
        modality: Modality,
    },
    #[error("model `{model}`: field `{field}` applies only to {modality} models")]
    MisplacedField {
        model: String,
        field: &'static str,
        modality: Modality,
    },
    #[error("route `{route}`: protocol `{protocol}` does not serve a {modality} model")]
    ProtocolModality {
        route: String,
        protocol: Protocol,
        modality: Modality,
    },
    #[error("model `{model}`: field `{field}`: {reason}")]
    InvalidValue {
        model: String,
        field: &'static str,
        reason: String,
    },
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
    #[error("route `{route}`: `compat` applies only to `chat` routes")]
    CompatOnChatOnly { route: String },
    #[error("supplier `{supplier}`: {problem}")]
    Connection {
        supplier: String,
        problem: ConnectionProblem,
    },
}

/// What a model produces.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[serde(rename_all = "snake_case")]
pub enum Modality {
    #[default]
    Text,
    Image,
    Video,
}

impl Modality {
    pub fn as_str(self) -> &'static str {
        match self {
            Modality::Text => "text",
            Modality::Image => "image",
            Modality::Video => "video",
        }
    }
}

impl fmt::Display for Modality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
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
    id: toml::Spanned<String>,
    base_url: String,
    #[serde(default)]
    api_key_env: Option<String>,
    /// How requests authenticate (`connection.rs`); absent: the dialect's
    /// own scheme with `api_key_env`.
    #[serde(default)]
    auth: Option<AuthFile>,
    /// Query parameters added to every request (`api-version`).
    #[serde(default)]
    query: BTreeMap<String, String>,
    /// Static headers added to every request.
    #[serde(default)]
    headers: BTreeMap<String, String>,
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
    id: toml::Spanned<String>,
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
    #[serde(default)]
    context_length: Option<u32>,
    #[serde(default)]
    hidden: bool,
    #[serde(default)]
    vendor: Option<String>,
    #[serde(default)]
    image_input: bool,
    #[serde(default)]
    video: Option<VideoFile>,
    /// Unix seconds shown as the model's `created`.
    #[serde(default)]
    created: i64,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VideoFile {
    resolutions: Vec<String>,
    durations: Vec<u32>,
    #[serde(default)]
    aspect_ratios: Vec<String>,
    max_prompt_length: u32,
    #[serde(default)]
    references: ReferenceCaps,
    #[serde(default)]
    modes: Vec<String>,
    #[serde(default)]
    rates: std::collections::BTreeMap<String, VideoRate>,
}

/// How many reference media a video request may carry, per kind.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Default)]
#[serde(deny_unknown_fields)]
pub struct ReferenceCaps {
    #[serde(default)]
    pub images: u32,
    #[serde(default)]
    pub videos: u32,
    #[serde(default)]
    pub audios: u32,
    /// Audio plus video references combined.
    #[serde(default)]
    pub audio_videos: u32,
    /// All reference assets together.
    #[serde(default)]
    pub total: u32,
}

/// The public rate of one video resolution, in nano-USD: a request costs
/// `max(minimum, seconds * per_second)`.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct VideoRate {
    pub minimum: i64,
    pub per_second: i64,
}

/// A video model's capabilities and public tariff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VideoSpec {
    pub resolutions: Vec<String>,
    pub durations: Vec<u32>,
    pub aspect_ratios: Vec<String>,
    /// In Unicode code points.
    pub max_prompt_length: u32,
    pub references: ReferenceCaps,
    pub modes: Vec<String>,
    /// Per resolution; a resolution without a rate is listed but refused at
    /// creation.
    pub rates: std::collections::BTreeMap<String, VideoRate>,
}

fn default_max_output_tokens() -> u32 {
    4096
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouteFile {
    id: toml::Spanned<String>,
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
    /// How an OpenAI-compatible server deviates from Chat (chat routes only).
    #[serde(default)]
    compat: Vec<ChatCompat>,
}

/// A named deviation of an OpenAI-compatible server (vLLM, Ollama,
/// llama.cpp, LM Studio) from the Chat protocol, set on a `chat` route.
#[derive(Debug, Deserialize, Clone, Copy, PartialEq, Eq, Hash)]
#[serde(rename_all = "snake_case")]
pub enum ChatCompat {
    /// The server's chat template knows no `developer` role: send those
    /// turns as `system`.
    DeveloperAsSystem,
    /// The server reads `max_tokens`, not `max_completion_tokens`.
    MaxTokens,
    /// The server refuses `stream_options`; its stream carries usage in the
    /// last chunk unasked (llama.cpp).
    NoStreamOptions,
    /// The server may close a stream without `data: [DONE]`: the chunk
    /// with a `finish_reason` and usage ends it.
    StreamWithoutDone,
}

fn default_true() -> bool {
    true
}

/// A supplier endpoint. The API key is read from the environment at load
/// time and never printed.
#[derive(Clone)]
pub struct Supplier {
    pub id: String,
    /// May hold `{model}` (see [`crate::connection::expand_base_url`]).
    pub base_url: String,
    /// The key of [`Auth::Dialect`] (`api_key_env`).
    pub api_key: Option<String>,
    pub auth: Auth,
    /// Added to every request's query string, in this order.
    pub query: Vec<(String, String)>,
    /// Added to every request's headers.
    pub headers: Vec<(String, String)>,
}

impl Supplier {
    /// A supplier with the dialect's own authentication and nothing extra.
    pub fn plain(id: &str, base_url: &str, api_key: Option<String>) -> Supplier {
        Supplier {
            id: id.to_owned(),
            base_url: base_url.to_owned(),
            api_key,
            auth: Auth::Dialect,
            query: Vec::new(),
            headers: Vec::new(),
        }
    }
}

impl fmt::Debug for Supplier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Supplier")
            .field("id", &self.id)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "<redacted>"))
            .field("auth", &self.auth)
            .field("query", &self.query)
            .field("headers", &self.headers)
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
    /// Token pricing. Image and video models without `rates` charge no
    /// tokens (`Fixed` at zero); they are priced per image or per second.
    pub pricing: Pricing,
    pub list_price: Option<Rates>,
    pub max_output_tokens: u32,
    /// The context window in tokens, when the operator states it.
    pub context_length: Option<u32>,
    pub modality: Modality,
    /// Configured but absent from every public view; inference on it is 404.
    pub hidden: bool,
    /// Who makes the model (shown as `owned_by`); never a supplier.
    pub vendor: Option<String>,
    /// Accepts image input publicly, even when no vision route is healthy.
    pub image_input: bool,
    /// Capabilities and tariff of a video model.
    pub video: Option<VideoSpec>,
    /// Unix seconds shown as `created` (0 when the file gives none).
    pub created: i64,
}

impl Model {
    /// The customer's fixed price per image, for an image model.
    pub fn image_price(&self) -> Option<NanoUsd> {
        match self.pricing {
            Pricing::PerImage(price) => Some(price),
            _ => None,
        }
    }

    /// A text model with these prices and nothing else set (tests, fixtures).
    pub fn text(id: &str, aliases: &[&str], pricing: Pricing) -> Model {
        Model {
            id: id.to_owned(),
            aliases: aliases.iter().map(|a| (*a).to_owned()).collect(),
            pricing,
            list_price: None,
            max_output_tokens: default_max_output_tokens(),
            context_length: None,
            modality: Modality::Text,
            hidden: false,
            vendor: None,
            image_input: false,
            video: None,
            created: 0,
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
    /// The OpenAI-compatible server's deviations (chat routes only).
    pub compat: Vec<ChatCompat>,
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
/// A model's pricing: token rates (text; video may omit them: it is priced
/// per second), or an image model's fixed price per image.
fn model_pricing(id: &str, m: &ModelFile) -> Result<Pricing, Problem> {
    if m.modality == Modality::Image {
        return match (m.image_price, m.pricing, &m.rates, &m.list_price) {
            (Some(price), None | Some(PricingKind::Fixed), None, None) if price >= 0 => {
                Ok(Pricing::PerImage(NanoUsd(price)))
            }
            _ => Err(Problem::ImagePricing {
                model: id.to_owned(),
            }),
        };
    }
    if m.image_price.is_some() {
        return Err(Problem::ImagePriceOnTextModel {
            model: id.to_owned(),
        });
    }
    match (m.pricing, &m.rates) {
        (Some(PricingKind::Fixed), Some(rates)) => Ok(Pricing::Fixed(rates.into())),
        (Some(PricingKind::Supply), _) => Ok(Pricing::Supply),
        // Video models are priced per second, not per token.
        (Some(PricingKind::Fixed) | None, None) if m.modality == Modality::Video => {
            Ok(Pricing::Fixed(Rates::default()))
        }
        (Some(PricingKind::Fixed), None) => Err(Problem::MissingRates {
            model: id.to_owned(),
        }),
        (None, _) => Err(Problem::MissingPricing {
            model: id.to_owned(),
        }),
    }
}

/// The loaded catalog. Immutable; reloads build a new one.
#[derive(Debug, Default)]
pub struct Catalog {
    models: HashMap<String, Arc<Model>>,
    /// Canonical IDs in file order (the order of every listing).
    order: Vec<String>,
    /// Alias or canonical ID -> canonical ID.
    names: HashMap<String, String>,
    /// Routes per canonical model ID, in file order.
    routes: HashMap<String, Vec<Arc<Route>>>,
}

/// The 1-based line of byte offset `at` in `text`.
fn line_of(text: &str, at: usize) -> usize {
    text.get(..at)
        .map_or(1, |head| head.matches('\n').count() + 1)
}

impl Catalog {
    pub fn load(path: &str) -> Result<Catalog, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|source| CatalogError::Read {
            path: path.to_owned(),
            source,
        })?;
        Catalog::parse(&text, path, |name| std::env::var(name).ok())
    }

    /// Parse a catalog; `env` resolves supplier API-key variables. Errors
    /// name the file as `<catalog>`.
    pub fn from_toml(
        text: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Catalog, CatalogError> {
        Catalog::parse(text, "<catalog>", env)
    }

    /// Parse a catalog read from `path` (named in errors).
    pub fn parse(
        text: &str,
        path: &str,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Catalog, CatalogError> {
        let invalid = |at: usize, problem: Problem| CatalogError::Invalid {
            path: path.to_owned(),
            line: line_of(text, at),
            problem,
        };
        let file: CatalogFile = toml::from_str(text).map_err(|e| {
            let at = e.span().map_or(0, |span| span.start);
            invalid(at, Problem::Toml(e.message().trim().to_owned()))
        })?;
        let mut suppliers = HashMap::new();
        for s in file.suppliers {
            let at = s.id.span().start;
            let id = s.id.into_inner();
            let base_url = s.base_url.trim_end_matches('/').to_owned();
            let connection = crate::connection::connection(
                &base_url,
                s.api_key_env.as_deref(),
                s.auth,
                s.query,
                s.headers,
                &env,
            )
            .map_err(|problem| {
                invalid(
                    at,
                    Problem::Connection {
                        supplier: id.clone(),
                        problem,
                    },
                )
            })?;
            let supplier = Supplier {
                api_key: s.api_key_env.as_deref().and_then(&env),
                id: id.clone(),
                base_url,
                auth: connection.auth,
                query: connection.query,
                headers: connection.headers,
            };
            if suppliers.insert(id.clone(), Arc::new(supplier)).is_some() {
                return Err(invalid(
                    at,
                    Problem::Duplicate {
                        kind: "supplier",
                        id,
                    },
                ));
            }
        }
        let mut catalog = Catalog::default();
        for m in file.models {
            let at = m.id.span().start;
            let model = model_from_file(m).map_err(|p| invalid(at, p))?;
            for name in std::iter::once(&model.id).chain(&model.aliases) {
                if catalog
                    .names
                    .insert(name.clone(), model.id.clone())
                    .is_some()
                {
                    return Err(invalid(
                        at,
                        Problem::Duplicate {
                            kind: "model or alias",
                            id: name.clone(),
                        },
                    ));
                }
            }
            catalog.order.push(model.id.clone());
            catalog.models.insert(model.id.clone(), Arc::new(model));
        }
        let mut route_ids = std::collections::HashSet::new();
        for r in file.routes {
            let at = r.id.span().start;
            let id = r.id.get_ref().clone();
            if !route_ids.insert(id.clone()) {
                return Err(invalid(at, Problem::Duplicate { kind: "route", id }));
            }
            let route =
                route_from_file(id, r, &catalog.models, &suppliers).map_err(|p| invalid(at, p))?;
            catalog
                .routes
                .entry(route.model.clone())
                .or_default()
                .push(Arc::new(route));
        }
        Ok(catalog)
    }

    /// Resolve a public model ID or alias (exact match, no case folding).
    /// A hidden model is not found (GP-46).
    pub fn model(&self, name: &str) -> Option<&Arc<Model>> {
        self.configured_model(name).filter(|m| !m.hidden)
    }

    /// Resolve an ID or alias among every configured model, hidden included.
    pub fn configured_model(&self, name: &str) -> Option<&Arc<Model>> {
        self.names.get(name).and_then(|id| self.models.get(id))
    }

    pub fn routes(&self, model_id: &str) -> &[Arc<Route>] {
        self.routes.get(model_id).map_or(&[], Vec::as_slice)
    }

    /// Every configured model (hidden ones included), in file order.
    pub fn models(&self) -> impl Iterator<Item = &Arc<Model>> {
        self.order.iter().filter_map(|id| self.models.get(id))
    }
}

fn model_from_file(m: ModelFile) -> Result<Model, Problem> {
    let id = m.id.get_ref().clone();
    let missing = |field: &'static str| Problem::MissingModalityField {
        model: id.clone(),
        field,
        article: "",
        modality: m.modality,
    };
    let pricing = model_pricing(&id, &m)?;
    let video = match (m.modality, m.video) {
        (Modality::Video, Some(v)) => Some(video_from_file(&id, v)?),
        (Modality::Video, None) => return Err(missing("video")),
        (_, None) => None,
        (_, Some(_)) => {
            return Err(Problem::MisplacedField {
                model: id,
                field: "video",
                modality: Modality::Video,
            });
        }
    };
    Ok(Model {
        id,
        aliases: m.aliases,
        pricing,
        list_price: m.list_price.as_ref().map(Rates::from),
        max_output_tokens: m.max_output_tokens,
        context_length: m.context_length,
        modality: m.modality,
        hidden: m.hidden,
        vendor: m.vendor,
        image_input: m.image_input,
        video,
        created: m.created,
    })
}

fn video_from_file(model: &str, v: VideoFile) -> Result<VideoSpec, Problem> {
    let invalid = |field: &'static str, reason: String| Problem::InvalidValue {
        model: model.to_owned(),
        field,
        reason,
    };
    if v.resolutions.is_empty() {
        return Err(invalid("video.resolutions", "must not be empty".into()));
    }
    if v.durations.is_empty() {
        return Err(invalid("video.durations", "must not be empty".into()));
    }
    for (resolution, rate) in &v.rates {
        if !v.resolutions.contains(resolution) {
            return Err(invalid(
                "video.rates",
                format!("`{resolution}` is not one of `video.resolutions`"),
            ));
        }
        if rate.minimum < 0 || rate.per_second < 0 {
            return Err(invalid(
                "video.rates",
                format!("the rate of `{resolution}` must not be negative"),
            ));
        }
    }
    Ok(VideoSpec {
        resolutions: v.resolutions,
        durations: v.durations,
        aspect_ratios: v.aspect_ratios,
        max_prompt_length: v.max_prompt_length,
        references: v.references,
        modes: v.modes,
        rates: v.rates,
    })
}

fn route_from_file(
    id: String,
    r: RouteFile,
    models: &HashMap<String, Arc<Model>>,
    suppliers: &HashMap<String, Arc<Supplier>>,
) -> Result<Route, Problem> {
    let model = models
        .get(&r.model)
        .ok_or_else(|| Problem::UnknownReference {
            route: id.clone(),
            kind: "model",
            id: r.model.clone(),
        })?;
    let supplier =
        suppliers
            .get(&r.supplier)
            .cloned()
            .ok_or_else(|| Problem::UnknownReference {
                route: id.clone(),
                kind: "supplier",
                id: r.supplier.clone(),
            })?;
    if r.protocol == Protocol::Completions {
        return Err(Problem::CompletionsRoute { route: id });
    }
    let serves = match model.modality {
        Modality::Text => !r.protocol.is_media(),
        Modality::Image => r.protocol == Protocol::Images,
        Modality::Video => r.protocol == Protocol::Videos,
    };
    if !serves {
        return Err(Problem::ProtocolModality {
            route: id,
            protocol: r.protocol,
            modality: model.modality,
        });
    }
    let images_route = r.protocol == Protocol::Images;
    if images_route != r.image_cost.is_some() || r.image_cost.is_some_and(|c| c < 0) {
        return Err(Problem::ImageRoute { route: id });
    }
    let internal_cost = match (&r.internal_cost, images_route) {
        (Some(cost), _) => cost.into(),
        (None, true) => Rates::default(),
        (None, false) => return Err(Problem::MissingInternalCost { route: id }),
    };
    if model.pricing == Pricing::Supply && r.quote.is_none() {
        return Err(Problem::MissingQuote {
            model: r.model,
            route: id,
        });
    }
    if !r.compat.is_empty() && r.protocol != Protocol::Chat {
        return Err(Problem::CompatOnChatOnly { route: id });
    }
    let mut capabilities = CapabilitySet::default();
    for name in &r.capabilities {
        let c: Capability = name.parse().map_err(|_| Problem::UnknownCapability {
            route: id.clone(),
            name: name.clone(),
        })?;
        capabilities.insert(c);
    }
    Ok(Route {
        id,
        model: r.model,
        supplier,
        upstream_model: r.upstream_model,
        protocol: r.protocol,
        capabilities,
        priority: r.priority,
        internal_cost,
        quote: r.quote.as_ref().map(Rates::from),
        enabled: r.enabled,
        zdr: r.zdr,
        betas: r.betas,
        max_output_tokens: model.max_output_tokens,
        image_cost: r.image_cost.map(NanoUsd),
        compat: r.compat,
    })
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
        assert_eq!(protocols.len(), 8, "the demo serves every route protocol");
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
    fn compat_options_load_on_chat_routes_only() {
        let with = SAMPLE.replace(
            "capabilities = [\"tools\", \"stop\"]",
            "capabilities = [\"tools\", \"stop\"]\ncompat = [\"developer_as_system\", \"max_tokens\"]",
        );
        let cat = Catalog::from_toml(&with, |_| None).unwrap();
        assert_eq!(
            cat.routes("m-fixed")[0].compat,
            [ChatCompat::DeveloperAsSystem, ChatCompat::MaxTokens]
        );
        let on_messages = with.replacen("protocol = \"chat\"", "protocol = \"messages\"", 1);
        assert!(matches!(
            Catalog::from_toml(&on_messages, |_| None)
                .unwrap_err()
                .problem(),
            Some(Problem::CompatOnChatOnly { .. })
        ));
        let unknown = with.replace("\"max_tokens\"", "\"no_json\"");
        assert!(Catalog::from_toml(&unknown, |_| None).is_err());
    }

    /// Image and video routes take every connection setting inference
    /// routes do (an Azure OpenAI resource's images deployment: `{model}`
    /// in the base URL, `api-key`, `api-version`).
    #[test]
    fn media_routes_take_suppliers_with_connection_settings() {
        let text = IMAGES.replace(
            "base_url = \"http://127.0.0.1:9/v1\"",
            "base_url = \"http://127.0.0.1:9/openai/deployments/{model}\"\n\
             auth = { type = \"header\", name = \"api-key\", key_env = \"AZ\" }\n\
             query = { api-version = \"2025-04-01-preview\" }\nheaders = { x-ms-client = \"r\" }",
        );
        let catalog =
            Catalog::from_toml(&text, |v| (v == "AZ").then(|| "secret".to_owned())).unwrap();
        let supplier = &catalog.routes("m-img")[0].supplier;
        assert_eq!(
            supplier.query,
            vec![("api-version".to_owned(), "2025-04-01-preview".to_owned())]
        );
        assert!(matches!(
            &supplier.auth,
            crate::connection::Auth::Header { name, secret }
                if name == "api-key" && secret.value.as_deref() == Some("secret")
        ));
    }

    #[test]
    fn bad_connection_settings_name_the_supplier_and_its_line() {
        let text = SAMPLE.replace(
            "api_key_env = \"S1_KEY\"",
            "api_key_env = \"S1_KEY\"\nauth = { type = \"none\" }",
        );
        let error = Catalog::from_toml(&text, |_| None).unwrap_err();
        assert!(matches!(error.problem(), Some(Problem::Connection { .. })));
        assert_eq!(
            error.to_string(),
            "<catalog>, line 3: supplier `s1`: field `api_key_env`: give either `api_key_env` or `auth`, not both"
        );
    }

    #[test]
    fn supply_priced_route_needs_a_quote() {
        let text = SAMPLE.replace("quote = { input = 30, output = 40 }", "");
        assert!(matches!(
            Catalog::from_toml(&text, |_| None).unwrap_err().problem(),
            Some(Problem::MissingQuote { .. })
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
            Catalog::from_toml(&text, |_| None).unwrap_err().problem(),
            Some(Problem::UnknownReference { .. })
        ));
    }

    const MEDIA: &str = r#"
[[suppliers]]
id = "s1"
base_url = "http://127.0.0.1:9/v1"

[[models]]
id = "vendor/img"
pricing = "fixed"
modality = "image"
image_price = 40_000_000
vendor = "acme"

[[models]]
id = "vendor/vid"
pricing = "fixed"
modality = "video"
hidden = true

[models.video]
resolutions = ["720p", "1080p"]
durations = [5, 10]
aspect_ratios = ["16:9"]
max_prompt_length = 2000
references = { images = 2, videos = 1, audios = 1, audio_videos = 1, total = 3 }
rates = { "720p" = { minimum = 100, per_second = 10 } }

[[routes]]
id = "img-r"
model = "vendor/img"
supplier = "s1"
upstream_model = "up-img"
protocol = "images"
internal_cost = { input = 0, output = 0 }
image_cost = 30_000_000

[[routes]]
id = "vid-r"
model = "vendor/vid"
supplier = "s1"
upstream_model = "up-vid"
protocol = "videos"
capabilities = ["prompt_cache"]
internal_cost = { input = 0, output = 0 }
"#;

    #[test]
    fn media_models_load_with_their_tables() {
        let cat = Catalog::from_toml(MEDIA, |_| None).unwrap();
        let img = cat.model("vendor/img").unwrap();
        assert_eq!(img.modality, Modality::Image);
        assert_eq!(img.image_price(), Some(NanoUsd(40_000_000)));
        assert_eq!(img.vendor.as_deref(), Some("acme"));
        assert_eq!(
            cat.routes("vendor/img")[0].image_cost,
            Some(NanoUsd(30_000_000))
        );
        // Hidden: configured, but not resolvable by the public (GP-46).
        assert!(cat.model("vendor/vid").is_none());
        let vid = cat.configured_model("vendor/vid").unwrap();
        let video = vid.video.as_ref().unwrap();
        assert_eq!(video.resolutions, ["720p", "1080p"]);
        assert_eq!(video.references.total, 3);
        assert_eq!(
            video.rates.get("720p"),
            Some(&VideoRate {
                minimum: 100,
                per_second: 10
            })
        );
        assert!(!video.rates.contains_key("1080p"), "listed without a rate");
        assert!(
            cat.routes("vendor/vid")[0]
                .capabilities
                .contains(Capability::PromptCache)
        );
        let order: Vec<&str> = cat.models().map(|m| m.id.as_str()).collect();
        assert_eq!(order, ["vendor/img", "vendor/vid"], "file order");
    }

    #[test]
    fn errors_name_the_file_line_and_field() {
        // A wrong type: the line of the value and the field's name.
        let text = SAMPLE.replace("priority = 1\n", "priority = \"high\"\n");
        let err = Catalog::parse(&text, "cat.toml", |_| None).unwrap_err();
        let line = SAMPLE.lines().position(|l| l == "priority = 1").unwrap() + 1;
        let CatalogError::Invalid { path, line: at, .. } = &err else {
            panic!("{err}")
        };
        assert_eq!((path.as_str(), *at), ("cat.toml", line), "{err}");
        // An unknown field is named.
        let text = SAMPLE.replace("pricing = \"supply\"", "pricing = \"supply\"\ncolour = 1");
        let err = Catalog::parse(&text, "cat.toml", |_| None).unwrap_err();
        assert!(err.to_string().contains("colour"), "{err}");
        // A semantic error points at the entry's `id` line.
        let err = Catalog::parse(
            &MEDIA.replace("image_price = 40_000_000\n", ""),
            "m.toml",
            |_| None,
        )
        .unwrap_err();
        let line = MEDIA
            .lines()
            .position(|l| l == "id = \"vendor/img\"")
            .unwrap()
            + 1;
        assert!(
            err.to_string()
                .starts_with(&format!("m.toml, line {line}: ")),
            "{err}"
        );
        assert!(err.to_string().contains("image_price"), "{err}");
    }

    #[test]
    fn media_fields_are_checked() {
        let bad = [
            // A rate for a resolution that is not offered.
            MEDIA.replace("\"720p\" = {", "\"4k\" = {"),
            // A text route on an image model.
            MEDIA.replace("protocol = \"images\"", "protocol = \"chat\""),
            // An images route needs its operator cost.
            MEDIA.replace("image_cost = 30_000_000", ""),
            // A video model needs its table.
            MEDIA.replace("[models.video]", "[models.other]"),
            // A text model cannot take an image price.
            SAMPLE.replace(
                "pricing = \"supply\"",
                "pricing = \"supply\"\nimage_price = 1",
            ),
            // Completions is not a route protocol.
            SAMPLE.replace("protocol = \"chat\"", "protocol = \"completions\""),
        ];
        for text in bad {
            assert!(Catalog::from_toml(&text, |_| None).is_err(), "{text}");
        }
    }
}
