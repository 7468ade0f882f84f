//! API keys: issuing (the secret is shown once), hashing, lookup, policy
//! changes and deletion.
//!
//! Only SHA-256 of a secret is stored. Secrets carry 192 bits of randomness,
//! so an unsalted, indexed hash is safe to look up by and cannot be reversed
//! by guessing.

use crate::error::{AdminError, is_foreign_key_violation, store_error};
use crate::schema::{accounts, api_keys};
use crate::timestamps::to_db;
use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::{BoolExpressionMethods, ExpressionMethods, OptionalExtension, QueryDsl};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use ipnet::IpNet;
use router_core::PromptCacheMode;
use router_core::store::{ApiKeyRecord, Scope, StoreError};
use router_core::{KeyLimits, KeyPolicy, SpendWindow};
use std::fmt;
use std::sync::Arc;
use std::time::SystemTime;
use uuid::Uuid;

/// Every secret starts with this, so leaked keys are recognisable to
/// secret scanners and to people.
pub const SECRET_PREFIX: &str = "sk-rt-";

/// How many leading characters of a secret are kept for display
/// (`sk-rt-` and six hex digits): enough to tell keys apart, far too few to
/// guess the rest.
pub const DISPLAY_PREFIX_LEN: usize = 12;

/// The PostgreSQL NOTIFY channel on which a trigger announces keys whose
/// deletion, expiry, scopes or policy changed; the payload is the hex SHA-256 of the
/// key's secret (what key caches are keyed by), never the secret.
pub const API_KEY_CHANGED_CHANNEL: &str = "router_api_key_changed";

/// The SHA-256 of a presented secret, as stored in `api_keys.key_hash`:
/// core's, which hashes what a client presents with this same function.
pub use router_core::access::hash_api_key;

/// A freshly issued key. `key` is the secret: return it to the operator
/// once; it is not stored and cannot be recovered.
#[derive(Clone, PartialEq, Eq, serde::Serialize)]
pub struct NewApiKey {
    pub id: Uuid,
    pub key: String,
    /// The first [`DISPLAY_PREFIX_LEN`] characters of `key`.
    pub prefix: String,
}

impl fmt::Debug for NewApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewApiKey")
            .field("id", &self.id)
            .field("key", &"<redacted>")
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// `sk-rt-` and 48 hex digits (192 bits).
fn generate_secret() -> String {
    format!("{SECRET_PREFIX}{}", crate::secret::random_hex(24))
}

/// Issues a key for `account_id` with `scopes` and `policy` (its version is
/// ignored: a new key starts at 0), optionally expiring.
pub async fn create_api_key(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    scopes: &[Scope],
    expires_at: Option<SystemTime>,
    policy: &KeyPolicy,
) -> Result<NewApiKey, AdminError> {
    let id = Uuid::now_v7();
    let key = generate_secret();
    let prefix: String = key.chars().take(DISPLAY_PREFIX_LEN).collect();
    let hash = hash_api_key(&key);
    let scopes: Vec<&str> = scopes.iter().map(|scope| scope.as_str()).collect();
    diesel::insert_into(api_keys::table)
        .values((
            api_keys::id.eq(id),
            api_keys::account_id.eq(account_id),
            api_keys::key_hash.eq(&hash[..]),
            api_keys::display_prefix.eq(&prefix),
            api_keys::scopes.eq(&scopes),
            api_keys::expires_at.eq(expires_at.map(to_db)),
            api_keys::allowed_models.eq(&policy.allowed_models),
            api_keys::ip_allowlist.eq(policy.ip_allowlist.as_deref().map(networks_text)),
            api_keys::prompt_cache_mode.eq(policy.prompt_cache_mode.map(mode_text)),
            api_keys::response_cache_ttl_seconds.eq(policy.response_cache_ttl_seconds),
            LimitColumns::of(&policy.limits),
        ))
        .execute(conn)
        .await
        .map_err(|error| {
            if is_foreign_key_violation(&error, "api_keys_account_id_fkey") {
                AdminError::AccountNotFound(account_id)
            } else {
                error.into()
            }
        })?;
    Ok(NewApiKey { id, key, prefix })
}

/// Soft-deletes a key: it stops authenticating at once (caches hear of it
/// on [`API_KEY_CHANGED_CHANNEL`]) and stays for history.
pub async fn delete_api_key(conn: &mut AsyncPgConnection, id: Uuid) -> Result<(), AdminError> {
    let deleted = diesel::update(api_keys::table)
        .filter(api_keys::id.eq(id))
        .filter(api_keys::deleted_at.is_null())
        .set(api_keys::deleted_at.eq(now))
        .execute(conn)
        .await?;
    match deleted {
        0 => Err(AdminError::ApiKeyNotFound(id)),
        _ => Ok(()),
    }
}

