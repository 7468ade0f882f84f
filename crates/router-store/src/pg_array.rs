//! Array parameters written in one piece.
//!
//! The batch statements of the request lifecycle bind one array per column
//! (about 25 for a reservation and its settlement). diesel's array encoder
//! writes the array's header and each element in small pieces into a buffer
//! that starts empty, so every array reallocated it several times: 13 % of
//! the router's instructions per request went there. [`PgArray`] encodes
//! the same binary format into a buffer sized up front and hands it over in
//! one write.
//!
//! The element encodings are PostgreSQL's binary send formats, the ones
//! diesel writes for the same types (`int8send`, `int4send`, `boolsend`,
//! `uuid_send`, `textsend`, `timestamptz_send`).

use chrono::{DateTime, Utc};
use diesel::pg::Pg;
use diesel::serialize::{IsNull, Output, ToSql};
use diesel::sql_types::{Array, BigInt, Bool, HasSqlType, Integer, Nullable, Text, Timestamptz};
use std::io::Write as _;
use uuid::Uuid;

/// A `Vec<T>` bound as a one-dimensional PostgreSQL array of `ST`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct PgArray<T>(pub(crate) Vec<T>);

impl<T> FromIterator<T> for PgArray<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        PgArray(iter.into_iter().collect())
    }
}

impl<T> std::ops::Deref for PgArray<T> {
    type Target = Vec<T>;

    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> std::ops::DerefMut for PgArray<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

/// One element's binary send format, for an array of `ST`.
pub(crate) trait ArrayElement<ST> {
    /// The usual encoded size, to size the array's buffer.
    const WIDTH: usize;

    /// Appends the element's bytes; `false` for SQL NULL (nothing appended).
    fn encode(&self, out: &mut Vec<u8>) -> bool;
}

impl ArrayElement<BigInt> for i64 {
    const WIDTH: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&self.to_be_bytes());
        true
    }
}

impl ArrayElement<Integer> for i32 {
    const WIDTH: usize = 4;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(&self.to_be_bytes());
        true
    }
}

impl ArrayElement<Bool> for bool {
    const WIDTH: usize = 1;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.push(u8::from(*self));
        true
    }
}

impl ArrayElement<diesel::sql_types::Uuid> for Uuid {
    const WIDTH: usize = 16;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.as_bytes());
        true
    }
}

impl ArrayElement<Text> for String {
    const WIDTH: usize = 16;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.as_bytes());
        true
    }
}

impl ArrayElement<Text> for &str {
    const WIDTH: usize = 16;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(self.as_bytes());
        true
    }
}

/// Microseconds from the Unix epoch to PostgreSQL's (2000-01-01 UTC).
const PG_EPOCH_MICROS: i64 = 946_684_800_000_000;

impl ArrayElement<Timestamptz> for DateTime<Utc> {
    const WIDTH: usize = 8;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        // Any instant chrono holds is microseconds within i64 (±292,000 years).
        let micros = self.timestamp_micros() - PG_EPOCH_MICROS;
        out.extend_from_slice(&micros.to_be_bytes());
        true
    }
}

impl<ST, T: ArrayElement<ST>> ArrayElement<Nullable<ST>> for Option<T> {
    const WIDTH: usize = T::WIDTH;
    fn encode(&self, out: &mut Vec<u8>) -> bool {
        match self {
            Some(value) => value.encode(out),
            None => false,
        }
    }
}

impl<ST, T> ToSql<Array<ST>, Pg> for PgArray<T>
where
    Pg: HasSqlType<ST>,
    T: ArrayElement<ST> + std::fmt::Debug,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> diesel::serialize::Result {
        let element_oid = <Pg as HasSqlType<ST>>::metadata(out.metadata_lookup()).oid()?;
        let count = i32::try_from(self.0.len())?;
        let mut bytes = Vec::with_capacity(20 + self.0.len() * (4 + T::WIDTH));
        // Dimensions, has-nulls flag (ignored on input), element type,
        // then the one dimension's length and lower bound.
        bytes.extend_from_slice(&1i32.to_be_bytes());
        bytes.extend_from_slice(&0i32.to_be_bytes());
        bytes.extend_from_slice(&element_oid.to_be_bytes());
        bytes.extend_from_slice(&count.to_be_bytes());
        bytes.extend_from_slice(&1i32.to_be_bytes());
        for element in &self.0 {
            let at = bytes.len();
            bytes.extend_from_slice(&[0; 4]);
            let length = if element.encode(&mut bytes) {
                i32::try_from(bytes.len() - at - 4)?
            } else {
                -1
            };
            bytes[at..at + 4].copy_from_slice(&length.to_be_bytes());
        }
        out.write_all(&bytes)?;
        Ok(IsNull::No)
    }
}

impl<ST, T> ToSql<Nullable<Array<ST>>, Pg> for PgArray<T>
where
    PgArray<T>: ToSql<Array<ST>, Pg>,
    ST: 'static,
{
    fn to_sql<'b>(&'b self, out: &mut Output<'b, '_, Pg>) -> diesel::serialize::Result {
        ToSql::<Array<ST>, Pg>::to_sql(self, out)
    }
}

