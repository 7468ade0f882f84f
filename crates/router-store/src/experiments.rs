//! An account's A/B experiments (issue 16, F-01..F-06) and the assignments
//! the request history records. The variants are one JSON array, checked
//! by the server before they are stored.

use crate::error::{AdminError, is_foreign_key_violation, is_unique_violation, store_error};
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::experiments::{Experiment, ExperimentStatus, Variant};
use router_core::store::StoreError;
use uuid::Uuid;

#[derive(QueryableByName)]
struct ExperimentRow {
    #[diesel(sql_type = SqlUuid)]
    id: Uuid,
    #[diesel(sql_type = SqlUuid)]
    account_id: Uuid,
    #[diesel(sql_type = Text)]
    slug: String,
    #[diesel(sql_type = Text)]
    status: String,
    #[diesel(sql_type = Text)]
    variants: String,
    #[diesel(sql_type = Nullable<Text>)]
    winner: Option<String>,
}

const COLUMNS: &str = "id, account_id, slug, status, variants::text AS variants, winner";

impl ExperimentRow {
    fn into_experiment(self) -> Result<Experiment, StoreError> {
        let status = ExperimentStatus::parse(&self.status)
            .ok_or_else(|| StoreError::Query(format!("unknown status `{}`", self.status)))?;
        let variants: Vec<Variant> = serde_json::from_str(&self.variants)
            .map_err(|e| StoreError::Query(format!("experiment variants: {e}")))?;
        Ok(Experiment {
            id: self.id,
            account_id: self.account_id,
            slug: self.slug,
            status,
            variants,
            winner: self.winner,
        })
    }
}

/// What a status change found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StatusChange {
    Changed(Experiment),
    NotFound,
    /// The experiment is in a status this change cannot start from.
    Refused(ExperimentStatus),
}

/// Stores a new draft. A slug the account already uses is
/// [`AdminError::Conflict`]; an unknown account [`AdminError::AccountNotFound`].
pub async fn create(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    slug: &str,
    variants: &[Variant],
) -> Result<Experiment, AdminError> {
    let json = serde_json::to_string(variants)
        .map_err(|e| AdminError::Store(StoreError::Query(e.to_string())))?;
    let row: Result<ExperimentRow, _> = diesel::sql_query(format!(
        "INSERT INTO experiments (id, account_id, slug, variants)
         VALUES ($1, $2, $3, $4::jsonb) RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(Uuid::now_v7())
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(slug)
    .bind::<Text, _>(json)
    .get_result(conn)
    .await;
    match row {
        Ok(row) => Ok(row.into_experiment()?),
        Err(e) if is_unique_violation(&e, "experiments_account_slug") => Err(AdminError::Conflict),
        Err(e) if is_foreign_key_violation(&e, "experiments_account_id_fkey") => {
            Err(AdminError::AccountNotFound(account_id))
        }
        Err(e) => Err(AdminError::Store(store_error(e))),
    }
}

/// The account's experiment `slug`; another account's is `None` too.
pub async fn find(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    slug: &str,
) -> Result<Option<Experiment>, StoreError> {
    let rows: Vec<ExperimentRow> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM experiments WHERE account_id = $1 AND slug = $2"
    ))
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(slug)
    .load(conn)
    .await
    .map_err(store_error)?;
    rows.into_iter()
        .next()
        .map(ExperimentRow::into_experiment)
        .transpose()
}

/// The account's experiments, oldest first.
pub async fn list(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
) -> Result<Vec<Experiment>, StoreError> {
    let rows: Vec<ExperimentRow> = diesel::sql_query(format!(
        "SELECT {COLUMNS} FROM experiments WHERE account_id = $1 ORDER BY created_at, id"
    ))
    .bind::<SqlUuid, _>(account_id)
    .load(conn)
    .await
    .map_err(store_error)?;
    rows.into_iter()
        .map(ExperimentRow::into_experiment)
        .collect()
}

/// Moves the experiment to `to` if its current status allows it (checked
/// in the same statement, so two operators cannot both win a race).
pub async fn set_status(
    conn: &mut AsyncPgConnection,
    account_id: Uuid,
    slug: &str,
    to: ExperimentStatus,
    winner: Option<&str>,
) -> Result<StatusChange, StoreError> {
    let sources: Vec<&str> = ExperimentStatus::sources_of(to)
        .into_iter()
        .map(ExperimentStatus::as_str)
        .collect();
    let rows: Vec<ExperimentRow> = diesel::sql_query(format!(
        "UPDATE experiments SET status = $3, winner = $4, updated_at = now()
         WHERE account_id = $1 AND slug = $2 AND status = ANY($5)
         RETURNING {COLUMNS}"
    ))
    .bind::<SqlUuid, _>(account_id)
    .bind::<Text, _>(slug)
    .bind::<Text, _>(to.as_str())
    .bind::<Nullable<Text>, _>(winner)
    .bind::<Array<Text>, _>(sources)
    .load(conn)
    .await
    .map_err(store_error)?;
    if let Some(row) = rows.into_iter().next() {
        return Ok(StatusChange::Changed(row.into_experiment()?));
    }
    Ok(match find(conn, account_id, slug).await? {
        Some(current) => StatusChange::Refused(current.status),
        None => StatusChange::NotFound,
    })
}

#[derive(QueryableByName)]
struct CountRow {
    #[diesel(sql_type = Text)]
    variant: String,
    #[diesel(sql_type = BigInt)]
    requests: i64,
}

/// How many requests each variant was assigned (variants never assigned
/// are absent).
pub async fn assignment_counts(
    conn: &mut AsyncPgConnection,
    experiment_id: Uuid,
) -> Result<Vec<(String, i64)>, StoreError> {
    let rows: Vec<CountRow> = diesel::sql_query(
        "SELECT experiment_variant AS variant, count(*) AS requests
         FROM requests WHERE experiment_id = $1 AND experiment_variant IS NOT NULL
         GROUP BY experiment_variant",
    )
    .bind::<SqlUuid, _>(experiment_id)
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().map(|r| (r.variant, r.requests)).collect())
}

/// Records on a request's history row the experiment and variant it was
/// assigned. A request refused before it was reserved has no row: nothing
/// to record.
pub async fn record_assignment(
    conn: &mut AsyncPgConnection,
    request_id: Uuid,
    experiment_id: Uuid,
    variant: &str,
) -> Result<(), StoreError> {
    diesel::sql_query(
        "UPDATE requests SET experiment_id = $2, experiment_variant = $3 WHERE id = $1",
    )
    .bind::<SqlUuid, _>(request_id)
    .bind::<SqlUuid, _>(experiment_id)
    .bind::<Text, _>(variant)
    .execute(conn)
    .await
    .map_err(store_error)?;
    Ok(())
}
