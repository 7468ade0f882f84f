//! The money path of a request: reserve, extend the hold, settle or void it,
//! and reap holds whose process died.
//!
//! Each step is ONE statement (data-modifying CTEs), so it is atomic on its
//! own, needs no explicit transaction, and costs one round trip once the
//! statement is prepared on the connection (see [`crate::prepared`]).
//! Reserve and settle take whole batches ([`reserve_batch`],
//! [`settle_batch`]): the group commit in `Database` gathers concurrent requests so
//! that a busy wallet row is locked and written once per batch rather than
//! once per request. Every function takes a connection, so callers may also
//! run it inside a larger transaction.
//!
//! Exactly-once: settle, void and the reaper each move a hold out of `held`
//! with `WHERE status = 'held'` in the same statement that touches the wallet
//! and the request. Under READ COMMITTED a second, concurrent statement
//! blocks on the hold's row lock, re-evaluates that condition once the first
//! commits, and matches nothing.

use crate::error::{out_of_range, store_error};
use crate::history::{AttemptColumns, outcome_columns};
use crate::pg_array::PgArray;
use crate::prepared::{Params, static_query_id};
use crate::timestamps::to_db;
use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment};
use diesel::sql_types::{
    Array, BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid,
};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_canonical::NanoUsd;
use router_core::KeyLimit;
use router_core::store::{
    AttemptOutcome, NewRequest, ReserveError, SettleError, Settlement, StoreError, Voiding,
};
use std::time::SystemTime;
use uuid::Uuid;

/// What bounds one billing batch statement on the server (the group
/// commit's, `Database`): its own lock wait, and the instant after which it
/// must not start at all (the router stopped waiting for it then, and
/// answered its requests without it: a statement delivered later, e.g.
/// once a black-holed path heals, writes nothing). `NONE` for neither.
#[derive(Debug, Clone, Default)]
pub struct BatchBounds {
    /// `lock_timeout` for this statement only, e.g. `100ms`.
    pub lock_wait: Option<String>,
    /// The statement writes nothing if the server receives it later.
    pub valid_until: Option<SystemTime>,
}

impl BatchBounds {
    pub const NONE: BatchBounds = BatchBounds {
        lock_wait: None,
        valid_until: None,
    };

    fn valid_until(&self) -> Option<DateTime<Utc>> {
        self.valid_until.map(to_db)
    }
}

/// Holds the reaper releases per statement; it loops until a batch comes
/// back short.
pub const REAP_BATCH: i64 = 500;

/// Inserts the request row and its hold, and raises the wallet's
/// `held_nano`, all or nothing. See [`reserve_batch`], which this is a batch
/// of one of.
pub async fn reserve(
    conn: &mut AsyncPgConnection,
    request: &NewRequest,
) -> Result<(), ReserveError> {
    match reserve_batch(conn, std::slice::from_ref(request)).await?[..] {
        [true] => Ok(()),
        _ => Err(refusal(conn, request.api_key_id, request.policy_version).await),
    }
}

/// Why [`reserve_batch`] refused a request of key `api_key_id` admitted
/// under `policy_version`: the key's policy changed since, or else
/// the wallet was short. Asked only after a refusal, so admission itself
/// pays no extra round trip. Versions only grow, so a stale version found
/// here was stale when the batch ran; a change that landed between the
/// batch and this query (a request refused for credit) reads as
/// `PolicyChanged`, which charges nothing either.
pub async fn refusal(
    conn: &mut AsyncPgConnection,
    api_key_id: Uuid,
    policy_version: i64,
) -> ReserveError {
    use crate::schema::api_keys;
    use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
    let current: Result<Option<i64>, _> = api_keys::table
        .filter(api_keys::id.eq(api_key_id))
        .select(api_keys::policy_version)
        .first(conn)
        .await
        .optional();
    match current {
        Ok(Some(current)) if current == policy_version => ReserveError::InsufficientCredits,
        Ok(_) => ReserveError::PolicyChanged,
        Err(error) => ReserveError::Store(store_error(error)),
    }
}

/// Reserves many requests in ONE statement (group commit): each wallet row
/// is locked and updated once for the whole batch, so concurrent requests of
/// one account stop queueing on its row lock one by one. Returns, per
/// request, whether it was admitted.
///
/// Admission is exact: within an account the batch is taken smallest amount
/// first, and a request is admitted while the running total fits the
/// available balance (`balance_nano - held_nano`, read under `FOR UPDATE`,
/// so it is the latest committed value). That is precisely what reserving
/// them one by one in that order would admit: once one does not fit, no
/// larger one does. Wallets are locked in account order, like every other
/// multi-wallet statement, so batches never deadlock. An account without a
/// wallet row has no credit. The statement is atomic: on an error nothing of
/// the batch is written.
///
/// A request is admitted only while its key's `policy_version` is still the
/// one it was admitted under. The key row is read `FOR SHARE`: a
/// policy change (an `UPDATE` of the row) either commits first, and then
/// this statement re-reads the row, sees the new version and refuses the
/// request, or waits until this statement's transaction has committed, so
/// the change lands after the hold. Refused requests report `false` like a
/// short wallet; [`refusal`] tells the two apart.
///
/// Key rows are locked before any wallet (the wallets to lock are read from
/// the requests whose key passed), the order [`reserve_limited`] takes them
/// in too (key `FOR UPDATE`, then this statement): a batch that met a key
/// while its limits were being set, and a limited admission of that key, can
/// then only wait for each other, never deadlock.
pub async fn reserve_batch(
    conn: &mut AsyncPgConnection,
    requests: &[NewRequest],
) -> Result<Vec<bool>, StoreError> {
    reserve_batch_within(conn, requests, &BatchBounds::NONE).await
}

