//! What the operator can do to accounts, keys and requests, shared by the
//! admin API (`admin.rs`, over HTTP) and the `router` CLI (straight to the
//! database): one validation, one answer shape. Inputs are JSON values
//! checked strictly (an unknown field is refused, never dropped); answers
//! are the JSON the admin API returns.

use crate::app::App;
use router_canonical::{ApiError, ErrorCode, NanoUsd, PromptCacheMode};
use router_core::store::Scope;
use router_core::{KeyLimits, KeyPolicy, SpendWindow};
use router_store::api_keys::{ApiKeyChange, ApiKeyView};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use uuid::Uuid;

/// `value` as `T`; a field that does not fit is 400 `invalid_parameter`
/// naming its path.
pub fn from_json<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        ApiError::invalid(
            if path == "." { "body".to_owned() } else { path },
            e.inner().to_string(),
        )
    })
}

pub(crate) fn store_error(e: impl std::fmt::Display) -> ApiError {
    tracing::error!(error = %e, "admin storage failure");
    ApiError::new(ErrorCode::InternalError, "Storage failure.")
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewAccount {
    email: String,
    #[serde(default)]
    email_verified: bool,
}

/// Creates an account with an empty wallet: `{"email", "email_verified"?}`.
pub async fn create_account(app: &App, body: Value) -> Result<Value, ApiError> {
    let new: NewAccount = from_json(body)?;
    let account = app
        .database()
        .create_account(&new.email, new.email_verified)
        .await
        .map_err(|e| match e {
            router_store::AdminError::EmailTaken => ApiError::new(
                ErrorCode::Conflict,
                "An account with this email already exists.",
            )
            .with_param("email"),
            other => store_error(other),
        })?;
    let view = json!({
        "id": account.id,
        "email": account.email,
        "email_verified": account.email_verified,
        "balance_nano_usd": 0,
        "held_nano_usd": 0,
    });
    Ok(view)
}

/// An account with its wallet.
pub async fn show_account(app: &App, id: Uuid) -> Result<Value, ApiError> {
    let account = app
        .database()
        .get_account(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such account."))?;
    Ok(account_json(&account))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Credits {
    #[schema(minimum = 1)]
    amount_nano_usd: i64,
}

/// Adds credit to a wallet: `{"amount_nano_usd"}` (positive).
pub async fn credit_account(app: &App, id: Uuid, body: Value) -> Result<Value, ApiError> {
    let credits: Credits = from_json(body)?;
    if credits.amount_nano_usd <= 0 {
        return Err(ApiError::invalid(
            "amount_nano_usd",
            "The amount must be a positive integer of nano-USD.",
        ));
    }
    let balance = app
        .database()
        .grant_credits(id, NanoUsd(credits.amount_nano_usd))
        .await
        .map_err(|e| match e {
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such account.")
            }
            router_store::AdminError::BalanceTooLarge => ApiError::invalid(
                "amount_nano_usd",
                "The balance would exceed 9223372036854775807 nano-USD.",
            ),
            other => store_error(other),
        })?;
    Ok(json!({"account_id": id, "balance_nano_usd": balance.0}))
}

/// Deserializes a field that is present (possibly `null`) as `Some`, so an
/// absent field (`None`, by `#[serde(default)]`) and `null` (clear it) differ.
fn present<'de, D, T>(deserializer: D) -> Result<Option<Option<T>>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(deserializer).map(Some)
}

/// One rolling spend window as the admin API takes it.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SpendLimitJson {
    #[schema(maximum = 9_223_372_036_854_775_807_u64)]
    amount_nano_usd: u64,
    #[schema(minimum = 1, maximum = 9_223_372_036_854_775_807_u64)]
    window_seconds: u64,
}

/// A non-negative limit that fits the store's bigint.
fn limit_value(name: &str, value: u64) -> Result<i64, ApiError> {
    i64::try_from(value).map_err(|_| ApiError::invalid(name, format!("`{name}` is too large.")))
}

