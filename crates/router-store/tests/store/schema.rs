//! `src/schema.rs` is written by hand: its column lists must match the
//! migrated database's catalog, in order.

use diesel::pg::Pg;
use diesel::sql_types::Text;
use diesel::{QueryDsl, QueryableByName};
use diesel_async::RunQueryDsl;
use router_store::schema::*;
use router_store::test_support::TestDatabase;

#[derive(QueryableByName)]
struct Column {
    #[diesel(sql_type = Text)]
    column_name: String,
}

/// The column names of `SELECT table.all_columns` as diesel writes it.
fn diesel_columns(sql: String) -> Vec<String> {
    let list = sql
        .strip_prefix("SELECT ")
        .and_then(|rest| rest.split(" FROM ").next())
        .unwrap_or_else(|| panic!("unexpected SQL: {sql}"));
    list.split(", ")
        .map(|column| {
            column
                .rsplit('.')
                .next()
                .unwrap()
                .trim_matches('"')
                .to_owned()
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread")]
async fn the_diesel_schema_matches_the_migrations() {
    let db = TestDatabase::new().await;
    let mut conn = db.connection().await.unwrap();
    macro_rules! sql_of {
        ($table:ident) => {
            (
                stringify!($table),
                diesel::debug_query::<Pg, _>(&$table::table.select($table::all_columns))
                    .to_string(),
            )
        };
    }
    let tables = [
        sql_of!(accounts),
        sql_of!(wallets),
        sql_of!(api_keys),
        sql_of!(requests),
        sql_of!(holds),
        sql_of!(ledger_entries),
        sql_of!(attempts),
        sql_of!(thinking_seal_keys),
        sql_of!(data_protection_changes),
        sql_of!(uploads),
    ];
    for (table, sql) in tables {
        let in_database: Vec<String> = diesel::sql_query(
            "SELECT column_name::text AS column_name FROM information_schema.columns
             WHERE table_schema = 'public' AND table_name = $1 ORDER BY ordinal_position",
        )
        .bind::<Text, _>(table)
        .load::<Column>(&mut conn)
        .await
        .unwrap()
        .into_iter()
        .map(|column| column.column_name)
        .collect();
        assert_eq!(diesel_columns(sql), in_database, "columns of {table}");
    }
}
