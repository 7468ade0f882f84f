//! Hand-written SQL that stays in diesel-async's prepared-statement cache.
//!
//! `diesel::sql_query` marks itself unsafe to cache, and so do diesel's
//! INSERT and UPDATE builders; an uncached statement costs two round trips
//! (prepare, then execute). The hot statements of the request lifecycle are
//! instead small [`QueryFragment`]s over constant SQL with a static
//! [`QueryId`]: prepared once per pooled connection, then one round trip each.
//!
//! Each statement starts with a `p` CTE that names its parameters, so the
//! body reads `p.request_id` rather than `$7`:
//!
//! ```text
//! WITH p AS (SELECT $1 AS request_id, $2 AS charge) <body>
//! ```

use diesel::QueryResult;
use diesel::pg::Pg;
use diesel::query_builder::AstPass;
use diesel::serialize::ToSql;
use diesel::sql_types::HasSqlType;

/// Writes the `WITH p AS (SELECT ...)` head of a statement, one named
/// parameter at a time, then its body.
pub(crate) struct Params<'a, 'b> {
    out: AstPass<'a, 'b, Pg>,
    count: usize,
}

impl<'a, 'b> Params<'a, 'b> {
    pub(crate) fn new(mut out: AstPass<'a, 'b, Pg>) -> Self {
        out.push_sql("WITH p AS (SELECT ");
        Params { out, count: 0 }
    }

    /// Binds `value` as `p.<name>`; `name` must be a constant identifier.
    pub(crate) fn bind<ST, U>(&mut self, name: &'static str, value: &'b U) -> QueryResult<()>
    where
        Pg: HasSqlType<ST>,
        U: ToSql<ST, Pg> + ?Sized,
    {
        if self.count > 0 {
            self.out.push_sql(", ");
        }
        self.out.push_bind_param::<ST, U>(value)?;
        self.out.push_sql(" AS ");
        self.out.push_sql(name);
        self.count += 1;
        Ok(())
    }

    /// Sets the statement's own `lock_timeout` (`p.lock_wait`), local to its
    /// transaction; `None` keeps the connection's. The `p` CTE is evaluated
    /// before any row is locked, so every lock wait of the statement is
    /// bounded by it (`set_config` is volatile: `p` is never inlined away).
    pub(crate) fn lock_wait(&mut self, value: &'b Option<String>) -> QueryResult<()> {
        if self.count > 0 {
            self.out.push_sql(", ");
        }
        self.out.push_sql("set_config('lock_timeout', coalesce(");
        self.out
            .push_bind_param::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(value)?;
        self.out
            .push_sql(", current_setting('lock_timeout')), true) AS lock_wait");
        self.count += 1;
        Ok(())
    }

    /// Closes the `p` CTE and appends the constant statement body, which
    /// either continues the `WITH` list (`, x AS (...) ...`) or is the main
    /// statement.
    pub(crate) fn finish(mut self, body: &'static str) -> QueryResult<()> {
        self.out.push_sql(") ");
        self.out.push_sql(body);
        Ok(())
    }
}

/// Gives a statement type a static [`QueryId`] (its own type), which keys
/// diesel's statement cache: the SQL of each such type is constant.
macro_rules! static_query_id {
    ($($statement:ident),* $(,)?) => {
        $(
            impl diesel::query_builder::QueryId for $statement<'_> {
                type QueryId = $statement<'static>;
                const HAS_STATIC_QUERY_ID: bool = true;
            }
        )*
    };
}
pub(crate) use static_query_id;
