//! What both parties of the protocol share: the vetted pass-through fields,
//! and how a `reasoning` item and a canonical thinking block map onto each
//! other (a client's replayed reasoning and a supplier's output read the
//! same way; the router's reply and a supplier request write the same way).

use crate::wire::request::{ReasoningItem, ReasoningText, summary_text};
use serde_json::{Map, Value};
use std::collections::BTreeMap;

/// Unknown top-level fields that are forwarded to Responses suppliers.
/// Everything else unknown is accepted and dropped; `service_tier`,
/// `max_tool_calls`, `stream_options` and the like are never forwarded.
/// `text.verbosity` travels as the native field `verbosity`.
pub(crate) const NATIVE_ALLOWLIST: [&str; 6] = [
    "metadata",
    "truncation",
    "include",
    "top_logprobs",
    "prompt_cache_key",
    "prompt_cache_retention",
];

/// The native field that carries `text.verbosity`.
pub(crate) const VERBOSITY: &str = "verbosity";

/// The native field that carries a request's `namespace` tools, for a
/// Responses route to receive them grouped as sent:
/// `[{name, description, tools: [{flat, name}]}]`.
pub(crate) const TOOL_NAMESPACES: &str = "tool_namespaces";

/// The flat function name a function of a `namespace` tool is known by in
/// the canonical request (and on a converted route): the namespace and the
/// name joined by `__`, or directly when the namespace already ends in `_`
/// (Codex's `mcp__server__` namespaces give `mcp__server__tool`).
pub fn flat_name(namespace: &str, name: &str) -> String {
    if namespace.ends_with('_') {
        format!("{namespace}{name}")
    } else {
        format!("{namespace}__{name}")
    }
}

/// The functions of a request's `namespace` tools, by flat name: what a
/// reply's call names are mapped back to (the namespace and the name as the
/// client declared them). The Responses client codec's per-request extra.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolNamespaces {
    by_flat_name: BTreeMap<String, (String, String)>,
}

impl ToolNamespaces {
    /// Record `name` of `namespace` under `flat`.
    pub(crate) fn insert(&mut self, flat: String, namespace: &str, name: &str) {
        self.by_flat_name
            .insert(flat, (namespace.to_owned(), name.to_owned()));
    }

    /// The namespace and name a flat call name stands for, if any.
    pub fn resolve(&self, flat: &str) -> Option<(&str, &str)> {
        self.by_flat_name
            .get(flat)
            .map(|(namespace, name)| (namespace.as_str(), name.as_str()))
    }

    /// Whether `flat` is a namespaced function's name.
    pub fn contains(&self, flat: &str) -> bool {
        self.by_flat_name.contains_key(flat)
    }

    /// The map carried in a request's native fields ([`TOOL_NAMESPACES`]).
    pub(crate) fn from_native(value: &Value) -> Self {
        let mut namespaces = ToolNamespaces::default();
        for group in value.as_array().into_iter().flatten() {
            let Some(namespace) = group.get("name").and_then(Value::as_str) else {
                continue;
            };
            for tool in group
                .get("tools")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let (Some(flat), Some(name)) = (
                    tool.get("flat").and_then(Value::as_str),
                    tool.get("name").and_then(Value::as_str),
                ) {
                    namespaces.insert(flat.to_owned(), namespace, name);
                }
            }
        }
        namespaces
    }
}

/// One `namespace` group for the native fields.
pub(crate) fn namespace_group(
    name: &str,
    description: Option<&str>,
    tools: &[(String, String)],
) -> Value {
    let mut group = Map::new();
    group.insert("name".to_owned(), Value::String(name.to_owned()));
    if let Some(description) = description {
        group.insert(
            "description".to_owned(),
            Value::String(description.to_owned()),
        );
    }
    group.insert(
        "tools".to_owned(),
        Value::Array(
            tools
                .iter()
                .map(|(flat, name)| {
                    let mut tool = Map::new();
                    tool.insert("flat".to_owned(), Value::String(flat.clone()));
                    tool.insert("name".to_owned(), Value::String(name.clone()));
                    Value::Object(tool)
                })
                .collect(),
        ),
    );
    Value::Object(group)
}

/// The separator between reasoning summary parts in one thinking text.
pub(crate) const SUMMARY_SEPARATOR: &str = "\n\n";

/// A reasoning item's thinking text and signature (see the client request module docs).
pub(crate) fn thinking(item: ReasoningItem) -> (String, Option<String>) {
    let texts = if item.summary.is_empty() {
        item.content.unwrap_or_default()
    } else {
        item.summary
    };
    let text = texts
        .into_iter()
        .map(|t| t.text)
        .collect::<Vec<_>>()
        .join(SUMMARY_SEPARATOR);
    (text, item.encrypted_content)
}

/// A reasoning item from a thinking text and signature: one summary part
/// (none for an empty text) and the signature as `encrypted_content`.
pub(crate) fn reasoning_item(
    id: Option<String>,
    text: &str,
    signature: Option<&String>,
) -> ReasoningItem {
    ReasoningItem {
        id,
        summary: if text.is_empty() {
            Vec::new()
        } else {
            vec![ReasoningText {
                kind: summary_text(),
                text: text.to_owned(),
            }]
        },
        content: None,
        encrypted_content: signature.cloned(),
        status: None,
    }
}
