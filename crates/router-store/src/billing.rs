//! The money path of a request: reserve, extend the hold, settle or void it,
//! and reap holds whose process died.
//!
//! Each step is ONE statement (data-modifying CTEs), so it is atomic on its
//! own, needs no explicit transaction, and costs one round trip once the
//! statement is prepared on the connection (see [`crate::prepared`]). Every
//! function takes a connection, so callers may also run it inside a larger
//! transaction.
//!
//! Exactly-once: settle, void and the reaper each move a hold out of `held`
//! with `WHERE status = 'held'` in the same statement that touches the wallet
//! and the request. Under READ COMMITTED a second, concurrent statement
//! blocks on the hold's row lock, re-evaluates that condition once the first
//! commits, and matches nothing.

use crate::error::{out_of_range, store_error};
use crate::history::AttemptColumns;
use crate::prepared::{Params, static_query_id};
use crate::timestamps::to_db;
use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment};
use diesel::sql_types::{BigInt, Bool, Integer, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::{
    AttemptOutcome, NewRequest, ReserveError, SettleError, Settlement, StoreError, Voiding,
};
use std::time::SystemTime;
use uuid::Uuid;

/// Holds the reaper releases per statement; it loops until a batch comes
/// back short.
pub const REAP_BATCH: i64 = 500;

/// Inserts the request row and its hold, and raises the wallet's
/// `held_nano`, all or nothing. The wallet update is the race-free check:
/// `balance_nano - held_nano >= amount` is re-evaluated on the latest row
/// version when a concurrent reservation held the lock first, so the
/// available balance can never be overdrawn. When it does not match, the two
/// inserts select from an empty CTE and nothing is written. An account
/// without a wallet row has no credit: also `InsufficientCredits`.
pub async fn reserve(
    conn: &mut AsyncPgConnection,
    request: &NewRequest,
) -> Result<(), ReserveError> {
    if request.reserve.is_negative() {
        return Err(
            StoreError::Query(format!("negative reservation {}", request.reserve.0)).into(),
        );
    }
    let statement = ReserveStatement {
        request_id: &request.request_id,
        account_id: &request.account_id,
        api_key_id: &request.api_key_id,
        model: &request.model,
        inbound_protocol: request.inbound_protocol.as_str(),
        recorded_protocol: request.recorded_protocol.as_str(),
        stream: request.stream,
        amount: request.reserve.0,
        expires_at: to_db(request.hold_expires_at),
    };
    match statement.execute(conn).await.map_err(store_error)? {
        1 => Ok(()),
        _ => Err(ReserveError::InsufficientCredits),
    }
}

struct ReserveStatement<'a> {
    request_id: &'a Uuid,
    account_id: &'a Uuid,
    api_key_id: &'a Uuid,
    model: &'a str,
    inbound_protocol: &'static str,
    recorded_protocol: &'static str,
    stream: bool,
    amount: i64,
    expires_at: DateTime<Utc>,
}

impl QueryFragment<Pg> for ReserveStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<SqlUuid, _>("request_id", self.request_id)?;
        p.bind::<SqlUuid, _>("account_id", self.account_id)?;
        p.bind::<SqlUuid, _>("api_key_id", self.api_key_id)?;
        p.bind::<Text, _>("model", self.model)?;
        p.bind::<Text, _>("inbound_protocol", self.inbound_protocol)?;
        p.bind::<Text, _>("recorded_protocol", self.recorded_protocol)?;
        p.bind::<Bool, _>("stream", &self.stream)?;
        p.bind::<BigInt, _>("amount", &self.amount)?;
        p.bind::<Timestamptz, _>("expires_at", &self.expires_at)?;
        p.finish(
            ", held AS (
                UPDATE wallets w
                SET held_nano = w.held_nano + p.amount, updated_at = now()
                FROM p
                WHERE w.account_id = p.account_id AND w.balance_nano - w.held_nano >= p.amount
                RETURNING w.account_id
            ), request AS (
                INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                                      recorded_protocol, stream, status, reserved_nano)
                SELECT p.request_id, p.account_id, p.api_key_id, p.model, p.inbound_protocol,
                       p.recorded_protocol, p.stream, 'reserved', p.amount
                FROM p, held
                RETURNING id
            )
            INSERT INTO holds (request_id, account_id, amount_nano, status, expires_at)
            SELECT request.id, p.account_id, p.amount, 'held', p.expires_at
            FROM p, request",
        )
    }
}