/// A change to a key; each `Some` field is set, an inner `None` clears it.
/// Every change bumps the key's policy version and, through the
/// `api_keys_changed` trigger, invalidates every instance's key cache.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiKeyChange {
    pub scopes: Option<Vec<Scope>>,
    pub expires_at: Option<Option<SystemTime>>,
    pub allowed_models: Option<Option<Vec<String>>>,
    pub ip_allowlist: Option<Option<Vec<IpNet>>>,
    pub prompt_cache_mode: Option<Option<PromptCacheMode>>,
    pub response_cache_ttl_seconds: Option<Option<i32>>,
    pub spend_limits: Option<Option<Vec<SpendWindow>>>,
    pub monthly_budget_nano_usd: Option<Option<i64>>,
    pub requests_per_minute: Option<Option<i64>>,
    pub requests_per_day: Option<Option<i64>>,
    pub max_concurrent_requests: Option<Option<i64>>,
}

/// A key's limits as stored: the spend windows as two arrays paired by
/// position, `NULL` for "unlimited".
#[derive(diesel::Insertable)]
#[diesel(table_name = api_keys)]
struct LimitColumns {
    spend_limit_nano: Option<Vec<i64>>,
    spend_limit_seconds: Option<Vec<i64>>,
    monthly_budget_nano: Option<i64>,
    requests_per_minute: Option<i64>,
    requests_per_day: Option<i64>,
    max_concurrent_requests: Option<i64>,
}

impl LimitColumns {
    fn of(limits: &KeyLimits) -> Self {
        let (nano, seconds) = spend_arrays(limits.spend_limits.as_deref());
        LimitColumns {
            spend_limit_nano: nano,
            spend_limit_seconds: seconds,
            monthly_budget_nano: limits.monthly_budget_nano_usd,
            requests_per_minute: limits.requests_per_minute,
            requests_per_day: limits.requests_per_day,
            max_concurrent_requests: limits.max_concurrent_requests,
        }
    }
}

type SpendArrays = (Option<Vec<i64>>, Option<Vec<i64>>);

fn spend_arrays(windows: Option<&[SpendWindow]>) -> SpendArrays {
    match windows {
        None => (None, None),
        Some(windows) => (
            Some(windows.iter().map(|w| w.amount_nano_usd).collect()),
            Some(windows.iter().map(|w| w.window_seconds).collect()),
        ),
    }
}

/// The limits of a stored row. Unpaired arrays (which a CHECK forbids)
/// would read as the windows they pair up to.
pub(crate) fn limits_from_row(row: LimitRow) -> KeyLimits {
    let (nano, seconds, monthly, per_minute, per_day, concurrent) = row;
    KeyLimits {
        spend_limits: nano.zip(seconds).map(|(nano, seconds)| {
            nano.into_iter()
                .zip(seconds)
                .map(|(amount_nano_usd, window_seconds)| SpendWindow {
                    amount_nano_usd,
                    window_seconds,
                })
                .collect()
        }),
        monthly_budget_nano_usd: monthly,
        requests_per_minute: per_minute,
        requests_per_day: per_day,
        max_concurrent_requests: concurrent,
    }
}

#[derive(diesel::AsChangeset)]
#[diesel(table_name = api_keys)]
struct KeyChangeset {
    scopes: Option<Vec<String>>,
    expires_at: Option<Option<DateTime<Utc>>>,
    allowed_models: Option<Option<Vec<String>>>,
    ip_allowlist: Option<Option<Vec<String>>>,
    prompt_cache_mode: Option<Option<&'static str>>,
    response_cache_ttl_seconds: Option<Option<i32>>,
    spend_limit_nano: Option<Option<Vec<i64>>>,
    spend_limit_seconds: Option<Option<Vec<i64>>>,
    monthly_budget_nano: Option<Option<i64>>,
    requests_per_minute: Option<Option<i64>>,
    requests_per_day: Option<Option<i64>>,
    max_concurrent_requests: Option<Option<i64>>,
}

