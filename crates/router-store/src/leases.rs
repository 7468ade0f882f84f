//! The statements of credit leases (issue 34; the in-process side is
//! [`crate::lease_book`]).
//!
//! A lease is an ordinary hold on a wallet that one instance takes for
//! itself: its `amount_nano` is part of the wallet's `held_nano` while it is
//! active. The instance then admits the account's requests from it in
//! memory, and writes each request's history row, its (already settled or
//! released) hold row and its ledger entries when the request ends, in one
//! statement, group-committed like every settlement.
//!
//! Money moves only in these statements, each atomic:
//! - [`acquire`] and [`grow`]: the wallet's available balance moves into the
//!   lease (`held_nano` up, lease up), never more than is available;
//! - [`settle_batch`]: a request's charge leaves the lease and the wallet
//!   (`balance_nano`, `held_nano` and the lease all down by the charge);
//! - [`give_back`] and [`close`]: unused funds go back (`held_nano` and the
//!   lease down);
//! - [`reap_expired`]: a lease whose holder stopped renewing it is released
//!   whole after its expiry, like an orphaned hold.
//!
//! Lock order is lease row, then wallet row, in every statement that takes
//! both, so they never deadlock with each other; the direct reservation and
//! settlement statements ([`crate::billing`]) lock no lease.

use crate::billing::SettlementColumns;
use crate::error::{out_of_range, store_error};
use crate::pg_array::PgArray;
use crate::prepared::{Params, static_query_id};
use crate::timestamps::to_db;
use chrono::{DateTime, Utc};
use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, Query, QueryFragment};
use diesel::sql_types::{Array, BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_canonical::NanoUsd;
use router_core::store::{AttemptRecord, NewRequest, Settlement, StoreError, Voiding};
use std::time::SystemTime;
use uuid::Uuid;

/// The NOTIFY channel on which an instance that was refused for credit asks
/// every holder of the account's leases to give their unused part back.
/// The payload is the account id.
pub const RECALL_CHANNEL: &str = "router_lease_recall";

/// A request admitted from a lease, as its settlement or voiding writes it.
#[derive(Debug, Clone)]
pub struct LeasedRequest {
    pub lease_id: Uuid,
    pub request: NewRequest,
    /// When the request was admitted (its history row's `created_at`).
    pub admitted_at: SystemTime,
    /// Failed attempts recorded before the end: written with it, since the
    /// request row does not exist before.
    pub attempts: Vec<AttemptRecord>,
}

/// A lease's settlement of one of its requests.
#[derive(Debug, Clone)]
pub struct LeasedSettlement {
    pub leased: LeasedRequest,
    pub settlement: Settlement,
}

/// A lease to take: for the account (keys without limits) or for one key
/// whose only limits are on spend.
#[derive(Debug, Clone)]
pub struct NewLease<'a> {
    pub lease_id: Uuid,
    pub account_id: Uuid,
    /// The key and the policy version its admissions were made under.
    pub key: Option<(Uuid, i64)>,
    pub holder: &'a str,
    pub share_percent: i64,
    /// Nothing is leased below this.
    pub minimum: i64,
    pub expires_at: SystemTime,
}

/// `share` percent of `amount`, rounded down, without overflow.
fn share_of(amount: i64, share_percent: i64) -> i64 {
    (amount / 100) * share_percent + (amount % 100) * share_percent / 100
}

/// Takes a lease: `share_percent` of the wallet's available balance (and,
/// for a key, at most that share of what the key's limits still allow), if
/// that is at least `minimum`; nothing otherwise. Returns the amount leased
/// (0 when none was). A key's lease locks the key row first, as a limited
/// admission does, so no admission of the key runs meanwhile.
pub async fn acquire(
    conn: &mut AsyncPgConnection,
    lease: &NewLease<'_>,
) -> Result<i64, StoreError> {
    use diesel_async::AsyncConnection;
    conn.transaction::<_, Failed, _>(async |conn| {
        let cap = match lease.key {
            None => i64::MAX,
            Some((key_id, policy_version)) => {
                match crate::billing::key_spend_allowance(conn, key_id, policy_version).await? {
                    Some(allowance) => share_of(allowance, lease.share_percent),
                    None => return Ok(0),
                }
            }
        };
        Ok(insert_lease(conn, lease, cap).await?)
    })
    .await
    .map_err(StoreError::from)
}