/// [`reserve_batch`] within `bounds`: a request not admitted because the
/// statement arrived after `bounds.valid_until` reads as refused; the
/// caller, which gave up on it, never reads it.
pub async fn reserve_batch_within(
    conn: &mut AsyncPgConnection,
    requests: &[NewRequest],
    bounds: &BatchBounds,
) -> Result<Vec<bool>, StoreError> {
    for request in requests {
        check_reservation(request)?;
    }
    let statement = ReserveBatchStatement {
        request_ids: requests.iter().map(|r| r.request_id).collect(),
        account_ids: requests.iter().map(|r| r.account_id).collect(),
        api_key_ids: requests.iter().map(|r| r.api_key_id).collect(),
        policy_versions: requests.iter().map(|r| r.policy_version).collect(),
        models: requests.iter().map(|r| r.model.as_str()).collect(),
        inbound_protocols: requests
            .iter()
            .map(|r| r.inbound_protocol.as_str())
            .collect(),
        recorded_protocols: requests
            .iter()
            .map(|r| r.recorded_protocol.as_str())
            .collect(),
        streams: requests.iter().map(|r| r.stream).collect(),
        amounts: requests.iter().map(|r| r.reserve.0).collect(),
        expires_at: requests.iter().map(|r| to_db(r.hold_expires_at)).collect(),
        experiment_ids: requests
            .iter()
            .map(|r| r.experiment.as_ref().map(|e| e.experiment_id))
            .collect(),
        experiment_variants: requests
            .iter()
            .map(|r| r.experiment.as_ref().map(|e| e.variant.as_str()))
            .collect(),
        lock_wait: bounds.lock_wait.clone(),
        valid_until: bounds.valid_until(),
    };
    let admitted: Vec<Uuid> = statement.load(conn).await.map_err(store_error)?;
    Ok(requests
        .iter()
        .map(|r| admitted.contains(&r.request_id))
        .collect())
}

struct ReserveBatchStatement<'a> {
    request_ids: PgArray<Uuid>,
    account_ids: PgArray<Uuid>,
    api_key_ids: PgArray<Uuid>,
    policy_versions: PgArray<i64>,
    models: PgArray<&'a str>,
    inbound_protocols: PgArray<&'static str>,
    recorded_protocols: PgArray<&'static str>,
    streams: PgArray<bool>,
    amounts: PgArray<i64>,
    expires_at: PgArray<DateTime<Utc>>,
    experiment_ids: PgArray<Option<Uuid>>,
    experiment_variants: PgArray<Option<&'a str>>,
    lock_wait: Option<String>,
    valid_until: Option<DateTime<Utc>>,
}

impl Query for ReserveBatchStatement<'_> {
    type SqlType = SqlUuid;
}

impl QueryFragment<Pg> for ReserveBatchStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<Array<SqlUuid>, _>("request_ids", &self.request_ids)?;
        p.bind::<Array<SqlUuid>, _>("account_ids", &self.account_ids)?;
        p.bind::<Array<SqlUuid>, _>("api_key_ids", &self.api_key_ids)?;
        p.bind::<Array<BigInt>, _>("policy_versions", &self.policy_versions)?;
        p.bind::<Array<Text>, _>("models", &self.models)?;
        p.bind::<Array<Text>, _>("inbound_protocols", &self.inbound_protocols)?;
        p.bind::<Array<Text>, _>("recorded_protocols", &self.recorded_protocols)?;
        p.bind::<Array<Bool>, _>("streams", &self.streams)?;
        p.bind::<Array<BigInt>, _>("amounts", &self.amounts)?;
        p.bind::<Array<Timestamptz>, _>("expires_ats", &self.expires_at)?;
        p.bind::<Array<Nullable<SqlUuid>>, _>("experiment_ids", &self.experiment_ids)?;
        p.bind::<Array<Nullable<Text>>, _>("experiment_variants", &self.experiment_variants)?;
        p.bind::<Nullable<Timestamptz>, _>("valid_until", &self.valid_until)?;
        p.lock_wait(&self.lock_wait)?;
        p.finish(
            ", t AS (
                SELECT t.*
                FROM p, unnest(p.request_ids, p.account_ids, p.api_key_ids,
                               p.policy_versions, p.models,
                               p.inbound_protocols, p.recorded_protocols, p.streams,
                               p.amounts, p.expires_ats, p.experiment_ids,
                               p.experiment_variants)
                    AS t (request_id, account_id, api_key_id, policy_version, model,
                          inbound_protocol, recorded_protocol, stream, amount, expires_at,
                          experiment_id, experiment_variant)
                -- Too late: the router has answered these requests already.
                WHERE p.valid_until IS NULL OR statement_timestamp() <= p.valid_until
            ), current_policy AS (
                SELECT t.request_id
                FROM t
                JOIN api_keys k ON k.id = t.api_key_id
                WHERE k.policy_version = t.policy_version
                FOR SHARE OF k
            ), wallet AS (
                SELECT w.account_id, w.balance_nano - w.held_nano AS available
                FROM wallets w
                WHERE w.account_id IN (SELECT account_id FROM t
                                       WHERE request_id IN (SELECT request_id
                                                            FROM current_policy))
                ORDER BY w.account_id
                FOR UPDATE
            ), admitted AS (
                SELECT ranked.*
                FROM (SELECT t.*, sum(t.amount) OVER (PARTITION BY t.account_id
                                                       ORDER BY t.amount, t.request_id)
                                  AS running
                      FROM t
                      WHERE t.request_id IN (SELECT request_id FROM current_policy)) ranked
                JOIN wallet ON wallet.account_id = ranked.account_id
                WHERE ranked.running <= wallet.available
            ), per_account AS (
                SELECT account_id, sum(amount)::bigint AS amount
                FROM admitted
                GROUP BY account_id
            ), held AS (
                UPDATE wallets w
                SET held_nano = w.held_nano + per_account.amount, updated_at = now()
                FROM per_account
                WHERE w.account_id = per_account.account_id
            ), request AS (
                INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                                      recorded_protocol, stream, status, reserved_nano,
                                      experiment_id, experiment_variant)
                SELECT request_id, account_id, api_key_id, model, inbound_protocol,
                       recorded_protocol, stream, 'reserved', amount,
                       experiment_id, experiment_variant
                FROM admitted
                RETURNING id
            ), hold AS (
                INSERT INTO holds (request_id, account_id, api_key_id, amount_nano, status,
                                   expires_at)
                SELECT admitted.request_id, admitted.account_id, admitted.api_key_id,
                       admitted.amount, 'held', admitted.expires_at
                FROM admitted
                JOIN request ON request.id = admitted.request_id
            )
            SELECT request_id FROM admitted",
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
/// revenue +charge under one `txn_id` (no entries for a zero charge), the
/// request becomes `succeeded` with its usage, route, reported cost and
/// charge, and the succeeded attempt is recorded. A batch of one of
/// [`settle_batch`]. Returns the charge.
///
/// The hold is a ceiling (RELIABILITY.md I4): the charge is the reported
/// cost capped at the hold, `least(reported, hold)`, computed by the
/// statement itself from the hold row it settles, so no caller can debit
/// more. A supplier that reports more usage than the reservation bounded
/// (more output than `max_tokens`) leaves a shortfall, `reported - charge`:
/// kept on the request (`reported_nano`) and counted on the wallet
/// (`shortfall_count`, `shortfall_nano`) for the operator. The ledger's
/// `ledger_entries_within_hold` trigger refuses any wallet charge above its
/// hold, from this statement or any other writer.
pub async fn settle(
    conn: &mut AsyncPgConnection,
    settlement: &Settlement,
) -> Result<NanoUsd, SettleError> {
    match settle_batch(conn, std::slice::from_ref(settlement)).await?[..] {
        [Some(charge)] => Ok(charge),
        _ => Err(SettleError::NotReserved(settlement.request_id)),
    }
}

