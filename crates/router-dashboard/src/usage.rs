//! What the account spent (`/api/usage`) and the requests it made
//! (`/api/requests`, `/api/requests/{id}`), from the ledger, exactly.
//!
//! A request's detail shows its attempts by their route protocol and
//! outcome only: never the route, the supplier or the supplier's request
//! id (suppliers stay private to the operator).

use crate::{Dashboard, DashboardError, Money};
use chrono::{DateTime, Days, NaiveDate, NaiveTime, Utc};
use router_operator::usage::{RequestFilter, SpendLine};
use router_operator::{OperatorError, Resource};
use serde::Serialize;
use uuid::Uuid;

/// How many UTC days the chart and the tables cover, today included.
pub const DAYS: u64 = 30;
/// The request list's default length.
pub const DEFAULT_LIMIT: i64 = 50;

/// `GET /api/usage`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UsageView {
    /// `usage`.
    pub object: &'static str,
    /// The wallet's balance.
    pub balance: Money,
    /// Held by requests in flight.
    pub held: Money,
    /// Balance less holds: what new requests may reserve.
    pub available: Money,
    /// Spend over the last 30 UTC days, today included.
    pub total: Money,
    /// One entry per UTC day, oldest first, days without spend included.
    pub days: Vec<DayView>,
    pub by_model: Vec<ModelSpend>,
    pub by_key: Vec<SpendByKey>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DayView {
    /// `YYYY-MM-DD`, UTC.
    pub day: String,
    /// Charged requests.
    pub requests: i64,
    pub spend: Money,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ModelSpend {
    pub model: String,
    pub requests: i64,
    pub spend: Money,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SpendByKey {
    pub api_key_id: String,
    pub prefix: String,
    pub requests: i64,
    pub spend: Money,
}

/// `GET /api/requests`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestList {
    /// `list`.
    pub object: &'static str,
    pub data: Vec<RequestSummary>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestSummary {
    pub id: Uuid,
    pub model: String,
    pub api_key_id: Uuid,
    pub key_prefix: String,
    /// `reserved`, `succeeded` or `failed`.
    pub status: String,
    /// The protocol the client spoke.
    pub protocol: String,
    pub stream: bool,
    /// RFC 3339, UTC.
    pub created_at: String,
    /// From the ledger; zero unless it succeeded and cost something.
    pub charge: Money,
}

/// `GET /api/requests/{id}`.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RequestDetail {
    pub id: Uuid,
    pub model: String,
    pub api_key_id: Uuid,
    pub status: String,
    /// The protocol the client spoke.
    pub protocol: String,
    pub stream: bool,
    pub created_at: String,
    pub finished_at: Option<String>,
    /// Why it failed: the public error code.
    pub error: Option<String>,
    /// Answered from the exact-response cache (no charge).
    pub cache_hit: bool,
    pub tokens: Option<Tokens>,
    /// The wallet's charge entries summed from the ledger.
    pub charge: Money,
    pub attempts: Vec<AttemptSummary>,
}

#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tokens {
    pub input: i64,
    pub output: i64,
    pub cache_read: i64,
    pub cache_write: i64,
    pub reasoning: i64,
}

/// One attempt, without the route or supplier that took it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AttemptSummary {
    pub number: i32,
    /// The protocol the route spoke.
    pub route_protocol: String,
    /// `succeeded` or `failed`.
    pub outcome: String,
    pub started_at: String,
    pub duration_ms: i64,
}