async fn insert_lease(
    conn: &mut AsyncPgConnection,
    lease: &NewLease<'_>,
    cap: i64,
) -> Result<i64, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Granted {
        #[diesel(sql_type = BigInt)]
        amount: i64,
    }
    let granted: Vec<Granted> = diesel::sql_query(
        "WITH w AS (
            SELECT account_id, greatest(balance_nano - held_nano, 0) AS available
            FROM wallets WHERE account_id = $2 FOR UPDATE
        ), g AS (
            SELECT account_id,
                   least($8, (available / 100) * $4 + (available % 100) * $4 / 100) AS amount
            FROM w
        ), lease AS (
            INSERT INTO credit_leases (id, account_id, api_key_id, holder, amount_nano, status,
                                       expires_at)
            SELECT $1, g.account_id, $7, $3, g.amount, 'active', $6 FROM g
            WHERE g.amount >= $5 AND g.amount > 0
            RETURNING amount_nano
        ), held AS (
            UPDATE wallets w SET held_nano = w.held_nano + lease.amount_nano, updated_at = now()
            FROM lease WHERE w.account_id = $2
        )
        SELECT amount_nano AS amount FROM lease",
    )
    .bind::<SqlUuid, _>(lease.lease_id)
    .bind::<SqlUuid, _>(lease.account_id)
    .bind::<Text, _>(lease.holder)
    .bind::<BigInt, _>(lease.share_percent)
    .bind::<BigInt, _>(lease.minimum)
    .bind::<Timestamptz, _>(to_db(lease.expires_at))
    .bind::<Nullable<SqlUuid>, _>(lease.key.map(|(key_id, _)| key_id))
    .bind::<BigInt, _>(cap)
    .load(conn)
    .await?;
    Ok(granted.into_iter().next().map_or(0, |g| g.amount))
}

/// Adds to an active lease up to `wanted`, within `share_percent` of the
/// wallet's available balance (and, for a key's lease, of what the key's
/// limits still allow, read with the key row locked first). Returns what
/// was added (0 when the lease is no longer active, was recalled, since
/// funds added to a recalled lease would be missing from the wallet while
/// another instance waits for them, or nothing is available).
pub async fn grow(
    conn: &mut AsyncPgConnection,
    lease_id: Uuid,
    key: Option<(Uuid, i64)>,
    wanted: i64,
    share_percent: i64,
    expires_at: SystemTime,
) -> Result<i64, StoreError> {
    use diesel_async::AsyncConnection;
    conn.transaction::<_, Failed, _>(async |conn| {
        let wanted = match key {
            None => wanted,
            Some((key_id, policy_version)) => {
                match crate::billing::key_spend_allowance(conn, key_id, policy_version).await? {
                    Some(allowance) => wanted.min(share_of(allowance, share_percent)),
                    None => return Ok(0),
                }
            }
        };
        Ok(add_to_lease(conn, lease_id, wanted, share_percent, expires_at).await?)
    })
    .await
    .map_err(StoreError::from)
}