/// Settles many requests in ONE statement (group commit), each exactly as
/// [`settle`] describes, with one update per wallet for the whole batch.
/// Returns, per settlement, the charge, or `None` when its hold was no
/// longer `held` (a request already settled, voided or reaped is left alone
/// and writes nothing). Atomic: on an error nothing of the batch is written.
pub async fn settle_batch(
    conn: &mut AsyncPgConnection,
    settlements: &[Settlement],
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    settle_batch_within(conn, settlements, &BatchBounds::NONE).await
}

/// [`settle_batch`] within `bounds`: a statement the server receives after
/// `bounds.valid_until` settles nothing (each reads `None`), so a
/// settlement the router gave up on can never commit after it answered.
pub async fn settle_batch_within(
    conn: &mut AsyncPgConnection,
    settlements: &[Settlement],
    bounds: &BatchBounds,
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    let mut statement = SettleBatchStatement {
        columns: SettlementColumns::default(),
        lock_wait: bounds.lock_wait.clone(),
        valid_until: bounds.valid_until(),
    };
    for settlement in settlements {
        statement.columns.push(settlement)?;
    }
    let mut settled: Vec<(Uuid, i64)> = statement.load(conn).await.map_err(store_error)?;
    // The statement settles the first of a request's settlements in the
    // batch; a later duplicate finds the charge taken and was not settled.
    Ok(settlements
        .iter()
        .map(|s| {
            let position = settled.iter().position(|(id, _)| *id == s.request_id)?;
            Some(NanoUsd(settled.swap_remove(position).1))
        })
        .collect())
}

/// What [`settle_batch`] would refuse for `settlement` alone: checked before
/// a settlement joins a shared batch, so one bad settlement cannot fail the
/// others.
pub fn check_settlement(settlement: &Settlement) -> Result<(), StoreError> {
    if settlement.reported.is_negative() {
        return Err(StoreError::Query(format!(
            "negative charge {}",
            settlement.reported.0
        )));
    }
    let attempt = &settlement.attempt;
    if attempt.request_id != settlement.request_id || attempt.outcome != AttemptOutcome::Succeeded {
        return Err(StoreError::Query(format!(
            "settlement of {} carries a foreign or failed attempt",
            settlement.request_id
        )));
    }
    AttemptColumns::of(attempt)?;
    let usage = &settlement.usage;
    for (tokens, what) in [
        (usage.input_tokens, "input_tokens"),
        (usage.output_tokens, "output_tokens"),
        (usage.cache_read_input_tokens, "cache_read_input_tokens"),
        (
            usage.cache_creation_input_tokens,
            "cache_creation_input_tokens",
        ),
        (usage.reasoning_tokens, "reasoning_tokens"),
    ] {
        i64::try_from(tokens).map_err(|_| out_of_range(what))?;
    }
    Ok(())
}

/// What [`reserve_batch`] would refuse for `request` alone (see [`check_settlement`]).
pub fn check_reservation(request: &NewRequest) -> Result<(), StoreError> {
    if request.reserve.is_negative() {
        return Err(StoreError::Query(format!(
            "negative reservation {}",
            request.reserve.0
        )));
    }
    Ok(())
}

/// The columns every settlement statement binds (the direct one here, the
/// leased one in [`crate::leases`]), one array per column; element `i` of
/// each belongs to settlement `i`.
#[derive(Default)]
pub(crate) struct SettlementColumns<'a> {
    request_ids: PgArray<Uuid>,
    reported: PgArray<i64>,
    txn_ids: PgArray<Uuid>,
    input_tokens: PgArray<i64>,
    output_tokens: PgArray<i64>,
    cache_read_tokens: PgArray<i64>,
    cache_write_tokens: PgArray<i64>,
    reasoning_tokens: PgArray<i64>,
    route_ids: PgArray<&'a str>,
    attempt_nos: PgArray<i32>,
    supplier_ids: PgArray<&'a str>,
    upstream_protocols: PgArray<&'static str>,
    started_ats: PgArray<DateTime<Utc>>,
    durations_ms: PgArray<i64>,
    supplier_request_ids: PgArray<Option<&'a str>>,
}

impl<'a> SettlementColumns<'a> {
    /// Appends `settlement`, checked as [`check_settlement`] checks it.
    pub(crate) fn push(&mut self, settlement: &'a Settlement) -> Result<(), StoreError> {
        check_settlement(settlement)?;
        let columns = AttemptColumns::of(&settlement.attempt)?;
        let usage = &settlement.usage;
        let tokens = |n: u64, what| i64::try_from(n).map_err(|_| out_of_range(what));
        self.request_ids.push(settlement.request_id);
        self.reported.push(settlement.reported.0);
        self.txn_ids.push(Uuid::now_v7());
        self.input_tokens
            .push(tokens(usage.input_tokens, "input_tokens")?);
        self.output_tokens
            .push(tokens(usage.output_tokens, "output_tokens")?);
        self.cache_read_tokens.push(tokens(
            usage.cache_read_input_tokens,
            "cache_read_input_tokens",
        )?);
        self.cache_write_tokens.push(tokens(
            usage.cache_creation_input_tokens,
            "cache_creation_input_tokens",
        )?);
        self.reasoning_tokens
            .push(tokens(usage.reasoning_tokens, "reasoning_tokens")?);
        self.route_ids.push(columns.route_id);
        self.attempt_nos.push(columns.attempt_no);
        self.supplier_ids.push(columns.supplier_id);
        self.upstream_protocols.push(columns.upstream_protocol);
        self.started_ats.push(columns.started_at);
        self.durations_ms.push(columns.duration_ms);
        self.supplier_request_ids.push(columns.supplier_request_id);
        Ok(())
    }

