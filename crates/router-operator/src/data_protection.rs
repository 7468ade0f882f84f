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
use crate::error::{OperatorError, Refusal, Resource};
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

/// The switch a change asks for: the body is exactly
/// `{"zero_data_retention": <bool>}`; anything else, invalid JSON included,
/// is refused (J-04, GP-37).
pub fn parse_switch(body: &[u8]) -> Result<bool, Refusal> {
    let value: serde_json::Value =
        serde_json::from_slice(body).map_err(|_| Refusal::DataProtectionBody)?;
    let object = value.as_object().ok_or(Refusal::DataProtectionBody)?;
    match (object.len(), object.get("zero_data_retention")) {
        (1, Some(serde_json::Value::Bool(on))) => Ok(*on),
        _ => Err(Refusal::DataProtectionBody),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::ApiError;

    #[test]
    fn only_the_one_boolean_field_is_accepted() {
        assert_eq!(parse_switch(br#"{"zero_data_retention":true}"#), Ok(true));
        assert_eq!(parse_switch(br#"{"zero_data_retention":false}"#), Ok(false));
        for bad in [
            &br#"{"zero_data_retention":true,"x":1}"#[..],
            br#"{"zero_data_retention":"yes"}"#,
            br#"{"zero_data_retention":null}"#,
            br#"{"zero_data_retention":1}"#,
            b"{}",
            b"null",
            b"[]",
            b"true",
            b"{",
            b"",
        ] {
            let error = ApiError::from(parse_switch(bad).unwrap_err());
            assert_eq!(
                error.code,
                router_core::product_codes::INVALID_DATA_PROTECTION,
                "{bad:?}"
            );
            assert_eq!(error.status(), 400);
        }
    }
}
