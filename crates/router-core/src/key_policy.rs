//! What an API key's operator-set policy allows: which models, from which
//! client addresses, and its default prompt-cache mode (A-18, A-19, F-07).
//!
//! The policy travels inside the key record ([`crate::store::ApiKeyRecord`]),
//! so a cached key carries it and checking it costs no query. Every change
//! bumps [`KeyPolicy::version`]; a reservation made under a version that is
//! no longer current is refused (`policy_changed`, A-20).

use crate::catalog::Model;
use crate::gateway_request::PromptCacheMode;
use crate::product_codes;
use ipnet::IpNet;
use router_canonical::ApiError;
use std::net::IpAddr;

/// An API key's policy. `None` in a field means "no restriction" (or, for
/// the prompt-cache mode, "the default, passthrough").
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyPolicy {
    /// Model IDs or aliases the key may use; `None` allows every model.
    pub allowed_models: Option<Vec<String>>,
    /// Client networks the key may be used from; `None` allows every address.
    pub ip_allowlist: Option<Vec<IpNet>>,
    /// The key's default for `x-ci-prompt-cache`.
    pub prompt_cache_mode: Option<PromptCacheMode>,
    /// The exact-response cache (off when `None`): an identical request of
    /// the account answered within this many seconds is answered again
    /// from the cache, free (issue 16).
    pub response_cache_ttl_seconds: Option<i32>,
    /// Spend and request limits; all `None` (the default) is unlimited.
    pub limits: KeyLimits,
    /// Bumped by every change of the key's policy.
    pub version: i64,
}

/// A rolling spend window: at most `amount_nano_usd` charged (and held) over
/// the last `window_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SpendWindow {
    pub amount_nano_usd: i64,
    pub window_seconds: i64,
}

/// An API key's hard limits (A-21, G-21). `None` is unlimited: there are no
/// built-in numbers. Enforced by the store in the reservation itself.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct KeyLimits {
    pub spend_limits: Option<Vec<SpendWindow>>,
    /// Per UTC calendar month.
    pub monthly_budget_nano_usd: Option<i64>,
    pub requests_per_minute: Option<i64>,
    pub requests_per_day: Option<i64>,
    pub max_concurrent_requests: Option<i64>,
}

impl KeyLimits {
    /// Whether any limit is set: only then does a reservation lock the key
    /// row exclusively and count its requests.
    /// Whether the only limits set are on spend (rolling windows, the
    /// monthly budget): true also when none is set.
    pub fn spend_only(&self) -> bool {
        self.requests_per_minute.is_none()
            && self.requests_per_day.is_none()
            && self.max_concurrent_requests.is_none()
    }

    pub fn any(&self) -> bool {
        self.spend_limits.is_some()
            || self.monthly_budget_nano_usd.is_some()
            || self.requests_per_minute.is_some()
            || self.requests_per_day.is_some()
            || self.max_concurrent_requests.is_some()
    }
}

/// Which key limit refused a reservation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLimit {
    Spend,
    MonthlyBudget,
    RequestsPerMinute,
    RequestsPerDay,
    Concurrency,
}

/// An IP network in CIDR form, or a single address (a /32 or /128), with
/// the host bits cleared: an entry of a key's allowlist (or of the
/// server's trusted proxies).
pub fn parse_network(text: &str) -> Option<IpNet> {
    let text = text.trim();
    let net = match text.parse::<IpNet>() {
        Ok(net) => net,
        Err(_) => IpNet::from(text.parse::<IpAddr>().ok()?.to_canonical()),
    };
    Some(net.trunc())
}

impl KeyPolicy {
    /// Whether the key may use `model`: an entry names it by ID or by any of
    /// its aliases, so a key allowed `alias` may also call the model by ID.
    /// Catalog views (`/v1/models`, compare, pricing changes) filter with
    /// this same predicate.
    pub fn allows_model(&self, model: &Model) -> bool {
        match &self.allowed_models {
            None => true,
            Some(allowed) => allowed
                .iter()
                .any(|name| *name == model.id || model.aliases.contains(name)),
        }
    }

    /// 403 `model_not_allowed` naming `model` when the key may not use
    /// `model`, the catalog's model asked for as `name`. Looking the
    /// name up (an unknown one is the caller's 404) is the caller's.
    pub fn check_allowed(&self, model: &Model, name: &str) -> Result<(), ApiError> {
        if self.allows_model(model) {
            return Ok(());
        }
        Err(ApiError::new(
            product_codes::MODEL_NOT_ALLOWED,
            format!("This API key may not use the model `{name}`."),
        )
        .with_param("model"))
    }

    /// Whether a request from `client` may use the key. An unknown client
    /// address (a forwarding header that could not be read) passes only a
    /// key without an allowlist.
    pub fn allows_ip(&self, client: Option<IpAddr>) -> bool {
        match &self.ip_allowlist {
            None => true,
            Some(networks) => client.is_some_and(|ip| {
                let ip = ip.to_canonical();
                networks.iter().any(|net| net.contains(&ip))
            }),
        }
    }

    /// The prompt-cache mode of a request that sent no `x-ci-prompt-cache`.
    pub fn default_prompt_cache(&self) -> PromptCacheMode {
        self.prompt_cache_mode.unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Pricing;

    fn model(id: &str, aliases: &[&str]) -> Model {
        Model::text(id, aliases, Pricing::Supply)
    }

    #[test]
    fn models_match_by_id_or_alias() {
        let m = model("m-text", &["text-alias"]);
        let other = model("m-other", &[]);
        assert!(KeyPolicy::default().allows_model(&m));
        for entry in ["m-text", "text-alias"] {
            let policy = KeyPolicy {
                allowed_models: Some(vec![entry.into()]),
                ..KeyPolicy::default()
            };
            assert!(policy.allows_model(&m), "{entry}");
            assert!(!policy.allows_model(&other), "{entry}");
        }
        let none = KeyPolicy {
            allowed_models: Some(vec![]),
            ..KeyPolicy::default()
        };
        assert!(!none.allows_model(&m));
    }

    #[test]
    fn addresses_match_v4_and_v6_networks() {
        let policy = KeyPolicy {
            ip_allowlist: Some(vec![
                "127.0.0.0/8".parse().unwrap(),
                "2001:db8::/32".parse().unwrap(),
            ]),
            ..KeyPolicy::default()
        };
        let ip = |s: &str| Some(s.parse::<IpAddr>().unwrap());
        assert!(policy.allows_ip(ip("127.0.0.1")));
        assert!(policy.allows_ip(ip("::ffff:127.0.0.1")), "v4-mapped");
        assert!(policy.allows_ip(ip("2001:db8::1")));
        assert!(!policy.allows_ip(ip("10.0.0.1")));
        assert!(!policy.allows_ip(ip("::1")));
        assert!(!policy.allows_ip(None), "unknown address fails closed");
        assert!(KeyPolicy::default().allows_ip(None));
    }
}