/// Pushes a live hold's expiry forward (never back). A hold that already
/// left `held` is left alone: the request has ended or was reaped, and its
/// settlement will report that.
pub async fn extend_hold(
    conn: &mut AsyncPgConnection,
    request_id: Uuid,
    until: SystemTime,
) -> Result<(), StoreError> {
    let statement = ExtendHoldStatement {
        request_id: &request_id,
        until: to_db(until),
    };
    let updated = statement.execute(conn).await.map_err(store_error)?;
    if updated == 0 {
        tracing::debug!(%request_id, "no live hold to extend");
    }
    Ok(())
}

struct ExtendHoldStatement<'a> {
    request_id: &'a Uuid,
    until: DateTime<Utc>,
}

impl QueryFragment<Pg> for ExtendHoldStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<SqlUuid, _>("request_id", self.request_id)?;
        p.bind::<Timestamptz, _>("until", &self.until)?;
        p.finish(
            "UPDATE holds h
            SET expires_at = greatest(h.expires_at, p.until)
            FROM p
            WHERE h.request_id = p.request_id AND h.status = 'held'",
        )
    }
}

/// Charges a final success once: the hold becomes `settled`, the wallet
/// pays the charge and drops the hold, the ledger records wallet -charge /
/// revenue +charge under one `txn_id` (no entries for a zero charge), and
/// the request becomes `succeeded` with its usage and route, and the
/// succeeded attempt is recorded: one statement, one round trip.
///
/// The charge is taken in full even when it exceeds the hold: the
/// reservation is a worst-case estimate made before the response existed,
/// and a larger actual charge (e.g. a supplier that over-delivered) is still
/// owed. The wallet's available balance may then dip below zero; later
/// reservations fail until it is topped up.
pub async fn settle(
    conn: &mut AsyncPgConnection,
    settlement: &Settlement,
) -> Result<(), SettleError> {
    if settlement.charge.is_negative() {
        return Err(StoreError::Query(format!("negative charge {}", settlement.charge.0)).into());
    }
    let attempt = &settlement.attempt;
    if attempt.request_id != settlement.request_id || attempt.outcome != AttemptOutcome::Succeeded {
        return Err(StoreError::Query(format!(
            "settlement of {} carries a foreign or failed attempt",
            settlement.request_id
        ))
        .into());
    }
    let usage = &settlement.usage;
    let tokens = |n: u64, what| i64::try_from(n).map_err(|_| out_of_range(what));
    let statement = SettleStatement {
        request_id: &settlement.request_id,
        charge: settlement.charge.0,
        txn_id: Uuid::now_v7(),
        input_tokens: tokens(usage.input_tokens, "input_tokens")?,
        output_tokens: tokens(usage.output_tokens, "output_tokens")?,
        cache_read_tokens: tokens(usage.cache_read_input_tokens, "cache_read_input_tokens")?,
        cache_write_tokens: tokens(
            usage.cache_creation_input_tokens,
            "cache_creation_input_tokens",
        )?,
        reasoning_tokens: tokens(usage.reasoning_tokens, "reasoning_tokens")?,
        attempt: AttemptColumns::of(&settlement.attempt)?,
    };
    match statement.execute(conn).await.map_err(store_error)? {
        1 => Ok(()),
        _ => Err(SettleError::NotReserved(settlement.request_id)),
    }
}

struct SettleStatement<'a> {
    request_id: &'a Uuid,
    charge: i64,
    txn_id: Uuid,
    input_tokens: i64,
    output_tokens: i64,
    cache_read_tokens: i64,
    cache_write_tokens: i64,
    reasoning_tokens: i64,
    attempt: AttemptColumns<'a>,
}

