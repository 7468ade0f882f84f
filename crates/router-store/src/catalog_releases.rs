//! Catalog releases and the pricing change feed (issue 17).
//!
//! A release is a catalog text an instance loaded; recording one compares
//! its per-model prices with the previous release's, in SQL, and appends a
//! change row per model that appeared, changed price or went away. Other
//! instances are told by `NOTIFY catalog_release` and load the release's
//! text themselves. JSON passes through as text: this crate does not look
//! inside entries, it only compares prices (`jsonb` equality).

use crate::error::store_error;
use chrono::{DateTime, Utc};
use diesel::sql_types::{Array, BigInt, Bytea, Nullable, Text, Timestamptz};
use diesel::{OptionalExtension, QueryableByName};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use router_core::store::StoreError;

/// The channel that announces a new release (payload: its number).
pub const CATALOG_RELEASE_CHANNEL: &str = "catalog_release";

/// Serialises release recording across instances ("catalogr").
const RELEASE_LOCK: i64 = 0x6361_7461_6c6f_6772;

/// One visible model of a catalog: its entry and price object, as JSON text.
#[derive(Debug, Clone)]
pub struct ModelSnapshot {
    pub model_id: String,
    pub entry: String,
    pub pricing: String,
}

/// The outcome of recording a catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recorded {
    pub release: i64,
    pub observed_at: DateTime<Utc>,
    /// Change rows this release appended (0 when the text was unchanged).
    pub changed: i64,
    /// False when the text equals the latest release's: that release stands.
    pub created: bool,
}

#[derive(QueryableByName)]
struct ChangedModel {
    #[diesel(sql_type = Text)]
    model_id: String,
}

#[derive(Debug, Clone, QueryableByName)]
pub struct StoredRelease {
    #[diesel(sql_type = BigInt)]
    pub release: i64,
    #[diesel(sql_type = Timestamptz)]
    pub observed_at: DateTime<Utc>,
    #[diesel(sql_type = Text)]
    pub path: String,
    #[diesel(sql_type = Text)]
    pub source: String,
    #[diesel(sql_type = Text)]
    pub digest: String,
}

/// The latest change of one model, as of some release.
#[derive(Debug, Clone, QueryableByName, PartialEq, Eq)]
pub struct ChangeRow {
    #[diesel(sql_type = BigInt)]
    pub position: i64,
    #[diesel(sql_type = Text)]
    pub model_id: String,
    #[diesel(sql_type = Text)]
    pub kind: String,
    #[diesel(sql_type = Timestamptz)]
    pub changed_at: DateTime<Utc>,
    #[diesel(sql_type = Nullable<Text>)]
    pub model: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub previous: Option<String>,
    #[diesel(sql_type = Nullable<Text>)]
    pub current: Option<String>,
}

#[derive(QueryableByName)]
struct Number {
    #[diesel(sql_type = BigInt)]
    n: i64,
}

#[derive(QueryableByName)]
struct ModelTime {
    #[diesel(sql_type = Text)]
    model_id: String,
    #[diesel(sql_type = Timestamptz)]
    at: DateTime<Utc>,
}

const RELEASE_COLUMNS: &str = "release, observed_at, path, source, digest";

