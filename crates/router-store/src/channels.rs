//! Digest channels (section M): the channel rows and their state machine,
//! the send-report admission counters, the usage report read from the
//! ledger, and the outbox of deliveries relayed by the `outbox` job.
//!
//! A channel's destination may be a secret (a Slack or Discord webhook URL
//! carries its token): [`ChannelRow`]'s `Debug` never prints it, and the
//! server masks it in every client body.

use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Integer, Nullable, SmallInt, Text, Timestamptz};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use std::fmt;
use uuid::Uuid;

/// One channel, connected or not.
#[derive(Clone, PartialEq, Eq, QueryableByName)]
pub struct ChannelRow {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub account_id: Uuid,
    #[diesel(sql_type = Text)]
    pub platform: String,
    #[diesel(sql_type = Text)]
    pub frequency: String,
    #[diesel(sql_type = Array<Text>)]
    pub events: Vec<String>,
    /// The address, webhook URL or chat id: possibly a secret.
    #[diesel(sql_type = Text)]
    pub destination: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub api_base: Option<String>,
    #[diesel(sql_type = SmallInt)]
    pub report_hour_utc: i16,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Timestamptz)]
    pub connected_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = Timestamptz)]
    pub updated_at: DateTime<Utc>,
}

impl fmt::Debug for ChannelRow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChannelRow")
            .field("id", &self.id)
            .field("account_id", &self.account_id)
            .field("platform", &self.platform)
            .field("frequency", &self.frequency)
            .field("events", &self.events)
            .field("destination", &"<redacted>")
            .field("status", &self.status)
            .finish_non_exhaustive()
    }
}

impl ChannelRow {
    pub fn is_connected(&self) -> bool {
        self.status == "connected"
    }
}

const COLUMNS: &str = "id, account_id, platform, frequency, events, destination, api_base, \
                       report_hour_utc, status, connected_at, created_at, updated_at";

/// What connecting did (the state machine of M-34).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Connect {
    /// (none) → connected: 201.
    Created(ChannelRow),
    /// connected → connected with the same frequency: 200, unchanged.
    Unchanged(ChannelRow),
    /// disconnected → connected, same id and events: 200.
    Reconnected(ChannelRow),
    /// connected with another frequency: 409, unchanged.
    Conflict(ChannelRow),
}

/// A new channel's settings.
#[derive(Clone)]
pub struct NewChannel<'a> {
    pub account_id: Uuid,
    pub platform: &'a str,
    pub frequency: &'a str,
    pub destination: &'a str,
    pub api_base: Option<&'a str>,
    pub report_hour_utc: i16,
}

/// Connects (or reconnects) the account's channel on a platform. Two
/// concurrent connects meet on the `(account_id, platform)` key: one
/// inserts, the other then sees its row.
pub async fn connect(
    conn: &mut AsyncPgConnection,
    new: NewChannel<'_>,
) -> Result<Connect, StoreError> {
    let new = new.clone();
    conn.transaction(async move |conn| {
        let inserted: Option<ChannelRow> = diesel::sql_query(format!(
            "INSERT INTO channels (id, account_id, platform, frequency, destination, api_base,
                                   report_hour_utc, status)
             VALUES ($1, $2, $3, $4, $5, $6, $7, 'connected')
             ON CONFLICT (account_id, platform) DO NOTHING
             RETURNING {COLUMNS}"
        ))
        .bind::<diesel::sql_types::Uuid, _>(Uuid::now_v7())
        .bind::<diesel::sql_types::Uuid, _>(new.account_id)
        .bind::<Text, _>(new.platform)
        .bind::<Text, _>(new.frequency)
        .bind::<Text, _>(new.destination)
        .bind::<Nullable<Text>, _>(new.api_base)
        .bind::<SmallInt, _>(new.report_hour_utc)
        .get_result(conn)
        .await
        .optional()?;
        if let Some(row) = inserted {
            return Ok(Connect::Created(row));
        }
        let existing: ChannelRow = diesel::sql_query(format!(
            "SELECT {COLUMNS} FROM channels WHERE account_id = $1 AND platform = $2 FOR UPDATE"
        ))
        .bind::<diesel::sql_types::Uuid, _>(new.account_id)
        .bind::<Text, _>(new.platform)
        .get_result(conn)
        .await?;
        if existing.is_connected() {
            return Ok(if existing.frequency == new.frequency {
                Connect::Unchanged(existing)
            } else {
                Connect::Conflict(existing)
            });
        }
        // GP-64: same id and events; frequency from the request,
        // destination refreshed.
        let row: ChannelRow = diesel::sql_query(format!(
            "UPDATE channels SET status = 'connected', frequency = $2, destination = $3,
                    api_base = $4, connected_at = now(), updated_at = now()
             WHERE id = $1 RETURNING {COLUMNS}"
        ))
        .bind::<diesel::sql_types::Uuid, _>(existing.id)
        .bind::<Text, _>(new.frequency)
        .bind::<Text, _>(new.destination)
        .bind::<Nullable<Text>, _>(new.api_base)
        .get_result(conn)
        .await?;
        Ok(Connect::Reconnected(row))
    })
    .await
    .map_err(store_error)
}