impl QueryFragment<Pg> for SettleStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<SqlUuid, _>("request_id", self.request_id)?;
        p.bind::<BigInt, _>("charge", &self.charge)?;
        p.bind::<SqlUuid, _>("txn_id", &self.txn_id)?;
        p.bind::<BigInt, _>("input_tokens", &self.input_tokens)?;
        p.bind::<BigInt, _>("output_tokens", &self.output_tokens)?;
        p.bind::<BigInt, _>("cache_read_tokens", &self.cache_read_tokens)?;
        p.bind::<BigInt, _>("cache_write_tokens", &self.cache_write_tokens)?;
        p.bind::<BigInt, _>("reasoning_tokens", &self.reasoning_tokens)?;
        p.bind::<Text, _>("route_id", self.attempt.route_id)?;
        p.bind::<Integer, _>("attempt_no", &self.attempt.attempt_no)?;
        p.bind::<Text, _>("supplier_id", self.attempt.supplier_id)?;
        p.bind::<Text, _>("upstream_protocol", self.attempt.upstream_protocol)?;
        p.bind::<Timestamptz, _>("started_at", &self.attempt.started_at)?;
        p.bind::<BigInt, _>("duration_ms", &self.attempt.duration_ms)?;
        p.finish(
            ", hold AS (
                UPDATE holds h
                SET status = 'settled', released_at = now()
                FROM p
                WHERE h.request_id = p.request_id AND h.status = 'held'
                RETURNING h.account_id, h.amount_nano
            ), attempt AS (
                -- Only with the charge: a second settlement writes nothing at all.
                INSERT INTO attempts (request_id, attempt_no, route_id, supplier_id,
                                      upstream_protocol, started_at, duration_ms, outcome)
                SELECT p.request_id, p.attempt_no, p.route_id, p.supplier_id,
                       p.upstream_protocol, p.started_at, p.duration_ms, 'succeeded'
                FROM p, hold
            ), wallet AS (
                UPDATE wallets w
                SET balance_nano = w.balance_nano - p.charge,
                    held_nano = w.held_nano - hold.amount_nano,
                    updated_at = now()
                FROM p, hold
                WHERE w.account_id = hold.account_id
                RETURNING w.account_id
            ), ledger AS (
                INSERT INTO ledger_entries (txn_id, request_id, account_id, ledger_account,
                                            amount_nano, kind)
                SELECT p.txn_id, p.request_id, e.account_id, e.ledger_account, e.amount_nano, 'charge'
                FROM p, hold,
                     LATERAL (VALUES (hold.account_id, 'wallet', -p.charge),
                                     (NULL::uuid, 'revenue', p.charge))
                         AS e (account_id, ledger_account, amount_nano)
                WHERE p.charge > 0
            )
            UPDATE requests r
            SET status = 'succeeded',
                charged_nano = p.charge,
                input_tokens = p.input_tokens,
                output_tokens = p.output_tokens,
                cache_read_tokens = p.cache_read_tokens,
                cache_write_tokens = p.cache_write_tokens,
                reasoning_tokens = p.reasoning_tokens,
                route_id = p.route_id,
                finished_at = now()
            FROM p, hold
            WHERE r.id = p.request_id AND r.status = 'reserved'",
        )
    }
}

/// Releases the whole hold without a charge, once; the request becomes
/// `failed` with `reason`.
pub async fn void(conn: &mut AsyncPgConnection, voiding: &Voiding) -> Result<(), SettleError> {
    let statement = VoidStatement {
        request_id: &voiding.request_id,
        reason: &voiding.reason,
    };
    match statement.execute(conn).await.map_err(store_error)? {
        1 => Ok(()),
        _ => Err(SettleError::NotReserved(voiding.request_id)),
    }
}

struct VoidStatement<'a> {
    request_id: &'a Uuid,
    reason: &'a str,
}

