//! Browser sessions and the magic links that open them.
//!
//! A session is a random cookie value whose SHA-256 is stored with its
//! account and expiry; a magic link is a random token sent by email, single
//! use and short-lived, that opens one session. Only hashes are stored, so
//! a copy of the database opens nothing. Every check of "still valid"
//! compares with the database's clock, so instances agree.

use crate::error::{AdminError, is_foreign_key_violation, store_error};
use crate::schema::{accounts, browser_sessions, magic_links};
use crate::secret::{random_hex, sha256};
use crate::timestamps::rfc3339;
use chrono::{DateTime, Utc};
use diesel::dsl::{now, sql};
use diesel::sql_types::{Bool, Text};
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use std::fmt;
use std::time::Duration;
use uuid::Uuid;

/// How long a sign-in link opens a session.
pub const MAGIC_LINK_TTL: Duration = Duration::from_secs(15 * 60);

/// No second link is sent to an account within this gap of the last one,
/// so the sign-in form cannot be used to flood someone's inbox. The form's
/// answer does not change (it never says whether an account exists).
pub const MAGIC_LINK_RESEND_GAP: Duration = Duration::from_secs(60);

/// A freshly opened session. `token` is the cookie value: given to the
/// browser (or the operator) once, only its hash is stored.
#[derive(Clone, PartialEq, Eq)]
pub struct NewSession {
    pub id: Uuid,
    pub account_id: Uuid,
    pub token: String,
    /// RFC 3339, UTC.
    pub expires_at: String,
}

impl fmt::Debug for NewSession {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewSession")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("token", &"<redacted>")
            .field("expires_at", &self.expires_at)
            .finish()
    }
}

/// A live session, as a request presents it.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct SessionRecord {
    pub id: Uuid,
    pub account_id: Uuid,
    pub email: String,
    /// RFC 3339, UTC.
    pub expires_at: String,
}

/// What asking for a sign-in link did. The HTTP answer is the same for
/// every variant; only `Issued` sends an email.
#[derive(Clone, PartialEq, Eq)]
pub enum MagicLinkIssue {
    /// A new link for the account at `email` (as the account spells it).
    Issued { token: String, email: String },
    /// No account has this address.
    NoAccount,
    /// A link was sent within [`MAGIC_LINK_RESEND_GAP`].
    Throttled,
}

impl fmt::Debug for MagicLinkIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            MagicLinkIssue::Issued { .. } => f.write_str("Issued(<redacted>)"),
            MagicLinkIssue::NoAccount => f.write_str("NoAccount"),
            MagicLinkIssue::Throttled => f.write_str("Throttled"),
        }
    }
}

/// 256 bits: cookie values and link tokens are looked up by their hash.
const TOKEN_BYTES: usize = 32;

/// Issues a sign-in link for the account whose email is `email` (any
/// letter case).
pub async fn issue_magic_link(
    conn: &mut AsyncPgConnection,
    email: &str,
) -> Result<MagicLinkIssue, StoreError> {
    let email = email.to_owned();
    conn.transaction(async move |conn| {
        // The account row is locked while the resend gap is checked and the
        // link written: two requests for one address at once (the link is
        // issued after the answer, so nothing orders them) send one mail.
        let account: Option<(Uuid, String)> = accounts::table
            .filter(
                sql::<Bool>("lower(email) = lower(")
                    .bind::<Text, _>(&email)
                    .sql(")"),
            )
            .select((accounts::id, accounts::email))
            .for_update()
            .first(conn)
            .await
            .optional()?;
        let Some((account_id, email)) = account else {
            return Ok(MagicLinkIssue::NoAccount);
        };
        let gap_start = Utc::now() - MAGIC_LINK_RESEND_GAP;
        let recent: Option<DateTime<Utc>> = magic_links::table
            .filter(magic_links::account_id.eq(account_id))
            .filter(magic_links::created_at.gt(gap_start))
            .select(magic_links::created_at)
            .first(conn)
            .await
            .optional()?;
        if recent.is_some() {
            return Ok(MagicLinkIssue::Throttled);
        }
        let token = random_hex(TOKEN_BYTES);
        diesel::insert_into(magic_links::table)
            .values((
                magic_links::token_hash.eq(&sha256(&token)[..]),
                magic_links::account_id.eq(account_id),
                magic_links::expires_at.eq(Utc::now() + MAGIC_LINK_TTL),
            ))
            .execute(conn)
            .await?;
        Ok(MagicLinkIssue::Issued { token, email })
    })
    .await
    .map_err(store_error)
}