    /// Binds every column as `p.<name>` (`request_ids`, `reported`,
    /// `txn_ids`, the token counts, the attempt's columns).
    pub(crate) fn bind<'b>(&'b self, p: &mut Params<'_, 'b>) -> QueryResult<()> {
        p.bind::<Array<SqlUuid>, _>("request_ids", &self.request_ids)?;
        p.bind::<Array<BigInt>, _>("reported", &self.reported)?;
        p.bind::<Array<SqlUuid>, _>("txn_ids", &self.txn_ids)?;
        p.bind::<Array<BigInt>, _>("input_tokens", &self.input_tokens)?;
        p.bind::<Array<BigInt>, _>("output_tokens", &self.output_tokens)?;
        p.bind::<Array<BigInt>, _>("cache_read_tokens", &self.cache_read_tokens)?;
        p.bind::<Array<BigInt>, _>("cache_write_tokens", &self.cache_write_tokens)?;
        p.bind::<Array<BigInt>, _>("reasoning_tokens", &self.reasoning_tokens)?;
        p.bind::<Array<Text>, _>("route_ids", &self.route_ids)?;
        p.bind::<Array<Integer>, _>("attempt_nos", &self.attempt_nos)?;
        p.bind::<Array<Text>, _>("supplier_ids", &self.supplier_ids)?;
        p.bind::<Array<Text>, _>("upstream_protocols", &self.upstream_protocols)?;
        p.bind::<Array<Timestamptz>, _>("started_ats", &self.started_ats)?;
        p.bind::<Array<BigInt>, _>("durations_ms", &self.durations_ms)?;
        p.bind::<Array<Nullable<Text>>, _>("supplier_request_ids", &self.supplier_request_ids)
    }
}

struct SettleBatchStatement<'a> {
    columns: SettlementColumns<'a>,
    lock_wait: Option<String>,
    valid_until: Option<DateTime<Utc>>,
}

impl Query for SettleBatchStatement<'_> {
    /// The request and its charge, per settled request.
    type SqlType = (SqlUuid, BigInt);
}

impl QueryFragment<Pg> for SettleBatchStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        self.columns.bind(&mut p)?;
        p.bind::<Nullable<Timestamptz>, _>("valid_until", &self.valid_until)?;
        p.lock_wait(&self.lock_wait)?;
        p.finish(
            ", t AS (
                -- One settlement per request: two racing settlements of the
                -- same request in one batch must not both join its hold.
                SELECT DISTINCT ON (t.request_id) t.*
                FROM p, unnest(p.request_ids, p.reported, p.txn_ids, p.input_tokens,
                               p.output_tokens, p.cache_read_tokens, p.cache_write_tokens,
                               p.reasoning_tokens, p.route_ids, p.attempt_nos, p.supplier_ids,
                               p.upstream_protocols, p.started_ats, p.durations_ms,
                               p.supplier_request_ids)
                    WITH ORDINALITY
                    AS t (request_id, reported, txn_id, input_tokens, output_tokens,
                          cache_read_tokens, cache_write_tokens, reasoning_tokens, route_id,
                          attempt_no, supplier_id, upstream_protocol, started_at, duration_ms,
                          supplier_request_id, ordinal)
                -- Too late: the router has answered these requests already.
                WHERE p.valid_until IS NULL OR statement_timestamp() <= p.valid_until
                ORDER BY t.request_id, t.ordinal
            ), hold AS (
                UPDATE holds h
                SET status = 'settled', released_at = now()
                FROM t
                WHERE h.request_id = t.request_id AND h.status = 'held'
                RETURNING h.request_id, h.account_id, h.amount_nano
            ), settled AS (
                -- The hold is a ceiling (I4): never debit more than it.
                SELECT t.*, least(t.reported, hold.amount_nano) AS charge, hold.account_id,
                       hold.amount_nano
                FROM t
                JOIN hold ON hold.request_id = t.request_id
            ), per_account AS (
                SELECT account_id, sum(charge)::bigint AS charge,
                       sum(amount_nano)::bigint AS released,
                       count(*) FILTER (WHERE reported > charge) AS shortfalls,
                       sum(reported - charge)::bigint AS shortfall
                FROM settled
                GROUP BY account_id
            ), locked AS (
                SELECT w.account_id
                FROM wallets w
                WHERE w.account_id IN (SELECT account_id FROM per_account)
                ORDER BY w.account_id
                FOR UPDATE
            ), wallet AS (
                UPDATE wallets w
                SET balance_nano = w.balance_nano - per_account.charge,
                    held_nano = w.held_nano - per_account.released,
                    shortfall_count = w.shortfall_count + per_account.shortfalls,
                    shortfall_nano = w.shortfall_nano + per_account.shortfall,
                    updated_at = now()
                FROM per_account, locked
                WHERE w.account_id = per_account.account_id
                  AND locked.account_id = per_account.account_id
            ), attempt AS (
                -- Only with the charge: a second settlement writes nothing at all.
                INSERT INTO attempts (request_id, attempt_no, route_id, supplier_id,
                                      upstream_protocol, started_at, duration_ms, outcome,
                                      supplier_request_id)
                SELECT request_id, attempt_no, route_id, supplier_id, upstream_protocol,
                       started_at, duration_ms, 'succeeded', supplier_request_id
                FROM settled
            ), ledger AS (
                INSERT INTO ledger_entries (txn_id, request_id, account_id, ledger_account,
                                            amount_nano, kind)
                SELECT s.txn_id, s.request_id, e.account_id, e.ledger_account, e.amount_nano,
                       'charge'
                FROM settled s,
                     LATERAL (VALUES (s.account_id, 'wallet', -s.charge),
                                     (NULL::uuid, 'revenue', s.charge))
                         AS e (account_id, ledger_account, amount_nano)
                WHERE s.charge > 0
            ), request AS (
                UPDATE requests r
                SET status = 'succeeded',
                    charged_nano = s.charge,
                    reported_nano = s.reported,
                    input_tokens = s.input_tokens,
                    output_tokens = s.output_tokens,
                    cache_read_tokens = s.cache_read_tokens,
                    cache_write_tokens = s.cache_write_tokens,
                    reasoning_tokens = s.reasoning_tokens,
                    route_id = s.route_id,
                    finished_at = now()
                FROM settled s
                WHERE r.id = s.request_id AND r.status = 'reserved'
            )
            SELECT request_id, charge FROM settled",
        )
    }
}