/// Applies `change` to the active (not deleted) key `id` and returns the key
/// as it now is. The policy version goes up by one in the same statement, so
/// a request admitted under the old policy cannot reserve.
pub async fn update_api_key(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    change: &ApiKeyChange,
) -> Result<ApiKeyView, AdminError> {
    let spend = change
        .spend_limits
        .as_ref()
        .map(|windows| spend_arrays(windows.as_deref()));
    let changeset = KeyChangeset {
        scopes: change
            .scopes
            .as_ref()
            .map(|scopes| scopes.iter().map(|s| s.as_str().to_owned()).collect()),
        expires_at: change.expires_at.map(|at| at.map(to_db)),
        allowed_models: change.allowed_models.clone(),
        ip_allowlist: change
            .ip_allowlist
            .as_ref()
            .map(|list| list.as_deref().map(networks_text)),
        prompt_cache_mode: change.prompt_cache_mode.map(|mode| mode.map(mode_text)),
        response_cache_ttl_seconds: change.response_cache_ttl_seconds,
        spend_limit_nano: spend.as_ref().map(|s| s.0.clone()),
        spend_limit_seconds: spend.map(|s| s.1),
        monthly_budget_nano: change.monthly_budget_nano_usd,
        requests_per_minute: change.requests_per_minute,
        requests_per_day: change.requests_per_day,
        max_concurrent_requests: change.max_concurrent_requests,
    };
    let row: Option<ViewRow> = diesel::update(api_keys::table)
        .filter(api_keys::id.eq(id))
        .filter(api_keys::deleted_at.is_null())
        .set((
            changeset,
            api_keys::policy_version.eq(api_keys::policy_version + 1),
        ))
        .returning(VIEW_COLUMNS)
        .get_result(conn)
        .await
        .optional()?;
    row.map(ApiKeyView::from_row)
        .ok_or(AdminError::ApiKeyNotFound(id))
}

/// An API key as the operator sees it (never its secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiKeyView {
    pub id: Uuid,
    pub account_id: Uuid,
    pub prefix: String,
    /// As stored, including any this build does not know.
    pub scopes: Vec<String>,
    pub created_at: DateTime<Utc>,
    pub expires_at: Option<DateTime<Utc>>,
    pub deleted_at: Option<DateTime<Utc>>,
    pub policy: KeyPolicy,
}

const VIEW_COLUMNS: (
    api_keys::id,
    api_keys::account_id,
    api_keys::display_prefix,
    api_keys::scopes,
    api_keys::created_at,
    api_keys::expires_at,
    api_keys::deleted_at,
    PolicyColumns,
) = (
    api_keys::id,
    api_keys::account_id,
    api_keys::display_prefix,
    api_keys::scopes,
    api_keys::created_at,
    api_keys::expires_at,
    api_keys::deleted_at,
    POLICY_COLUMNS,
);

type ViewRow = (
    Uuid,
    Uuid,
    String,
    Vec<String>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
    Option<DateTime<Utc>>,
    PolicyRow,
);

impl ApiKeyView {
    fn from_row(row: ViewRow) -> Self {
        let (id, account_id, prefix, scopes, created_at, expires_at, deleted_at, policy) = row;
        ApiKeyView {
            id,
            account_id,
            prefix,
            scopes,
            created_at,
            expires_at,
            deleted_at,
            policy: policy_from_row(id, policy),
        }
    }
}