/// Spend windows: each window at least one second; no windows is no limit.
fn parse_spend_limits(windows: Vec<SpendLimitJson>) -> Result<Option<Vec<SpendWindow>>, ApiError> {
    let mut parsed = Vec::with_capacity(windows.len());
    for (i, window) in windows.into_iter().enumerate() {
        if window.window_seconds == 0 {
            return Err(ApiError::invalid(
                format!("spend_limits[{i}].window_seconds"),
                "A spend window lasts at least one second.",
            ));
        }
        parsed.push(SpendWindow {
            amount_nano_usd: limit_value("spend_limits.amount_nano_usd", window.amount_nano_usd)?,
            window_seconds: limit_value("spend_limits.window_seconds", window.window_seconds)?,
        });
    }
    Ok((!parsed.is_empty()).then_some(parsed))
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    account_id: Uuid,
    #[schema(value_type = Vec<crate::api_bodies::ScopeName>)]
    scopes: Vec<String>,
    /// Unix seconds.
    #[serde(default)]
    #[schema(maximum = 253_402_300_799_u64)]
    expires_at: Option<u64>,
    #[serde(default)]
    allowed_models: Option<Vec<String>>,
    #[serde(default)]
    ip_allowlist: Option<Vec<String>>,
    #[serde(default)]
    #[schema(pattern = "^(on|off|passthrough)$")]
    prompt_cache_mode: Option<String>,
    /// Opt in to the exact-response cache: 1 to 86400 seconds.
    #[serde(default)]
    #[schema(minimum = 1, maximum = 86_400)]
    response_cache_ttl_seconds: Option<u64>,
    #[serde(default)]
    spend_limits: Option<Vec<SpendLimitJson>>,
    #[serde(default)]
    monthly_budget_nano_usd: Option<u64>,
    #[serde(default)]
    requests_per_minute: Option<u64>,
    #[serde(default)]
    requests_per_day: Option<u64>,
    #[serde(default)]
    max_concurrent_requests: Option<u64>,
}

/// `PATCH /admin/api-keys/{id}`: each field present is changed; `null`
/// clears it (scopes cannot be null).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApiKeyPatch {
    #[serde(default)]
    #[schema(value_type = Option<Vec<crate::api_bodies::ScopeName>>)]
    scopes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    expires_at: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    allowed_models: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "present")]
    ip_allowlist: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "present")]
    prompt_cache_mode: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    response_cache_ttl_seconds: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    spend_limits: Option<Option<Vec<SpendLimitJson>>>,
    #[serde(default, deserialize_with = "present")]
    monthly_budget_nano_usd: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    requests_per_minute: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    requests_per_day: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    max_concurrent_requests: Option<Option<u64>>,
}

fn parse_scopes(names: &[String]) -> Result<Vec<Scope>, ApiError> {
    names
        .iter()
        .enumerate()
        .map(|(i, name)| {
            Scope::parse(name).ok_or_else(|| {
                ApiError::invalid(format!("scopes[{i}]"), format!("Unknown scope `{name}`."))
            })
        })
        .collect()
}

/// The latest `expires_at`: 9999-12-31T23:59:59Z. A later one used to
/// overflow the clock's arithmetic and end the connection without an answer.
pub const MAX_EXPIRES_AT: u64 = 253_402_300_799;