/// The address of the account a live sign-in link signs into, without
/// spending it (the page behind the link names it); `None` when the link is
/// unknown, used or expired.
pub async fn magic_link_email(
    conn: &mut AsyncPgConnection,
    token: &str,
) -> Result<Option<String>, StoreError> {
    magic_links::table
        .inner_join(accounts::table)
        .filter(magic_links::token_hash.eq(&sha256(token)[..]))
        .filter(magic_links::used_at.is_null())
        .filter(magic_links::expires_at.gt(now))
        .select(accounts::email)
        .first(conn)
        .await
        .optional()
        .map_err(store_error)
}

/// Spends a sign-in link and opens a session lasting `ttl`: `None` when the
/// link is unknown, used or expired. Two redeemers of one link race on one
/// row update; exactly one wins.
pub async fn redeem_magic_link(
    conn: &mut AsyncPgConnection,
    token: &str,
    ttl: Duration,
) -> Result<Option<NewSession>, StoreError> {
    let hash = sha256(token);
    conn.transaction(async move |conn| {
        let account_id: Option<Uuid> = diesel::update(magic_links::table)
            .filter(magic_links::token_hash.eq(&hash[..]))
            .filter(magic_links::used_at.is_null())
            .filter(magic_links::expires_at.gt(now))
            .set(magic_links::used_at.eq(now))
            .returning(magic_links::account_id)
            .get_result(conn)
            .await
            .optional()?;
        match account_id {
            Some(account_id) => insert_session(conn, account_id, ttl).await.map(Some),
            None => Ok(None),
        }
    })
    .await
    .map_err(store_error)
}

/// Opens a session for `account_id` lasting `ttl` (the operator's way in).
pub async fn create_session(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    ttl: Duration,
) -> Result<NewSession, AdminError> {
    insert_session(conn, account_id, ttl)
        .await
        .map_err(|error| {
            if is_foreign_key_violation(&error, "browser_sessions_account_id_fkey") {
                AdminError::AccountNotFound(account_id)
            } else {
                error.into()
            }
        })
}

async fn insert_session(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    ttl: Duration,
) -> Result<NewSession, diesel::result::Error> {
    let id = Uuid::now_v7();
    let token = random_hex(TOKEN_BYTES);
    let expires_at: DateTime<Utc> = diesel::insert_into(browser_sessions::table)
        .values((
            browser_sessions::id.eq(id),
            browser_sessions::account_id.eq(account_id),
            browser_sessions::token_hash.eq(&sha256(&token)[..]),
            browser_sessions::expires_at.eq(Utc::now() + ttl),
        ))
        .returning(browser_sessions::expires_at)
        .get_result(conn)
        .await?;
    Ok(NewSession {
        id,
        account_id,
        token,
        expires_at: rfc3339(expires_at),
    })
}

/// The live session whose cookie value is `token`, if any.
pub async fn find_session(
    conn: &mut AsyncPgConnection,
    token: &str,
) -> Result<Option<SessionRecord>, StoreError> {
    let row: Option<(Uuid, Uuid, String, DateTime<Utc>)> = browser_sessions::table
        .inner_join(accounts::table)
        .filter(browser_sessions::token_hash.eq(&sha256(token)[..]))
        .filter(browser_sessions::revoked_at.is_null())
        .filter(browser_sessions::expires_at.gt(now))
        .select((
            browser_sessions::id,
            browser_sessions::account_id,
            accounts::email,
            browser_sessions::expires_at,
        ))
        .first(conn)
        .await
        .optional()
        .map_err(store_error)?;
    Ok(
        row.map(|(id, account_id, email, expires_at)| SessionRecord {
            id,
            account_id,
            email,
            expires_at: rfc3339(expires_at),
        }),
    )
}

/// Ends a session (sign-out, or the operator). `false` when no live session
/// has this ID.
pub async fn revoke_session(conn: &mut AsyncPgConnection, id: Uuid) -> Result<bool, StoreError> {
    let revoked = diesel::update(browser_sessions::table)
        .filter(browser_sessions::id.eq(id))
        .filter(browser_sessions::revoked_at.is_null())
        .set(browser_sessions::revoked_at.eq(now))
        .execute(conn)
        .await
        .map_err(store_error)?;
    Ok(revoked > 0)
}