async fn add_to_lease(
    conn: &mut AsyncPgConnection,
    lease_id: Uuid,
    wanted: i64,
    share_percent: i64,
    expires_at: SystemTime,
) -> Result<i64, diesel::result::Error> {
    #[derive(diesel::QueryableByName)]
    struct Added {
        #[diesel(sql_type = BigInt)]
        added: i64,
    }
    let added: Vec<Added> = diesel::sql_query(
        "WITH l AS (
            SELECT id, account_id FROM credit_leases
            WHERE id = $1 AND status = 'active' AND recalled_at IS NULL FOR UPDATE
        ), w AS (
            SELECT w.account_id, greatest(w.balance_nano - w.held_nano, 0) AS available
            FROM wallets w JOIN l ON l.account_id = w.account_id FOR UPDATE OF w
        ), g AS (
            SELECT w.account_id,
                   least($2, (w.available / 100) * $3 + (w.available % 100) * $3 / 100) AS amount
            FROM w
        ), lease AS (
            UPDATE credit_leases c
            SET amount_nano = c.amount_nano + g.amount, expires_at = greatest(c.expires_at, $4)
            FROM g, l WHERE c.id = l.id AND g.amount > 0
            RETURNING g.amount
        ), held AS (
            UPDATE wallets w SET held_nano = w.held_nano + lease.amount, updated_at = now()
            FROM lease, g WHERE w.account_id = g.account_id
        )
        SELECT amount AS added FROM lease",
    )
    .bind::<SqlUuid, _>(lease_id)
    .bind::<BigInt, _>(wanted)
    .bind::<BigInt, _>(share_percent)
    .bind::<Timestamptz, _>(to_db(expires_at))
    .load(conn)
    .await?;
    Ok(added.into_iter().next().map_or(0, |a| a.added))
}

/// Gives `amount` of an active lease back to its wallet (and, when
/// `recalled`, notes that the holder answered a recall). Returns whether
/// the lease was still active.
pub async fn give_back(
    conn: &mut AsyncPgConnection,
    lease_id: Uuid,
    amount: i64,
    recalled: bool,
) -> Result<bool, StoreError> {
    let changed = diesel::sql_query(
        "WITH l AS (
            UPDATE credit_leases
            SET amount_nano = amount_nano - $2,
                recalled_at = CASE WHEN $3 THEN now() ELSE recalled_at END
            WHERE id = $1 AND status = 'active' AND amount_nano >= $2
            RETURNING account_id
        )
        UPDATE wallets w SET held_nano = w.held_nano - $2, updated_at = now()
        FROM l WHERE w.account_id = l.account_id",
    )
    .bind::<SqlUuid, _>(lease_id)
    .bind::<BigInt, _>(amount)
    .bind::<Bool, _>(recalled)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(changed == 1)
}

/// Ends an active lease whose holder has no request left on it: whatever
/// it still holds goes back to the wallet. Returns the amount returned, or
/// `None` when the lease was no longer active.
pub async fn close(
    conn: &mut AsyncPgConnection,
    lease_id: Uuid,
) -> Result<Option<i64>, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Closed {
        #[diesel(sql_type = BigInt)]
        amount: i64,
    }
    let closed: Vec<Closed> = diesel::sql_query(
        "WITH old AS (
            SELECT id, account_id, amount_nano FROM credit_leases
            WHERE id = $1 AND status = 'active' FOR UPDATE
        ), l AS (
            UPDATE credit_leases c
            SET amount_nano = 0, status = 'returned', ended_at = now()
            FROM old WHERE c.id = old.id
            RETURNING old.account_id, old.amount_nano
        ), held AS (
            UPDATE wallets w SET held_nano = w.held_nano - l.amount_nano, updated_at = now()
            FROM l WHERE w.account_id = l.account_id
        )
        SELECT amount_nano AS amount FROM l",
    )
    .bind::<SqlUuid, _>(lease_id)
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(closed.into_iter().next().map(|c| c.amount))
}

/// Pushes the expiry of `holder`'s active leases to `until` (never back).
pub async fn renew(
    conn: &mut AsyncPgConnection,
    lease_ids: &[Uuid],
    until: SystemTime,
) -> Result<u64, StoreError> {
    let renewed = diesel::sql_query(
        "UPDATE credit_leases SET expires_at = greatest(expires_at, $2)
         WHERE id = ANY($1) AND status = 'active'",
    )
    .bind::<Array<SqlUuid>, _>(lease_ids)
    .bind::<Timestamptz, _>(to_db(until))
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(renewed as u64)
}

