//! One request's history as the operator sees it: status, charge,
//! attempts, hold and ledger entries. Money is integer nano-USD; times are
//! RFC 3339 in UTC.

use crate::Operator;
use crate::error::{OperatorError, Resource};
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
