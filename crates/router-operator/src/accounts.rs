//! Accounts as the operator sees them: created with an empty wallet, shown
//! with their wallet, credited. Money is integer nano-USD.

use crate::Operator;
use crate::error::{OperatorError, Refusal, Resource};
use router_canonical::NanoUsd;
use router_store::{AccountView, AdminError};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewAccount {
    /// One email address ([`is_email_address`]); the pattern states an
    /// ASCII subset of what is accepted.
    #[cfg_attr(
        feature = "openapi",
        schema(
            max_length = 254,
            pattern = "^[A-Za-z0-9_%+-]{1,16}(\\.[A-Za-z0-9_%+-]{1,16}){0,2}@[A-Za-z0-9]([A-Za-z0-9-]{0,18}[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]{0,18}[A-Za-z0-9])?){1,3}$"
        )
    )]
    pub email: String,
    #[serde(default)]
    pub email_verified: bool,
}

#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Credits {
    #[cfg_attr(feature = "openapi", schema(minimum = 1))]
    pub amount_nano_usd: i64,
}

/// Whether `text` is one email address as an account holds it (issue 33:
/// the admin API once took anything): at most 254 characters, one `@`; a
/// dot-atom local part of at most 64 characters; a domain of at least two
/// labels of letters, digits and inner hyphens (at most 63 each). Letters
/// beyond ASCII are allowed (internationalized addresses); spaces, quotes,
/// controls, angle brackets and IP-literal domains are not.
pub fn is_email_address(text: &str) -> bool {
    const ATEXT: &str = "!#$%&'*+/=?^_`{|}~-";
    let Some((local, domain)) = text.rsplit_once('@') else {
        return false;
    };
    let atom = |part: &str, allowed: &dyn Fn(char) -> bool| {
        !part.is_empty()
            && part
                .split('.')
                .all(|piece| !piece.is_empty() && piece.chars().all(allowed))
    };
    let label_ok = |label: &str| {
        (1..=63).contains(&label.len())
            && !label.starts_with('-')
            && !label.ends_with('-')
            && label.chars().all(|c| c.is_alphanumeric() || c == '-')
    };
    text.len() <= 254
        && local.chars().count() <= 64
        && atom(local, &|c| c.is_alphanumeric() || ATEXT.contains(c))
        && domain.split('.').count() >= 2
        && domain.split('.').all(label_ok)
}

/// A new account: its wallet is empty.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OpenedAccount {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    pub balance_nano_usd: i64,
    pub held_nano_usd: i64,
}

/// An account with its wallet.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Account {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    pub balance_nano_usd: i64,
    pub held_nano_usd: i64,
    /// Balance less holds.
    pub available_nano_usd: i64,
    /// Settlements capped at their hold, and what they did not collect.
    pub shortfall_count: i64,
    pub shortfall_nano_usd: i64,
    /// RFC 3339, UTC.
    pub created_at: String,
}

impl From<AccountView> for Account {
    fn from(account: AccountView) -> Self {
        Account {
            id: account.id,
            email: account.email,
            email_verified: account.email_verified,
            balance_nano_usd: account.balance_nano,
            held_nano_usd: account.held_nano,
            available_nano_usd: account.balance_nano - account.held_nano,
            shortfall_count: account.shortfall_count,
            shortfall_nano_usd: account.shortfall_nano,
            created_at: account.created_at,
        }
    }
}

/// A wallet's balance after a credit.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Balance {
    pub account_id: Uuid,
    pub balance_nano_usd: i64,
}

impl Operator {
    /// Creates an account with an empty wallet; an email in use is
    /// [`Refusal::EmailTaken`].
    pub async fn create_account(&self, new: NewAccount) -> Result<OpenedAccount, OperatorError> {
        if !is_email_address(&new.email) {
            return Err(Refusal::InvalidEmail.into());
        }
        let account = self
            .database
            .create_account(&new.email, new.email_verified)
            .await
            .map_err(|e| match e {
                AdminError::EmailTaken => Refusal::EmailTaken.into(),
                other => OperatorError::store(other),
            })?;
        Ok(OpenedAccount {
            id: account.id,
            email: account.email,
            email_verified: account.email_verified,
            balance_nano_usd: 0,
            held_nano_usd: 0,
        })
    }

    /// Up to `limit` (1 to 1000) accounts with their wallets, newest first;
    /// `before`: the last id of the previous page.
    pub async fn accounts(
        &self,
        limit: u32,
        before: Option<Uuid>,
    ) -> Result<crate::List<Account>, OperatorError> {
        let limit = limit.clamp(1, 1000);
        let accounts = self
            .database
            .list_accounts(i64::from(limit), before)
            .await
            .map_err(OperatorError::store)?;
        Ok(crate::List::of(
            accounts.into_iter().map(Account::from).collect(),
        ))
    }

    /// An account with its wallet.
    pub async fn account(&self, id: Uuid) -> Result<Account, OperatorError> {
        let account = self
            .database
            .get_account(id)
            .await
            .map_err(OperatorError::store)?
            .ok_or(OperatorError::NotFound(Resource::Account))?;
        Ok(account.into())
    }

    /// Adds credit to a wallet (a positive amount).
    pub async fn credit_account(
        &self,
        id: Uuid,
        credits: Credits,
    ) -> Result<Balance, OperatorError> {
        if credits.amount_nano_usd <= 0 {
            return Err(Refusal::NonPositiveAmount.into());
        }
        let balance = self
            .database
            .grant_credits(id, NanoUsd(credits.amount_nano_usd))
            .await
            .map_err(|e| match e {
                AdminError::AccountNotFound(_) => OperatorError::NotFound(Resource::Account),
                AdminError::BalanceTooLarge => Refusal::BalanceTooLarge.into(),
                other => OperatorError::store(other),
            })?;
        Ok(Balance {
            account_id: id,
            balance_nano_usd: balance.0,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::is_email_address;

    #[test]
    fn email_addresses_are_one_address() {
        for good in [
            "a@example.com",
            "First.Last+tag@sub.example.co.uk",
            "o'brien@example.ie",
            "josé@exämple.de",
        ] {
            assert!(is_email_address(good), "{good}");
        }
        for bad in [
            "",
            "plain",
            "@example.com",
            "a@",
            "a@localhost",
            "a@@example.com",
            "a b@example.com",
            "a@exa mple.com",
            "\"a\"@example.com",
            "a@example.com\n",
            "<a@example.com>",
            "a@[127.0.0.1]",
            "a..b@example.com",
            ".a@example.com",
            "a@-example.com",
            "a@example..com",
            "x@y.z,b@example.com",
            &format!("{}@example.com", "a".repeat(65)),
            &format!("a@{}.com", "b".repeat(250)),
        ] {
            assert!(!is_email_address(bad), "{bad}");
        }
    }
}