fn unix_time(seconds: u64) -> Result<std::time::SystemTime, ApiError> {
    if seconds > MAX_EXPIRES_AT {
        return Err(ApiError::invalid(
            "expires_at",
            format!("`expires_at` is Unix seconds up to {MAX_EXPIRES_AT}."),
        ));
    }
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

/// Every entry must name a model of the catalog, by ID or alias: a typo
/// would otherwise lock the key out of the model it was meant to allow.
fn parse_allowed_models(app: &App, names: Vec<String>) -> Result<Vec<String>, ApiError> {
    for (i, name) in names.iter().enumerate() {
        if app.gateway.catalog().model(name).is_none() {
            return Err(ApiError::invalid(
                format!("allowed_models[{i}]"),
                format!("No model or alias `{name}` in the catalog."),
            ));
        }
    }
    Ok(names)
}

fn parse_ip_allowlist(entries: &[String]) -> Result<Vec<ipnet::IpNet>, ApiError> {
    entries
        .iter()
        .enumerate()
        .map(|(i, entry)| {
            crate::client_addr::parse_network(entry).ok_or_else(|| {
                ApiError::invalid(
                    format!("ip_allowlist[{i}]"),
                    format!("`{entry}` is not an IP address or CIDR network."),
                )
            })
        })
        .collect()
}

/// The exact-response cache's TTL: 1 second to a day.
fn parse_response_cache_ttl(seconds: u64) -> Result<i32, ApiError> {
    let max = router_store::response_cache::MAX_TTL_SECONDS;
    i32::try_from(seconds)
        .ok()
        .filter(|s| (1..=max).contains(s))
        .ok_or_else(|| {
            ApiError::invalid(
                "response_cache_ttl_seconds",
                format!("`response_cache_ttl_seconds` is from 1 to {max}."),
            )
        })
}

fn parse_prompt_cache_mode(text: &str) -> Result<PromptCacheMode, ApiError> {
    PromptCacheMode::parse(text).ok_or_else(|| {
        ApiError::invalid(
            "prompt_cache_mode",
            format!("`{text}` is not one of `on`, `off`, `passthrough`."),
        )
    })
}

/// Issues a key (the secret is in the answer, once).
pub async fn create_api_key(app: &App, body: Value) -> Result<Value, ApiError> {
    let new: NewApiKey = from_json(body)?;
    let limit = |name: &str, value: Option<u64>| value.map(|v| limit_value(name, v)).transpose();
    let limits = KeyLimits {
        spend_limits: new
            .spend_limits
            .map(parse_spend_limits)
            .transpose()?
            .flatten(),
        monthly_budget_nano_usd: limit("monthly_budget_nano_usd", new.monthly_budget_nano_usd)?,
        requests_per_minute: limit("requests_per_minute", new.requests_per_minute)?,
        requests_per_day: limit("requests_per_day", new.requests_per_day)?,
        max_concurrent_requests: limit("max_concurrent_requests", new.max_concurrent_requests)?,
    };
    let scopes = parse_scopes(&new.scopes)?;
    let expires_at = new.expires_at.map(unix_time).transpose()?;
    let policy = KeyPolicy {
        allowed_models: new
            .allowed_models
            .map(|names| parse_allowed_models(app, names))
            .transpose()?,
        ip_allowlist: new
            .ip_allowlist
            .as_deref()
            .map(parse_ip_allowlist)
            .transpose()?,
        prompt_cache_mode: new
            .prompt_cache_mode
            .as_deref()
            .map(parse_prompt_cache_mode)
            .transpose()?,
        response_cache_ttl_seconds: new
            .response_cache_ttl_seconds
            .map(parse_response_cache_ttl)
            .transpose()?,
        limits,
        version: 0,
    };
    let key = app
        .database()
        .create_api_key(new.account_id, &scopes, expires_at, &policy)
        .await
        .map_err(|e| match e {
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::invalid("account_id", "No such account.")
            }
            other => store_error(other),
        })?;
    let names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let view = json!({
        "id": key.id,
        "key": key.key,
        "prefix": key.prefix,
        "account_id": new.account_id,
        "scopes": names,
        "expires_at": new.expires_at,
        "policy": policy_json(&policy),
    });
    Ok(view)
}

