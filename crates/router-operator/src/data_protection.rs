//! An account's zero-data-retention switch (section J): read it, and turn
//! it on or off for a signed-in person.
//!
//! Turning it on, in one transaction (`router_store::data_protection`):
//! new uploads are refused, every upload is scheduled for deletion, the
//! exact-response cache is cleared, and every instance's key cache learns
//! of it, so inference, image generation and video creation need verified
//! ZDR supply at once. Turning it off restores nothing (GP-37). Who may
//! change it (a same-origin session, never a key) is the route guard's rule.

use crate::Operator;
use crate::error::{OperatorError, Resource};
use uuid::Uuid;

impl Operator {
    /// Whether the account has zero data retention on.
    pub async fn zero_data_retention(&self, account_id: Uuid) -> Result<bool, OperatorError> {
        self.database
            .zero_data_retention(account_id)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Account))
    }

    /// Sets the switch on behalf of browser session `session_id`
    /// (idempotent: setting the current value changes nothing and writes no
    /// audit row); answers the value now stored.
    pub async fn set_zero_data_retention(
        &self,
        account_id: Uuid,
        session_id: Uuid,
        enabled: bool,
    ) -> Result<bool, OperatorError> {
        let change = self
            .database
            .set_zero_data_retention(account_id, session_id, enabled)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Account))?;
        if change.changed {
            tracing::info!(
                %account_id,
                %session_id,
                zero_data_retention = enabled,
                uploads_scheduled = change.uploads_scheduled,
                "data protection changed"
            );
        }
        Ok(change.zero_data_retention)
    }
}