/// The filters of `GET /api/requests`, from its query string. An unknown
/// parameter is ignored, and so is an empty `model`; any other parameter
/// that is not exactly what it should be is refused, naming it.
pub fn parse_filter(query: Option<&str>) -> Result<RequestFilter, DashboardError> {
    let mut filter = RequestFilter {
        limit: DEFAULT_LIMIT,
        ..RequestFilter::default()
    };
    let invalid = |param: &'static str, message: &str| DashboardError::Invalid {
        param,
        message: message.to_owned(),
    };
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match &*name {
            "model" => {
                // A model id is printable text; a control character (NUL
                // above all, which PostgreSQL refuses in text) names none.
                if value.chars().any(char::is_control) {
                    return Err(invalid("model", "A model id, without control characters."));
                }
                filter.model = Some(value.into_owned()).filter(|m| !m.is_empty());
            }
            "key" => {
                filter.api_key_id = Some(
                    Some(&*value)
                        .filter(|v| v.len() == 36)
                        .and_then(|v| Uuid::parse_str(v).ok())
                        .ok_or_else(|| invalid("key", "An API key id (UUID)."))?,
                );
            }
            "status" => match &*value {
                "reserved" | "succeeded" | "failed" => filter.status = Some(value.into_owned()),
                _ => return Err(invalid("status", "One of reserved, succeeded, failed.")),
            },
            "from" => {
                filter.from = Some(
                    day_start(&value).ok_or_else(|| invalid("from", "A UTC date, YYYY-MM-DD."))?,
                );
            }
            "to" => {
                // Inclusive: requests created before the next day.
                filter.to = Some(
                    day_start(&value)
                        .and_then(|day| day.checked_add_days(Days::new(1)))
                        .ok_or_else(|| invalid("to", "A UTC date, YYYY-MM-DD."))?,
                );
            }
            "limit" => {
                filter.limit = Some(&*value)
                    .filter(|v| !v.is_empty() && v.bytes().all(|b| b.is_ascii_digit()))
                    .and_then(|v| v.parse::<i64>().ok())
                    .filter(|n| (1..=router_operator::usage::MAX_REQUESTS).contains(n))
                    .ok_or_else(|| invalid("limit", "A whole number from 1 to 200."))?;
            }
            _ => {}
        }
    }
    Ok(filter)
}

/// Midnight UTC of a `YYYY-MM-DD` date (exactly that form).
fn day_start(text: &str) -> Option<DateTime<Utc>> {
    let b = text.as_bytes();
    let digits = |range: std::ops::Range<usize>| b[range].iter().all(u8::is_ascii_digit);
    let well_formed = b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && digits(0..4)
        && digits(5..7)
        && digits(8..10);
    if !well_formed {
        return None;
    }
    let day = NaiveDate::parse_from_str(text, "%Y-%m-%d").ok()?;
    Some(day.and_time(NaiveTime::MIN).and_utc())
}