/// A key with its policy and what it has spent.
pub async fn show_api_key(app: &App, id: Uuid) -> Result<Value, ApiError> {
    let view = app
        .database()
        .get_api_key(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such API key."))?;
    let windows: Vec<i64> = view
        .policy
        .limits
        .spend_limits
        .iter()
        .flatten()
        .map(|w| w.window_seconds)
        .collect();
    let spend = app
        .database()
        .key_spend(id, &windows)
        .await
        .map_err(store_error)?;
    let mut body = api_key_json(&view);
    body["spend"] = json!({
        "month_to_date_nano_usd": spend.month_to_date_nano,
        "held_nano_usd": spend.held_nano,
        "windows": spend
            .windows
            .iter()
            .map(|(seconds, spent)| json!({"window_seconds": seconds, "spent_nano_usd": spent}))
            .collect::<Vec<_>>(),
    });
    Ok(body)
}

/// The keys of an account (deleted ones too, with `deleted_at`).
pub async fn list_api_keys(app: &App, account_id: Uuid) -> Result<Value, ApiError> {
    let keys = app
        .database()
        .list_api_keys(account_id)
        .await
        .map_err(store_error)?;
    let data: Vec<Value> = keys.iter().map(api_key_json).collect();
    Ok(json!({"object": "list", "data": data}))
}

/// Changes any subset of a key's scopes, expiry and policy; every
/// instance's key cache forgets the key at once (NOTIFY) and the policy
/// version goes up, so requests being admitted under the old policy are
/// refused (`policy_changed`, A-20).
pub async fn update_api_key(app: &App, id: Uuid, body: Value) -> Result<Value, ApiError> {
    let patch: ApiKeyPatch = from_json(body)?;
    let limit = |name: &str, value: Option<Option<u64>>| {
        value
            .map(|set| set.map(|v| limit_value(name, v)).transpose())
            .transpose()
    };
    let change = ApiKeyChange {
        scopes: patch.scopes.as_deref().map(parse_scopes).transpose()?,
        expires_at: patch
            .expires_at
            .map(|at| at.map(unix_time).transpose())
            .transpose()?,
        allowed_models: patch
            .allowed_models
            .map(|set| {
                set.map(|names| parse_allowed_models(app, names))
                    .transpose()
            })
            .transpose()?,
        ip_allowlist: patch
            .ip_allowlist
            .map(|set| set.as_deref().map(parse_ip_allowlist).transpose())
            .transpose()?,
        prompt_cache_mode: patch
            .prompt_cache_mode
            .map(|set| set.as_deref().map(parse_prompt_cache_mode).transpose())
            .transpose()?,
        response_cache_ttl_seconds: patch
            .response_cache_ttl_seconds
            .map(|set| set.map(parse_response_cache_ttl).transpose())
            .transpose()?,
        spend_limits: patch
            .spend_limits
            .map(|set| set.map(parse_spend_limits).transpose().map(Option::flatten))
            .transpose()?,
        monthly_budget_nano_usd: limit("monthly_budget_nano_usd", patch.monthly_budget_nano_usd)?,
        requests_per_minute: limit("requests_per_minute", patch.requests_per_minute)?,
        requests_per_day: limit("requests_per_day", patch.requests_per_day)?,
        max_concurrent_requests: limit("max_concurrent_requests", patch.max_concurrent_requests)?,
    };
    let view = app
        .database()
        .update_api_key(id, &change)
        .await
        .map_err(|e| match e {
            router_store::AdminError::ApiKeyNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such API key.")
            }
            other => store_error(other),
        })?;
    Ok(api_key_json(&view))
}

/// Deletes (revokes) a key at once on every instance.
pub async fn delete_api_key(app: &App, id: Uuid) -> Result<(), ApiError> {
    app.database()
        .delete_api_key(id)
        .await
        .map_err(|e| match e {
            router_store::AdminError::ApiKeyNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such API key.")
            }
            other => store_error(other),
        })?;
    Ok(())
}

/// One request's history.
pub async fn show_request(app: &App, id: Uuid) -> Result<Value, ApiError> {
    let view = app
        .database()
        .get_request(id)
        .await
        .map_err(store_error)?
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such request."))?;
    Ok(request_json(&view))
}

/// The admin view of a key: scopes, expiry (unix seconds, as set) and its
/// policy, every field present (`null` when unset).
fn api_key_json(view: &ApiKeyView) -> Value {
    json!({
        "id": view.id,
        "account_id": view.account_id,
        "prefix": view.prefix,
        "scopes": view.scopes,
        "created_at": view.created_at,
        "expires_at": view.expires_at.map(|at| at.timestamp()),
        "deleted_at": view.deleted_at,
        "policy": policy_json(&view.policy),
    })
}

fn policy_json(policy: &KeyPolicy) -> Value {
    json!({
        "allowed_models": policy.allowed_models,
        "ip_allowlist": policy
            .ip_allowlist
            .as_ref()
            .map(|nets| nets.iter().map(ToString::to_string).collect::<Vec<_>>()),
        "prompt_cache_mode": policy.prompt_cache_mode,
        "response_cache_ttl_seconds": policy.response_cache_ttl_seconds,
        "spend_limits": policy.limits.spend_limits.as_ref().map(|windows| {
            windows
                .iter()
                .map(|w| json!({"amount_nano_usd": w.amount_nano_usd, "window_seconds": w.window_seconds}))
                .collect::<Vec<_>>()
        }),
        "monthly_budget_nano_usd": policy.limits.monthly_budget_nano_usd,
        "requests_per_minute": policy.limits.requests_per_minute,
        "requests_per_day": policy.limits.requests_per_day,
        "max_concurrent_requests": policy.limits.max_concurrent_requests,
        "version": policy.version,
    })
}