/// A channel by id, connected or not.
pub async fn get(conn: &mut AsyncPgConnection, id: Uuid) -> Result<Option<ChannelRow>, StoreError> {
    diesel::sql_query(format!("SELECT {COLUMNS} FROM channels WHERE id = $1"))
        .bind::<diesel::sql_types::Uuid, _>(id)
        .get_result(conn)
        .await
        .optional()
        .map_err(store_error)
}

/// The account's channel on `platform`, connected or not.
pub async fn for_platform(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    platform: &str,
) -> Result<Option<ChannelRow>, StoreError> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM channels WHERE account_id = $1 AND platform = $2"
    ))
    .bind::<diesel::sql_types::Uuid, _>(account_id)
    .bind::<Text, _>(platform)
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)
}

/// The account's connected channels, oldest first.
pub async fn list_connected(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<Vec<ChannelRow>, StoreError> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM channels WHERE account_id = $1 AND status = 'connected'
         ORDER BY created_at, id"
    ))
    .bind::<diesel::sql_types::Uuid, _>(account_id)
    .load(conn)
    .await
    .map_err(store_error)
}

/// Every connected channel with a digest schedule (the scheduler's scan).
pub async fn scheduled(conn: &mut AsyncPgConnection) -> Result<Vec<ChannelRow>, StoreError> {
    diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM channels WHERE status = 'connected' AND frequency <> 'off'
         ORDER BY id"
    ))
    .load(conn)
    .await
    .map_err(store_error)
}

/// Changes a connected channel's frequency and/or events; `None` when no
/// connected channel has this id (and owner, when given).
pub async fn update(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    owner: Uuid,
    frequency: Option<&str>,
    events: Option<&[String]>,
) -> Result<Option<ChannelRow>, StoreError> {
    diesel::sql_query(format!(
        "UPDATE channels SET frequency = coalesce($3, frequency), events = coalesce($4, events),
                updated_at = now()
         WHERE id = $1 AND account_id = $2 AND status = 'connected'
         RETURNING {COLUMNS}"
    ))
    .bind::<diesel::sql_types::Uuid, _>(id)
    .bind::<diesel::sql_types::Uuid, _>(owner)
    .bind::<Nullable<Text>, _>(frequency)
    .bind::<Nullable<Array<Text>>, _>(events)
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)
}

/// Disconnects a connected channel (of `owner` on `platform` when given):
/// `None` when there is none. Deliveries not yet sent are dropped
/// (marked failed); what was handed to a provider is not retracted (M-31).
pub async fn disconnect(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    owner: Option<Uuid>,
    platform: Option<&str>,
) -> Result<Option<ChannelRow>, StoreError> {
    conn.transaction(async move |conn| {
        let row: Option<ChannelRow> = diesel::sql_query(format!(
            "UPDATE channels SET status = 'disconnected', updated_at = now()
             WHERE id = $1 AND status = 'connected'
               AND ($2::uuid IS NULL OR account_id = $2)
               AND ($3::text IS NULL OR platform = $3)
             RETURNING {COLUMNS}"
        ))
        .bind::<diesel::sql_types::Uuid, _>(id)
        .bind::<Nullable<diesel::sql_types::Uuid>, _>(owner)
        .bind::<Nullable<Text>, _>(platform)
        .get_result(conn)
        .await
        .optional()?;
        if row.is_some() {
            diesel::sql_query(
                "UPDATE channel_deliveries
                 SET status = 'failed', last_error = 'channel disconnected', finished_at = now()
                 WHERE channel_id = $1 AND status = 'pending'",
            )
            .bind::<diesel::sql_types::Uuid, _>(id)
            .execute(conn)
            .await?;
        }
        Ok(row)
    })
    .await
    .map_err(store_error)
}

