//! What a configuration that starts may still get wrong (issue 30): each a
//! [`Warning`] naming its setting. `router config check` prints them (and
//! fails under `--strict`); `router serve` logs them at start.

use crate::config::ServerConfig;
use crate::settings::ServeArgs;
use router_store::migrations::MigrationStatus;
use serde::Serialize;

/// An admin token shorter than this is guessable.
pub(crate) const MIN_ADMIN_TOKEN_CHARS: usize = 32;

#[derive(Debug, Clone, Serialize)]
pub(crate) struct Warning {
    /// The variable (or catalog part) at fault.
    pub(crate) setting: String,
    pub(crate) message: String,
}

fn warning(setting: impl Into<String>, message: impl Into<String>) -> Warning {
    Warning {
        setting: setting.into(),
        message: message.into(),
    }
}

/// The settings' own warnings.
pub(crate) fn of_settings(args: &ServeArgs, config: &ServerConfig) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if config.test_hooks {
        warnings.push(warning(
            "ROUTER_ADMIN_TEST_HOOKS",
            "on: the operator routes that bend time for tests exist; never in production",
        ));
    }
    if config.image_url_allow_loopback {
        warnings.push(warning(
            "ROUTER_IMAGE_URL_ALLOW_LOOPBACK",
            "on: image URLs a supplier answers may reach this host; tests and demos only",
        ));
    }
    if config.channels.url_policy().allow_loopback {
        warnings.push(warning(
            "ROUTER_CHANNEL_URL_ALLOW_LOOPBACK",
            "on: channel destinations may reach this host over plain http; tests and demos only",
        ));
    }
    match &config.admin_token {
        Some(token) if token.chars().count() < MIN_ADMIN_TOKEN_CHARS => warnings.push(warning(
            "ROUTER_ADMIN_TOKEN",
            format!(
                "{} characters: use at least {MIN_ADMIN_TOKEN_CHARS} random ones (e.g. `openssl rand -hex 32`)",
                token.chars().count()
            ),
        )),
        _ => {}
    }
    if let Some(filter) = args.log_filter()
        && let Err(e) = tracing_subscriber::EnvFilter::try_new(filter)
    {
        warnings.push(warning(
            "ROUTER_LOG",
            format!("`{filter}` cannot be read ({e}); the default level is used"),
        ));
    }
    if config.connections.drain < config.deadline {
        warnings.push(warning(
            "ROUTER_DRAIN_SECS",
            format!(
                "{} s, shorter than the routing deadline ({} s): a shutdown stops requests that could still finish",
                config.connections.drain.as_secs(),
                config.deadline.as_secs()
            ),
        ));
    }
    warnings
}

/// The catalog's warnings: a supplier whose `api_key_env` is unset (its
/// requests would go out with no credential), a model nothing serves.
pub(crate) fn of_catalog(path: &str, text: &str) -> Vec<Warning> {
    let mut warnings = Vec::new();
    let env = router_catalog::process_env();
    let missing = std::sync::Mutex::new(Vec::new());
    let parsed = router_core::Catalog::parse(text, path, |name| {
        let value = env(name).filter(|v| !v.is_empty());
        if value.is_none()
            && let Ok(mut missing) = missing.lock()
            && !missing.iter().any(|m: &String| m == name)
        {
            missing.push(name.to_owned());
        }
        value
    });
    for name in missing.into_inner().unwrap_or_default() {
        warnings.push(warning(
            format!("ROUTER_CATALOG ({name})"),
            format!("`{name}`, a supplier's api_key_env, is unset: its requests go out with no credential"),
        ));
    }
    if let Ok(catalog) = parsed {
        for model in catalog.models() {
            if !catalog.routes(&model.id).iter().any(|r| r.enabled) {
                warnings.push(warning(
                    format!("ROUTER_CATALOG (model {})", model.id),
                    "no enabled route: every request for it is refused",
                ));
            }
        }
    }
    warnings
}

/// The schema's warnings: migrations not applied, or a schema newer than
/// this binary (it warns and runs on: a rolling upgrade runs the old
/// binary on the new schema for a while; docs/operations.md, upgrades).
pub(crate) fn of_database(status: &MigrationStatus) -> Vec<Warning> {
    let mut warnings = Vec::new();
    if !status.pending.is_empty() {
        warnings.push(warning(
            "DATABASE_URL",
            format!(
                "{} migrations not applied (run `router migrate`; `router serve` applies them at start)",
                status.pending.len()
            ),
        ));
    }
    if !status.unknown.is_empty() {
        warnings.push(warning(
            "DATABASE_URL",
            format!(
                "the schema is newer than this binary (migrations {} unknown to it): upgrade the binary",
                status.unknown.join(", ")
            ),
        ));
    }
    warnings
}

/// Each warning as one log line.
pub(crate) fn log(warnings: &[Warning]) {
    for w in warnings {
        tracing::warn!(setting = %w.setting, "configuration: {}", w.message);
    }
}
