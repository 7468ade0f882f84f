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

/// Token counts of a settled request.
#[derive(ToSchema)]
pub struct AdminUsage {
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    reasoning_tokens: i64,
}

/// A request's hold.
#[derive(ToSchema)]
pub struct AdminHold {
    amount_nano: i64,
    /// `held`, `settled` or `released`.
    status: String,
    expires_at: String,
    created_at: String,
    #[schema(required)]
    released_at: Option<String>,
}

/// One attempt of a request.
#[derive(ToSchema)]
pub struct AdminAttempt {
    attempt_no: i32,
    route_id: String,
    supplier_id: String,
    upstream_protocol: String,
    started_at: String,
    duration_ms: i64,
    /// `succeeded` or `failed`.
    outcome: String,
    #[schema(required)]
    upstream_status: Option<i32>,
    #[schema(required)]
    failure_kind: Option<String>,
    #[schema(required)]
    retryable: Option<bool>,
    /// The supplier's own id of this call (its `x-request-id` or
    /// `request-id` answer header), when it sent one.
    #[schema(required)]
    supplier_request_id: Option<String>,
}

/// One ledger entry of a request.
#[derive(ToSchema)]
pub struct AdminLedgerEntry {
    id: i64,
    txn_id: Uuid,
    /// Set for `wallet` entries.
    #[schema(required)]
    account_id: Option<Uuid>,
    /// `wallet`, `revenue` or `grants`.
    ledger_account: String,
    /// Signed: the entries of one `txn_id` sum to zero.
    amount_nano: i64,
    /// `grant` or `charge`.
    kind: String,
    created_at: String,
}

/// `GET /admin/requests/{id}`: a request's history.
#[derive(ToSchema)]
pub struct AdminRequest {
    id: Uuid,
    account_id: Uuid,
    api_key_id: Uuid,
    model: String,
    inbound_protocol: String,
    protocol: String,
    stream: bool,
    /// `reserved`, `succeeded` or `failed`.
    status: String,
    reserved_nano_usd: i64,
    #[schema(required)]
    charged_nano_usd: Option<i64>,
    #[schema(required)]
    reported_nano_usd: Option<i64>,
    #[schema(required)]
    shortfall_nano_usd: Option<i64>,
    #[schema(required)]
    usage: Option<AdminUsage>,
    #[schema(required)]
    route_id: Option<String>,
    #[schema(required)]
    error_reason: Option<String>,
    created_at: String,
    #[schema(required)]
    finished_at: Option<String>,
    #[schema(required)]
    experiment_id: Option<Uuid>,
    #[schema(required)]
    experiment_variant: Option<String>,
    cache_hit: bool,
    #[schema(required)]
    hold: Option<AdminHold>,
    attempts: Vec<AdminAttempt>,
    ledger: Vec<AdminLedgerEntry>,
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