/// Releases the whole hold without a charge, once; the request becomes
/// `failed` with `reason`. The voiding's attempt, if any, is recorded by the
/// same statement (and only when the hold was still held).
pub async fn void(conn: &mut AsyncPgConnection, voiding: &Voiding) -> Result<(), SettleError> {
    let attempt = voiding.attempt.as_ref();
    if attempt.is_some_and(|a| a.request_id != voiding.request_id) {
        return Err(StoreError::Query(format!(
            "voiding of {} carries a foreign attempt",
            voiding.request_id
        ))
        .into());
    }
    let columns = attempt.map(AttemptColumns::of).transpose()?;
    let outcome = attempt.map(|a| outcome_columns(&a.outcome));
    let statement = VoidStatement {
        request_id: &voiding.request_id,
        reason: &voiding.reason,
        attempt_no: columns.as_ref().map(|c| c.attempt_no),
        route_id: columns.as_ref().map(|c| c.route_id),
        supplier_id: columns.as_ref().map(|c| c.supplier_id),
        upstream_protocol: columns.as_ref().map(|c| c.upstream_protocol),
        started_at: columns.as_ref().map(|c| c.started_at),
        duration_ms: columns.as_ref().map(|c| c.duration_ms),
        supplier_request_id: columns.as_ref().and_then(|c| c.supplier_request_id),
        outcome: outcome.map(|o| o.0),
        upstream_status: outcome.and_then(|o| o.1),
        failure_kind: outcome.and_then(|o| o.2),
        retryable: outcome.and_then(|o| o.3),
    };
    match statement.execute(conn).await.map_err(store_error)? {
        1 => Ok(()),
        _ => Err(SettleError::NotReserved(voiding.request_id)),
    }
}

/// The attempt columns are all null when there is no attempt to record.
struct VoidStatement<'a> {
    request_id: &'a Uuid,
    reason: &'a str,
    attempt_no: Option<i32>,
    route_id: Option<&'a str>,
    supplier_id: Option<&'a str>,
    upstream_protocol: Option<&'static str>,
    started_at: Option<DateTime<Utc>>,
    duration_ms: Option<i64>,
    supplier_request_id: Option<&'a str>,
    outcome: Option<&'static str>,
    upstream_status: Option<i32>,
    failure_kind: Option<&'a str>,
    retryable: Option<bool>,
}

impl QueryFragment<Pg> for VoidStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        p.bind::<SqlUuid, _>("request_id", self.request_id)?;
        p.bind::<Text, _>("reason", self.reason)?;
        p.bind::<Nullable<Integer>, _>("attempt_no", &self.attempt_no)?;
        p.bind::<Nullable<Text>, _>("route_id", &self.route_id)?;
        p.bind::<Nullable<Text>, _>("supplier_id", &self.supplier_id)?;
        p.bind::<Nullable<Text>, _>("upstream_protocol", &self.upstream_protocol)?;
        p.bind::<Nullable<Timestamptz>, _>("started_at", &self.started_at)?;
        p.bind::<Nullable<BigInt>, _>("duration_ms", &self.duration_ms)?;
        p.bind::<Nullable<Text>, _>("outcome", &self.outcome)?;
        p.bind::<Nullable<Integer>, _>("upstream_status", &self.upstream_status)?;
        p.bind::<Nullable<Text>, _>("failure_kind", &self.failure_kind)?;
        p.bind::<Nullable<Bool>, _>("retryable", &self.retryable)?;
        p.bind::<Nullable<Text>, _>("supplier_request_id", &self.supplier_request_id)?;
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
            ), attempt AS (
                INSERT INTO attempts (request_id, attempt_no, route_id, supplier_id,
                                      upstream_protocol, started_at, duration_ms, outcome,
                                      upstream_status, failure_kind, retryable,
                                      supplier_request_id)
                SELECT p.request_id, p.attempt_no, p.route_id, p.supplier_id,
                       p.upstream_protocol, p.started_at, p.duration_ms, p.outcome,
                       p.upstream_status, p.failure_kind, p.retryable, p.supplier_request_id
                FROM p, hold
                WHERE p.attempt_no IS NOT NULL
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
                -- `released_at IS NULL` is `status = 'held'` (a CHECK ties
                -- them); only this statement states it, so only it uses the
                -- partial index `holds_live_expiry` (see its migration).
                SELECT h.request_id
                FROM holds h, p
                WHERE h.released_at IS NULL AND h.expires_at < p.now
                  -- A video's hold lives as long as its job is active or
                  -- unknown (O-32); only the job settles or releases it.
                  AND NOT EXISTS (
                    SELECT 1 FROM videos v
                    WHERE v.request_id = h.request_id
                      AND v.status IN ('submitting', 'queued', 'in_progress', 'unknown')
                  )
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
    ReserveBatchStatement,
    ExtendHoldStatement,
    SettleBatchStatement,
    VoidStatement,
    ReapStatement,
);

