//! The nine product events a channel can select (GP-14): one registry,
//! exposed verbatim as `available_events`, and what each notification says.
//!
//! Triggers:
//! - `api_key_created`: queued in the transaction that issues the key
//!   (`Database::create_api_key`).
//! - `api_key_expiring`: the `digest-scheduler` pass, once per key and
//!   expiry, within seven days of it.
//! - `spend_limit_reached` (once per key and UTC day) and
//!   `monthly_budget_reached` (once per key and UTC month): queued when the
//!   key's admission refuses a request for that limit
//!   (`router_store::billing::reserve_limited`).
//! - `low_balance`: each `outbox` pass, when available credit (balance
//!   minus holds) is under $1.00 ([`crate::jobs::LOW_BALANCE_NANO`]), once
//!   per account and refill.
//! - `model_price_changed`: queued for every channel that selected it, in
//!   the transaction that records a catalog release whose prices differ
//!   from the previous release's (`router_store::catalog_releases::record`),
//!   once per release; the first release is the baseline.
//! - `payment_succeeded`, `payment_failed`, `auto_top_up`: the router has
//!   no payments, so they never occur. Selecting them is allowed; nothing
//!   fakes an occurrence.

use crate::error::Refusal;
use serde_json::Value;

/// Stable snake_case ids, in the order `available_events` lists them.
pub const IDS: [&str; 9] = [
    "low_balance",
    "payment_succeeded",
    "payment_failed",
    "auto_top_up",
    "spend_limit_reached",
    "monthly_budget_reached",
    "api_key_created",
    "api_key_expiring",
    "model_price_changed",
];

/// A PATCH `events` value (M-08, GP-66): an array of known ids, duplicates
/// dropped in first-occurrence order; anything else refuses the update.
pub fn parse_selection(value: &Value) -> Result<Vec<String>, Refusal> {
    let Value::Array(items) = value else {
        return Err(Refusal::EventsNotArray);
    };
    let mut selected: Vec<String> = Vec::with_capacity(items.len());
    for (i, item) in items.iter().enumerate() {
        let Value::String(id) = item else {
            return Err(Refusal::EventNotString { index: i });
        };
        if !IDS.contains(&id.as_str()) {
            return Err(Refusal::UnknownEvent {
                index: i,
                id: id.clone(),
            });
        }
        if !selected.contains(id) {
            selected.push(id.clone());
        }
    }
    Ok(selected)
}

/// A notification's title and detail line from the event and its payload.
pub fn describe(event: &str, payload: &Value) -> (String, String) {
    let text = |name: &str| payload[name].as_str().unwrap_or_default().to_owned();
    match event {
        "api_key_created" => (
            "A new API key was created".to_owned(),
            format!("Key {}… was created on your account.", text("key_prefix")),
        ),
        "api_key_expiring" => (
            "An API key expires soon".to_owned(),
            format!(
                "Key {}… expires at {}.",
                text("key_prefix"),
                text("expires_at")
            ),
        ),
        "spend_limit_reached" => (
            "An API key reached its spend limit".to_owned(),
            format!(
                "Key {}… was refused a request: its rolling spend limit is reached.",
                text("key_prefix")
            ),
        ),
        "monthly_budget_reached" => (
            "An API key reached its monthly budget".to_owned(),
            format!(
                "Key {}… was refused a request: its budget for {} is spent.",
                text("key_prefix"),
                text("period")
            ),
        ),
        "low_balance" => (
            "Your balance is low".to_owned(),
            format!(
                "Available credit is {} (under {}).",
                crate::report::usd(payload["available_nano_usd"].as_i64().unwrap_or_default()),
                crate::report::usd(payload["threshold_nano_usd"].as_i64().unwrap_or_default())
            ),
        ),
        "model_price_changed" => {
            let models: Vec<&str> = payload["models"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .collect();
            (
                "Model prices changed".to_owned(),
                format!(
                    "Catalog release {} changed the prices of: {}. See GET /v1/pricing/changes.",
                    payload["release"],
                    models.join(", ")
                ),
            )
        }
        other => (format!("Router event: {other}"), payload.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nine_distinct_snake_case_ids() {
        let mut ids = IDS.to_vec();
        ids.sort_unstable();
        ids.dedup();
        assert_eq!(ids.len(), 9);
        assert!(
            IDS.iter()
                .all(|id| id.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        );
    }

    #[test]
    fn selections_dedupe_and_refuse_unknowns() {
        assert_eq!(
            parse_selection(&json!([
                "api_key_created",
                "low_balance",
                "api_key_created"
            ]))
            .unwrap(),
            vec!["api_key_created", "low_balance"]
        );
        assert_eq!(parse_selection(&json!([])).unwrap(), Vec::<String>::new());
        assert_eq!(
            parse_selection(&json!(["low_balance", "bogus"])),
            Err(Refusal::UnknownEvent {
                index: 1,
                id: "bogus".to_owned()
            })
        );
        assert_eq!(
            parse_selection(&json!([1])),
            Err(Refusal::EventNotString { index: 0 })
        );
        assert_eq!(
            parse_selection(&json!("low_balance")),
            Err(Refusal::EventsNotArray)
        );
    }
}
