//! API keys as the operator sees them: issued (the secret in the answer,
//! once), shown with what they spent, listed, changed, deleted; and the
//! rules of their scopes, expiry and policy (allowed models of the catalog,
//! client networks, prompt-cache mode, the exact-response cache, limits).

use crate::error::{OperatorError, Refusal, Resource};
use crate::{List, Operator};
use chrono::{DateTime, Utc};
use router_core::PromptCacheMode;
use router_core::key_policy::parse_network;
use router_core::store::Scope;
use router_core::{Catalog, KeyLimits, KeyPolicy, SpendWindow};
use router_store::AdminError;
use router_store::api_keys::{ApiKeyChange, ApiKeyView};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

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
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct SpendLimitJson {
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub amount_nano_usd: u64,
    #[cfg_attr(
        feature = "openapi",
        schema(minimum = 1, maximum = 9_223_372_036_854_775_807_u64)
    )]
    pub window_seconds: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewApiKey {
    pub account_id: Uuid,
    pub scopes: Vec<String>,
    /// Unix seconds.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 253_402_300_799_u64))]
    pub expires_at: Option<u64>,
    #[serde(default)]
    pub allowed_models: Option<Vec<String>>,
    #[serde(default)]
    pub ip_allowlist: Option<Vec<String>>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(pattern = "^(on|off|passthrough)$"))]
    pub prompt_cache_mode: Option<String>,
    /// Opt in to the exact-response cache: 1 to 86400 seconds.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 86_400))]
    pub response_cache_ttl_seconds: Option<u64>,
    #[serde(default)]
    pub spend_limits: Option<Vec<SpendLimitJson>>,
    #[serde(default)]
    pub monthly_budget_nano_usd: Option<u64>,
    #[serde(default)]
    pub requests_per_minute: Option<u64>,
    #[serde(default)]
    pub requests_per_day: Option<u64>,
    #[serde(default)]
    pub max_concurrent_requests: Option<u64>,
}

/// `PATCH /admin/api-keys/{id}`: each field present is changed; `null`
/// clears it (scopes cannot be null).
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ApiKeyPatch {
    #[serde(default)]
    pub scopes: Option<Vec<String>>,
    #[serde(default, deserialize_with = "present")]
    pub expires_at: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub allowed_models: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "present")]
    pub ip_allowlist: Option<Option<Vec<String>>>,
    #[serde(default, deserialize_with = "present")]
    pub prompt_cache_mode: Option<Option<String>>,
    #[serde(default, deserialize_with = "present")]
    pub response_cache_ttl_seconds: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub spend_limits: Option<Option<Vec<SpendLimitJson>>>,
    #[serde(default, deserialize_with = "present")]
    pub monthly_budget_nano_usd: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub requests_per_minute: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub requests_per_day: Option<Option<u64>>,
    #[serde(default, deserialize_with = "present")]
    pub max_concurrent_requests: Option<Option<u64>>,
}

/// A key's policy as the operator sees it: every field present, `null`
/// when unset.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Policy {
    #[cfg_attr(feature = "openapi", schema(required))]
    pub allowed_models: Option<Vec<String>>,
    /// Networks in CIDR form.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub ip_allowlist: Option<Vec<String>>,
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<String>))]
    pub prompt_cache_mode: Option<PromptCacheMode>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub response_cache_ttl_seconds: Option<i32>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub spend_limits: Option<Vec<SpendLimit>>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub monthly_budget_nano_usd: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub requests_per_minute: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub requests_per_day: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub max_concurrent_requests: Option<i64>,
    /// Goes up with every change of the policy.
    pub version: i64,
}

/// One rolling spend window of a key's policy.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendLimit {
    pub amount_nano_usd: i64,
    pub window_seconds: i64,
}

impl From<&KeyPolicy> for Policy {
    fn from(policy: &KeyPolicy) -> Self {
        Policy {
            allowed_models: policy.allowed_models.clone(),
            ip_allowlist: policy
                .ip_allowlist
                .as_ref()
                .map(|nets| nets.iter().map(ToString::to_string).collect()),
            prompt_cache_mode: policy.prompt_cache_mode,
            response_cache_ttl_seconds: policy.response_cache_ttl_seconds,
            spend_limits: policy.limits.spend_limits.as_ref().map(|windows| {
                windows
                    .iter()
                    .map(|w| SpendLimit {
                        amount_nano_usd: w.amount_nano_usd,
                        window_seconds: w.window_seconds,
                    })
                    .collect()
            }),
            monthly_budget_nano_usd: policy.limits.monthly_budget_nano_usd,
            requests_per_minute: policy.limits.requests_per_minute,
            requests_per_day: policy.limits.requests_per_day,
            max_concurrent_requests: policy.limits.max_concurrent_requests,
            version: policy.version,
        }
    }
}