/// Reserves one request of a key that sets limits (A-21, G-21): the key's
/// limits and the wallet are checked in one transaction, so no concurrency
/// can overspend a key or exceed its request limits, across any number of
/// router instances.
///
/// 1. The key row is locked `FOR UPDATE`: the key's limited admissions take
///    turns (like a wallet's, whose row they lock next, always in this
///    key-then-wallet order, as the batch statement does). The limits and
///    the policy version are read from the locked row, never from a cache.
/// 2. Under READ COMMITTED the next statement takes a fresh snapshot, so it
///    sees every hold and charge the key's previous admissions committed.
///    It counts from the key's own request rows (no counters to drift):
///    live requests (`status = 'reserved'`, their holds are `held`) are the
///    concurrency and the held spend; requests admitted in the last minute
///    or day are the request rates; charges of requests admitted in a
///    window or in this UTC month, plus every live hold, plus this
///    reservation, must fit each spend limit. A charge counts at its
///    request's admission time. The hold is a ceiling, so a settlement can
///    never push spend past what was admitted.
/// 3. The hold is taken by [`reserve_batch`] (a batch of one), in the same
///    transaction, which still checks the wallet and the policy version.
///
/// A refused request writes nothing: it has no request row, is not in the
/// history and does not count against the request limits. (A spend-limit
/// or budget refusal queues its channel event, once per key and period,
/// when a channel of the account selected it.)
pub async fn reserve_limited(
    conn: &mut AsyncPgConnection,
    request: &NewRequest,
) -> Result<(), ReserveError> {
    use diesel_async::AsyncConnection;
    check_reservation(request)?;
    let key_id = request.api_key_id;
    let request = request.clone();
    let outcome = conn
        .transaction(async move |conn| admit_limited(conn, &request).await)
        .await;
    match outcome {
        Ok(()) => Ok(()),
        Err(LimitedError::Refused(refusal)) => {
            notify_limit_reached(conn, request_key(&refusal), key_id).await;
            Err(refusal)
        }
        Err(LimitedError::Db(error)) => Err(ReserveError::Store(store_error(error))),
    }
}

/// The channel event of a spend or budget refusal, if it is one.
fn request_key(refusal: &ReserveError) -> Option<(&'static str, &'static str)> {
    match refusal {
        // Once per key and UTC day for a rolling window, once per key and
        // UTC month for the monthly budget.
        ReserveError::KeyLimit {
            limit: KeyLimit::Spend,
            ..
        } => Some(("spend_limit_reached", "YYYY-MM-DD")),
        ReserveError::KeyLimit {
            limit: KeyLimit::MonthlyBudget,
            ..
        } => Some(("monthly_budget_reached", "YYYY-MM")),
        _ => None,
    }
}

/// Queues the refusal's event for the account's channels that selected it
/// (the only thing a refusal writes, and only then). A failure here is
/// logged and does not change the refusal.
async fn notify_limit_reached(
    conn: &mut AsyncPgConnection,
    event: Option<(&'static str, &'static str)>,
    key_id: uuid::Uuid,
) {
    let Some((event, period)) = event else {
        return;
    };
    if let Err(error) = crate::channels::enqueue_key_event(conn, key_id, event, period).await {
        tracing::warn!(%error, event, "could not queue a key-limit notification");
    }
}

enum LimitedError {
    Db(diesel::result::Error),
    Refused(ReserveError),
}

impl From<diesel::result::Error> for LimitedError {
    fn from(error: diesel::result::Error) -> Self {
        LimitedError::Db(error)
    }
}

/// `retry_after`: whole seconds, rounded up and at least 1 by the query (GP-08).
fn refused(limit: KeyLimit, retry_after: Option<i64>) -> LimitedError {
    LimitedError::Refused(ReserveError::KeyLimit {
        limit,
        retry_after: retry_after.and_then(|s| u64::try_from(s.max(1)).ok()),
    })
}

async fn admit_limited(
    conn: &mut AsyncPgConnection,
    request: &NewRequest,
) -> Result<(), LimitedError> {
    use crate::api_keys::{LIMIT_COLUMNS, LimitRow, limits_from_row};
    use crate::schema::api_keys;
    use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
    let key_id = request.api_key_id;
    let row: Option<(i64, LimitRow)> = api_keys::table
        .filter(api_keys::id.eq(key_id))
        .select((api_keys::policy_version, LIMIT_COLUMNS))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    let Some((version, limits)) = row else {
        return Err(LimitedError::Refused(ReserveError::PolicyChanged));
    };
    if version != request.policy_version {
        return Err(LimitedError::Refused(ReserveError::PolicyChanged));
    }
    let limits = limits_from_row(limits);
    let amount = request.reserve.0;

    let live = live_holds(conn, key_id).await?;
    if let Some(max) = limits.max_concurrent_requests
        && live.requests >= max
    {
        // A slot frees when a live request ends: no reset time is known,
        // so clients are told to come back in a second.
        return Err(refused(KeyLimit::Concurrency, Some(1)));
    }
    for (limit, seconds, what) in [
        (
            limits.requests_per_minute,
            60_i64,
            KeyLimit::RequestsPerMinute,
        ),
        (limits.requests_per_day, 86_400, KeyLimit::RequestsPerDay),
    ] {
        let Some(limit) = limit else { continue };
        // Reads at most `limit` index entries: the newest ones.
        let recent: RecentRow = diesel::sql_query(
            "SELECT count(*) AS requests,
                    greatest(1, ceil(extract(epoch FROM min(created_at) + $2 * interval '1 second' - now())))::bigint
                        AS reset
             FROM (SELECT created_at FROM requests
                   WHERE api_key_id = $1 AND created_at > now() - $2 * interval '1 second'
                   ORDER BY created_at DESC LIMIT $3) newest",
        )
        .bind::<SqlUuid, _>(key_id)
        .bind::<BigInt, _>(seconds)
        .bind::<BigInt, _>(limit)
        .get_result(conn)
        .await?;
        if recent.requests >= limit {
            return Err(refused(what, recent.reset));
        }
    }
    let committed = live.held.saturating_add(amount);
    for window in limits.spend_limits.iter().flatten() {
        // The window's charges; and, if they are what is in the way, when
        // enough of them leave the window for this reservation to fit.
        let spent: SpentRow = diesel::sql_query(
            "WITH c AS (
                SELECT created_at, charged_nano FROM requests
                WHERE api_key_id = $1 AND status = 'succeeded' AND charged_nano > 0
                  AND created_at > now() - least($2, 31536000000) * interval '1 second'
            ), total AS (SELECT coalesce(sum(charged_nano), 0)::bigint AS charged FROM c)
            SELECT total.charged,
                   (SELECT greatest(1, ceil(extract(epoch FROM r.created_at + least($2, 31536000000) * interval '1 second' - now())))::bigint
                    FROM (SELECT created_at,
                                 sum(charged_nano) OVER (ORDER BY created_at
                                                         ROWS UNBOUNDED PRECEDING) AS dropped
                          FROM c) r
                    WHERE total.charged - r.dropped + $3 <= $4
                    ORDER BY r.created_at LIMIT 1) AS reset
            FROM total",
        )
        .bind::<SqlUuid, _>(key_id)
        .bind::<BigInt, _>(window.window_seconds)
        .bind::<BigInt, _>(committed)
        .bind::<BigInt, _>(window.amount_nano_usd)
        .get_result(conn)
        .await?;
        if spent.charged.saturating_add(committed) > window.amount_nano_usd {
            return Err(refused(KeyLimit::Spend, spent.reset));
        }
    }
    if let Some(budget) = limits.monthly_budget_nano_usd {
        let month: MonthRow = diesel::sql_query(
            "SELECT coalesce(sum(charged_nano), 0)::bigint AS charged,
                    greatest(1, ceil(extract(epoch FROM (date_trunc('month', now() AT TIME ZONE 'UTC')
                                        + interval '1 month') AT TIME ZONE 'UTC' - now())))::bigint
                        AS reset
             FROM requests
             WHERE api_key_id = $1 AND status = 'succeeded'
               AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        )
        .bind::<SqlUuid, _>(key_id)
        .get_result(conn)
        .await?;
        if month.charged.saturating_add(committed) > budget {
            // The budget resets at the start of the next UTC month, unless
            // this reservation alone exceeds it.
            return Err(refused(
                KeyLimit::MonthlyBudget,
                (amount <= budget).then_some(month.reset),
            ));
        }
    }
    match reserve_batch(conn, std::slice::from_ref(request)).await {
        Ok(admitted) if admitted == [true] => Ok(()),
        // The version was checked under the lock: the wallet was short.
        Ok(_) => Err(LimitedError::Refused(ReserveError::InsufficientCredits)),
        Err(error) => Err(LimitedError::Refused(ReserveError::Store(error))),
    }
}