/// The `DAYS` UTC days ending with `now`'s, oldest first.
fn window(now: DateTime<Utc>) -> Vec<NaiveDate> {
    let today = now.date_naive();
    (0..DAYS)
        .rev()
        .filter_map(|back| today.checked_sub_days(Days::new(back)))
        .collect()
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

impl Dashboard<'_> {
    /// Balance, holds, and the last 30 UTC days' spend by day, model and key.
    pub async fn usage(
        &self,
        account_id: Uuid,
        now: DateTime<Utc>,
    ) -> Result<UsageView, DashboardError> {
        let account = self.operator.account(account_id).await?;
        let days = window(now);
        let since = days
            .first()
            .map_or(now, |day| day.and_time(NaiveTime::MIN).and_utc());
        let spend = self.operator.spend_since(account_id, since).await?;
        let total = spend.by_day.iter().map(|d| d.spend_nano).sum();
        let days = days
            .iter()
            .map(|day| {
                let day = day.format("%Y-%m-%d").to_string();
                let found = spend.by_day.iter().find(|d| d.day == day);
                DayView {
                    requests: found.map_or(0, |d| d.requests),
                    spend: Money::of(found.map_or(0, |d| d.spend_nano)),
                    day,
                }
            })
            .collect();
        let by_model = spend
            .by_model
            .into_iter()
            .map(
                |SpendLine {
                     name,
                     requests,
                     spend_nano,
                     ..
                 }| ModelSpend {
                    model: name,
                    requests,
                    spend: Money::of(spend_nano),
                },
            )
            .collect();
        let by_key = spend
            .by_key
            .into_iter()
            .map(|line| SpendByKey {
                api_key_id: line.name,
                prefix: line.prefix,
                requests: line.requests,
                spend: Money::of(line.spend_nano),
            })
            .collect();
        Ok(UsageView {
            object: "usage",
            balance: Money::of(account.balance_nano_usd),
            held: Money::of(account.held_nano_usd),
            available: Money::of(
                account
                    .balance_nano_usd
                    .saturating_sub(account.held_nano_usd),
            ),
            total: Money::of(total),
            days,
            by_model,
            by_key,
        })
    }

    /// The account's newest requests that pass `filter`.
    pub async fn requests(
        &self,
        account_id: Uuid,
        filter: &RequestFilter,
    ) -> Result<RequestList, DashboardError> {
        let lines = self.operator.account_requests(account_id, filter).await?;
        Ok(RequestList {
            object: "list",
            data: lines
                .into_iter()
                .map(|line| RequestSummary {
                    id: line.id,
                    model: line.model,
                    api_key_id: line.api_key_id,
                    key_prefix: line.key_prefix,
                    status: line.status,
                    protocol: line.inbound_protocol,
                    stream: line.stream,
                    created_at: rfc3339(line.created_at),
                    charge: Money::of(line.charged_nano),
                })
                .collect(),
        })
    }

    /// One of the account's requests; another account's is unknown.
    pub async fn request(
        &self,
        account_id: Uuid,
        id: Option<&str>,
    ) -> Result<RequestDetail, DashboardError> {
        let unknown = || DashboardError::Operator(OperatorError::NotFound(Resource::Request));
        let id = id
            .and_then(|id| Uuid::parse_str(id).ok())
            .ok_or_else(unknown)?;
        let view = self
            .operator
            .account_request(Some(account_id), id)
            .await?
            .ok_or_else(unknown)?;
        let charge = view
            .ledger_entries
            .iter()
            // A reversal gives a charge back (its settlement's client saw an error).
            .filter(|e| {
                e.ledger_account == "wallet" && matches!(e.kind.as_str(), "charge" | "reversal")
            })
            .map(|e| -e.amount_nano)
            .sum();
        Ok(RequestDetail {
            id: view.id,
            model: view.model,
            api_key_id: view.api_key_id,
            status: view.status,
            protocol: view.inbound_protocol,
            stream: view.stream,
            created_at: view.created_at,
            finished_at: view.finished_at,
            error: view.error_reason,
            cache_hit: view.cache_hit,
            tokens: view.usage.map(|u| Tokens {
                input: u.input_tokens,
                output: u.output_tokens,
                cache_read: u.cache_read_tokens,
                cache_write: u.cache_write_tokens,
                reasoning: u.reasoning_tokens,
            }),
            charge: Money::of(charge),
            attempts: view
                .attempts
                .into_iter()
                .map(|a| AttemptSummary {
                    number: a.attempt_no,
                    route_protocol: a.upstream_protocol,
                    outcome: a.outcome,
                    started_at: a.started_at,
                    duration_ms: a.duration_ms,
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn the_window_is_thirty_utc_days_ending_today() {
        let now = Utc.with_ymd_and_hms(2026, 3, 2, 23, 59, 0).unwrap();
        let days = window(now);
        assert_eq!(days.len(), 30);
        assert_eq!(days[29], NaiveDate::from_ymd_opt(2026, 3, 2).unwrap());
        assert_eq!(days[0], NaiveDate::from_ymd_opt(2026, 2, 1).unwrap());
    }

    #[test]
    fn filters_parse_or_name_their_parameter() {
        let key = Uuid::now_v7();
        let f = parse_filter(Some(&format!(
            "model=demo-chat&key={key}&status=failed&from=2026-01-02&to=2026-01-03&limit=7&x=1"
        )))
        .unwrap();
        assert_eq!(f.model.as_deref(), Some("demo-chat"));
        assert_eq!(f.api_key_id, Some(key));
        assert_eq!(f.status.as_deref(), Some("failed"));
        assert_eq!(
            f.from,
            Some(Utc.with_ymd_and_hms(2026, 1, 2, 0, 0, 0).unwrap())
        );
        assert_eq!(
            f.to,
            Some(Utc.with_ymd_and_hms(2026, 1, 4, 0, 0, 0).unwrap())
        );
        assert_eq!(f.limit, 7);
        assert_eq!(parse_filter(None).unwrap().limit, DEFAULT_LIMIT);
        // A NUL (which PostgreSQL refuses in text) is the client's mistake.
        assert!(parse_filter(Some("model=a%00b")).is_err());
        assert_eq!(
            parse_filter(Some("model=")).unwrap(),
            parse_filter(None).unwrap()
        );
        for (query, param) in [
            ("status=done", "status"),
            ("key=abc", "key"),
            ("from=2026-13-01", "from"),
            ("to=yesterday", "to"),
            ("limit=0", "limit"),
            ("limit=201", "limit"),
            ("limit=+5", "limit"),
            ("limit= 5", "limit"),
            ("status=", "status"),
            ("status=%20failed", "status"),
            ("from=2026-1-02", "from"),
            ("to=", "to"),
            ("key=", "key"),
            ("key=0193a5b2c3d44e5f8a9b0c1d2e3f4a5b", "key"),
        ] {
            match parse_filter(Some(query)) {
                Err(DashboardError::Invalid { param: p, .. }) => assert_eq!(p, param, "{query}"),
                other => panic!("{query}: {other:?}"),
            }
        }
    }
}