/// The admin view of an account; money in integer nano-USD.
fn account_json(account: &router_store::AccountView) -> Value {
    json!({
        "id": account.id,
        "email": account.email,
        "email_verified": account.email_verified,
        "balance_nano_usd": account.balance_nano,
        "held_nano_usd": account.held_nano,
        "available_nano_usd": account.balance_nano - account.held_nano,
        "shortfall_count": account.shortfall_count,
        "shortfall_nano_usd": account.shortfall_nano,
        "created_at": account.created_at,
    })
}

/// The admin view of one request's history: status, charge, attempts, ledger.
fn request_json(view: &router_store::RequestView) -> Value {
    json!({
        "id": view.id,
        "account_id": view.account_id,
        "api_key_id": view.api_key_id,
        "model": view.model,
        "inbound_protocol": view.inbound_protocol,
        "protocol": view.recorded_protocol,
        "stream": view.stream,
        "status": view.status,
        "reserved_nano_usd": view.reserved_nano,
        "charged_nano_usd": view.charged_nano,
        "reported_nano_usd": view.reported_nano,
        "shortfall_nano_usd": view.shortfall_nano,
        "usage": view.usage,
        "route_id": view.route_id,
        "error_reason": view.error_reason,
        "created_at": view.created_at,
        "finished_at": view.finished_at,
        "experiment_id": view.experiment_id,
        "experiment_variant": view.experiment_variant,
        "cache_hit": view.cache_hit,
        "hold": view.hold,
        "attempts": view.attempts,
        "ledger": view.ledger_entries,
    })
}

/// The longest session the operator may open: a year.
const MAX_SESSION_TTL_SECS: u64 = 365 * 24 * 3600;

/// `POST /admin/accounts/{id}/sessions`: `{"ttl_seconds"?}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    /// 1 to 31,536,000; default `ROUTER_SESSION_TTL_SECS`.
    #[schema(minimum = 1, maximum = 31_536_000)]
    pub ttl_seconds: Option<u64>,
}

/// Opens a browser session for an account (support, or a dashboard behind
/// the operator's own sign-in). The cookie value is in the answer, once;
/// only its hash is stored.
pub async fn create_session(app: &App, account_id: Uuid, body: Value) -> Result<Value, ApiError> {
    let body: NewSession = from_json(body)?;
    let ttl = match body.ttl_seconds {
        None => app.session_ttl,
        Some(secs @ 1..=MAX_SESSION_TTL_SECS) => std::time::Duration::from_secs(secs),
        Some(_) => {
            return Err(ApiError::invalid(
                "ttl_seconds",
                format!("ttl_seconds must be between 1 and {MAX_SESSION_TTL_SECS}."),
            ));
        }
    };
    let session = app
        .database()
        .create_session(account_id, ttl)
        .await
        .map_err(|e| match e {
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such account.")
            }
            other => store_error(other),
        })?;
    Ok(json!({
        "id": session.id,
        "account_id": session.account_id,
        "cookie_name": crate::session::COOKIE_NAME,
        "cookie_value": session.token,
        "expires_at": session.expires_at,
    }))
}

/// Ends a session at once on every instance (each looks sessions up in the
/// database).
pub async fn revoke_session(app: &App, id: Uuid) -> Result<(), ApiError> {
    let revoked = app
        .database()
        .revoke_session(id)
        .await
        .map_err(store_error)?;
    if revoked {
        Ok(())
    } else {
        Err(ApiError::new(ErrorCode::NotFound, "No such session."))
    }
}

/// One variant as the admin API takes it (`router_core::Variant`).
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct VariantJson {
    #[schema(min_length = 1, max_length = 64)]
    name: String,
    /// Relative share of the traffic, at least 1.
    #[schema(minimum = 1, maximum = 10_000)]
    weight: u32,
    /// A system instruction the variant adds (or puts instead, `replace`).
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    #[schema(value_type = Option<String>, pattern = "^(prepend|replace)$")]
    system_mode: Option<router_core::SystemMode>,
    /// Another model of the catalog, by ID or alias.
    #[serde(default)]
    model: Option<String>,
}