/// Record `source` as a release unless it equals the latest one, append
/// its price changes, and announce it. One transaction: a release and its
/// changes appear together or not at all.
pub async fn record(
    conn: &mut AsyncPgConnection,
    path: &str,
    source: &str,
    digest: &str,
    models: &[ModelSnapshot],
) -> Result<Recorded, StoreError> {
    let ids: Vec<&str> = models.iter().map(|m| m.model_id.as_str()).collect();
    let entries: Vec<&str> = models.iter().map(|m| m.entry.as_str()).collect();
    let prices: Vec<&str> = models.iter().map(|m| m.pricing.as_str()).collect();
    conn.transaction(async |conn| {
        diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
            .bind::<BigInt, _>(RELEASE_LOCK)
            .execute(conn)
            .await?;
        let latest: Option<StoredRelease> = diesel::sql_query(format!(
            "SELECT {RELEASE_COLUMNS} FROM catalog_releases ORDER BY release DESC LIMIT 1"
        ))
        .get_result(conn)
        .await
        .optional()?;
        if let Some(latest) = &latest
            && latest.digest == digest
        {
            return Ok(Recorded {
                release: latest.release,
                observed_at: latest.observed_at,
                changed: 0,
                created: false,
            });
        }
        let release = latest.as_ref().map_or(1, |l| l.release + 1);
        let stored: StoredRelease = diesel::sql_query(format!(
            "INSERT INTO catalog_releases (release, path, source, digest) VALUES ($1, $2, $3, $4) \
             RETURNING {RELEASE_COLUMNS}"
        ))
        .bind::<BigInt, _>(release)
        .bind::<Text, _>(path)
        .bind::<Text, _>(source)
        .bind::<Text, _>(digest)
        .get_result(conn)
        .await?;
        diesel::sql_query(
            "INSERT INTO catalog_release_models (release, model_id, entry, pricing) \
             SELECT $1, m.id, m.entry::jsonb, m.pricing::jsonb \
             FROM unnest($2::text[], $3::text[], $4::text[]) AS m(id, entry, pricing)",
        )
        .bind::<BigInt, _>(release)
        .bind::<Array<Text>, _>(&ids)
        .bind::<Array<Text>, _>(&entries)
        .bind::<Array<Text>, _>(&prices)
        .execute(conn)
        .await?;
        // New or repriced models (previous NULL for a first observation),
        // then models gone from the release, in model order.
        let changed = diesel::sql_query(
            "INSERT INTO catalog_price_changes \
               (release, model_id, kind, changed_at, model, previous, current) \
             SELECT $1, c.model_id, c.kind, $2, c.model, c.previous, c.current FROM ( \
               SELECT n.model_id, 'updated' AS kind, n.entry AS model, o.pricing AS previous, \
                      n.pricing AS current \
               FROM catalog_release_models n \
               LEFT JOIN catalog_release_models o ON o.release = $3 AND o.model_id = n.model_id \
               WHERE n.release = $1 AND (o.model_id IS NULL OR o.pricing <> n.pricing) \
               UNION ALL \
               SELECT o.model_id, 'removed', NULL, o.pricing, NULL \
               FROM catalog_release_models o \
               WHERE o.release = $3 AND NOT EXISTS ( \
                 SELECT 1 FROM catalog_release_models n \
                 WHERE n.release = $1 AND n.model_id = o.model_id) \
             ) c ORDER BY c.model_id",
        )
        .bind::<BigInt, _>(release)
        .bind::<Timestamptz, _>(stored.observed_at)
        .bind::<BigInt, _>(release - 1)
        .execute(conn)
        .await?;
        // A release that changes prices for a catalog already published
        // tells every channel that selected `model_price_changed`, once per
        // release, in this transaction (a first release is the baseline).
        if changed > 0 && latest.is_some() {
            let models: Vec<String> = diesel::sql_query(
                "SELECT model_id FROM catalog_price_changes WHERE release = $1 ORDER BY model_id",
            )
            .bind::<BigInt, _>(release)
            .load::<ChangedModel>(conn)
            .await?
            .into_iter()
            .map(|m| m.model_id)
            .collect();
            let payload = serde_json::json!({"release": release, "models": models}).to_string();
            crate::channels::enqueue_broadcast(
                conn,
                "model_price_changed",
                &release.to_string(),
                &payload,
            )
            .await
            .map_err(|e| diesel::result::Error::QueryBuilderError(e.to_string().into()))?;
        }
        diesel::sql_query("SELECT pg_notify($1, $2)")
            .bind::<Text, _>(CATALOG_RELEASE_CHANNEL)
            .bind::<Text, _>(release.to_string())
            .execute(conn)
            .await?;
        Ok(Recorded {
            release,
            observed_at: stored.observed_at,
            changed: changed as i64,
            created: true,
        })
    })
    .await
    .map_err(store_error)
}

/// One release by number.
pub async fn release(
    conn: &mut AsyncPgConnection,
    release: i64,
) -> Result<Option<StoredRelease>, StoreError> {
    diesel::sql_query(format!(
        "SELECT {RELEASE_COLUMNS} FROM catalog_releases WHERE release = $1"
    ))
    .bind::<BigInt, _>(release)
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)
}

/// The newest release.
pub async fn latest(conn: &mut AsyncPgConnection) -> Result<Option<StoredRelease>, StoreError> {
    diesel::sql_query(format!(
        "SELECT {RELEASE_COLUMNS} FROM catalog_releases ORDER BY release DESC LIMIT 1"
    ))
    .get_result(conn)
    .await
    .optional()
    .map_err(store_error)
}

/// Per model, when its price last changed as of `release` (first
/// observations are not price changes).
pub async fn price_changed_at(
    conn: &mut AsyncPgConnection,
    release: i64,
) -> Result<Vec<(String, DateTime<Utc>)>, StoreError> {
    let rows: Vec<ModelTime> = diesel::sql_query(
        "SELECT model_id, max(changed_at) AS at FROM catalog_price_changes \
         WHERE release <= $1 AND kind = 'updated' AND previous IS NOT NULL GROUP BY model_id",
    )
    .bind::<BigInt, _>(release)
    .load(conn)
    .await
    .map_err(store_error)?;
    Ok(rows.into_iter().map(|r| (r.model_id, r.at)).collect())
}