/// At most one manual report per channel per this many seconds (M-16).
pub const REPORT_GAP_SECS: i64 = 60;
/// At most this many manual reports per channel per UTC day (M-17).
pub const REPORTS_PER_DAY: i64 = 20;

/// Whether a send-report attempt was admitted (and counted).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    Admitted,
    /// Refused, not counted: retry after this many seconds (≥ 1).
    RetryAfter(u64),
}

#[derive(QueryableByName)]
struct Counters {
    #[diesel(sql_type = Nullable<BigInt>)]
    since_last_ms: Option<i64>,
    #[diesel(sql_type = BigInt)]
    today: i64,
    #[diesel(sql_type = BigInt)]
    until_midnight_ms: i64,
}

/// Admits and counts one send-report attempt (GP-65): 60 s since the last
/// admitted one, and fewer than 20 in the current UTC day. The channel row
/// is locked so concurrent calls take turns; the clock is the database's.
pub async fn admit_report(
    conn: &mut AsyncPgConnection,
    channel_id: Uuid,
) -> Result<Admission, StoreError> {
    conn.transaction(async move |conn| {
        diesel::sql_query("SELECT id FROM channels WHERE id = $1 FOR UPDATE")
            .bind::<diesel::sql_types::Uuid, _>(channel_id)
            .execute(conn)
            .await?;
        let counters: Counters = diesel::sql_query(
            "WITH t AS (SELECT now() AS now,
                               date_trunc('day', now() AT TIME ZONE 'UTC') AT TIME ZONE 'UTC' AS day)
             SELECT (SELECT (extract(epoch FROM t.now - max(attempted_at)) * 1000)::bigint
                       FROM channel_report_attempts WHERE channel_id = $1) AS since_last_ms,
                    (SELECT count(*) FROM channel_report_attempts
                       WHERE channel_id = $1 AND attempted_at >= t.day) AS today,
                    (extract(epoch FROM t.day + interval '1 day' - t.now) * 1000)::bigint
                       AS until_midnight_ms
             FROM t",
        )
        .bind::<diesel::sql_types::Uuid, _>(channel_id)
        .get_result(conn)
        .await?;
        let ceil_secs = |ms: i64| u64::try_from((ms + 999) / 1000).unwrap_or(1).max(1);
        if let Some(since) = counters.since_last_ms
            && since < REPORT_GAP_SECS * 1000
        {
            return Ok(Admission::RetryAfter(ceil_secs(REPORT_GAP_SECS * 1000 - since)));
        }
        if counters.today >= REPORTS_PER_DAY {
            return Ok(Admission::RetryAfter(ceil_secs(counters.until_midnight_ms)));
        }
        diesel::sql_query("INSERT INTO channel_report_attempts (channel_id) VALUES ($1)")
            .bind::<diesel::sql_types::Uuid, _>(channel_id)
            .execute(conn)
            .await?;
        Ok(Admission::Admitted)
    })
    .await
    .map_err(store_error)
}

/// One line of a usage report: a model and key's requests and spend.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct UsageLine {
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub api_key_id: Uuid,
    /// The key's display prefix (never the key).
    #[diesel(sql_type = Text)]
    pub key_prefix: String,
    #[diesel(sql_type = BigInt)]
    pub requests: i64,
    /// What the wallet was charged, from the ledger (nano-USD, ≥ 0).
    #[diesel(sql_type = BigInt)]
    pub spend_nano: i64,
}