/// What a key whose only limits are on spend may still commit: the least,
/// over its spend windows and its monthly budget, of the limit less the
/// charges in it and less what its live holds and leases hold; `None` when
/// the key's policy is no longer `policy_version` or it has a request limit.
/// Run with the key row locked `FOR UPDATE` (as [`reserve_limited`] locks
/// it), so no admission of the key runs meanwhile. `i64::MAX` when no limit
/// is set.
pub(crate) async fn key_spend_allowance(
    conn: &mut AsyncPgConnection,
    key_id: Uuid,
    policy_version: i64,
) -> Result<Option<i64>, diesel::result::Error> {
    use crate::api_keys::{LIMIT_COLUMNS, LimitRow, limits_from_row};
    use crate::schema::api_keys;
    use diesel::{ExpressionMethods, OptionalExtension, QueryDsl};
    let row: Option<(i64, LimitRow)> = api_keys::table
        .filter(api_keys::id.eq(key_id))
        .select((api_keys::policy_version, LIMIT_COLUMNS))
        .for_update()
        .first(conn)
        .await
        .optional()?;
    let Some((version, limits)) = row else {
        return Ok(None);
    };
    let limits = limits_from_row(limits);
    if version != policy_version || !limits.spend_only() {
        return Ok(None);
    }
    let held = live_holds(conn, key_id).await?.held;
    let mut allowance = i64::MAX;
    for window in limits.spend_limits.iter().flatten() {
        let spent: Charged = diesel::sql_query(
            "SELECT coalesce(sum(charged_nano), 0)::bigint AS charged FROM requests
             WHERE api_key_id = $1 AND status = 'succeeded' AND charged_nano > 0
               AND created_at > now() - least($2, 31536000000) * interval '1 second'",
        )
        .bind::<SqlUuid, _>(key_id)
        .bind::<BigInt, _>(window.window_seconds)
        .get_result(conn)
        .await?;
        allowance = allowance.min(
            window
                .amount_nano_usd
                .saturating_sub(spent.charged)
                .saturating_sub(held),
        );
    }
    if let Some(budget) = limits.monthly_budget_nano_usd {
        let month: Charged = diesel::sql_query(
            "SELECT coalesce(sum(charged_nano), 0)::bigint AS charged FROM requests
             WHERE api_key_id = $1 AND status = 'succeeded'
               AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
        )
        .bind::<SqlUuid, _>(key_id)
        .get_result(conn)
        .await?;
        allowance = allowance.min(budget.saturating_sub(month.charged).saturating_sub(held));
    }
    Ok(Some(allowance.max(0)))
}

#[derive(diesel::QueryableByName)]
struct Charged {
    #[diesel(sql_type = BigInt)]
    charged: i64,
}

/// A key's live requests: its unreleased holds, and what they hold.
async fn live_holds(
    conn: &mut AsyncPgConnection,
    key_id: Uuid,
) -> Result<LiveRow, diesel::result::Error> {
    // A key's credit lease (issue 34) is spend the key has committed to,
    // like a live hold: it counts against every spend limit and the budget.
    diesel::sql_query(
        "SELECT (SELECT count(*) FROM holds WHERE api_key_id = $1 AND released_at IS NULL)
                    AS requests,
                ((SELECT coalesce(sum(amount_nano), 0) FROM holds
                  WHERE api_key_id = $1 AND released_at IS NULL)
                 + (SELECT coalesce(sum(amount_nano), 0) FROM credit_leases
                    WHERE api_key_id = $1 AND status = 'active'))::bigint AS held",
    )
    .bind::<SqlUuid, _>(key_id)
    .get_result(conn)
    .await
}

#[derive(diesel::QueryableByName)]
struct LiveRow {
    #[diesel(sql_type = BigInt)]
    requests: i64,
    #[diesel(sql_type = BigInt)]
    held: i64,
}

#[derive(diesel::QueryableByName)]
struct RecentRow {
    #[diesel(sql_type = BigInt)]
    requests: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    reset: Option<i64>,
}