/// Releases every active lease that expired before `now` (its holder died
/// or lost the database for longer than the lease's life): its amount goes
/// back to the wallet. Safe from every instance at once. Returns how many.
pub async fn reap_expired(
    conn: &mut AsyncPgConnection,
    now: SystemTime,
) -> Result<u64, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let reaped: Count = diesel::sql_query(
        "WITH expired AS (
            SELECT id, account_id, amount_nano FROM credit_leases
            WHERE status = 'active' AND expires_at < $1
            ORDER BY id
            LIMIT 500
            FOR UPDATE SKIP LOCKED
        ), per_account AS (
            SELECT account_id, sum(amount_nano)::bigint AS amount FROM expired GROUP BY account_id
        ), locked AS (
            SELECT w.account_id FROM wallets w
            WHERE w.account_id IN (SELECT account_id FROM per_account)
            ORDER BY w.account_id FOR UPDATE
        ), held AS (
            UPDATE wallets w SET held_nano = w.held_nano - per_account.amount, updated_at = now()
            FROM per_account, locked
            WHERE w.account_id = per_account.account_id AND locked.account_id = w.account_id
        ), ended AS (
            UPDATE credit_leases c SET status = 'expired', ended_at = now()
            FROM expired WHERE c.id = expired.id
        )
        SELECT count(*) AS n FROM expired",
    )
    .bind::<Timestamptz, _>(to_db(now))
    .get_result(conn)
    .await
    .map_err(store_error)?;
    u64::try_from(reaped.n).map_err(|_| out_of_range("reaped leases"))
}

/// Asks every holder of `account_id`'s leases to give their unused part
/// back, and returns the database's clock at the asking: a lease recalled
/// at or after it has answered.
pub async fn recall(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<DateTime<Utc>, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Asked {
        #[diesel(sql_type = Timestamptz)]
        at: DateTime<Utc>,
    }
    let asked: Asked = diesel::sql_query(
        "SELECT clock_timestamp() AS at, pg_notify($1, $2::text) IS NULL AS sent",
    )
    .bind::<Text, _>(RECALL_CHANNEL)
    .bind::<SqlUuid, _>(account_id)
    .get_result(conn)
    .await
    .map_err(store_error)?;
    Ok(asked.at)
}