#[cfg(all(test, feature = "test-support"))]
mod tests {
    use super::*;
    use crate::prepared::{Params, static_query_id};
    use crate::test_support::TestDatabase;
    use chrono::TimeZone;
    use diesel::QueryResult;
    use diesel::query_builder::{AstPass, Query, QueryFragment};
    use diesel_async::RunQueryDsl;

    /// Every element type, bound and read back by PostgreSQL.
    struct Echo<'a> {
        ints: PgArray<i64>,
        small: PgArray<i32>,
        flags: PgArray<bool>,
        ids: PgArray<Uuid>,
        texts: PgArray<&'a str>,
        owned: PgArray<String>,
        maybe_texts: PgArray<Option<&'a str>>,
        maybe_ids: PgArray<Option<Uuid>>,
        times: PgArray<DateTime<Utc>>,
    }

    impl Query for Echo<'_> {
        type SqlType = (
            Array<BigInt>,
            Array<Integer>,
            Array<Bool>,
            Array<diesel::sql_types::Uuid>,
            Array<Text>,
            Array<Text>,
            Array<Nullable<Text>>,
            Array<Nullable<diesel::sql_types::Uuid>>,
            Array<Timestamptz>,
        );
    }

    impl QueryFragment<Pg> for Echo<'_> {
        fn walk_ast<'b>(&'b self, out: AstPass<'_, 'b, Pg>) -> QueryResult<()> {
            let mut p = Params::new(out);
            p.bind::<Array<BigInt>, _>("ints", &self.ints)?;
            p.bind::<Array<Integer>, _>("small", &self.small)?;
            p.bind::<Array<Bool>, _>("flags", &self.flags)?;
            p.bind::<Array<diesel::sql_types::Uuid>, _>("ids", &self.ids)?;
            p.bind::<Array<Text>, _>("texts", &self.texts)?;
            p.bind::<Array<Text>, _>("owned", &self.owned)?;
            p.bind::<Array<Nullable<Text>>, _>("maybe_texts", &self.maybe_texts)?;
            p.bind::<Array<Nullable<diesel::sql_types::Uuid>>, _>("maybe_ids", &self.maybe_ids)?;
            p.bind::<Array<Timestamptz>, _>("times", &self.times)?;
            p.finish(
                "SELECT p.ints, p.small, p.flags, p.ids, p.texts, p.owned, p.maybe_texts,
                        p.maybe_ids, p.times FROM p",
            )
        }
    }

    static_query_id!(Echo);

    type Echoed = (
        Vec<i64>,
        Vec<i32>,
        Vec<bool>,
        Vec<Uuid>,
        Vec<String>,
        Vec<String>,
        Vec<Option<String>>,
        Vec<Option<Uuid>>,
        Vec<DateTime<Utc>>,
    );

    #[tokio::test]
    async fn every_element_type_reaches_postgres_as_diesel_would_send_it() {
        let db = TestDatabase::new().await;
        let mut conn = db.database().connection().await.unwrap();
        let id = Uuid::new_v4();
        let times = vec![
            Utc.with_ymd_and_hms(2026, 11, 29, 16, 5, 7).unwrap()
                + chrono::Duration::microseconds(123_456),
            Utc.with_ymd_and_hms(1999, 12, 31, 23, 59, 59).unwrap(),
            Utc.with_ymd_and_hms(2000, 1, 1, 0, 0, 0).unwrap(),
        ];
        let echo = Echo {
            ints: PgArray(vec![0, -1, i64::MAX, i64::MIN, 42]),
            small: PgArray(vec![i32::MIN, 7]),
            flags: PgArray(vec![true, false]),
            ids: PgArray(vec![id, Uuid::nil()]),
            texts: PgArray(vec!["", "héllo", "a,b\"c"]),
            owned: PgArray(vec!["owned".to_owned()]),
            maybe_texts: PgArray(vec![None, Some("x"), None]),
            maybe_ids: PgArray(vec![Some(id), None]),
            times: PgArray(times.clone()),
        };
        let back: Echoed = echo.get_result(&mut conn).await.unwrap();
        assert_eq!(back.0, vec![0, -1, i64::MAX, i64::MIN, 42]);
        assert_eq!(back.1, vec![i32::MIN, 7]);
        assert_eq!(back.2, vec![true, false]);
        assert_eq!(back.3, vec![id, Uuid::nil()]);
        assert_eq!(back.4, vec!["", "héllo", "a,b\"c"]);
        assert_eq!(back.5, vec!["owned"]);
        assert_eq!(back.6, vec![None, Some("x".to_owned()), None]);
        assert_eq!(back.7, vec![Some(id), None]);
        assert_eq!(back.8, times);

        // An empty batch is an empty array, not NULL.
        let empty = Echo {
            ints: PgArray(vec![]),
            small: PgArray(vec![]),
            flags: PgArray(vec![]),
            ids: PgArray(vec![]),
            texts: PgArray(vec![]),
            owned: PgArray(vec![]),
            maybe_texts: PgArray(vec![]),
            maybe_ids: PgArray(vec![]),
            times: PgArray(vec![]),
        };
        let back: Echoed = empty.get_result(&mut conn).await.unwrap();
        assert!(back.0.is_empty() && back.4.is_empty() && back.8.is_empty());
    }
}
