//! One request's history as the operator sees it: status, charge,
//! attempts, hold and ledger entries. Money is integer nano-USD; times are
//! RFC 3339 in UTC.

use crate::Operator;
use crate::error::{OperatorError, Resource};
use router_store::RequestView;
use router_store::history::{AttemptView, HoldView, LedgerEntryView, UsageView};
use serde::Serialize;
use uuid::Uuid;

/// A request's history.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestRecord {
    pub id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    pub model: String,
    pub inbound_protocol: String,
    /// The protocol the request was recorded under.
    pub protocol: String,
    pub stream: bool,
    /// `reserved`, `succeeded` or `failed`.
    pub status: String,
    pub reserved_nano_usd: i64,
    pub charged_nano_usd: Option<i64>,
    pub reported_nano_usd: Option<i64>,
    pub shortfall_nano_usd: Option<i64>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub usage: Option<UsageView>,
    pub route_id: Option<String>,
    pub error_reason: Option<String>,
    pub created_at: String,
    pub finished_at: Option<String>,
    pub experiment_id: Option<Uuid>,
    pub experiment_variant: Option<String>,
    pub cache_hit: bool,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub hold: Option<HoldView>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub attempts: Vec<AttemptView>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<Object>))]
    pub ledger: Vec<LedgerEntryView>,
}

impl From<RequestView> for RequestRecord {
    fn from(view: RequestView) -> Self {
        RequestRecord {
            id: view.id,
            account_id: view.account_id,
            api_key_id: view.api_key_id,
            model: view.model,
            inbound_protocol: view.inbound_protocol,
            protocol: view.recorded_protocol,
            stream: view.stream,
            status: view.status,
            reserved_nano_usd: view.reserved_nano,
            charged_nano_usd: view.charged_nano,
            reported_nano_usd: view.reported_nano,
            shortfall_nano_usd: view.shortfall_nano,
            usage: view.usage,
            route_id: view.route_id,
            error_reason: view.error_reason,
            created_at: view.created_at,
            finished_at: view.finished_at,
            experiment_id: view.experiment_id,
            experiment_variant: view.experiment_variant,
            cache_hit: view.cache_hit,
            hold: view.hold,
            attempts: view.attempts,
            ledger: view.ledger_entries,
        }
    }
}

impl Operator {
    /// One request's history.
    pub async fn request(&self, id: Uuid) -> Result<RequestRecord, OperatorError> {
        let view = self
            .database
            .get_request(id)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Request))?;
        Ok(view.into())
    }
}
