//! What both parties of the protocol share: the vetted pass-through fields,
//! and how a `reasoning` item and a canonical thinking block map onto each
//! other (a client's replayed reasoning and a supplier's output read the
//! same way; the router's reply and a supplier request write the same way).

use crate::wire::request::{ReasoningItem, ReasoningText, summary_text};

/// Unknown top-level fields that are forwarded to Responses suppliers (CF-03).
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