/// How many of `account_id`'s active leases held by another holder than
/// `holder` have not answered a recall made at `asked`.
pub async fn unanswered(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    holder: &str,
    asked: Option<DateTime<Utc>>,
) -> Result<i64, StoreError> {
    #[derive(diesel::QueryableByName)]
    struct Count {
        #[diesel(sql_type = BigInt)]
        n: i64,
    }
    let count: Count = diesel::sql_query(
        "SELECT count(*) AS n FROM credit_leases
         WHERE account_id = $1 AND status = 'active' AND amount_nano > 0
           AND holder <> $2
           AND ($3::timestamptz IS NULL OR recalled_at IS NULL OR recalled_at < $3)",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(holder)
    .bind::<Nullable<Timestamptz>, _>(asked)
    .get_result(conn)
    .await
    .map_err(store_error)?;
    Ok(count.n)
}

/// Settles many leased requests in ONE statement: per request, its history
/// row (succeeded, with usage, route and charge), its hold row (settled,
/// naming the lease), its succeeded attempt and its ledger entries; per
/// lease, its amount down by its requests' charges; per wallet, balance and
/// held down by the same. The charge is the reported cost capped at the
/// request's reservation (the hold is a ceiling, I4), as a direct
/// settlement's. A request whose lease is no longer active (reaped) or that
/// was already written is left alone and reports `None`. Failed attempts
/// recorded before the end are written in the same transaction.
pub async fn settle_batch(
    conn: &mut AsyncPgConnection,
    items: &[LeasedSettlement],
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    settle_batch_within(conn, items, &crate::billing::BatchBounds::NONE).await
}

/// [`settle_batch`] within `bounds` (see
/// [`crate::billing::settle_batch_within`]): a statement the server
/// receives after `bounds.valid_until` writes nothing.
pub async fn settle_batch_within(
    conn: &mut AsyncPgConnection,
    items: &[LeasedSettlement],
    bounds: &crate::billing::BatchBounds,
) -> Result<Vec<Option<NanoUsd>>, StoreError> {
    let mut statement = SettleLeasedStatement {
        lock_wait: bounds.lock_wait.clone(),
        valid_until: bounds.valid_until.map(to_db),
        ..SettleLeasedStatement::default()
    };
    for item in items {
        statement.push(item)?;
    }
    let with_attempts = items.iter().any(|i| !i.leased.attempts.is_empty());
    let settled: Vec<(Uuid, i64)> = if with_attempts {
        use diesel_async::AsyncConnection;
        conn.transaction::<_, Failed, _>(async |conn| {
            let settled: Vec<(Uuid, i64)> = statement.load(conn).await?;
            for item in items {
                if settled
                    .iter()
                    .any(|(id, _)| *id == item.leased.request.request_id)
                {
                    for attempt in &item.leased.attempts {
                        crate::history::record_attempt(conn, attempt)
                            .await
                            .map_err(Failed::Store)?;
                    }
                }
            }
            Ok(settled)
        })
        .await?
    } else {
        statement.load(conn).await.map_err(store_error)?
    };
    Ok(items
        .iter()
        .map(|item| {
            settled
                .iter()
                .find(|(id, _)| *id == item.leased.request.request_id)
                .map(|(_, charge)| NanoUsd(*charge))
        })
        .collect())
}

/// Writes a leased request that ended without a charge: its history row
/// (failed, with `reason`), its released hold row and its attempts. The
/// lease is untouched (the reservation goes back to it in memory). Returns
/// whether it was written (false when it already was).
pub async fn void(
    conn: &mut AsyncPgConnection,
    leased: &LeasedRequest,
    voiding: &Voiding,
) -> Result<bool, StoreError> {
    use diesel_async::AsyncConnection;
    let request = &leased.request;
    let written = conn
        .transaction::<_, Failed, _>(async |conn| {
            let written = diesel::sql_query(
                "WITH request AS (
                    INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                                          recorded_protocol, stream, status, reserved_nano,
                                          error_reason, created_at, finished_at,
                                          experiment_id, experiment_variant)
                    VALUES ($1, $2, $3, $4, $5, $6, $7, 'failed', $8, $9, $10, now(), $11, $12)
                    ON CONFLICT (id) DO NOTHING
                    RETURNING id
                )
                INSERT INTO holds (request_id, account_id, api_key_id, amount_nano, status,
                                   expires_at, created_at, released_at, lease_id)
                SELECT id, $2, $3, $8, 'released', now(), $10, now(), $13 FROM request",
            )
            .bind::<SqlUuid, _>(request.request_id)
            .bind::<SqlUuid, _>(request.account_id)
            .bind::<SqlUuid, _>(request.api_key_id)
            .bind::<Text, _>(&request.model)
            .bind::<Text, _>(request.inbound_protocol.as_str())
            .bind::<Text, _>(request.recorded_protocol.as_str())
            .bind::<Bool, _>(request.stream)
            .bind::<BigInt, _>(request.reserve.0)
            .bind::<Text, _>(&voiding.reason)
            .bind::<Timestamptz, _>(to_db(leased.admitted_at))
            .bind::<Nullable<SqlUuid>, _>(request.experiment.as_ref().map(|e| e.experiment_id))
            .bind::<Nullable<Text>, _>(request.experiment.as_ref().map(|e| e.variant.as_str()))
            .bind::<SqlUuid, _>(leased.lease_id)
            .execute(conn)
            .await?;
            if written == 1 {
                for attempt in leased.attempts.iter().chain(voiding.attempt.as_ref()) {
                    crate::history::record_attempt(conn, attempt)
                        .await
                        .map_err(Failed::Store)?;
                }
            }
            Ok(written == 1)
        })
        .await?;
    Ok(written)
}

