//! What an account spent, as its owner reads it: charges from the ledger
//! by UTC day, by model and by key, each key's spend since a moment and its
//! last request, and the account's requests with filters. Amounts are
//! integer nano-USD; the dashboard formats them.

use crate::Operator;
use crate::error::OperatorError;
use chrono::{DateTime, Utc};
use uuid::Uuid;

pub use router_store::usage::{DaySpend, KeyActivity, RequestFilter, RequestLine, SpendLine};

/// An account's charges since a moment, three ways.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpendSummary {
    pub by_day: Vec<DaySpend>,
    pub by_model: Vec<SpendLine>,
    pub by_key: Vec<SpendLine>,
}

/// The longest request list one call answers.
pub const MAX_REQUESTS: i64 = 200;

impl Operator {
    /// `account_id`'s wallet charges since `since`: by UTC day, by model,
    /// by key.
    pub async fn spend_since(
        &self,
        account_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<SpendSummary, OperatorError> {
        let mut conn = self
            .database
            .connection()
            .await
            .map_err(OperatorError::store)?;
        let by_day = router_store::usage::by_day(&mut conn, account_id, since)
            .await
            .map_err(OperatorError::store)?;
        let by_model = router_store::usage::by_model(&mut conn, account_id, since)
            .await
            .map_err(OperatorError::store)?;
        let by_key = router_store::usage::by_key(&mut conn, account_id, since)
            .await
            .map_err(OperatorError::store)?;
        Ok(SpendSummary {
            by_day,
            by_model,
            by_key,
        })
    }

    /// Each key of `account_id`: its charges since `since` and its last
    /// request.
    pub async fn key_activity(
        &self,
        account_id: Uuid,
        since: DateTime<Utc>,
    ) -> Result<Vec<KeyActivity>, OperatorError> {
        let mut conn = self
            .database
            .connection()
            .await
            .map_err(OperatorError::store)?;
        router_store::usage::key_activity(&mut conn, account_id, since)
            .await
            .map_err(OperatorError::store)
    }

    /// `account_id`'s newest requests that pass `filter` (at most
    /// [`MAX_REQUESTS`]), each with its charge from the ledger.
    pub async fn account_requests(
        &self,
        account_id: Uuid,
        filter: &RequestFilter,
    ) -> Result<Vec<RequestLine>, OperatorError> {
        let filter = RequestFilter {
            limit: filter.limit.clamp(1, MAX_REQUESTS),
            ..filter.clone()
        };
        let mut conn = self
            .database
            .connection()
            .await
            .map_err(OperatorError::store)?;
        router_store::usage::requests(&mut conn, account_id, &filter)
            .await
            .map_err(OperatorError::store)
    }
}
