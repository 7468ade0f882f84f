//! Signing a person in by email: the link an address with an account is
//! sent (issued by the operator wing, mailed through the notifications
//! wing's SMTP transport), and the answers of the sign-in endpoints. The
//! server answers `POST /api/auth/magic-link` first and sends the link
//! after, so the answer's timing tells nothing of which addresses have
//! accounts.

use router_notify::Mailer;
use router_operator::sign_in::{IssuedLink, MAGIC_LINK_TTL};
use router_operator::{Operator, SessionRecord};
use serde::Serialize;
use uuid::Uuid;

/// `POST /api/auth/magic-link`: the same answer whether an account has the
/// address or not.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(as = SignInLinkSent))]
pub struct LinkSent {
    /// `sign_in_link`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    object: &'static str,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    message: &'static str,
}

/// The one answer to a request for a link.
pub const LINK_SENT: LinkSent = LinkSent {
    object: "sign_in_link",
    message: "If an account uses this address, a sign-in link is on its way. It works once, within 15 minutes.",
};

/// `GET /api/auth/session`: who is signed in.
#[derive(Debug, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SessionView<'a> {
    /// `session`.
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    object: &'static str,
    id: Uuid,
    account_id: Uuid,
    email: &'a str,
    expires_at: &'a str,
}

impl<'a> From<&'a SessionRecord> for SessionView<'a> {
    fn from(session: &'a SessionRecord) -> Self {
        SessionView {
            object: "session",
            id: session.id,
            account_id: session.account_id,
            email: &session.email,
            expires_at: &session.expires_at,
        }
    }
}

/// Issues a single-use link for the account of `email`, if one has that
/// address (at most one a minute), and mails it; `sign_in_url` is where
/// the link opens (`{public base}/api/auth/sign-in`). What fails is logged,
/// never answered: the person already has the one answer.
pub async fn send_link(operator: &Operator, mailer: &Mailer, sign_in_url: &str, email: &str) {
    let issued = match operator.issue_sign_in_link(email).await {
        Ok(issued) => issued,
        Err(e) => {
            tracing::warn!(error = %e, "no sign-in link was issued");
            return;
        }
    };
    let Some(IssuedLink { email, token }) = issued else {
        return;
    };
    let link = format!("{sign_in_url}?token={token}");
    let minutes = MAGIC_LINK_TTL.as_secs() / 60;
    let text = format!(
        "Open this link to sign in to Router as {email}:\n\n{link}\n\n\
         It works once, within {minutes} minutes. If you did not ask to sign in, ignore this email.\n"
    );
    if let Err(e) = mailer.send(&email, "Your Router sign-in link", text).await {
        tracing::warn!(error = %e, "the sign-in email was not sent");
    }
}
