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
        let view = self
            .database
            .get_request(id)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Request))?;
        Ok(view)
    }
}
