//! A request's history: its attempts as they happen, and the admin view of a
//! request with its hold, attempts and ledger entries.

use crate::error::{out_of_range, store_error};
use crate::prepared::{Params, static_query_id};
use crate::schema::{attempts, holds, ledger_entries, requests};
use crate::timestamps::{rfc3339, to_db};
use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::query_builder::{AstPass, QueryFragment};
use diesel::sql_types::{BigInt, Bool, Integer, Nullable, Text, Timestamptz, Uuid as SqlUuid};
use diesel::{ExpressionMethods, OptionalExtension, QueryDsl, QueryResult, Queryable};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::store::{AttemptOutcome, AttemptRecord, StoreError};
use uuid::Uuid;

/// Records one physical attempt (one round trip once prepared).
pub async fn record_attempt(
    conn: &mut AsyncPgConnection,
    attempt: &AttemptRecord,
) -> Result<(), StoreError> {
    let (outcome, upstream_status, failure_kind, retryable) = outcome_columns(&attempt.outcome);
    let statement = RecordAttemptStatement {
        columns: AttemptColumns::of(attempt)?,
        outcome,
        upstream_status,
        failure_kind,
        retryable,
    };
    statement.execute(conn).await.map_err(store_error)?;
    Ok(())
}

/// `outcome`, `upstream_status`, `failure_kind` and `retryable`.
pub(crate) fn outcome_columns(
    outcome: &AttemptOutcome,
) -> (&'static str, Option<i32>, Option<&str>, Option<bool>) {
    match outcome {
        AttemptOutcome::Succeeded => ("succeeded", None, None, None),
        AttemptOutcome::Failed {
            upstream_status,
            kind,
            retryable,
        } => (
            "failed",
            upstream_status.map(i32::from),
            Some(kind.as_str()),
            Some(*retryable),
        ),
    }
}

/// The columns every attempt row has, whatever its outcome, checked for range.
pub(crate) struct AttemptColumns<'a> {
    pub(crate) request_id: &'a Uuid,
    pub(crate) attempt_no: i32,
    pub(crate) route_id: &'a str,
    pub(crate) supplier_id: &'a str,
    pub(crate) upstream_protocol: &'static str,
    pub(crate) started_at: DateTime<Utc>,
    pub(crate) duration_ms: i64,
    /// At most 200 characters (the column's check); a longer one is dropped.
    pub(crate) supplier_request_id: Option<&'a str>,
}

impl<'a> AttemptColumns<'a> {
    pub(crate) fn of(attempt: &'a AttemptRecord) -> Result<Self, StoreError> {
        Ok(AttemptColumns {
            request_id: &attempt.request_id,
            attempt_no: i32::try_from(attempt.attempt_no)
                .map_err(|_| out_of_range("attempt_no"))?,
            route_id: &attempt.route_id,
            supplier_id: &attempt.supplier_id,
            upstream_protocol: attempt.upstream_protocol.as_str(),
            started_at: to_db(attempt.started_at),
            duration_ms: i64::try_from(attempt.duration_ms)
                .map_err(|_| out_of_range("duration_ms"))?,
            supplier_request_id: attempt
                .supplier_request_id
                .as_deref()
                .filter(|id| (1..=200).contains(&id.chars().count())),
        })
    }
}

struct RecordAttemptStatement<'a> {
    columns: AttemptColumns<'a>,
    outcome: &'static str,
    upstream_status: Option<i32>,
    failure_kind: Option<&'a str>,
    retryable: Option<bool>,
}

impl QueryFragment<Pg> for RecordAttemptStatement<'_> {
    fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
        let mut p = Params::new(out);
        let columns = &self.columns;
        p.bind::<SqlUuid, _>("request_id", columns.request_id)?;
        p.bind::<Integer, _>("attempt_no", &columns.attempt_no)?;
        p.bind::<Text, _>("route_id", columns.route_id)?;
        p.bind::<Text, _>("supplier_id", columns.supplier_id)?;
        p.bind::<Text, _>("upstream_protocol", columns.upstream_protocol)?;
        p.bind::<Timestamptz, _>("started_at", &columns.started_at)?;
        p.bind::<BigInt, _>("duration_ms", &columns.duration_ms)?;
        p.bind::<Text, _>("outcome", self.outcome)?;
        p.bind::<Nullable<Integer>, _>("upstream_status", &self.upstream_status)?;
        p.bind::<Nullable<Text>, _>("failure_kind", &self.failure_kind)?;
        p.bind::<Nullable<Bool>, _>("retryable", &self.retryable)?;
        p.bind::<Nullable<Text>, _>("supplier_request_id", &columns.supplier_request_id)?;
        p.finish(
            "INSERT INTO attempts (request_id, attempt_no, route_id, supplier_id, upstream_protocol,
                                   started_at, duration_ms, outcome, upstream_status, failure_kind,
                                   retryable, supplier_request_id)
            SELECT p.request_id, p.attempt_no, p.route_id, p.supplier_id, p.upstream_protocol,
                   p.started_at, p.duration_ms, p.outcome, p.upstream_status, p.failure_kind,
                   p.retryable, p.supplier_request_id
            FROM p",
        )
    }
}