/// The settlement's columns ([`crate::billing::SettlementColumns`]) and
/// what the request's row needs besides, one array per column; element `i`
/// of each belongs to item `i`.
#[derive(Default)]
struct SettleLeasedStatement<'a> {
    settlements: SettlementColumns<'a>,
    lease_ids: PgArray<Uuid>,
    account_ids: PgArray<Uuid>,
    api_key_ids: PgArray<Uuid>,
    models: PgArray<&'a str>,
    inbound_protocols: PgArray<&'static str>,
    recorded_protocols: PgArray<&'static str>,
    streams: PgArray<bool>,
    reserved: PgArray<i64>,
    created_ats: PgArray<DateTime<Utc>>,
    experiment_ids: PgArray<Option<Uuid>>,
    experiment_variants: PgArray<Option<&'a str>>,
    lock_wait: Option<String>,
    valid_until: Option<DateTime<Utc>>,
}

impl<'a> SettleLeasedStatement<'a> {
    fn push(&mut self, item: &'a LeasedSettlement) -> Result<(), StoreError> {
        let request = &item.leased.request;
        crate::billing::check_reservation(request)?;
        self.settlements.push(&item.settlement)?;
        self.lease_ids.push(item.leased.lease_id);
        self.account_ids.push(request.account_id);
        self.api_key_ids.push(request.api_key_id);
        self.models.push(&request.model);
        self.inbound_protocols
            .push(request.inbound_protocol.as_str());
        self.recorded_protocols
            .push(request.recorded_protocol.as_str());
        self.streams.push(request.stream);
        self.reserved.push(request.reserve.0);
        self.created_ats.push(to_db(item.leased.admitted_at));
        self.experiment_ids
            .push(request.experiment.as_ref().map(|e| e.experiment_id));
        self.experiment_variants
            .push(request.experiment.as_ref().map(|e| e.variant.as_str()));
        Ok(())
    }
}

impl Query for SettleLeasedStatement<'_> {
    /// The request and its charge, per settled request.
    type SqlType = (SqlUuid, BigInt);
}

