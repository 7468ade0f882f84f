//! Instants between core (`SystemTime`), diesel (`chrono::DateTime<Utc>`,
//! `timestamptz`) and the admin views (RFC 3339 strings).

use chrono::{DateTime, SecondsFormat, Utc};
use std::time::SystemTime;

pub(crate) fn to_db(instant: SystemTime) -> DateTime<Utc> {
    DateTime::<Utc>::from(instant)
}

/// RFC 3339 in UTC with microseconds (PostgreSQL's precision), e.g.
/// `2026-01-02T03:04:05.678901Z`.
pub(crate) fn rfc3339(instant: DateTime<Utc>) -> String {
    instant.to_rfc3339_opts(SecondsFormat::Micros, true)
}