/// Key `id`, deleted or not.
pub async fn get_api_key(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> Result<Option<ApiKeyView>, StoreError> {
    let row: Option<ViewRow> = api_keys::table
        .filter(api_keys::id.eq(id))
        .select(VIEW_COLUMNS)
        .first(conn)
        .await
        .optional()
        .map_err(store_error)?;
    Ok(row.map(ApiKeyView::from_row))
}

/// The keys of an account, deleted ones included, oldest first.
pub async fn list_api_keys(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<Vec<ApiKeyView>, StoreError> {
    let rows: Vec<ViewRow> = api_keys::table
        .filter(api_keys::account_id.eq(account_id))
        .order((api_keys::created_at, api_keys::id))
        .select(VIEW_COLUMNS)
        .load(conn)
        .await
        .map_err(store_error)?;
    Ok(rows.into_iter().map(ApiKeyView::from_row).collect())
}

type PolicyColumns = (
    api_keys::allowed_models,
    api_keys::ip_allowlist,
    api_keys::prompt_cache_mode,
    api_keys::policy_version,
    LimitSelect,
    api_keys::response_cache_ttl_seconds,
);
const POLICY_COLUMNS: PolicyColumns = (
    api_keys::allowed_models,
    api_keys::ip_allowlist,
    api_keys::prompt_cache_mode,
    api_keys::policy_version,
    LIMIT_COLUMNS,
    api_keys::response_cache_ttl_seconds,
);
/// allowed_models, ip_allowlist, prompt_cache_mode, policy_version, limits,
/// response_cache_ttl_seconds.
type PolicyRow = (
    Option<Vec<String>>,
    Option<Vec<String>>,
    Option<String>,
    i64,
    LimitRow,
    Option<i32>,
);

pub(crate) type LimitSelect = (
    api_keys::spend_limit_nano,
    api_keys::spend_limit_seconds,
    api_keys::monthly_budget_nano,
    api_keys::requests_per_minute,
    api_keys::requests_per_day,
    api_keys::max_concurrent_requests,
);
pub(crate) const LIMIT_COLUMNS: LimitSelect = (
    api_keys::spend_limit_nano,
    api_keys::spend_limit_seconds,
    api_keys::monthly_budget_nano,
    api_keys::requests_per_minute,
    api_keys::requests_per_day,
    api_keys::max_concurrent_requests,
);
pub(crate) type LimitRow = (
    Option<Vec<i64>>,
    Option<Vec<i64>>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
    Option<i64>,
);

fn networks_text(networks: &[IpNet]) -> Vec<String> {
    networks.iter().map(ToString::to_string).collect()
}

fn mode_text(mode: PromptCacheMode) -> &'static str {
    match mode {
        PromptCacheMode::On => "on",
        PromptCacheMode::Off => "off",
        PromptCacheMode::Passthrough => "passthrough",
    }
}

/// A stored policy. What cannot be read narrows access, never widens it: an
/// unreadable network is left out of the allowlist (an allowlist that loses
/// every entry refuses every address), an unreadable mode is the default.
fn policy_from_row(key_id: Uuid, row: PolicyRow) -> KeyPolicy {
    let (allowed_models, ip_allowlist, prompt_cache_mode, version, limits, response_cache_ttl) =
        row;
    let ip_allowlist = ip_allowlist.map(|list| {
        list.iter()
            .filter_map(|text| {
                let parsed = text.parse::<IpNet>().ok();
                if parsed.is_none() {
                    tracing::warn!(%key_id, network = %text, "ignoring unreadable allowlist entry");
                }
                parsed
            })
            .collect()
    });
    let prompt_cache_mode = prompt_cache_mode.and_then(|text| {
        let mode = PromptCacheMode::parse(&text);
        if mode.is_none() {
            tracing::warn!(%key_id, mode = %text, "ignoring unknown prompt cache mode");
        }
        mode
    });
    KeyPolicy {
        allowed_models,
        ip_allowlist,
        prompt_cache_mode,
        response_cache_ttl_seconds: response_cache_ttl,
        limits: limits_from_row(limits),
        version,
    }
}

/// id, account_id, scopes, expires_at, policy.
type KeyRow = (Uuid, Uuid, Vec<String>, Option<DateTime<Utc>>, PolicyRow);

/// The active (not deleted, not expired) key whose secret hashes to
/// `key_hash`, with its policy. Scopes this build does not know are dropped
/// with a warning, so a newer instance's scope never widens an older one's
/// access.
pub async fn find_api_key(
    conn: &mut AsyncPgConnection,
    key_hash: &[u8; 32],
) -> Result<Option<ApiKeyRecord>, StoreError> {
    let row: Option<(KeyRow, bool)> = api_keys::table
        .inner_join(accounts::table)
        .filter(api_keys::key_hash.eq(&key_hash[..]))
        .filter(api_keys::deleted_at.is_null())
        .filter(
            api_keys::expires_at
                .is_null()
                .or(api_keys::expires_at.gt(now)),
        )
        .select((
            (
                api_keys::id,
                api_keys::account_id,
                api_keys::scopes,
                api_keys::expires_at,
                POLICY_COLUMNS,
            ),
            accounts::zero_data_retention,
        ))
        .first(conn)
        .await
        .optional()
        .map_err(store_error)?;
    Ok(row.map(
        |((key_id, account_id, scopes, expires_at, policy), account_zdr)| ApiKeyRecord {
            key_id,
            account_id,
            expires_at: expires_at.map(SystemTime::from),
            scopes: scopes
                .iter()
                .filter_map(|name| {
                    let scope = Scope::parse(name);
                    if scope.is_none() {
                        tracing::warn!(%key_id, scope = %name, "ignoring unknown API key scope");
                    }
                    scope
                })
                .collect(),
            policy: Arc::new(policy_from_row(key_id, policy)),
            account_zdr,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_have_the_documented_shape() {
        let secret = generate_secret();
        assert!(secret.starts_with(SECRET_PREFIX));
        let random = &secret[SECRET_PREFIX.len()..];
        assert_eq!(random.len(), 48);
        assert!(
            random
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
        assert_ne!(generate_secret(), secret);
    }

    #[test]
    fn hash_is_sha256_of_the_secret() {
        // SHA-256("abc"), FIPS 180-2 test vector.
        assert_eq!(
            hex::encode(hash_api_key("abc")),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