/// The account's own usage (M-04) for `[start, end)`: requests that
/// finished (succeeded) in the period, by model and key, with their
/// wallet charges summed from the ledger. A charge belongs to the period
/// of its request's `finished_at`.
pub async fn usage(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<Vec<UsageLine>, StoreError> {
    diesel::sql_query(
        "SELECT r.model, r.api_key_id, k.display_prefix AS key_prefix,
                count(*)::bigint AS requests,
                coalesce(sum(c.debit), 0)::bigint AS spend_nano
         FROM requests r
         JOIN api_keys k ON k.id = r.api_key_id
         LEFT JOIN LATERAL (
             SELECT -sum(l.amount_nano) AS debit FROM ledger_entries l
             WHERE l.request_id = r.id AND l.kind = 'charge' AND l.ledger_account = 'wallet'
         ) c ON true
         WHERE r.account_id = $1 AND r.status = 'succeeded'
           AND r.finished_at >= $2 AND r.finished_at < $3
         GROUP BY r.model, r.api_key_id, k.display_prefix
         ORDER BY spend_nano DESC, r.model, r.api_key_id",
    )
    .bind::<diesel::sql_types::Uuid, _>(account_id)
    .bind::<Timestamptz, _>(start)
    .bind::<Timestamptz, _>(end)
    .load(conn)
    .await
    .map_err(store_error)
}

/// One outbox row as a worker claimed it.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct Delivery {
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub id: Uuid,
    #[diesel(sql_type = diesel::sql_types::Uuid)]
    pub channel_id: Uuid,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Nullable<Text>)]
    pub event: Option<String>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub period_start: Option<DateTime<Utc>>,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub period_end: Option<DateTime<Utc>>,
    #[diesel(sql_type = Text)]
    pub payload: String,
    #[diesel(sql_type = Integer)]
    pub attempts: i32,
}

/// Queues the digest of one period for a channel; `false` when that
/// period's digest was already queued (by this or another instance).
pub async fn enqueue_digest(
    conn: &mut AsyncPgConnection,
    channel_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> Result<bool, StoreError> {
    let key = format!("digest:{}:{}", start.timestamp(), end.timestamp());
    let n = diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, period_start,
                                         period_end, status)
         VALUES ($1, $2, 'digest', $3, $4, $5, 'pending')
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<diesel::sql_types::Uuid, _>(Uuid::now_v7())
    .bind::<diesel::sql_types::Uuid, _>(channel_id)
    .bind::<Text, _>(key)
    .bind::<Timestamptz, _>(start)
    .bind::<Timestamptz, _>(end)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(n > 0)
}

/// Queues one occurrence of `event` (identified by `occurrence`) for every
/// connected channel of the account that selected it; returns how many
/// rows were queued. Call it inside the transaction of what happened.
pub async fn enqueue_event(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    event: &str,
    occurrence: &str,
    payload: &str,
) -> Result<usize, diesel::result::Error> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, event, payload, status)
         SELECT gen_random_uuid(), c.id, 'event', $3, $2, $4, 'pending'
         FROM channels c
         WHERE c.account_id = $1 AND c.status = 'connected' AND $2 = ANY (c.events)
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<diesel::sql_types::Uuid, _>(account_id)
    .bind::<Text, _>(event)
    .bind::<Text, _>(format!("event:{event}:{occurrence}"))
    .bind::<Text, _>(payload)
    .execute(conn)
    .await
}

/// Records a manual report's delivery that failed for now and is to be
/// retried by the outbox (M-21 `report_pending`).
pub async fn enqueue_manual_retry(
    conn: &mut AsyncPgConnection,
    channel_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    error: &str,
    retry_in_secs: i64,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, period_start,
                                         period_end, status, attempts, next_attempt_at, last_error)
         VALUES ($1, $2, 'manual', $1::text, $3, $4, 'pending', 1,
                 now() + $5 * interval '1 second', $6)",
    )
    .bind::<diesel::sql_types::Uuid, _>(Uuid::now_v7())
    .bind::<diesel::sql_types::Uuid, _>(channel_id)
    .bind::<Timestamptz, _>(start)
    .bind::<Timestamptz, _>(end)
    .bind::<BigInt, _>(retry_in_secs)
    .bind::<Text, _>(error)
    .execute(conn)
    .await
    .map_err(store_error)
    .map(|_| ())
}