static_query_id!(RecordAttemptStatement);

/// A request as the admin API shows it (serialized under its public names:
/// `protocol`, `*_nano_usd`, `ledger`). Money is integer nano-USD; times are
/// RFC 3339 in UTC.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = AdminRequest, description = "`GET /admin/requests/{id}`: a request's history.")
)]
pub struct RequestView {
    pub id: Uuid,
    pub account_id: Uuid,
    pub api_key_id: Uuid,
    pub model: String,
    pub inbound_protocol: String,
    #[serde(rename = "protocol")]
    pub recorded_protocol: String,
    pub stream: bool,
    /// `reserved`, `succeeded` or `failed`.
    pub status: String,
    #[serde(rename = "reserved_nano_usd")]
    pub reserved_nano: i64,
    /// What was debited; set once the request succeeded. Never above the
    /// hold (RELIABILITY.md I4).
    #[serde(rename = "charged_nano_usd")]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub charged_nano: Option<i64>,
    /// What the supplier's reported usage cost at the route's rates; set once
    /// the request succeeded. Above `charged_nano_usd` when the settlement
    /// was capped at the hold. (Requests settled before the cap existed were
    /// charged what was reported, so it equals `charged_nano_usd` for them.)
    #[serde(rename = "reported_nano_usd")]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub reported_nano: Option<i64>,
    /// `reported_nano_usd - charged_nano_usd`, the cost the operator absorbed: 0
    /// when the hold covered the reported cost; set once the request succeeded.
    #[serde(rename = "shortfall_nano_usd")]
    #[cfg_attr(feature = "openapi", schema(required))]
    pub shortfall_nano: Option<i64>,
    /// Set once the request succeeded.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub usage: Option<UsageView>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub route_id: Option<String>,
    /// Why a failed request failed (the public error code, or `reaped`).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub error_reason: Option<String>,
    pub created_at: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub finished_at: Option<String>,
    /// The experiment and variant the request was assigned (F-01).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub experiment_id: Option<Uuid>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub experiment_variant: Option<String>,
    /// Answered from the exact-response cache: charged 0, no hold.
    pub cache_hit: bool,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub hold: Option<HoldView>,
    /// In attempt order.
    pub attempts: Vec<AttemptView>,
    /// In insertion order.
    #[serde(rename = "ledger")]
    pub ledger_entries: Vec<LedgerEntryView>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = AdminUsage, description = "Token counts of a settled request.")
)]
pub struct UsageView {
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cache_read_tokens: i64,
    pub cache_write_tokens: i64,
    pub reasoning_tokens: i64,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = AdminHold, description = "A request's hold.")
)]
pub struct HoldView {
    pub amount_nano: i64,
    /// `held`, `settled` or `released`.
    pub status: String,
    pub expires_at: String,
    pub created_at: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub released_at: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = AdminAttempt, description = "One attempt of a request.")
)]
pub struct AttemptView {
    pub attempt_no: i32,
    pub route_id: String,
    pub supplier_id: String,
    pub upstream_protocol: String,
    pub started_at: String,
    pub duration_ms: i64,
    /// `succeeded` or `failed`.
    pub outcome: String,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub upstream_status: Option<i32>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub failure_kind: Option<String>,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub retryable: Option<bool>,
    /// The supplier's own id of this call (its `x-request-id` or
    /// `request-id` answer header), when it sent one.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub supplier_request_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(
    feature = "openapi",
    schema(as = AdminLedgerEntry, description = "One ledger entry of a request.")
)]
pub struct LedgerEntryView {
    pub id: i64,
    pub txn_id: Uuid,
    /// Set for `wallet` entries; house accounts have none.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub account_id: Option<Uuid>,
    /// `wallet`, `revenue` or `grants`.
    pub ledger_account: String,
    /// Signed: the entries of one `txn_id` sum to zero.
    pub amount_nano: i64,
    /// `grant` or `charge`.
    pub kind: String,
    pub created_at: String,
}

#[derive(Queryable)]
struct RequestRow {
    id: Uuid,
    account_id: Uuid,
    api_key_id: Uuid,
    model: String,
    inbound_protocol: String,
    recorded_protocol: String,
    stream: bool,
    status: String,
    reserved_nano: i64,
    charged_nano: Option<i64>,
    input_tokens: Option<i64>,
    output_tokens: Option<i64>,
    cache_read_tokens: Option<i64>,
    cache_write_tokens: Option<i64>,
    reasoning_tokens: Option<i64>,
    route_id: Option<String>,
    error_reason: Option<String>,
    created_at: DateTime<Utc>,
    finished_at: Option<DateTime<Utc>>,
    reported_nano: Option<i64>,
    experiment_id: Option<Uuid>,
    experiment_variant: Option<String>,
    cache_hit: bool,
}

