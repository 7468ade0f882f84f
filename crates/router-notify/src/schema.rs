//! The shapes of the channel forms for the server's OpenAPI document
//! (feature `openapi`). The forms are read from a JSON object by
//! `ChannelChange::from_json` and `EmailConsent::from_json`
//! (`channels.rs`), which refuse what these types do not allow; these
//! types only describe them, next to the code that reads them. Nothing
//! constructs them.

#![allow(dead_code)]

use utoipa::ToSchema;

/// `PATCH /v1/channels/{channel_id}`: at least one of the two.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(min_properties = 1)]
pub struct ChannelUpdate {
    #[schema(nullable = false, pattern = "^(off|daily|weekly|monthly)$")]
    frequency: Option<String>,
    /// Event ids (`available_events` of `GET /v1/channels`).
    #[schema(schema_with = event_ids)]
    events: Option<Vec<String>>,
}

/// `POST /api/channels/email`: consent, and how often.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EmailConnect {
    /// Must be `true`.
    #[schema(schema_with = only_true)]
    consent: bool,
    #[schema(pattern = "^(off|daily|weekly|monthly)$")]
    frequency: String,
}

/// A selection of the notification events, by id.
fn event_ids() -> utoipa::openapi::Array {
    utoipa::openapi::schema::ArrayBuilder::new()
        .items(
            utoipa::openapi::schema::ObjectBuilder::new()
                .schema_type(utoipa::openapi::Type::String)
                .enum_values(Some(crate::events::IDS)),
        )
        .build()
}

/// `true` and nothing else.
fn only_true() -> utoipa::openapi::Object {
    utoipa::openapi::schema::ObjectBuilder::new()
        .schema_type(utoipa::openapi::Type::Boolean)
        .enum_values(Some([true]))
        .build()
}
