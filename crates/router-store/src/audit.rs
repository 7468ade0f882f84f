//! Consistency checks across the ledger, wallets and holds, for tests and
//! for an operator's reconciliation job. Scans whole tables: not for the
//! request path.

use crate::error::store_error;
use diesel::QueryableByName;
use diesel::sql_types::BigInt;
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;

/// Counts of inconsistencies; all zero when the books agree.
#[derive(Debug, Clone, Copy, PartialEq, Eq, QueryableByName, serde::Serialize)]
pub struct Reconciliation {
    /// Ledger transactions whose entries do not sum to zero.
    #[diesel(sql_type = BigInt)]
    pub unbalanced_txns: i64,
    /// Wallets whose balance differs from the sum of their ledger entries.
    #[diesel(sql_type = BigInt)]
    pub wallets_off_ledger: i64,
    /// Wallets whose `held_nano` differs from the sum of their live holds and
    /// active credit leases.
    #[diesel(sql_type = BigInt)]
    pub wallets_off_holds: i64,
    /// Requests whose wallet debits exceed their hold (the hold is a
    /// ceiling, RELIABILITY.md I4), or that were debited without a settled hold.
    #[diesel(sql_type = BigInt)]
    pub charges_above_hold: i64,
}

impl Reconciliation {
    pub fn is_consistent(&self) -> bool {
        self.unbalanced_txns == 0
            && self.wallets_off_ledger == 0
            && self.wallets_off_holds == 0
            && self.charges_above_hold == 0
    }
}

pub async fn reconcile(conn: &mut AsyncPgConnection) -> Result<Reconciliation, StoreError> {
    diesel::sql_query(
        "SELECT
            (SELECT count(*) FROM (
                SELECT txn_id FROM ledger_entries GROUP BY txn_id HAVING sum(amount_nano) <> 0
             ) AS t) AS unbalanced_txns,
            (SELECT count(*) FROM wallets w
             WHERE w.balance_nano <> coalesce((
                SELECT sum(l.amount_nano) FROM ledger_entries l
                WHERE l.ledger_account = 'wallet' AND l.account_id = w.account_id), 0)
            ) AS wallets_off_ledger,
            (SELECT count(*) FROM wallets w
             WHERE w.held_nano <> coalesce((
                SELECT sum(h.amount_nano) FROM holds h
                WHERE h.status = 'held' AND h.account_id = w.account_id), 0)
                + coalesce((
                SELECT sum(c.amount_nano) FROM credit_leases c
                WHERE c.status = 'active' AND c.account_id = w.account_id), 0)
            ) AS wallets_off_holds,
            (SELECT count(*) FROM (
                SELECT l.request_id, -sum(l.amount_nano) AS debit FROM ledger_entries l
                WHERE l.kind = 'charge' AND l.ledger_account = 'wallet'
                GROUP BY l.request_id
             ) AS c
             LEFT JOIN holds h ON h.request_id = c.request_id
             WHERE h.request_id IS NULL OR h.status <> 'settled' OR c.debit > h.amount_nano
            ) AS charges_above_hold",
    )
    .get_result(conn)
    .await
    .map_err(store_error)
}
