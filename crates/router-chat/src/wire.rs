//! Chat Completions wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both directions: a client's request and the body the
//! router sends a Chat supplier are both [`request::ChatRequest`]; a
//! supplier's reply and the router's reply to its client are both
//! [`response::ChatCompletion`] (and [`chunk::ChatCompletionChunk`] when
//! streaming). Conversion to and from the canonical model is written by hand
//! in `from_wire.rs` and `to_wire.rs`.
//!
//! Open world: request and message objects keep unknown fields in a
//! `#[serde(flatten)]` map, unknown content parts are kept whole
//! ([`request::ContentPart::Unknown`]) and a supplier's unknown
//! `finish_reason` is [`response::FinishReason::Other`]. Outgoing optionals
//! are skipped when absent, except the fields OpenAI's schema defines as
//! required-but-nullable (`finish_reason`, `logprobs`, `message.content`,
//! `error.param`), which a client expects to see as `null`.

pub mod chunk;
pub mod request;
pub mod response;

use serde::Serialize;

/// Separates the inner path from the message in the error of a content part.
///
/// Content parts are open-world, so their deserializer buffers the object and
/// then deserializes the known variant from the buffer; the outer
/// `serde_path_to_error` tracker cannot see inside that second pass. The part
/// deserializer therefore puts the inner path in its error message behind
/// this marker, and [`split_nested`] lets `parse_request` join it to the outer
/// path (`messages[0].content[1]` + `image_url.url`).
const NESTED_MARK: char = '\u{1f}';

/// The message of a nested error that happened at `path` inside a part.
pub(crate) fn nested_message(path: &str, message: &str) -> String {
    format!("{NESTED_MARK}{path}{NESTED_MARK}{message}")
}

/// Undo [`nested_message`]: `(inner path, message)`, or `None` for a plain message.
pub(crate) fn split_nested(message: &str) -> Option<(&str, &str)> {
    let rest = message.strip_prefix(NESTED_MARK)?;
    rest.split_once(NESTED_MARK)
}

/// Join a `serde_path_to_error` path with a further segment (`.` is the root).
pub(crate) fn join_path(base: &str, segment: &str) -> String {
    match (base, segment) {
        ("." | "", s) => s.to_owned(),
        (b, "" | ".") => b.to_owned(),
        (b, s) if s.starts_with('[') => format!("{b}{s}"),
        (b, s) => format!("{b}.{s}"),
    }
}

/// The field named by serde's "missing field `x`" message.
pub(crate) fn missing_field(message: &str) -> Option<&str> {
    message.strip_prefix("missing field `")?.strip_suffix('`')
}

/// Serialize a wire value to JSON bytes.
///
/// Serializing these wire types cannot fail: every map key is a string and no
/// `Serialize` impl here returns an error. Should that ever change, the
/// fallback is a well-formed `internal_error` envelope rather than a panic.
pub(crate) fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes,
        Err(_) => br#"{"error":{"message":"the router could not serialize its response","type":"api_error","param":null,"code":"internal_error"}}"#.to_vec(),
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)] // test code: a panic is the failure report
mod tests {
    use super::*;

    #[test]
    fn nested_messages_round_trip() {
        let m = nested_message("image_url.url", "invalid type");
        assert_eq!(split_nested(&m), Some(("image_url.url", "invalid type")));
        assert_eq!(split_nested("invalid type"), None);
    }

    #[test]
    fn paths_join() {
        assert_eq!(join_path(".", "model"), "model");
        assert_eq!(join_path("tools[0]", "type"), "tools[0].type");
        assert_eq!(join_path("messages[0]", "[1]"), "messages[0][1]");
        assert_eq!(join_path("messages[0].content", ""), "messages[0].content");
    }

    #[test]
    fn missing_field_is_read_from_serde_message() {
        assert_eq!(missing_field("missing field `role`"), Some("role"));
        assert_eq!(missing_field("invalid type"), None);
    }
}
