//! The shapes of the answers that handlers build as JSON values (`json!`)
//! rather than from a serialized type, stated as `ToSchema` types for the
//! OpenAPI document (`routes.rs` names them). Nothing constructs them: they
//! describe. `cargo xtask test`'s schemathesis step checks every answer it
//! gets against them, so a field added to a `json!` and not here fails there.
//!
//! Times are RFC 3339 strings unless a field says Unix seconds; money is
//! integer nano-USD (`*_nano_usd`) or a decimal USD number (`*_usd`).

#![allow(dead_code)]

use utoipa::ToSchema;
use uuid::Uuid;

/// An API key's scope.
#[derive(ToSchema)]
pub enum ScopeName {
    #[serde(rename = "inference")]
    Inference,
    #[serde(rename = "account:read")]
    AccountRead,
    #[serde(rename = "account:write")]
    AccountWrite,
    #[serde(rename = "usage:read")]
    UsageRead,
}

/// `GET /admin/accounts/{id}/api-keys`.
#[derive(ToSchema)]
pub struct AdminApiKeyList {
    /// `list`.
    #[schema(value_type = String, pattern = "^list$")]
    object: String,
    data: Vec<router_operator::ApiKey>,
}

/// `GET /admin/accounts/{id}/experiments`.
#[derive(ToSchema)]
pub struct AdminExperimentList {
    /// `list`.
    object: String,
    data: Vec<router_operator::ExperimentView>,
}

/// `POST /admin/jobs/{name}/run`: one pass.
#[derive(ToSchema)]
pub struct AdminJobPass {
    name: String,
    processed: i64,
}

/// `POST /admin/jobs/{name}/run`'s optional body.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminJobRun {
    /// The instant a `digest-scheduler` pass takes as now (test hooks only).
    #[schema(format = DateTime)]
    as_of: String,
}

/// `POST /admin/requests/backdate` (test hooks only).
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminBackdate {
    request_ids: Vec<Uuid>,
    #[schema(format = DateTime)]
    finished_at: String,
}

/// How many finished requests moved.
#[derive(ToSchema)]
pub struct AdminBackdated {
    moved: i64,
}

/// `POST /admin/videos/{id}/reconcile`: `{upstream_task_id}` resumes
/// polling; `{outcome: "failed", reason}` releases the hold.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AdminReconcile {
    upstream_task_id: Option<String>,
    outcome: Option<String>,
    reason: Option<String>,
}

/// `POST /v1/uploads`: a multipart body with one part, `file`.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UploadForm {
    /// A PNG, JPEG, WebP or GIF of 1 byte to 10 MiB whose declared type
    /// matches its content.
    #[schema(value_type = String, format = Binary)]
    file: Vec<u8>,
}

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
                .enum_values(Some(router_notify::events::IDS)),
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

/// `PATCH /api/data-protection`: exactly the switch.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataProtectionChange {
    zero_data_retention: bool,
}
