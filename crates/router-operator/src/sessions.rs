//! Browser sessions as the operator sees them: opened for an account
//! (support, or a dashboard behind the operator's own sign-in) and revoked.
//! The cookie's value is in the answer, once; only its hash is stored.

use crate::Operator;
use crate::error::{OperatorError, Refusal, Resource};
use router_store::AdminError;
use serde::{Deserialize, Serialize};
use std::time::Duration;
use uuid::Uuid;

/// The name of the browser session's cookie.
pub const COOKIE_NAME: &str = "router_session";

/// The default session lifetime (`ROUTER_SESSION_TTL_SECS`): 7 days.
pub const DEFAULT_SESSION_TTL: std::time::Duration = std::time::Duration::from_secs(7 * 24 * 3600);

/// The longest session the operator may open: a year.
const MAX_SESSION_TTL_SECS: u64 = 365 * 24 * 3600;

/// `POST /admin/accounts/{id}/sessions`: `{"ttl_seconds"?}`.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewSession {
    /// 1 to 31,536,000; default `ROUTER_SESSION_TTL_SECS`.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 31_536_000))]
    pub ttl_seconds: Option<u64>,
}

/// A session just opened: the only answer that carries its cookie's value.
#[derive(Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OpenedSession {
    pub id: Uuid,
    pub account_id: Uuid,
    /// Always [`COOKIE_NAME`].
    pub cookie_name: &'static str,
    /// Shown once.
    pub cookie_value: String,
    /// RFC 3339, UTC.
    pub expires_at: String,
}

impl std::fmt::Debug for OpenedSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenedSession")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("cookie_value", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish_non_exhaustive()
    }
}

impl Operator {
    /// Opens a browser session for an account, for `ttl_seconds` or the
    /// default lifetime.
    pub async fn create_session(
        &self,
        account_id: Uuid,
        new: NewSession,
    ) -> Result<OpenedSession, OperatorError> {
        let ttl = match new.ttl_seconds {
            None => self.session_ttl,
            Some(secs @ 1..=MAX_SESSION_TTL_SECS) => Duration::from_secs(secs),
            Some(_) => {
                return Err(Refusal::SessionTtl {
                    max: MAX_SESSION_TTL_SECS,
                }
                .into());
            }
        };
        let session = self
            .database
            .create_session(account_id, ttl)
            .await
            .map_err(|e| match e {
                AdminError::AccountNotFound(_) => OperatorError::NotFound(Resource::Account),
                other => OperatorError::store(other),
            })?;
        Ok(OpenedSession {
            id: session.id,
            account_id: session.account_id,
            cookie_name: COOKIE_NAME,
            cookie_value: session.token,
            expires_at: session.expires_at,
        })
    }

    /// Ends a session at once on every instance (each looks sessions up in
    /// the database).
    pub async fn revoke_session(&self, id: Uuid) -> Result<(), OperatorError> {
        let revoked = self
            .database
            .revoke_session(id)
            .await
            .map_err(OperatorError::store)?;
        if revoked {
            Ok(())
        } else {
            Err(OperatorError::NotFound(Resource::Session))
        }
    }
}
