//! An account's spend as its owner sees it (the dashboard): by UTC day, by
//! model and by key, each key's month and last use, and the request list
//! with its filters. Every amount is summed from the ledger's wallet charge
//! entries (integer nano-USD, the debit as a positive number), never from a
//! copy kept elsewhere; a request's charge belongs to the day its ledger
//! entry was written.

use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::QueryableByName;
use diesel::sql_types::{BigInt, Bool, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;
use uuid::Uuid;

/// One UTC day's charges.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct DaySpend {
    /// `YYYY-MM-DD`, UTC.
    #[diesel(sql_type = Text)]
    pub day: String,
    #[diesel(sql_type = BigInt)]
    pub requests: i64,
    #[diesel(sql_type = BigInt)]
    pub spend_nano: i64,
}

/// Charges grouped by one thing (a model, or a key with its prefix).
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct SpendLine {
    /// The model, or the key's id.
    #[diesel(sql_type = Text)]
    pub name: String,
    /// The key's display prefix; empty for a model.
    #[diesel(sql_type = Text)]
    pub prefix: String,
    #[diesel(sql_type = BigInt)]
    pub requests: i64,
    #[diesel(sql_type = BigInt)]
    pub spend_nano: i64,
}

/// A key's charges since `since` and its last request.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct KeyActivity {
    #[diesel(sql_type = SqlUuid)]
    pub api_key_id: Uuid,
    #[diesel(sql_type = BigInt)]
    pub spend_nano: i64,
    #[diesel(sql_type = Nullable<Timestamptz>)]
    pub last_used_at: Option<DateTime<Utc>>,
}

/// What narrows the request list; `None` takes everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RequestFilter {
    pub model: Option<String>,
    pub api_key_id: Option<Uuid>,
    /// `reserved`, `succeeded` or `failed`.
    pub status: Option<String>,
    /// Created at or after.
    pub from: Option<DateTime<Utc>>,
    /// Created before.
    pub to: Option<DateTime<Utc>>,
    pub limit: i64,
}

/// One request of the list, with its charge from the ledger.
#[derive(Debug, Clone, PartialEq, Eq, QueryableByName)]
pub struct RequestLine {
    #[diesel(sql_type = SqlUuid)]
    pub id: Uuid,
    #[diesel(sql_type = Text)]
    pub model: String,
    #[diesel(sql_type = SqlUuid)]
    pub api_key_id: Uuid,
    #[diesel(sql_type = Text)]
    pub key_prefix: String,
    #[diesel(sql_type = Text)]
    pub status: String,
    #[diesel(sql_type = Text)]
    pub inbound_protocol: String,
    #[diesel(sql_type = Bool)]
    pub stream: bool,
    #[diesel(sql_type = Timestamptz)]
    pub created_at: DateTime<Utc>,
    #[diesel(sql_type = BigInt)]
    pub charged_nano: i64,
}

