//! What the client and supplier conversions share: the protocol version,
//! the request limits and native members both sides enforce, and how tool
//! arguments become an `input` object.

use serde_json::{Map, Value};

/// The only `anthropic-version` the router speaks, to clients
/// and suppliers alike.
pub(crate) const ANTHROPIC_VERSION: &str = "2023-06-01";

/// Top-level members kept verbatim for native Messages routes.
pub(crate) const NATIVE_FIELDS: [&str; 3] = ["context_management", "metadata", "output_config"];

/// The key, among the native fields, of the tool members only a Messages
/// supplier understands (`eager_input_streaming`, `defer_loading`,
/// `input_examples`): an object from tool name to those members, added back
/// to the tool on a native route.
pub(crate) const NATIVE_TOOL_MEMBERS: &str = "tool_members";

/// At most this many stop sequences.
pub(crate) const MAX_STOP_SEQUENCES: usize = 4;

/// Tool arguments as the `input` object. Empty arguments (a call without
/// parameters, as some Chat models write it) are `{}`; anything that is not
/// a JSON object is `None`.
pub(crate) fn tool_input(arguments: &str) -> Option<Value> {
    if arguments.trim().is_empty() {
        return Some(Value::Object(Map::new()));
    }
    match serde_json::from_str::<Value>(arguments) {
        Ok(value @ Value::Object(_)) => Some(value),
        _ => None,
    }
}
