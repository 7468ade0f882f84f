//! An account's A/B experiments (issue 16, F-01..F-06) and the assignments
//! the request history records. The variants are one JSON array, checked
//! by the server before they are stored.

use crate::error::{AdminError, is_foreign_key_violation, is_unique_violation, store_error};
use crate::front::Front;
use diesel::QueryableByName;
use diesel::sql_types::{Array, BigInt, Nullable, Text, Uuid as SqlUuid};
use diesel_async::{AsyncPgConnection, RunQueryDsl};
use router_core::experiments::{Experiment, ExperimentStatus, Variant};
use router_core::store::StoreError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The channel on which a trigger announces every change to an account's
/// experiments (payload: the account ID), for the in-process front.
pub const EXPERIMENT_CHANGED_CHANNEL: &str = "router_experiment_changed";

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

/// The longest an entry of the front is trusted, even while listening: a
/// notification that never arrives is covered by this.
const FRONT_TTL: Duration = Duration::from_secs(30);
const FRONT_MAX_ENTRIES: usize = 100_000;

/// The in-process front of the experiments the inference path reads
/// (`X-CI-Experiment`): an account's slug and what it names, an unknown
/// slug included (`None`). A trigger announces every insert, update and
/// delete of an account's experiments on [`EXPERIMENT_CHANGED_CHANNEL`],
/// which drops the account's entries on every instance; while that
/// channel is not heard the front is empty and bypassed.
#[derive(Debug)]
pub struct ExperimentFront(Front<(Uuid, String), Option<Arc<Experiment>>>);

impl Default for ExperimentFront {
    fn default() -> ExperimentFront {
        ExperimentFront(Front::new(FRONT_MAX_ENTRIES, FRONT_MAX_ENTRIES, false))
    }
}

impl ExperimentFront {
    /// `Some(found)` when the front knows the account's slug.
    pub fn get(&self, account_id: Uuid, slug: &str) -> Option<Option<Arc<Experiment>>> {
        self.0
            .get(&(account_id, slug.to_owned()))
            .map(|(found, _)| found)
    }

    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Keeps what a lookup made at `generation` found.
    pub fn insert(
        &self,
        account_id: Uuid,
        slug: &str,
        found: Option<Arc<Experiment>>,
        generation: u64,
    ) {
        let until = Instant::now() + FRONT_TTL;
        self.0
            .insert((account_id, slug.to_owned()), found, until, 1, generation);
    }

    /// Drops every entry of the account.
    pub fn forget_account(&self, account_id: Uuid) {
        self.0.forget_account(account_id);
    }
}

impl crate::listener::Subscriber for ExperimentFront {
    fn channel(&self) -> &'static str {
        EXPERIMENT_CHANGED_CHANNEL
    }

    fn notified(&self, payload: &str) {
        self.0.account_notified(
            payload,
            "unreadable experiment change; clearing the experiment front",
        );
    }

    fn set_listening(&self, listening: bool) {
        self.0.set_listening(listening);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::listener::Subscriber;

    #[test]
    fn a_change_notification_drops_the_accounts_entries_unknown_slugs_too() {
        let front = ExperimentFront::default();
        let (a, b) = (Uuid::now_v7(), Uuid::now_v7());
        front.insert(a, "x", None, front.generation());
        assert!(front.get(a, "x").is_none(), "off until the listener is up");
        front.set_listening(true);
        front.insert(a, "x", None, front.generation());
        front.insert(b, "x", None, front.generation());
        assert_eq!(
            front.get(a, "x"),
            Some(None),
            "an unknown slug is remembered"
        );
        front.notified(&a.to_string());
        assert_eq!(front.get(a, "x"), None);
        assert_eq!(front.get(b, "x"), Some(None));
        assert_eq!(front.get(b, "y"), None);
    }
}
