//! Accounts and their wallets: creation, credit grants, and the account view
//! of the admin API.

use crate::error::{AdminError, is_unique_violation, store_error};
use crate::schema::{accounts, ledger_entries, wallets};
use crate::timestamps::rfc3339;
use chrono::{DateTime, Utc};
use diesel::dsl::now;
use diesel::{BoolExpressionMethods, ExpressionMethods, OptionalExtension, QueryDsl};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_canonical::NanoUsd;
use router_core::store::StoreError;
use uuid::Uuid;

/// A newly created account.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AccountRow {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    /// RFC 3339, UTC.
    pub created_at: String,
}

/// An account with its wallet. Available credit is
/// `balance_nano - held_nano`.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct AccountView {
    pub id: Uuid,
    pub email: String,
    pub email_verified: bool,
    /// Integer nano-USD.
    pub balance_nano: i64,
    /// Sum of live holds, integer nano-USD.
    pub held_nano: i64,
    /// Settlements capped at their hold (the supplier reported more than the
    /// reservation bounded), and the nano-USD they did not collect.
    pub shortfall_count: i64,
    pub shortfall_nano: i64,
    /// RFC 3339, UTC.
    pub created_at: String,
}

/// Creates an account and its empty wallet, in one transaction.
pub async fn create_account(
    conn: &mut AsyncPgConnection,
    email: &str,
    email_verified: bool,
) -> Result<AccountRow, AdminError> {
    let id = Uuid::now_v7();
    let email = email.to_owned();
    conn.transaction(async move |conn| {
        let (id, email, email_verified, created_at) = diesel::insert_into(accounts::table)
            .values((
                accounts::id.eq(id),
                accounts::email.eq(&email),
                accounts::email_verified.eq(email_verified),
            ))
            .returning((
                accounts::id,
                accounts::email,
                accounts::email_verified,
                accounts::created_at,
            ))
            .get_result::<(Uuid, String, bool, DateTime<Utc>)>(conn)
            .await
            .map_err(|error| {
                // The same address, or the same in another case.
                if is_unique_violation(&error, "accounts_email_key")
                    || is_unique_violation(&error, "accounts_email_lower_key")
                {
                    AdminError::EmailTaken
                } else {
                    error.into()
                }
            })?;
        diesel::insert_into(wallets::table)
            .values(wallets::account_id.eq(id))
            .execute(conn)
            .await?;
        Ok(AccountRow {
            id,
            email,
            email_verified,
            created_at: rfc3339(created_at),
        })
    })
    .await
}

/// Adds `amount` to the wallet and records it in the ledger (wallet +x,
/// grants -x, one transaction id). Returns the new balance.
pub async fn grant_credits(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    amount: NanoUsd,
) -> Result<NanoUsd, AdminError> {
    if amount.0 <= 0 {
        return Err(AdminError::NonPositiveAmount(amount.0));
    }
    let txn_id = Uuid::now_v7();
    conn.transaction(async move |conn| {
        // A balance that would pass i64::MAX is refused, not overflowed.
        let balance = diesel::update(
            wallets::table
                .find(account_id)
                .filter(wallets::balance_nano.le(i64::MAX - amount.0)),
        )
        .set((
            wallets::balance_nano.eq(wallets::balance_nano + amount.0),
            wallets::updated_at.eq(now),
        ))
        .returning(wallets::balance_nano)
        .get_result::<i64>(conn)
        .await
        .optional()?;
        let Some(balance) = balance else {
            let exists = wallets::table
                .find(account_id)
                .select(wallets::account_id)
                .first::<Uuid>(conn)
                .await
                .optional()?
                .is_some();
            return Err(if exists {
                AdminError::BalanceTooLarge
            } else {
                AdminError::AccountNotFound(account_id)
            });
        };
        diesel::insert_into(ledger_entries::table)
            .values(&vec![
                (
                    ledger_entries::txn_id.eq(txn_id),
                    ledger_entries::account_id.eq(Some(account_id)),
                    ledger_entries::ledger_account.eq("wallet"),
                    ledger_entries::amount_nano.eq(amount.0),
                    ledger_entries::kind.eq("grant"),
                ),
                (
                    ledger_entries::txn_id.eq(txn_id),
                    ledger_entries::account_id.eq(None::<Uuid>),
                    ledger_entries::ledger_account.eq("grants"),
                    ledger_entries::amount_nano.eq(-amount.0),
                    ledger_entries::kind.eq("grant"),
                ),
            ])
            .execute(conn)
            .await?;
        // Both legs in one statement: the ledger's balance trigger checks
        // each statement's entries per transaction id.
        Ok(NanoUsd(balance))
    })
    .await
}

/// What an account listing reads: the account and its wallet.
type AccountColumns = (
    accounts::id,
    accounts::email,
    accounts::email_verified,
    wallets::balance_nano,
    wallets::held_nano,
    wallets::shortfall_count,
    wallets::shortfall_nano,
    accounts::created_at,
);
/// Diesel's columns are unit structs, so the tuple's default is the columns.
fn account_columns() -> AccountColumns {
    AccountColumns::default()
}
/// One row of [`account_columns`].
type AccountViewRow = (Uuid, String, bool, i64, i64, i64, i64, DateTime<Utc>);

fn account_view(
    (
        id,
        email,
        email_verified,
        balance_nano,
        held_nano,
        shortfall_count,
        shortfall_nano,
        created_at,
    ): AccountViewRow,
) -> AccountView {
    AccountView {
        id,
        email,
        email_verified,
        balance_nano,
        held_nano,
        shortfall_count,
        shortfall_nano,
        created_at: rfc3339(created_at),
    }
}

/// Up to `limit` accounts with their wallets, newest first; with `before`
/// (an account's id), those created before it (the next page).
pub async fn list_accounts(
    conn: &mut AsyncPgConnection,
    limit: i64,
    before: Option<Uuid>,
) -> Result<Vec<AccountView>, StoreError> {
    let mut query = accounts::table
        .inner_join(wallets::table)
        .select(account_columns())
        .order((accounts::created_at.desc(), accounts::id.desc()))
        .limit(limit)
        .into_boxed();
    if let Some(before) = before {
        let Some(created) = accounts::table
            .filter(accounts::id.eq(before))
            .select(accounts::created_at)
            .first::<DateTime<Utc>>(conn)
            .await
            .optional()
            .map_err(store_error)?
        else {
            return Ok(Vec::new());
        };
        query = query.filter(
            accounts::created_at.lt(created).or(accounts::created_at
                .eq(created)
                .and(accounts::id.lt(before))),
        );
    }
    let rows = query
        .load::<AccountViewRow>(conn)
        .await
        .map_err(store_error)?;
    Ok(rows.into_iter().map(account_view).collect())
}

/// The account and its wallet, or `None` when there is no such account.
pub async fn get_account(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> Result<Option<AccountView>, StoreError> {
    let row = accounts::table
        .inner_join(wallets::table)
        .filter(accounts::id.eq(id))
        .select(account_columns())
        .first::<AccountViewRow>(conn)
        .await
        .optional()
        .map_err(store_error)?;
    Ok(row.map(account_view))
}
