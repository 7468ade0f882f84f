//! The owner's API keys (`/api/keys`): listed with what each spent this
//! UTC month and when it was last used, created (the secret shown once),
//! changed and revoked. Every rule of a key (scopes, catalog models,
//! networks, limits) is the operator wing's; this module only binds the
//! key to the signed-in account: another account's key, like a malformed
//! or revoked one, is unknown (404).

use crate::{Dashboard, DashboardError, Money};
use chrono::{DateTime, Datelike, TimeZone, Utc};
use router_core::Catalog;
use router_operator::{
    ApiKey, ApiKeyPatch, IssuedKey, NewApiKey, OperatorError, Policy, Resource, SpendLimitJson,
};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// `POST /api/keys`: a new key of the signed-in account. The fields are
/// the admin API's, without `account_id`; an unknown one is refused.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewKey {
    /// `inference`, `account:read`, `account:write`, `usage:read`.
    pub scopes: Vec<String>,
    /// Unix seconds.
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 253_402_300_799_u64))]
    pub expires_at: Option<u64>,
    /// Models of the catalog, by ID or alias.
    #[serde(default)]
    pub allowed_models: Option<Vec<String>>,
    /// Client networks in CIDR form.
    #[serde(default)]
    pub ip_allowlist: Option<Vec<String>>,
    #[serde(default)]
    pub spend_limits: Option<Vec<SpendLimitJson>>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub monthly_budget_nano_usd: Option<u64>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub requests_per_minute: Option<u64>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub requests_per_day: Option<u64>,
    #[serde(default)]
    #[cfg_attr(feature = "openapi", schema(maximum = 9_223_372_036_854_775_807_u64))]
    pub max_concurrent_requests: Option<u64>,
}

/// A key as its owner sees it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyView {
    pub id: Uuid,
    /// The first characters of the secret, to recognise it.
    pub prefix: String,
    pub scopes: Vec<String>,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// Unix seconds.
    pub expires_at: Option<i64>,
    /// RFC 3339, UTC; `null` while the key works.
    pub revoked_at: Option<String>,
    pub policy: Policy,
    /// Charged to the wallet through this key since the UTC month began.
    pub spend_this_month: Money,
    /// Its latest request, RFC 3339 UTC; `null` if it made none.
    pub last_used_at: Option<String>,
}

/// `GET /api/keys`: live keys first, newest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct KeyList {
    /// `list`.
    pub object: &'static str,
    pub data: Vec<KeyView>,
}

/// The start of `now`'s UTC month.
pub fn month_start(now: DateTime<Utc>) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(now.year(), now.month(), 1, 0, 0, 0)
        .single()
        .unwrap_or(now)
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// A path's key id; malformed is unknown, like a missing key.
pub fn parse_key_id(id: Option<&str>) -> Result<Uuid, DashboardError> {
    id.and_then(|id| Uuid::parse_str(id).ok())
        .ok_or(DashboardError::Operator(OperatorError::NotFound(
            Resource::ApiKey,
        )))
}

impl Dashboard<'_> {
    /// The account's keys with this month's spend and last use.
    pub async fn keys(
        &self,
        account_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<KeyList, DashboardError> {
        let keys = self.operator.api_keys(account_id).await?.data;
        let activity = self
            .operator
            .key_activity(account_id, month_start(now))
            .await?;
        let mut data: Vec<KeyView> = keys
            .into_iter()
            .map(|key| {
                let seen = activity.iter().find(|a| a.api_key_id == key.id);
                view(
                    key,
                    seen.map_or(0, |a| a.spend_nano),
                    seen.and_then(|a| a.last_used_at),
                )
            })
            .collect();
        data.sort_by(|a, b| {
            (a.revoked_at.is_some(), std::cmp::Reverse(&a.created_at))
                .cmp(&(b.revoked_at.is_some(), std::cmp::Reverse(&b.created_at)))
        });
        Ok(KeyList {
            object: "list",
            data,
        })
    }

    /// Issues a key for the account; the secret is in this answer only.
    pub async fn create_key(
        &self,
        catalog: &Catalog,
        account_id: Uuid,
        new: NewKey,
    ) -> Result<IssuedKey, DashboardError> {
        let new = NewApiKey {
            account_id,
            scopes: new.scopes,
            expires_at: new.expires_at,
            allowed_models: new.allowed_models,
            ip_allowlist: new.ip_allowlist,
            prompt_cache_mode: None,
            response_cache_ttl_seconds: None,
            spend_limits: new.spend_limits,
            monthly_budget_nano_usd: new.monthly_budget_nano_usd,
            requests_per_minute: new.requests_per_minute,
            requests_per_day: new.requests_per_day,
            max_concurrent_requests: new.max_concurrent_requests,
        };
        Ok(self.operator.create_api_key(catalog, new).await?)
    }

    /// Changes the policy or scopes of one of the account's live keys.
    pub async fn update_key(
        &self,
        catalog: &Catalog,
        account_id: Uuid,
        id: Uuid,
        patch: ApiKeyPatch,
    ) -> Result<ApiKey, DashboardError> {
        self.owned_live_key(account_id, id).await?;
        Ok(self.operator.update_api_key(catalog, id, patch).await?)
    }

    /// Revokes one of the account's live keys, at once on every instance.
    pub async fn revoke_key(&self, account_id: Uuid, id: Uuid) -> Result<(), DashboardError> {
        self.owned_live_key(account_id, id).await?;
        Ok(self.operator.delete_api_key(id).await?)
    }

    /// The key if it is the account's and not revoked; otherwise unknown.
    /// Looked up among the account's own keys, so another account's key is
    /// never even read.
    async fn owned_live_key(&self, account_id: Uuid, id: Uuid) -> Result<(), DashboardError> {
        let keys = self.operator.api_keys(account_id).await?.data;
        match keys.iter().find(|key| key.id == id) {
            Some(key) if key.deleted_at.is_none() => Ok(()),
            _ => Err(DashboardError::Operator(OperatorError::NotFound(
                Resource::ApiKey,
            ))),
        }
    }
}

fn view(key: ApiKey, spend_nano: i64, last_used_at: Option<DateTime<Utc>>) -> KeyView {
    KeyView {
        id: key.id,
        prefix: key.prefix,
        scopes: key.scopes,
        created_at: rfc3339(key.created_at),
        expires_at: key.expires_at,
        revoked_at: key.deleted_at.map(rfc3339),
        policy: key.policy,
        spend_this_month: Money::of(spend_nano),
        last_used_at: last_used_at.map(rfc3339),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_month_starts_at_midnight_utc_on_the_first() {
        let now = Utc.with_ymd_and_hms(2026, 11, 29, 11, 40, 3).unwrap();
        assert_eq!(
            month_start(now),
            Utc.with_ymd_and_hms(2026, 11, 1, 0, 0, 0).unwrap()
        );
    }

    #[test]
    fn a_malformed_key_id_is_unknown() {
        assert!(parse_key_id(Some("nope")).is_err());
        assert!(parse_key_id(None).is_err());
        let id = Uuid::now_v7();
        assert_eq!(parse_key_id(Some(&id.to_string())).unwrap(), id);
    }
}