/// A key just issued: the only answer that carries its secret.
#[derive(Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct IssuedKey {
    pub id: Uuid,
    /// The secret, shown once; only its hash is stored.
    pub key: String,
    pub prefix: String,
    pub account_id: Uuid,
    pub scopes: Vec<String>,
    /// Unix seconds, as set.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub expires_at: Option<u64>,
    pub policy: Policy,
}

impl std::fmt::Debug for IssuedKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedKey")
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .field("prefix", &self.prefix)
            .field("account_id", &self.account_id)
            .finish_non_exhaustive()
    }
}

/// A key: scopes, expiry (unix seconds) and policy, every field present
/// (`null` when unset).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiKey {
    pub id: Uuid,
    pub account_id: Uuid,
    pub prefix: String,
    /// As stored, including any this build does not know.
    pub scopes: Vec<String>,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub created_at: DateTime<Utc>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub expires_at: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<String>))]
    pub deleted_at: Option<DateTime<Utc>>,
    pub policy: Policy,
}

impl From<&ApiKeyView> for ApiKey {
    fn from(view: &ApiKeyView) -> Self {
        ApiKey {
            id: view.id,
            account_id: view.account_id,
            prefix: view.prefix.clone(),
            scopes: view.scopes.clone(),
            created_at: view.created_at,
            expires_at: view.expires_at.map(|at| at.timestamp()),
            deleted_at: view.deleted_at,
            policy: Policy::from(&view.policy),
        }
    }
}

/// A key with what it has spent.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ApiKeyWithSpend {
    #[serde(flatten)]
    pub key: ApiKey,
    pub spend: KeySpend,
}

/// What a key has spent: this UTC month, held now, and per spend window.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeySpend {
    pub month_to_date_nano_usd: i64,
    pub held_nano_usd: i64,
    pub windows: Vec<WindowSpend>,
}

/// Charges in one spend window plus the key's live holds.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct WindowSpend {
    pub window_seconds: i64,
    pub spent_nano_usd: i64,
}

/// A non-negative limit that fits the store's bigint.
fn limit_value(field: &'static str, value: u64) -> Result<i64, Refusal> {
    i64::try_from(value).map_err(|_| Refusal::TooLarge { field })
}

/// Spend windows: each window at least one second; no windows is no limit.
fn parse_spend_limits(windows: Vec<SpendLimitJson>) -> Result<Option<Vec<SpendWindow>>, Refusal> {
    let mut parsed = Vec::with_capacity(windows.len());
    for (index, window) in windows.into_iter().enumerate() {
        if window.window_seconds == 0 {
            return Err(Refusal::EmptySpendWindow { index });
        }
        parsed.push(SpendWindow {
            amount_nano_usd: limit_value("spend_limits.amount_nano_usd", window.amount_nano_usd)?,
            window_seconds: limit_value("spend_limits.window_seconds", window.window_seconds)?,
        });
    }
    Ok((!parsed.is_empty()).then_some(parsed))
}

fn parse_scopes(names: &[String]) -> Result<Vec<Scope>, Refusal> {
    names
        .iter()
        .enumerate()
        .map(|(index, name)| {
            Scope::parse(name).ok_or_else(|| Refusal::UnknownScope {
                index,
                name: name.clone(),
            })
        })
        .collect()
}

/// The latest `expires_at`: 9999-12-31T23:59:59Z. A later one used to
/// overflow the clock's arithmetic and end the connection without an answer.
pub const MAX_EXPIRES_AT: u64 = 253_402_300_799;

fn unix_time(seconds: u64) -> Result<std::time::SystemTime, Refusal> {
    if seconds > MAX_EXPIRES_AT {
        return Err(Refusal::ExpiresTooLate {
            max: MAX_EXPIRES_AT,
        });
    }
    Ok(std::time::UNIX_EPOCH + std::time::Duration::from_secs(seconds))
}

/// Every entry must name a model of the catalog, by ID or alias: a typo
/// would otherwise lock the key out of the model it was meant to allow.
fn parse_allowed_models(catalog: &Catalog, names: Vec<String>) -> Result<Vec<String>, Refusal> {
    if let Some((index, name)) = names
        .iter()
        .enumerate()
        .find(|(_, name)| catalog.model(name).is_none())
    {
        return Err(Refusal::UnknownModel {
            index,
            name: name.clone(),
        });
    }
    Ok(names)
}

fn parse_ip_allowlist(entries: &[String]) -> Result<Vec<ipnet::IpNet>, Refusal> {
    entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            parse_network(entry).ok_or_else(|| Refusal::NotANetwork {
                index,
                entry: entry.clone(),
            })
        })
        .collect()
}

