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

/// `PATCH /api/data-protection`: exactly the switch.
#[derive(ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DataProtectionChange {
    zero_data_retention: bool,
}
