//! Messages wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both directions: a client's request and the body the
//! router sends a Messages supplier are both [`request::MessagesRequest`]; a
//! supplier's reply and the router's reply to its client are both
//! [`response::MessageObject`], and stream events are [`event::Event`].
//! Conversion to and from the canonical model is written by hand in
//! `from_wire.rs` and `to_wire.rs`.
//!
//! Open world: request and message objects keep unknown members in a
//! `#[serde(flatten)]` map (the validator rejects them, D-28), unknown content
//! blocks are kept whole ([`request::ContentBlock::Unknown`]), a supplier's
//! unknown `stop_reason` is kept as [`response::WireStopReason::Other`], and an
//! unknown stream event is [`event::Event::Unknown`]. Outgoing optionals are
//! skipped when absent, except `stop_reason` and `stop_sequence` of a message
//! object, which Anthropic's schema defines as nullable and always present.

pub mod event;
pub mod request;
pub mod response;

use serde::Serialize;
use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde_json::{Map, Value};
use std::fmt;

/// Separates the inner path from the message in the error of a content block.
///
/// Blocks are open-world, so their deserializer buffers the object and then
/// deserializes the known variant from the buffer; the outer
/// `serde_path_to_error` tracker cannot see inside that second pass. The block
/// deserializer therefore puts the inner path in its error message behind
/// this marker, and [`split_nested`] joins it to the outer path
/// (`messages[0].content[1]` + `source.media_type`).
const NESTED_MARK: char = '\u{1f}';

/// The message of a nested error that happened at `path` inside a block.
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
/// fallback is a well-formed Messages `api_error` envelope rather than a panic.
pub(crate) fn to_json_bytes<T: Serialize>(value: &T) -> Vec<u8> {
    match serde_json::to_vec(value) {
        Ok(bytes) => bytes,
        Err(_) => br#"{"type":"error","error":{"type":"api_error","message":"the router could not serialize its response"}}"#.to_vec(),
    }
}

/// Buffers one JSON object (for open-world dispatch on its `type`).
pub(crate) struct ObjectVisitor(pub(crate) &'static str);

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        serde::Deserialize::deserialize(MapAccessDeserializer::new(map))
    }
}

/// The `type` member of a buffered object.
pub(crate) fn tag<E: de::Error>(map: &Map<String, Value>) -> Result<&str, E> {
    match map.get("type") {
        Some(Value::String(kind)) => Ok(kind),
        Some(_) => Err(E::custom(nested_message(
            "type",
            "invalid type: expected a string",
        ))),
        None => Err(E::missing_field("type")),
    }
}

/// Deserialize a known variant from its buffered object, keeping the inner path.
pub(crate) fn typed<T: DeserializeOwned, E: de::Error>(map: Map<String, Value>) -> Result<T, E> {
    serde_path_to_error::deserialize(Value::Object(map)).map_err(|err| {
        let path = err.path().to_string();
        let message = err.into_inner().to_string();
        if let Some((inner, message)) = split_nested(&message) {
            return E::custom(nested_message(&join_path(&path, inner), message));
        }
        match missing_field(&message) {
            Some(field) => E::custom(nested_message(&join_path(&path, field), &message)),
            None => E::custom(nested_message(&path, &message)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_messages_round_trip() {
        let m = nested_message("source.url", "invalid type");
        assert_eq!(split_nested(&m), Some(("source.url", "invalid type")));
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