impl QueryFragment<Pg> for VoidStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<SqlUuid, _>("request_id", self.request_id)?;
        p.bind::<Text, _>("reason", self.reason)?;
        p.finish(
            ", hold AS (
                UPDATE holds h
                SET status = 'released', released_at = now()
                FROM p
                WHERE h.request_id = p.request_id AND h.status = 'held'
                RETURNING h.account_id, h.amount_nano
            ), wallet AS (
                UPDATE wallets w
                SET held_nano = w.held_nano - hold.amount_nano, updated_at = now()
                FROM hold
                WHERE w.account_id = hold.account_id
                RETURNING w.account_id
            )
            UPDATE requests r
            SET status = 'failed', error_reason = p.reason, finished_at = now()
            FROM p, hold
            WHERE r.id = p.request_id AND r.status = 'reserved'",
        )
    }
}

/// Releases up to [`REAP_BATCH`] holds that expired before `now` (their
/// process presumably died) and marks their requests `failed` with reason
/// `reaped`. Returns how many holds it released.
///
/// Instances cooperate: candidate holds are locked `FOR UPDATE SKIP LOCKED`,
/// so concurrent reapers take disjoint sets and never wait on a hold that a
/// live request is settling. Wallet rows are locked in account order before
/// they are updated, so two reapers sharing accounts cannot deadlock.
pub async fn reap_expired_holds(
    conn: &mut AsyncPgConnection,
    now: SystemTime,
) -> Result<u64, StoreError> {
    let statement = ReapStatement {
        now: to_db(now),
        limit: REAP_BATCH,
        reason: REAPED,
    };
    let released: i64 = statement.get_result(conn).await.map_err(store_error)?;
    u64::try_from(released).map_err(|_| StoreError::Query(format!("negative count {released}")))
}

/// The `error_reason` of a request whose hold the reaper released.
pub const REAPED: &str = "reaped";

struct ReapStatement<'a> {
    now: DateTime<Utc>,
    limit: i64,
    reason: &'a str,
}

impl Query for ReapStatement<'_> {
    type SqlType = BigInt;
}

impl QueryFragment<Pg> for ReapStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<Timestamptz, _>("now", &self.now)?;
        p.bind::<BigInt, _>("batch", &self.limit)?;
        p.bind::<Text, _>("reason", self.reason)?;
        p.finish(
            ", expired AS (
                SELECT h.request_id
                FROM holds h, p
                WHERE h.status = 'held' AND h.expires_at < p.now
                ORDER BY h.expires_at
                LIMIT (SELECT batch FROM p)
                FOR UPDATE OF h SKIP LOCKED
            ), released AS (
                UPDATE holds h
                SET status = 'released', released_at = now()
                FROM expired
                WHERE h.request_id = expired.request_id AND h.status = 'held'
                RETURNING h.request_id, h.account_id, h.amount_nano
            ), per_account AS (
                SELECT account_id, sum(amount_nano)::bigint AS amount
                FROM released
                GROUP BY account_id
            ), locked_wallets AS (
                SELECT w.account_id
                FROM wallets w
                WHERE w.account_id IN (SELECT account_id FROM per_account)
                ORDER BY w.account_id
                FOR UPDATE
            ), wallet AS (
                UPDATE wallets w
                SET held_nano = w.held_nano - per_account.amount, updated_at = now()
                FROM per_account, locked_wallets
                WHERE w.account_id = per_account.account_id
                  AND w.account_id = locked_wallets.account_id
                RETURNING w.account_id
            ), request AS (
                UPDATE requests r
                SET status = 'failed', error_reason = p.reason, finished_at = now()
                FROM p, released
                WHERE r.id = released.request_id AND r.status = 'reserved'
                RETURNING r.id
            )
            SELECT count(*) FROM released",
        )
    }
}

static_query_id!(
    ReserveStatement,
    ExtendHoldStatement,
    SettleStatement,
    VoidStatement,
    ReapStatement,
);