/// The latest change of every model as of `release`, changed at or after
/// `since`, ascending by (changed_at, position).
pub async fn latest_changes(
    conn: &mut AsyncPgConnection,
    release: i64,
    since: DateTime<Utc>,
) -> Result<Vec<ChangeRow>, StoreError> {
    diesel::sql_query(
        "SELECT position, model_id, kind, changed_at, model::text AS model, \
                previous::text AS previous, current::text AS current \
         FROM (SELECT DISTINCT ON (model_id) * FROM catalog_price_changes \
               WHERE release <= $1 ORDER BY model_id, position DESC) latest \
         WHERE changed_at >= $2 ORDER BY changed_at, position",
    )
    .bind::<BigInt, _>(release)
    .bind::<Timestamptz, _>(since)
    .load(conn)
    .await
    .map_err(store_error)
}

/// The secret that signs pricing cursors, storing `candidate` first if
/// there is none (race-free, as `thinking_seal_keys::load_or_insert`).
pub async fn cursor_key(
    conn: &mut AsyncPgConnection,
    candidate: &[u8],
) -> Result<Vec<u8>, StoreError> {
    #[derive(QueryableByName)]
    struct Secret {
        #[diesel(sql_type = Bytea)]
        secret: Vec<u8>,
    }
    diesel::sql_query(
        "INSERT INTO catalog_cursor_keys (id, secret) VALUES (1, $1) ON CONFLICT (id) DO NOTHING",
    )
    .bind::<Bytea, _>(candidate)
    .execute(conn)
    .await
    .map_err(store_error)?;
    let row: Secret = diesel::sql_query("SELECT secret FROM catalog_cursor_keys WHERE id = 1")
        .get_result(conn)
        .await
        .map_err(store_error)?;
    Ok(row.secret)
}

/// The highest release number, or 0 (tests, readiness).
pub async fn latest_number(conn: &mut AsyncPgConnection) -> Result<i64, StoreError> {
    let row: Number =
        diesel::sql_query("SELECT COALESCE(max(release), 0) AS n FROM catalog_releases")
            .get_result(conn)
            .await
            .map_err(store_error)?;
    Ok(row.n)
}

/// Sends the number of every release announced from now on, and on every
/// (re)connection the latest number (so a notification missed while the
/// connection was down is caught up). Runs until the receiver is dropped.
pub fn follow(url: std::sync::Arc<str>) -> tokio::sync::mpsc::Receiver<i64> {
    let (tx, rx) = tokio::sync::mpsc::channel(16);
    tokio::spawn(async move {
        let mut reconnect = crate::backoff::Reconnect::new("catalog release listener");
        loop {
            match relay(&url, &tx, &mut reconnect).await {
                Ok(()) => return,
                Err(error) => tokio::time::sleep(reconnect.failed(&error)).await,
            }
        }
    });
    rx
}

/// `Ok` when the receiver is gone; `Err` when the connection failed.
async fn relay(
    url: &str,
    tx: &tokio::sync::mpsc::Sender<i64>,
    reconnect: &mut crate::backoff::Reconnect,
) -> Result<(), StoreError> {
    use futures::StreamExt;
    let mut conn = AsyncPgConnection::establish(url)
        .await
        .map_err(|error| StoreError::Unavailable(error.to_string()))?;
    diesel::sql_query(format!("LISTEN {CATALOG_RELEASE_CHANNEL}"))
        .execute(&mut conn)
        .await
        .map_err(store_error)?;
    let latest = latest_number(&mut conn).await?;
    reconnect.connected();
    if tx.send(latest).await.is_err() {
        return Ok(());
    }
    loop {
        let next = {
            let mut notifications = std::pin::pin!(conn.notifications_stream());
            tokio::time::timeout(HEARTBEAT, notifications.next()).await
        };
        match next {
            Ok(Some(Ok(notification))) => match notification.payload.parse::<i64>() {
                Ok(release) => {
                    if tx.send(release).await.is_err() {
                        return Ok(());
                    }
                }
                Err(_) => {
                    tracing::warn!(payload = %notification.payload, "unreadable catalog release");
                }
            },
            Ok(Some(Err(error))) => return Err(store_error(error)),
            Ok(None) => return Err(StoreError::Unavailable("notification stream ended".into())),
            // Quiet: make sure the connection is alive (a dead one would
            // otherwise wait forever), and that no receiver has gone.
            Err(_quiet) => {
                if tx.is_closed() {
                    return Ok(());
                }
                latest_number(&mut conn).await?;
            }
        }
    }
}

/// How long the release listener waits quietly before checking its connection.
const HEARTBEAT: std::time::Duration = std::time::Duration::from_secs(30);