impl QueryFragment<Pg> for SettleLeasedStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        self.settlements.bind(&mut p)?;
        p.bind::<Array<SqlUuid>, _>("lease_ids", &self.lease_ids)?;
        p.bind::<Array<SqlUuid>, _>("account_ids", &self.account_ids)?;
        p.bind::<Array<SqlUuid>, _>("api_key_ids", &self.api_key_ids)?;
        p.bind::<Array<Text>, _>("models", &self.models)?;
        p.bind::<Array<Text>, _>("inbound_protocols", &self.inbound_protocols)?;
        p.bind::<Array<Text>, _>("recorded_protocols", &self.recorded_protocols)?;
        p.bind::<Array<Bool>, _>("streams", &self.streams)?;
        p.bind::<Array<BigInt>, _>("reserved", &self.reserved)?;
        p.bind::<Array<Timestamptz>, _>("created_ats", &self.created_ats)?;
        p.bind::<Array<Nullable<SqlUuid>>, _>("experiment_ids", &self.experiment_ids)?;
        p.bind::<Array<Nullable<Text>>, _>("experiment_variants", &self.experiment_variants)?;
        p.bind::<Nullable<Timestamptz>, _>("valid_until", &self.valid_until)?;
        p.lock_wait(&self.lock_wait)?;
        p.finish(
            ", t AS (
                SELECT DISTINCT ON (t.request_id) t.*,
                       least(t.reported, t.reserved) AS charge
                FROM p, unnest(p.request_ids, p.lease_ids, p.account_ids, p.api_key_ids,
                               p.models, p.inbound_protocols, p.recorded_protocols,
                               p.streams, p.reserved, p.created_ats, p.experiment_ids,
                               p.experiment_variants, p.reported, p.txn_ids,
                               p.input_tokens, p.output_tokens, p.cache_read_tokens,
                               p.cache_write_tokens, p.reasoning_tokens, p.route_ids,
                               p.attempt_nos, p.supplier_ids, p.upstream_protocols,
                               p.started_ats, p.durations_ms, p.supplier_request_ids)
                    WITH ORDINALITY
                    AS t (request_id, lease_id, account_id, api_key_id, model,
                          inbound_protocol, recorded_protocol, stream, reserved, created_at,
                          experiment_id, experiment_variant, reported, txn_id, input_tokens,
                          output_tokens, cache_read_tokens, cache_write_tokens,
                          reasoning_tokens, route_id, attempt_no, supplier_id,
                          upstream_protocol, started_at, duration_ms, supplier_request_id,
                          ordinal)
                -- Too late: the router has answered these requests already.
                WHERE p.valid_until IS NULL OR statement_timestamp() <= p.valid_until
                ORDER BY t.request_id, t.ordinal
            ), live AS (
                -- Lease rows first, then wallets: the order of every lease statement.
                SELECT l.id, l.account_id
                FROM credit_leases l
                WHERE l.id IN (SELECT lease_id FROM t) AND l.status = 'active'
                ORDER BY l.id
                FOR UPDATE
            ), request AS (
                INSERT INTO requests (id, account_id, api_key_id, model, inbound_protocol,
                                      recorded_protocol, stream, status, reserved_nano,
                                      charged_nano, reported_nano, input_tokens,
                                      output_tokens, cache_read_tokens, cache_write_tokens,
                                      reasoning_tokens, route_id, created_at, finished_at,
                                      experiment_id, experiment_variant)
                SELECT t.request_id, t.account_id, t.api_key_id, t.model, t.inbound_protocol,
                       t.recorded_protocol, t.stream, 'succeeded', t.reserved, t.charge,
                       t.reported, t.input_tokens, t.output_tokens, t.cache_read_tokens,
                       t.cache_write_tokens, t.reasoning_tokens, t.route_id, t.created_at,
                       now(), t.experiment_id, t.experiment_variant
                FROM t
                JOIN live ON live.id = t.lease_id AND live.account_id = t.account_id
                ON CONFLICT (id) DO NOTHING
                RETURNING id
            ), settled AS (
                SELECT t.* FROM t JOIN request ON request.id = t.request_id
            ), hold AS (
                INSERT INTO holds (request_id, account_id, api_key_id, amount_nano, status,
                                   expires_at, created_at, released_at, lease_id)
                SELECT request_id, account_id, api_key_id, reserved, 'settled', now(),
                       created_at, now(), lease_id
                FROM settled
            ), per_lease AS (
                SELECT lease_id, sum(charge)::bigint AS charge
                FROM settled GROUP BY lease_id
            ), lease AS (
                UPDATE credit_leases l
                SET amount_nano = l.amount_nano - per_lease.charge
                FROM per_lease
                WHERE l.id = per_lease.lease_id
            ), per_account AS (
                SELECT account_id, sum(charge)::bigint AS charge,
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
                    held_nano = w.held_nano - per_account.charge,
                    shortfall_count = w.shortfall_count + per_account.shortfalls,
                    shortfall_nano = w.shortfall_nano + per_account.shortfall,
                    updated_at = now()
                FROM per_account, locked
                WHERE w.account_id = per_account.account_id
                  AND locked.account_id = per_account.account_id
            ), attempt AS (
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
            )
            SELECT request_id, charge FROM settled",
        )
    }
}

static_query_id!(SettleLeasedStatement);

/// A failure inside a lease transaction: the query's, or a row that did not
/// fit its columns.
enum Failed {
    Query(diesel::result::Error),
    Store(StoreError),
}

impl From<diesel::result::Error> for Failed {
    fn from(error: diesel::result::Error) -> Self {
        Failed::Query(error)
    }
}

impl From<Failed> for StoreError {
    fn from(failed: Failed) -> Self {
        match failed {
            Failed::Query(error) => store_error(error),
            Failed::Store(error) => error,
        }
    }
}