/// The wallet charges of `account_id` since `since`, by UTC day (days
/// without charges are absent). A reversed charge
/// ([`crate::billing::reverse_unanswered_settlement`]) counts back, in
/// spend and in requests, here and in every sum below.
pub async fn by_day(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<DaySpend>, StoreError> {
    diesel::sql_query(
        "SELECT to_char(l.created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD') AS day,
                (count(*) FILTER (WHERE l.kind = 'charge')
                 - count(*) FILTER (WHERE l.kind = 'reversal'))::bigint AS requests,
                (-sum(l.amount_nano))::bigint AS spend_nano
         FROM ledger_entries l
         WHERE l.account_id = $1 AND l.ledger_account = 'wallet' AND l.kind IN ('charge', 'reversal')
           AND l.created_at >= $2
         GROUP BY 1 ORDER BY 1",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Timestamptz, _>(since)
    .load(conn)
    .await
    .map_err(store_error)
}

/// The wallet charges of `account_id` since `since`, by model.
pub async fn by_model(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<SpendLine>, StoreError> {
    diesel::sql_query(
        "SELECT r.model AS name, '' AS prefix,
                (count(*) FILTER (WHERE l.kind = 'charge')
                 - count(*) FILTER (WHERE l.kind = 'reversal'))::bigint AS requests,
                (-sum(l.amount_nano))::bigint AS spend_nano
         FROM ledger_entries l JOIN requests r ON r.id = l.request_id
         WHERE l.account_id = $1 AND l.ledger_account = 'wallet' AND l.kind IN ('charge', 'reversal')
           AND l.created_at >= $2
         GROUP BY r.model ORDER BY spend_nano DESC, r.model",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Timestamptz, _>(since)
    .load(conn)
    .await
    .map_err(store_error)
}

/// The wallet charges of `account_id` since `since`, by key.
pub async fn by_key(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<SpendLine>, StoreError> {
    diesel::sql_query(
        "SELECT k.id::text AS name, k.display_prefix AS prefix,
                (count(*) FILTER (WHERE l.kind = 'charge')
                 - count(*) FILTER (WHERE l.kind = 'reversal'))::bigint AS requests,
                (-sum(l.amount_nano))::bigint AS spend_nano
         FROM ledger_entries l
         JOIN requests r ON r.id = l.request_id
         JOIN api_keys k ON k.id = r.api_key_id
         WHERE l.account_id = $1 AND l.ledger_account = 'wallet' AND l.kind IN ('charge', 'reversal')
           AND l.created_at >= $2
         GROUP BY k.id, k.display_prefix ORDER BY spend_nano DESC, k.id",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Timestamptz, _>(since)
    .load(conn)
    .await
    .map_err(store_error)
}

/// Every key of `account_id`: its wallet charges since `since` and when it
/// last made a request.
pub async fn key_activity(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    since: DateTime<Utc>,
) -> Result<Vec<KeyActivity>, StoreError> {
    diesel::sql_query(
        "SELECT k.id AS api_key_id,
                coalesce((SELECT -sum(l.amount_nano)
                          FROM requests r JOIN ledger_entries l ON l.request_id = r.id
                          WHERE r.api_key_id = k.id AND l.ledger_account = 'wallet'
                            AND l.kind IN ('charge', 'reversal') AND l.created_at >= $2), 0)::bigint AS spend_nano,
                (SELECT max(r.created_at) FROM requests r WHERE r.api_key_id = k.id) AS last_used_at
         FROM api_keys k WHERE k.account_id = $1",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Timestamptz, _>(since)
    .load(conn)
    .await
    .map_err(store_error)
}

/// The newest requests of `account_id` that pass `filter`, newest first.
pub async fn requests(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    filter: &RequestFilter,
) -> Result<Vec<RequestLine>, StoreError> {
    diesel::sql_query(
        "SELECT r.id, r.model, r.api_key_id, k.display_prefix AS key_prefix, r.status,
                r.inbound_protocol, r.stream, r.created_at,
                coalesce((SELECT -sum(l.amount_nano) FROM ledger_entries l
                          WHERE l.request_id = r.id AND l.ledger_account = 'wallet'
                            AND l.kind IN ('charge', 'reversal')), 0)::bigint AS charged_nano
         FROM requests r JOIN api_keys k ON k.id = r.api_key_id
         WHERE r.account_id = $1
           AND ($2::text IS NULL OR r.model = $2)
           AND ($3::uuid IS NULL OR r.api_key_id = $3)
           AND ($4::text IS NULL OR r.status = $4)
           AND ($5::timestamptz IS NULL OR r.created_at >= $5)
           AND ($6::timestamptz IS NULL OR r.created_at < $6)
         ORDER BY r.created_at DESC, r.id DESC
         LIMIT $7",
    )
    .bind::<SqlUuid, _>(account_id)
    .bind::<Nullable<Text>, _>(filter.model.as_deref())
    .bind::<Nullable<SqlUuid>, _>(filter.api_key_id)
    .bind::<Nullable<Text>, _>(filter.status.as_deref())
    .bind::<Nullable<Timestamptz>, _>(filter.from)
    .bind::<Nullable<Timestamptz>, _>(filter.to)
    .bind::<BigInt, _>(filter.limit)
    .load(conn)
    .await
    .map_err(store_error)
}
