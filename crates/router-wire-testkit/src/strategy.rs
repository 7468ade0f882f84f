//! Proptest strategies for canonical values that every wire protocol
//! generates the same way in its round-trip tests. Strategies for what a
//! protocol carries in its own way (messages, sampling, native fields) stay
//! in that crate's `tests/round_trip.rs`.

use proptest::prelude::*;
use router_canonical::{CacheControl, ContentPart, ResponseFormat, Tool, ToolChoice};
use serde_json::json;

/// Any short printable text.
pub fn text() -> impl Strategy<Value = String> {
    "\\PC{0,24}"
}

/// An identifier (tool, function, schema and field names).
pub fn ident() -> impl Strategy<Value = String> {
    "[a-zA-Z_][a-zA-Z0-9_]{0,15}"
}

/// A multiple of 0.25 in `lo/4..=hi/4` (exact in JSON and in `f64`).
pub fn quarter(lo: i32, hi: i32) -> impl Strategy<Value = f64> {
    (lo..=hi).prop_map(|q| f64::from(q) * 0.25)
}

/// No marker, or an `ephemeral` one with or without a TTL.
pub fn cache_control() -> impl Strategy<Value = Option<CacheControl>> {
    prop::option::of(
        prop::option::of(prop_oneof!["5m", "1h"]).prop_map(|ttl| CacheControl {
            kind: "ephemeral".to_owned(),
            ttl,
        }),
    )
}

/// A text part with or without a cache marker.
pub fn text_part() -> impl Strategy<Value = ContentPart> {
    (text(), cache_control()).prop_map(|(text, cache_control)| ContentPart::Text {
        text,
        cache_control,
    })
}

/// Content sent as a string, as the parser keeps it: one plain text part,
/// and `true` for "was a string".
pub fn string_content() -> impl Strategy<Value = (Vec<ContentPart>, bool)> {
    text().prop_map(|text| {
        let part = ContentPart::Text {
            text,
            cache_control: None,
        };
        (vec![part], true)
    })
}

/// A function tool with a one-property object schema.
pub fn tool() -> impl Strategy<Value = Tool> {
    (
        ident(),
        prop::option::of(text()),
        ident(),
        prop::option::of(any::<bool>()),
        cache_control(),
    )
        .prop_map(|(name, description, param, strict, cache_control)| Tool {
            name,
            description,
            parameters: json!({"type": "object", "properties": {param: {"type": "string"}}}),
            strict,
            cache_control,
        })
}

/// Any tool choice an OpenAI surface carries.
pub fn tool_choice() -> impl Strategy<Value = ToolChoice> {
    prop_oneof![
        Just(ToolChoice::Auto),
        Just(ToolChoice::None),
        Just(ToolChoice::Required),
        ident().prop_map(|name| ToolChoice::Tool { name }),
    ]
}

/// Any response format an OpenAI surface carries.
pub fn response_format() -> impl Strategy<Value = ResponseFormat> {
    prop_oneof![
        Just(ResponseFormat::Text),
        Just(ResponseFormat::JsonObject),
        (
            ident(),
            ident(),
            prop::option::of(any::<bool>()),
            prop::option::of(text())
        )
            .prop_map(
                |(name, field, strict, description)| ResponseFormat::JsonSchema {
                    name,
                    schema: json!({"type": "object", "properties": {field: {"type": "integer"}}}),
                    strict,
                    description,
                }
            ),
    ]
}