/// Records a manual report whose outcome is unknown (sent, no answer): for
/// the operator, never resent (M-22).
pub async fn record_ambiguous_manual(
    conn: &mut AsyncPgConnection,
    channel_id: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
    error: &str,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, period_start,
                                         period_end, status, attempts, last_error, finished_at)
         VALUES ($1, $2, 'manual', $1::text, $3, $4, 'ambiguous', 1, $5, now())",
    )
    .bind::<diesel::sql_types::Uuid, _>(Uuid::now_v7())
    .bind::<diesel::sql_types::Uuid, _>(channel_id)
    .bind::<Timestamptz, _>(start)
    .bind::<Timestamptz, _>(end)
    .bind::<Text, _>(error)
    .execute(conn)
    .await
    .map_err(store_error)
    .map(|_| ())
}

/// Claims up to `limit` due deliveries for this worker: each is marked
/// `sending` and its attempt counted before anything is sent, in one
/// statement under `FOR UPDATE SKIP LOCKED`, so two instances never claim
/// one row, and a worker that dies mid-send leaves the row `sending` (an
/// unknown outcome, for the operator) rather than sending it again.
pub async fn claim_due(
    conn: &mut AsyncPgConnection,
    limit: i64,
) -> Result<Vec<Delivery>, StoreError> {
    diesel::sql_query(
        "UPDATE channel_deliveries d SET status = 'sending', attempts = d.attempts + 1
         WHERE d.id IN (
             SELECT id FROM channel_deliveries
             WHERE status = 'pending' AND next_attempt_at <= now()
             ORDER BY next_attempt_at
             LIMIT $1
             FOR UPDATE SKIP LOCKED)
         RETURNING d.id, d.channel_id, d.kind, d.event, d.period_start, d.period_end,
                   d.payload, d.attempts",
    )
    .bind::<BigInt, _>(limit)
    .load(conn)
    .await
    .map_err(store_error)
}

/// How a claimed delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    Delivered,
    /// Nothing to send (a digest period without activity).
    Skipped,
    /// Certainly not delivered: try again in this many seconds.
    RetryIn(i64, String),
    /// Certainly not delivered, and no more tries.
    Failed(String),
    /// Maybe delivered: never resent (M-22).
    Ambiguous(String),
}

pub async fn finish(
    conn: &mut AsyncPgConnection,
    id: Uuid,
    outcome: &Outcome,
) -> Result<(), StoreError> {
    let (status, error, retry): (&str, Option<&str>, i64) = match outcome {
        Outcome::Delivered => ("delivered", None, 0),
        Outcome::Skipped => ("skipped", None, 0),
        Outcome::RetryIn(secs, e) => ("pending", Some(e), *secs),
        Outcome::Failed(e) => ("failed", Some(e), 0),
        Outcome::Ambiguous(e) => ("ambiguous", Some(e), 0),
    };
    diesel::sql_query(
        "UPDATE channel_deliveries
         SET status = $2, last_error = $3,
             next_attempt_at = CASE WHEN $2 = 'pending' THEN now() + $4 * interval '1 second'
                                    ELSE next_attempt_at END,
             finished_at = CASE WHEN $2 = 'pending' THEN NULL ELSE now() END
         WHERE id = $1 AND status = 'sending'",
    )
    .bind::<diesel::sql_types::Uuid, _>(id)
    .bind::<Text, _>(status)
    .bind::<Nullable<Text>, _>(error)
    .bind::<BigInt, _>(retry)
    .execute(conn)
    .await
    .map_err(store_error)
    .map(|_| ())
}

/// Queues `api_key_expiring` once per key and expiry for every channel that
/// selected it, for keys expiring within seven days after `as_of` (the
/// scheduler's pass); returns how many rows were queued.
pub async fn enqueue_keys_expiring(
    conn: &mut AsyncPgConnection,
    as_of: DateTime<Utc>,
) -> Result<usize, StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, event, payload, status)
         SELECT gen_random_uuid(), c.id, 'event',
                'event:api_key_expiring:' || k.id || ':' || extract(epoch FROM k.expires_at)::bigint,
                'api_key_expiring',
                json_build_object(
                    'key_prefix', k.display_prefix,
                    'expires_at', to_char(k.expires_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS\"Z\"')
                )::text,
                'pending'
         FROM api_keys k
         JOIN channels c ON c.account_id = k.account_id AND c.status = 'connected'
                        AND 'api_key_expiring' = ANY (c.events)
         WHERE k.deleted_at IS NULL AND k.expires_at > $1 AND k.expires_at <= $1 + interval '7 days'
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<Timestamptz, _>(as_of)
    .execute(conn)
    .await
    .map_err(store_error)
}