#[derive(diesel::QueryableByName)]
struct SpentRow {
    #[diesel(sql_type = BigInt)]
    charged: i64,
    #[diesel(sql_type = Nullable<BigInt>)]
    reset: Option<i64>,
}

#[derive(diesel::QueryableByName)]
struct MonthRow {
    #[diesel(sql_type = BigInt)]
    charged: i64,
    #[diesel(sql_type = BigInt)]
    reset: i64,
}

/// What a key has spent, as its limits count it (the admin view).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeySpend {
    /// Charges of requests admitted this UTC calendar month.
    pub month_to_date_nano: i64,
    /// The key's live holds (counted by every spend check).
    pub held_nano: i64,
    /// Per window asked for: (window seconds, charges in the window + live holds).
    pub windows: Vec<(i64, i64)>,
}

/// [`KeySpend`] of key `key_id` for the windows `window_seconds`.
pub async fn key_spend(
    conn: &mut AsyncPgConnection,
    key_id: Uuid,
    window_seconds: &[i64],
) -> Result<KeySpend, StoreError> {
    let live = live_holds(conn, key_id).await.map_err(store_error)?;
    let month: ChargedRow = diesel::sql_query(
        "SELECT coalesce(sum(charged_nano), 0)::bigint AS charged FROM requests
         WHERE api_key_id = $1 AND status = 'succeeded'
           AND created_at >= date_trunc('month', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC'",
    )
    .bind::<SqlUuid, _>(key_id)
    .get_result(conn)
    .await
    .map_err(store_error)?;
    let mut windows = Vec::with_capacity(window_seconds.len());
    for &seconds in window_seconds {
        // A window may be up to i64::MAX seconds, beyond any interval: one of a
        // thousand years already covers every request.
        let spent: ChargedRow = diesel::sql_query(
            "SELECT coalesce(sum(charged_nano), 0)::bigint AS charged FROM requests
             WHERE api_key_id = $1 AND status = 'succeeded'
               AND created_at > now() - least($2, 31536000000) * interval '1 second'",
        )
        .bind::<SqlUuid, _>(key_id)
        .bind::<BigInt, _>(seconds)
        .get_result(conn)
        .await
        .map_err(store_error)?;
        windows.push((seconds, spent.charged.saturating_add(live.held)));
    }
    Ok(KeySpend {
        month_to_date_nano: month.charged,
        held_nano: live.held,
        windows,
    })
}

#[derive(diesel::QueryableByName)]
struct ChargedRow {
    #[diesel(sql_type = BigInt)]
    charged: i64,
}

/// Where a request's settlement stands, read after a settlement whose
/// outcome is unknown (the connection broke around its commit): the hold's
/// status (`held`, `settled`, `released`) and the request's charge; `None`
/// for no hold.
pub async fn settlement_outcome(
    conn: &mut AsyncPgConnection,
    request_id: Uuid,
) -> Result<Option<(String, Option<i64>)>, StoreError> {
    use crate::schema::{holds, requests};
    use diesel::{ExpressionMethods, JoinOnDsl, OptionalExtension, QueryDsl};
    holds::table
        .inner_join(requests::table.on(requests::id.eq(holds::request_id)))
        .filter(holds::request_id.eq(request_id))
        .select((holds::status, requests::charged_nano))
        .first::<(String, Option<i64>)>(conn)
        .await
        .optional()
        .map_err(store_error)
}

/// The `error_reason` of a request whose settlement committed after its
/// client was answered with an error, and whose charge was reversed.
pub const SETTLEMENT_UNANSWERED: &str = "settlement_unanswered";

/// Gives back the charge of a request settled although its client was
/// answered with an error: the settlement committed, and its answer was
/// lost with the database (RELIABILITY.md D1: the client saw success
/// exactly when it was charged). In one statement, once: the request
/// becomes `failed` ([`SETTLEMENT_UNANSWERED`], charged nothing), the
/// wallet gets its charge back, and the ledger records the `reversal`
/// (wallet +charge, revenue −charge). Its hold stays `settled`: it was
/// resolved by the settlement, and nothing of it is held any more. Works
/// alike for a request admitted from a credit lease (its lease kept the
/// charge apart; the charge comes back to the wallet's free balance).
/// Returns the charge given back, or `None` when the request is not
/// `succeeded` (never settled, or already reversed).
pub async fn reverse_unanswered_settlement(
    conn: &mut AsyncPgConnection,
    request_id: Uuid,
) -> Result<Option<NanoUsd>, StoreError> {
    use diesel::OptionalExtension;
    let reversed: Option<ChargedRow> = diesel::sql_query(
        "WITH request AS (
             UPDATE requests r
             SET status = 'failed', error_reason = $3, charged_nano = NULL
             WHERE r.id = $1 AND r.status = 'succeeded'
             RETURNING r.id, r.account_id
         ), charge AS (
             SELECT request.id, request.account_id,
                    coalesce(-sum(l.amount_nano), 0)::bigint AS charged
             FROM request
             LEFT JOIN ledger_entries l
                 ON l.request_id = request.id AND l.kind = 'charge'
                AND l.ledger_account = 'wallet'
             GROUP BY request.id, request.account_id
         ), wallet AS (
             UPDATE wallets w
             SET balance_nano = w.balance_nano + charge.charged, updated_at = now()
             FROM charge
             WHERE w.account_id = charge.account_id AND charge.charged > 0
         ), ledger AS (
             INSERT INTO ledger_entries (txn_id, request_id, account_id, ledger_account,
                                         amount_nano, kind)
             SELECT $2, charge.id, e.account_id, e.ledger_account, e.amount_nano, 'reversal'
             FROM charge,
                  LATERAL (VALUES (charge.account_id, 'wallet', charge.charged),
                                  (NULL::uuid, 'revenue', -charge.charged))
                      AS e (account_id, ledger_account, amount_nano)
             WHERE charge.charged > 0
         )
         SELECT charged FROM charge",
    )
    .bind::<SqlUuid, _>(request_id)
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .bind::<Text, _>(SETTLEMENT_UNANSWERED)
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)?;
    Ok(reversed.map(|row| NanoUsd(row.charged)))
}
