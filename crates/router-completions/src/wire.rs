//! Legacy Completions wire types: the JSON exactly as clients write it and
//! as the router answers.
//!
//! The request body is [`request::CompletionBody`]; the reply, and every
//! chunk of a stream, is a [`response::TextCompletion`] (OpenAI uses one
//! object for both). Conversion to and from the canonical model is written by
//! hand in `from_wire.rs`, `to_wire.rs` and `stream.rs`.
//!
//! Open world: unknown top-level request fields land in a `#[serde(flatten)]`
//! map (accepted, E-12). Outgoing optionals are skipped when absent, except
//! the members OpenAI's schema defines as required-but-nullable
//! (`choices[].logprobs`, a stream chunk's `finish_reason`, `error.param`),
//! which a client expects to see as `null`.

pub mod request;
pub mod response;

use serde::Serialize;

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join() {
        assert_eq!(join_path(".", "prompt"), "prompt");
        assert_eq!(join_path("stop", "[1]"), "stop[1]");
        assert_eq!(
            join_path("stream_options", "include_usage"),
            "stream_options.include_usage"
        );
        assert_eq!(join_path("stop", ""), "stop");
    }

    #[test]
    fn missing_field_is_read_from_serde_message() {
        assert_eq!(missing_field("missing field `model`"), Some("model"));
        assert_eq!(missing_field("invalid type"), None);
    }
}
