//! Responses wire types: the JSON exactly as clients and suppliers write it.
//!
//! The same types serve both directions: a client's request and the body the
//! router sends a Responses supplier are both [`request::ResponsesRequest`]; a
//! supplier's reply and the router's reply to its client are both
//! [`response::ResponseObject`], and stream events are [`event`] types.
//! Conversion to and from the canonical model is written by hand in
//! `from_wire.rs` and `to_wire.rs`.
//!
//! Open world: the request keeps unknown top-level fields in a
//! `#[serde(flatten)]` map; input items, content parts, output items and
//! text formats are dispatched on their `type` with an `Unknown`/`Other`
//! variant that keeps the whole object, so the validator can name what it
//! rejects and a supplier's new item types become a typed decode error
//! instead of a shape error. Outgoing optionals are skipped when absent,
//! except the fields the OpenAI reference defines as required-but-nullable on
//! the `response` object (`error`, `incomplete_details`, `instructions`, ...),
//! which a client expects to see as `null`.

pub mod event;
pub mod request;
pub mod response;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, DeserializeOwned, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use std::fmt;

/// Separates the inner path from the message in the error of a buffered object.
///
/// Items, parts and formats are open-world, so their deserializers buffer the
/// object and then deserialize the known variant from the buffer; the outer
/// `serde_path_to_error` tracker cannot see inside that second pass. The inner
/// deserializer therefore puts its path in the error message behind this
/// marker, and [`split_nested`] lets the caller join it to the outer path
/// (`input[1]` + `content[0].text`).
const NESTED_MARK: char = '\u{1f}';

/// The message of a nested error that happened at `path` inside an object.
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

/// Buffers one JSON object (for open-world dispatch on its `type`).
pub(crate) struct ObjectVisitor(pub(crate) &'static str);

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Map<String, Value>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        Map::deserialize(MapAccessDeserializer::new(map))
    }
}

/// The `type` member of a buffered object, if it has one.
pub(crate) fn tag<E: de::Error>(map: &Map<String, Value>) -> Result<Option<&str>, E> {
    match map.get("type") {
        Some(Value::String(kind)) => Ok(Some(kind)),
        None | Some(Value::Null) => Ok(None),
        Some(_) => Err(E::custom(nested_message(
            "type",
            "invalid type: expected a string",
        ))),
    }
}

/// The `type` member of a buffered object that must have one.
pub(crate) fn required_tag<E: de::Error>(map: &Map<String, Value>) -> Result<&str, E> {
    tag(map)?.ok_or_else(|| E::missing_field("type"))
}

/// Deserialize a known variant from its buffered object, keeping the inner
/// path (also across several levels of buffering).
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
    fn paths_join() {
        assert_eq!(join_path(".", "model"), "model");
        assert_eq!(
            join_path("input[0]", "content[1].text"),
            "input[0].content[1].text"
        );
        assert_eq!(join_path("input", "[0]"), "input[0]");
        assert_eq!(join_path("tools[2]", ""), "tools[2]");
    }

    #[test]
    fn nested_messages_round_trip() {
        let m = nested_message("content[0].text", "invalid type");
        assert_eq!(split_nested(&m), Some(("content[0].text", "invalid type")));
        assert_eq!(split_nested("plain"), None);
    }
}
