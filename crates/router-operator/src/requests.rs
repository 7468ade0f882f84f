//! One request's history as the operator sees it: status, charge,
//! attempts, hold and ledger entries. Money is integer nano-USD; times are
//! RFC 3339 in UTC.

use crate::Operator;
use crate::error::{OperatorError, Resource};
use router_canonical::NanoUsd;
use serde::Serialize;
use uuid::Uuid;

/// A request's history: the store's view, which serializes under the
/// public names (`protocol`, `*_nano_usd`, `ledger`).
pub use router_store::RequestView as RequestRecord;

impl Operator {
    /// One request's history.
    pub async fn request(&self, id: Uuid) -> Result<RequestRecord, OperatorError> {
        self.account_request(None, id)
            .await?
            .ok_or(OperatorError::NotFound(Resource::Request))
    }

    /// One request's history if it is `account_id`'s (`None`: any
    /// account's). Another account's request is `None`, exactly as an
    /// unknown one: `GET /v1/requests/{id}` for its owner.
    pub async fn account_request(
        &self,
        account_id: Option<Uuid>,
        id: Uuid,
    ) -> Result<Option<RequestRecord>, OperatorError> {
        let view = self
            .database
            .get_request(id)
            .await
            .map_err(OperatorError::store)?;
        Ok(view.filter(|view| account_id.is_none_or(|account| view.account_id == account)))
    }
}

/// `GET /v1/requests/{id}`: a request's final status.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestStatus {
    id: Uuid,
    /// `request`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    object: &'static str,
    model: String,
    protocol: String,
    /// `reserved`, `succeeded` or `failed`.
    status: String,
    /// USD; `null` until settled.
    #[cfg_attr(feature = "openapi", schema(required, value_type = Option<f64>))]
    charged_usd: Option<serde_json::Value>,
    /// The public error code of a failed request.
    #[cfg_attr(feature = "openapi", schema(required))]
    error: Option<String>,
    created_at: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    finished_at: Option<String>,
}

impl From<RequestRecord> for RequestStatus {
    fn from(view: RequestRecord) -> RequestStatus {
        RequestStatus {
            id: view.id,
            object: "request",
            model: view.model,
            protocol: view.recorded_protocol,
            status: view.status,
            charged_usd: view.charged_nano.map(|n| NanoUsd(n).to_usd_json()),
            error: view.error_reason,
            created_at: view.created_at,
            finished_at: view.finished_at,
        }
    }
}

impl Operator {
    /// The final status of `account_id`'s request `id` (N-10, GP-62):
    /// `reserved` while it runs, then `succeeded` (with the charge) or
    /// `failed` (released, nothing charged). Another account's request is
    /// `None`, exactly as an unknown one.
    pub async fn request_status(
        &self,
        account_id: Uuid,
        id: Uuid,
    ) -> Result<Option<RequestStatus>, OperatorError> {
        Ok(self
            .account_request(Some(account_id), id)
            .await?
            .map(RequestStatus::from))
    }
}