/// Moves finished requests' `finished_at` (a test hook: the ledger is
/// untouched, only which period a charge belongs to changes); returns how
/// many moved.
pub async fn backdate_requests(
    conn: &mut AsyncPgConnection,
    ids: &[Uuid],
    finished_at: DateTime<Utc>,
) -> Result<usize, StoreError> {
    diesel::sql_query(
        "UPDATE requests SET finished_at = $2 WHERE id = ANY ($1) AND finished_at IS NOT NULL",
    )
    .bind::<Array<diesel::sql_types::Uuid>, _>(ids)
    .bind::<Timestamptz, _>(finished_at)
    .execute(conn)
    .await
    .map_err(store_error)
}

/// Queues a key's event (`spend_limit_reached`, `monthly_budget_reached`)
/// once per key and period (`period` is a `to_char` pattern of the UTC
/// now, e.g. `YYYY-MM`) for the key's account's channels that selected it.
pub async fn enqueue_key_event(
    conn: &mut AsyncPgConnection,
    key_id: Uuid,
    event: &str,
    period: &str,
) -> Result<usize, StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, event, payload, status)
         SELECT gen_random_uuid(), c.id, 'event',
                'event:' || $2 || ':' || k.id || ':' || to_char(now() AT TIME ZONE 'UTC', $3),
                $2,
                json_build_object('key_prefix', k.display_prefix,
                                  'period', to_char(now() AT TIME ZONE 'UTC', $3))::text,
                'pending'
         FROM api_keys k
         JOIN channels c ON c.account_id = k.account_id AND c.status = 'connected'
                        AND $2 = ANY (c.events)
         WHERE k.id = $1
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<diesel::sql_types::Uuid, _>(key_id)
    .bind::<Text, _>(event)
    .bind::<Text, _>(period)
    .execute(conn)
    .await
    .map_err(store_error)
}

/// Queues `low_balance` for every connected channel that selected it whose
/// account's available credit (balance minus holds) is under
/// `threshold_nano`: once per account and refill, the occurrence being the
/// number of grants the wallet has had (a new grant, then a new fall under
/// the threshold, is a new occurrence).
pub async fn enqueue_low_balance(
    conn: &mut AsyncPgConnection,
    threshold_nano: i64,
) -> Result<usize, StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, event, payload, status)
         SELECT gen_random_uuid(), c.id, 'event',
                'event:low_balance:' || (SELECT count(*) FROM ledger_entries g
                                         WHERE g.account_id = c.account_id AND g.kind = 'grant'),
                'low_balance',
                json_build_object('available_nano_usd', w.balance_nano - w.held_nano,
                                  'threshold_nano_usd', $1::bigint)::text,
                'pending'
         FROM channels c
         JOIN wallets w ON w.account_id = c.account_id
         WHERE c.status = 'connected' AND 'low_balance' = ANY (c.events)
           AND w.balance_nano - w.held_nano < $1
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<BigInt, _>(threshold_nano)
    .execute(conn)
    .await
    .map_err(store_error)
}

/// Queues one occurrence of an event that concerns every account (e.g.
/// `model_price_changed` from a catalog release) for every connected
/// channel that selected it. The catalog's release should call this in the
/// transaction that publishes the release.
pub async fn enqueue_broadcast(
    conn: &mut AsyncPgConnection,
    event: &str,
    occurrence: &str,
    payload: &str,
) -> Result<usize, StoreError> {
    diesel::sql_query(
        "INSERT INTO channel_deliveries (id, channel_id, kind, dedup_key, event, payload, status)
         SELECT gen_random_uuid(), c.id, 'event', $2, $1, $3, 'pending'
         FROM channels c
         WHERE c.status = 'connected' AND $1 = ANY (c.events)
         ON CONFLICT (channel_id, dedup_key) DO NOTHING",
    )
    .bind::<Text, _>(event)
    .bind::<Text, _>(format!("event:{event}:{occurrence}"))
    .bind::<Text, _>(payload)
    .execute(conn)
    .await
    .map_err(store_error)
}
