//! The shapes of the catalog's JSON views for the server's OpenAPI document
//! (feature `openapi`). The views themselves are built as canonical JSON
//! values (`view.rs`, `models.rs`, `changes.rs`) so their bytes and ETags
//! stay stable; these types only describe them, next to the code that
//! builds them. Nothing constructs them: the server's schemathesis step
//! checks every answer against them.

#![allow(dead_code)]

use utoipa::ToSchema;

/// A model of the catalog (GP-18): the OpenAI model object and what the
/// router adds. `capabilities` and `pricing` depend on the modality
/// (docs/catalog.md).
#[derive(ToSchema)]
pub struct ModelEntry {
    id: String,
    /// `model`.
    object: String,
    /// `model` (Anthropic's model object).
    #[schema(rename = "type")]
    kind: String,
    /// The name to show (the ID).
    display_name: String,
    /// `created` as RFC 3339 (Anthropic's model object).
    #[schema(format = DateTime)]
    created_at: String,
    /// `active` (Anthropic's model object).
    lifecycle: String,
    /// `context_length` (Anthropic's model object).
    #[schema(required)]
    max_input_tokens: Option<u32>,
    /// `max_output_tokens` (Anthropic's model object).
    max_tokens: u32,
    /// Unix seconds.
    created: i64,
    owned_by: String,
    aliases: Vec<String>,
    /// `text`, `image` or `video`.
    modality: String,
    protocols: Vec<String>,
    /// The router's capability flags (GP-18); for a request carrying
    /// `anthropic-version`, Anthropic's `ModelCapabilities` objects.
    #[schema(value_type = Object)]
    capabilities: serde_json::Value,
    #[schema(required)]
    context_length: Option<u32>,
    max_output_tokens: u32,
    image_input: bool,
    zdr: bool,
    #[schema(value_type = Object)]
    pricing: serde_json::Value,
}

/// `GET /v1/models`: the models this key may use.
#[derive(ToSchema)]
pub struct ModelList {
    /// `list`.
    object: String,
    data: Vec<ModelEntry>,
    /// Whether models follow this page (Anthropic's list envelope).
    has_more: bool,
    /// The first model's ID, `null` for an empty page.
    #[schema(required)]
    first_id: Option<String>,
    /// The last model's ID, `null` for an empty page.
    #[schema(required)]
    last_id: Option<String>,
    /// The SHA-256 of exactly `data`.
    pricing_version: String,
    /// Always `null`: prices are the configured catalog's.
    #[schema(required, value_type = Option<String>)]
    pricing_checked_at: Option<String>,
    pricing_observed_at: String,
    #[schema(required)]
    pricing_updated_at: Option<String>,
    release: i64,
}

/// One anonymous offer of a model.
#[derive(ToSchema)]
pub struct SupplyOffer {
    /// `s1`, `s2`, ...: this answer's only name for a route.
    supply: String,
    input_usd_per_mtok: f64,
    output_usd_per_mtok: f64,
    #[schema(required)]
    input_discount_percent: Option<f64>,
    #[schema(required)]
    output_discount_percent: Option<f64>,
    zdr: bool,
    capabilities: Vec<String>,
}

/// `GET /v1/models/supply`: the eligible supply of one model, cheapest first.
#[derive(ToSchema)]
pub struct ModelSupply {
    /// `list`.
    object: String,
    model: String,
    data: Vec<SupplyOffer>,
}

/// How many suppliers price a model.
#[derive(ToSchema)]
pub struct SupplierCount {
    count: i64,
}

/// One model of a comparison; `found: false` has every other field `null`.
#[derive(ToSchema)]
pub struct Comparison {
    /// As asked.
    model: String,
    #[schema(required)]
    id: Option<String>,
    found: bool,
    #[schema(required)]
    billed_usd: Option<f64>,
    #[schema(required)]
    billed_nano_usd: Option<i64>,
    #[schema(required)]
    suppliers: Option<SupplierCount>,
}

/// `GET /v1/models/compare`: priced ascending, then unpriced, then unknown.
#[derive(ToSchema)]
pub struct ModelComparison {
    /// `list`.
    object: String,
    estimate: bool,
    prompt_tokens: u64,
    completion_tokens: u64,
    requests: u64,
    data: Vec<Comparison>,
}

/// The latest price change of one model.
#[derive(ToSchema)]
pub struct PriceChange {
    model_id: String,
    /// `updated` or `removed` (GP-28).
    kind: String,
    changed_at: String,
    /// The model's entry; `null` when the change removed it (GP-28).
    #[schema(required, value_type = Option<Object>)]
    model: Option<serde_json::Value>,
    #[schema(required, value_type = Option<Object>)]
    previous: Option<serde_json::Value>,
    #[schema(required, value_type = Option<Object>)]
    current: Option<serde_json::Value>,
}

/// `GET /v1/pricing/changes`.
#[derive(ToSchema)]
pub struct PriceChanges {
    data: Vec<PriceChange>,
    /// Where the next page starts; `null` on the last.
    #[schema(required)]
    next_cursor: Option<String>,
    /// `configured_catalog`.
    source: String,
    #[schema(required, value_type = Option<String>)]
    pricing_checked_at: Option<String>,
}

/// `GET /public/models`.
#[derive(ToSchema)]
pub struct PublicModels {
    models: Vec<ModelEntry>,
}

/// One logical model with its public tariff (camelCase, GP-19).
#[derive(ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct CatalogModel {
    id: String,
    aliases: Vec<String>,
    #[schema(required)]
    vendor: Option<String>,
    modality: String,
    protocols: Vec<String>,
    #[schema(value_type = Object)]
    capabilities: serde_json::Value,
    #[schema(required)]
    context_length: Option<u32>,
    max_output_tokens: u32,
    image_input: bool,
    #[schema(value_type = Object)]
    public_pricing: serde_json::Value,
}

/// `GET /catalog/models`.
#[derive(ToSchema)]
pub struct CatalogModels {
    models: Vec<CatalogModel>,
}