#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct NewExperiment {
    #[schema(pattern = "^[A-Za-z0-9._-]{1,64}$")]
    slug: String,
    #[schema(min_items = 1, max_items = 20)]
    variants: Vec<VariantJson>,
}

/// `PATCH /admin/accounts/{id}/experiments/{slug}`.
#[derive(Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ExperimentPatch {
    #[schema(pattern = "^(running|paused|completed|promoted)$")]
    status: String,
    #[serde(default)]
    winner: Option<String>,
}

const MAX_VARIANTS: usize = 20;
const MAX_SYSTEM_CHARS: usize = 100_000;

/// A slug travels in a header (`X-CI-Experiment`): 1 to 64 letters,
/// digits, `.`, `_` or `-`.
fn valid_slug(slug: &str) -> bool {
    (1..=64).contains(&slug.len())
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn parse_variants(
    app: &App,
    variants: Vec<VariantJson>,
) -> Result<Vec<router_core::Variant>, ApiError> {
    if variants.is_empty() || variants.len() > MAX_VARIANTS {
        return Err(ApiError::invalid(
            "variants",
            format!("An experiment has 1 to {MAX_VARIANTS} variants."),
        ));
    }
    let mut parsed: Vec<router_core::Variant> = Vec::with_capacity(variants.len());
    for (i, v) in variants.into_iter().enumerate() {
        let at = |field: &str| format!("variants[{i}].{field}");
        if v.name.is_empty() || v.name.len() > 64 {
            return Err(ApiError::invalid(
                at("name"),
                "A name has 1 to 64 characters.",
            ));
        }
        if parsed.iter().any(|p| p.name == v.name) {
            return Err(ApiError::invalid(
                at("name"),
                format!("Two variants are named `{}`.", v.name),
            ));
        }
        if v.weight == 0 || v.weight > 10_000 {
            return Err(ApiError::invalid(
                at("weight"),
                "A weight is an integer from 1 to 10000.",
            ));
        }
        if v.system
            .as_ref()
            .is_some_and(|s| s.chars().count() > MAX_SYSTEM_CHARS)
        {
            return Err(ApiError::invalid(
                at("system"),
                format!("A system instruction has at most {MAX_SYSTEM_CHARS} characters."),
            ));
        }
        if v.system_mode.is_some() && v.system.is_none() {
            return Err(ApiError::invalid(
                at("system_mode"),
                "`system_mode` needs a `system` instruction.",
            ));
        }
        if let Some(model) = &v.model {
            let text_model = app
                .gateway
                .catalog()
                .model(model)
                .is_some_and(|m| m.modality == router_core::Modality::Text);
            if !text_model {
                return Err(ApiError::invalid(
                    at("model"),
                    format!("No text model or alias `{model}` in the catalog."),
                ));
            }
        }
        parsed.push(router_core::Variant {
            name: v.name,
            weight: v.weight,
            system: v.system,
            system_mode: v.system_mode.unwrap_or_default(),
            model: v.model,
        });
    }
    Ok(parsed)
}

fn no_such_experiment() -> ApiError {
    ApiError::new(ErrorCode::NotFound, "No such experiment.")
}

/// Creates a draft experiment: `{slug, variants}`; a slug the account
/// already uses is 409.
pub async fn create_experiment(
    app: &App,
    account_id: Uuid,
    body: Value,
) -> Result<Value, ApiError> {
    let new: NewExperiment = from_json(body)?;
    if !valid_slug(&new.slug) {
        return Err(ApiError::invalid(
            "slug",
            "A slug has 1 to 64 letters, digits, `.`, `_` or `-`.",
        ));
    }
    let variants = parse_variants(app, new.variants)?;
    let experiment = app
        .database()
        .create_experiment(account_id, &new.slug, &variants)
        .await
        .map_err(|e| match e {
            router_store::AdminError::Conflict => ApiError::new(
                ErrorCode::Conflict,
                "This account already has an experiment with this slug.",
            )
            .with_param("slug"),
            router_store::AdminError::AccountNotFound(_) => {
                ApiError::new(ErrorCode::NotFound, "No such account.")
            }
            other => store_error(other),
        })?;
    Ok(experiment_json(&experiment, &[]))
}

/// One experiment with its assignment counts per variant.
pub async fn show_experiment(app: &App, account_id: Uuid, slug: &str) -> Result<Value, ApiError> {
    let experiment = app
        .database()
        .find_experiment(account_id, slug)
        .await
        .map_err(store_error)?
        .ok_or_else(no_such_experiment)?;
    let counts = app
        .database()
        .experiment_assignments(experiment.id)
        .await
        .map_err(store_error)?;
    Ok(experiment_json(&experiment, &counts))
}

/// The account's experiments, each with its assignment counts.
pub async fn list_experiments(app: &App, account_id: Uuid) -> Result<Value, ApiError> {
    let experiments = app
        .database()
        .list_experiments(account_id)
        .await
        .map_err(store_error)?;
    let mut data = Vec::with_capacity(experiments.len());
    for experiment in &experiments {
        let counts = app
            .database()
            .experiment_assignments(experiment.id)
            .await
            .map_err(store_error)?;
        data.push(experiment_json(experiment, &counts));
    }
    Ok(json!({"object": "list", "data": data}))
}

/// Moves an experiment along draft → running ↔ paused → completed or
/// promoted (with `winner`); any other move is 409.
pub async fn update_experiment(
    app: &App,
    account_id: Uuid,
    slug: &str,
    body: Value,
) -> Result<Value, ApiError> {
    use router_core::ExperimentStatus;
    use router_store::experiments::StatusChange;
    let patch: ExperimentPatch = from_json(body)?;
    let to = ExperimentStatus::parse(&patch.status)
        .filter(|s| *s != ExperimentStatus::Draft)
        .ok_or_else(|| {
            ApiError::invalid(
                "status",
                "`status` is one of running, paused, completed, promoted.",
            )
        })?;
    match (to, &patch.winner) {
        (ExperimentStatus::Promoted, None) => {
            return Err(ApiError::invalid(
                "winner",
                "Promoting needs the `winner` variant's name.",
            ));
        }
        (ExperimentStatus::Promoted, Some(_)) => {}
        (_, Some(_)) => {
            return Err(ApiError::invalid(
                "winner",
                "`winner` is given only when promoting.",
            ));
        }
        (_, None) => {}
    }
    if let Some(winner) = &patch.winner {
        let current = app
            .database()
            .find_experiment(account_id, slug)
            .await
            .map_err(store_error)?
            .ok_or_else(no_such_experiment)?;
        if !current.variants.iter().any(|v| &v.name == winner) {
            return Err(ApiError::invalid(
                "winner",
                format!("No variant is named `{winner}`."),
            ));
        }
    }
    let change = app
        .database()
        .set_experiment_status(account_id, slug, to, patch.winner.as_deref())
        .await
        .map_err(store_error)?;
    match change {
        StatusChange::Changed(experiment) => {
            let counts = app
                .database()
                .experiment_assignments(experiment.id)
                .await
                .map_err(store_error)?;
            Ok(experiment_json(&experiment, &counts))
        }
        StatusChange::NotFound => Err(no_such_experiment()),
        StatusChange::Refused(from) => Err(ApiError::new(
            ErrorCode::Conflict,
            format!(
                "An experiment that is {} cannot become {}.",
                from.as_str(),
                to.as_str()
            ),
        )
        .with_param("status")),
    }
}

fn experiment_json(experiment: &router_core::Experiment, counts: &[(String, i64)]) -> Value {
    let variants: Vec<Value> = experiment
        .variants
        .iter()
        .map(|v| {
            let assigned = counts
                .iter()
                .find(|(name, _)| *name == v.name)
                .map_or(0, |(_, n)| *n);
            json!({
                "name": v.name,
                "weight": v.weight,
                "system": v.system,
                "system_mode": v.system.as_ref().map(|_| v.system_mode),
                "model": v.model,
                "assignments": assigned,
            })
        })
        .collect();
    json!({
        "id": experiment.id,
        "account_id": experiment.account_id,
        "slug": experiment.slug,
        "status": experiment.status,
        "winner": experiment.winner,
        "variants": variants,
    })
}
