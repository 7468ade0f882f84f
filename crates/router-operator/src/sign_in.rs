//! A person signing in with a magic link, and the browser session it opens:
//! the rules the `/api/auth/*` routes and the session guard share.
//!
//! A link is issued for an address only when an account has it and no link
//! went to it in the last minute; whoever asks gets the same answer either
//! way (the server's concern). A link is spent once, within
//! [`MAGIC_LINK_TTL`], and opens a session of the default lifetime. Only
//! hashes of link and cookie tokens are stored (`router_store::sessions`).

use crate::Operator;
use crate::error::OperatorError;
use router_store::MagicLinkIssue;
use uuid::Uuid;

pub use router_store::sessions::MAGIC_LINK_TTL;
pub use router_store::{NewSession as SignedInSession, SessionRecord};

/// A link just issued: where to send it and its secret token. Never logged.
pub struct IssuedLink {
    /// The account's address, as the account spells it.
    pub email: String,
    /// 64 lowercase hex digits; only its hash is stored.
    pub token: String,
}

impl std::fmt::Debug for IssuedLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("IssuedLink(<redacted>)")
    }
}

/// Sign-in and session tokens are 64 lowercase hex digits; anything else is
/// refused before the database is asked (and never echoed into a page).
pub fn is_token(token: &str) -> bool {
    token.len() == 64
        && token
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

impl Operator {
    /// Issues a sign-in link for `email`: `None` when no account has the
    /// address or a link went to it within the resend gap.
    pub async fn issue_sign_in_link(
        &self,
        email: &str,
    ) -> Result<Option<IssuedLink>, OperatorError> {
        let issue = self
            .database
            .issue_magic_link(email)
            .await
            .map_err(OperatorError::store)?;
        Ok(match issue {
            MagicLinkIssue::Issued { token, email } => Some(IssuedLink { email, token }),
            MagicLinkIssue::NoAccount | MagicLinkIssue::Throttled => None,
        })
    }

    /// The address of the account a live sign-in link signs into (the
    /// link stays unspent); `None` for a malformed, unknown, spent or
    /// expired one.
    pub async fn sign_in_link_email(&self, token: &str) -> Result<Option<String>, OperatorError> {
        if !is_token(token) {
            return Ok(None);
        }
        self.database
            .magic_link_email(token)
            .await
            .map_err(OperatorError::store)
    }

    /// Spends a sign-in link and opens a session of the default lifetime;
    /// `None` for a token that is malformed, unknown, spent or expired.
    pub async fn redeem_sign_in_link(
        &self,
        token: &str,
    ) -> Result<Option<SignedInSession>, OperatorError> {
        if !is_token(token) {
            return Ok(None);
        }
        self.database
            .redeem_magic_link(token, self.session_ttl)
            .await
            .map_err(OperatorError::store)
    }

    /// The live session a cookie names, if any (an unknown, expired or
    /// revoked one is none).
    pub async fn find_session(&self, token: &str) -> Result<Option<SessionRecord>, OperatorError> {
        self.database
            .find_session(token)
            .await
            .map_err(OperatorError::store)
    }

    /// Signing out: ends the session on every instance; one already gone
    /// is no error.
    pub async fn sign_out(&self, session_id: Uuid) -> Result<(), OperatorError> {
        self.database
            .revoke_session(session_id)
            .await
            .map(|_| ())
            .map_err(OperatorError::store)
    }

    /// The default session lifetime (`ROUTER_SESSION_TTL_SECS`).
    pub fn session_ttl(&self) -> std::time::Duration {
        self.session_ttl
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_64_lowercase_hex_digits() {
        assert!(is_token(&"ab".repeat(32)));
        assert!(!is_token("<script>"));
        assert!(!is_token(&"AB".repeat(32)));
        assert!(!is_token(&"ab".repeat(31)));
    }
}