/// The exact-response cache's TTL: 1 second to a day.
fn parse_response_cache_ttl(seconds: u64) -> Result<i32, Refusal> {
    let max = router_store::response_cache::MAX_TTL_SECONDS;
    i32::try_from(seconds)
        .ok()
        .filter(|s| (1..=max).contains(s))
        .ok_or(Refusal::ResponseCacheTtl { max })
}

fn parse_prompt_cache_mode(text: &str) -> Result<PromptCacheMode, Refusal> {
    PromptCacheMode::parse(text).ok_or_else(|| Refusal::PromptCacheMode(text.to_owned()))
}

impl Operator {
    /// Issues a key (the secret is in the answer, once). Its allowed models
    /// must be in `catalog`.
    pub async fn create_api_key(
        &self,
        catalog: &Catalog,
        new: NewApiKey,
    ) -> Result<IssuedKey, OperatorError> {
        let limit = |field, value: Option<u64>| value.map(|v| limit_value(field, v)).transpose();
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
                .map(|names| parse_allowed_models(catalog, names))
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
        let key = self
            .database
            .create_api_key(new.account_id, &scopes, expires_at, &policy)
            .await
            .map_err(|e| match e {
                AdminError::AccountNotFound(_) => Refusal::NoSuchAccountId.into(),
                other => OperatorError::store(other),
            })?;
        Ok(IssuedKey {
            id: key.id,
            key: key.key,
            prefix: key.prefix,
            account_id: new.account_id,
            scopes: scopes.iter().map(|s| s.as_str().to_owned()).collect(),
            expires_at: new.expires_at,
            policy: Policy::from(&policy),
        })
    }

    /// A key with its policy and what it has spent.
    pub async fn api_key(&self, id: Uuid) -> Result<ApiKeyWithSpend, OperatorError> {
        let view = self
            .database
            .get_api_key(id)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::ApiKey))?;
        let windows: Vec<i64> = view
            .policy
            .limits
            .spend_limits
            .iter()
            .flatten()
            .map(|w| w.window_seconds)
            .collect();
        let spend = self
            .database
            .key_spend(id, &windows)
            .await
            .map_err(OperatorError::store)?;
        Ok(ApiKeyWithSpend {
            key: ApiKey::from(&view),
            spend: KeySpend {
                month_to_date_nano_usd: spend.month_to_date_nano,
                held_nano_usd: spend.held_nano,
                windows: spend
                    .windows
                    .iter()
                    .map(|&(window_seconds, spent_nano_usd)| WindowSpend {
                        window_seconds,
                        spent_nano_usd,
                    })
                    .collect(),
            },
        })
    }

    /// The keys of an account (deleted ones too, with `deleted_at`).
    pub async fn api_keys(&self, account_id: Uuid) -> Result<List<ApiKey>, OperatorError> {
        let keys = self
            .database
            .list_api_keys(account_id)
            .await
            .map_err(OperatorError::store)?;
        Ok(List::of(keys.iter().map(ApiKey::from).collect()))
    }

    /// Changes any subset of a key's scopes, expiry and policy; every
    /// instance's key cache forgets the key at once (NOTIFY) and the policy
    /// version goes up, so requests being admitted under the old policy are
    /// refused (`policy_changed`, A-20). Allowed models must be in `catalog`.
    pub async fn update_api_key(
        &self,
        catalog: &Catalog,
        id: Uuid,
        patch: ApiKeyPatch,
    ) -> Result<ApiKey, OperatorError> {
        let limit = |field, value: Option<Option<u64>>| {
            value
                .map(|set| set.map(|v| limit_value(field, v)).transpose())
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
                    set.map(|names| parse_allowed_models(catalog, names))
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
            monthly_budget_nano_usd: limit(
                "monthly_budget_nano_usd",
                patch.monthly_budget_nano_usd,
            )?,
            requests_per_minute: limit("requests_per_minute", patch.requests_per_minute)?,
            requests_per_day: limit("requests_per_day", patch.requests_per_day)?,
            max_concurrent_requests: limit(
                "max_concurrent_requests",
                patch.max_concurrent_requests,
            )?,
        };
        let view = self
            .database
            .update_api_key(id, &change)
            .await
            .map_err(|e| match e {
                AdminError::ApiKeyNotFound(_) => OperatorError::NotFound(Resource::ApiKey),
                other => OperatorError::store(other),
            })?;
        Ok(ApiKey::from(&view))
    }

    /// Deletes (revokes) a key at once on every instance.
    pub async fn delete_api_key(&self, id: Uuid) -> Result<(), OperatorError> {
        self.database.delete_api_key(id).await.map_err(|e| match e {
            AdminError::ApiKeyNotFound(_) => OperatorError::NotFound(Resource::ApiKey),
            other => OperatorError::store(other),
        })
    }
}