type HoldRow = (
    i64,
    String,
    DateTime<Utc>,
    DateTime<Utc>,
    Option<DateTime<Utc>>,
);

#[derive(Queryable)]
struct AttemptRow {
    _request_id: Uuid,
    attempt_no: i32,
    route_id: String,
    supplier_id: String,
    upstream_protocol: String,
    started_at: DateTime<Utc>,
    duration_ms: i64,
    outcome: String,
    upstream_status: Option<i32>,
    failure_kind: Option<String>,
    retryable: Option<bool>,
    supplier_request_id: Option<String>,
}

#[derive(Queryable)]
struct LedgerRow {
    id: i64,
    txn_id: Uuid,
    _request_id: Option<Uuid>,
    account_id: Option<Uuid>,
    ledger_account: String,
    amount_nano: i64,
    kind: String,
    created_at: DateTime<Utc>,
}

/// The request with its hold, attempts and ledger entries, read from one
/// snapshot (a read-only REPEATABLE READ transaction), or `None`.
pub async fn get_request(
    conn: &mut AsyncPgConnection,
    id: Uuid,
) -> Result<Option<RequestView>, StoreError> {
    conn.build_transaction()
        .read_only()
        .repeatable_read()
        .run(async move |conn| {
            let Some(request) = requests::table
                .find(id)
                .first::<RequestRow>(conn)
                .await
                .optional()?
            else {
                return Ok(None);
            };
            let hold = holds::table
                .find(id)
                .select((
                    holds::amount_nano,
                    holds::status,
                    holds::expires_at,
                    holds::created_at,
                    holds::released_at,
                ))
                .first::<HoldRow>(conn)
                .await
                .optional()?;
            let attempts = attempts::table
                .filter(attempts::request_id.eq(id))
                .order(attempts::attempt_no)
                .load::<AttemptRow>(conn)
                .await?;
            let ledger = ledger_entries::table
                .filter(ledger_entries::request_id.eq(id))
                .order(ledger_entries::id)
                .load::<LedgerRow>(conn)
                .await?;
            Ok(Some(request_view(request, hold, attempts, ledger)))
        })
        .await
        .map_err(store_error)
}

fn request_view(
    request: RequestRow,
    hold: Option<HoldRow>,
    attempts: Vec<AttemptRow>,
    ledger: Vec<LedgerRow>,
) -> RequestView {
    let usage = match (
        request.input_tokens,
        request.output_tokens,
        request.cache_read_tokens,
        request.cache_write_tokens,
        request.reasoning_tokens,
    ) {
        (Some(input), Some(output), Some(cache_read), Some(cache_write), Some(reasoning)) => {
            Some(UsageView {
                input_tokens: input,
                output_tokens: output,
                cache_read_tokens: cache_read,
                cache_write_tokens: cache_write,
                reasoning_tokens: reasoning,
            })
        }
        _ => None,
    };
    let reported_nano = request.reported_nano.or(request.charged_nano);
    let shortfall_nano = reported_nano
        .zip(request.charged_nano)
        .map(|(reported, charged)| reported - charged);
    RequestView {
        id: request.id,
        account_id: request.account_id,
        api_key_id: request.api_key_id,
        model: request.model,
        inbound_protocol: request.inbound_protocol,
        recorded_protocol: request.recorded_protocol,
        stream: request.stream,
        status: request.status,
        reserved_nano: request.reserved_nano,
        charged_nano: request.charged_nano,
        reported_nano,
        shortfall_nano,
        usage,
        route_id: request.route_id,
        error_reason: request.error_reason,
        created_at: rfc3339(request.created_at),
        finished_at: request.finished_at.map(rfc3339),
        experiment_id: request.experiment_id,
        experiment_variant: request.experiment_variant,
        cache_hit: request.cache_hit,
        hold: hold.map(
            |(amount_nano, status, expires_at, created_at, released_at)| HoldView {
                amount_nano,
                status,
                expires_at: rfc3339(expires_at),
                created_at: rfc3339(created_at),
                released_at: released_at.map(rfc3339),
            },
        ),
        attempts: attempts
            .into_iter()
            .map(|row| AttemptView {
                attempt_no: row.attempt_no,
                route_id: row.route_id,
                supplier_id: row.supplier_id,
                upstream_protocol: row.upstream_protocol,
                started_at: rfc3339(row.started_at),
                duration_ms: row.duration_ms,
                outcome: row.outcome,
                upstream_status: row.upstream_status,
                failure_kind: row.failure_kind,
                retryable: row.retryable,
                supplier_request_id: row.supplier_request_id,
            })
            .collect(),
        ledger_entries: ledger
            .into_iter()
            .map(|row| LedgerEntryView {
                id: row.id,
                txn_id: row.txn_id,
                account_id: row.account_id,
                ledger_account: row.ledger_account,
                amount_nano: row.amount_nano,
                kind: row.kind,
                created_at: rfc3339(row.created_at),
            })
            .collect(),
    }
}
