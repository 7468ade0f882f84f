//! The edge: a connection pool, and core's ports (`Store`, the pipeline's
//! `ExperimentStore`, `AffinityStore` and `ResponseCacheStore`) on top of
//! the query functions. Each method checks one connection out for one
//! operation.

use crate::accounts::{self, AccountRow, AccountView};
use crate::affinity::{self, AffinityFront};
use crate::api_keys::{self, ApiKeyChange, ApiKeyView, NewApiKey};
use crate::audit::{self, Reconciliation};
use crate::billing;
use crate::data_protection;
use crate::error::{AdminError, pool_error, store_error};
use crate::experiments::{self, ExperimentFront};
use crate::group_commit::{BatchSlots, GroupCommit};
use crate::history::{self, RequestView};
use crate::jobs;
use crate::key_cache::KeyCache;
use crate::lease_book::LeaseBook;
use crate::leases::LeasedSettlement;
use crate::listener;
use crate::migrations;
use crate::response_cache::{self, ResponseFront};
use crate::sessions::{self, MagicLinkIssue, NewSession, SessionRecord};
use crate::thinking_seal_keys;
use diesel::IntoSql;
use diesel::sql_types::Integer;
use diesel::{ConnectionError, ConnectionResult};
use diesel_async::pooled_connection::deadpool::{Object, Pool};
use diesel_async::pooled_connection::{
    AsyncDieselConnectionManager, ManagerConfig, RecyclingMethod,
};
use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl, SimpleAsyncConnection};
use router_canonical::NanoUsd;
use router_canonical::Response;
use router_core::KeyPolicy;
use router_core::store::{
    AffinityHint, AffinityStore, ApiKeyRecord, AttemptRecord, CacheHit, ExperimentStore,
    NewRequest, ReserveError, ResponseCacheStore, Scope, SettleError, Settlement, Store,
    StoreError, Voiding,
};
use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// How long a caller waits for a free pooled connection, and for a new one
/// to be established, before the database counts as unavailable.
const POOL_TIMEOUT: Duration = Duration::from_secs(5);

/// A pooled connection, for callers composing query functions (e.g. inside
/// one transaction).
pub type PooledConnection = Object<AsyncPgConnection>;

/// PostgreSQL storage. Cheap to clone: clones share one pool.
#[derive(Clone)]
pub struct Database {
    pool: Pool<AsyncPgConnection>,
    /// Off until [`Database::listen_for_changes`] turns it on.
    keys: Arc<KeyCache>,
    /// The response cache's front; off until the listener turns it on.
    responses: Arc<ResponseFront>,
    /// The experiments' front; off until the listener turns it on.
    experiments: Arc<ExperimentFront>,
    /// The affinity map's front, bounded by time (see [`affinity::FRONT_TTL`]).
    affinity: Arc<AffinityFront>,
    /// Reservations and settlements, gathered into batches (group commit).
    reservations: Arc<GroupCommit<NewRequest, Result<bool, StoreError>>>,
    /// A settlement's output is its charge, `None` when it was no longer held.
    settlements: Arc<GroupCommit<Settlement, Result<Option<NanoUsd>, StoreError>>>,
    /// Limited admissions of one key, one at a time in this process.
    key_turns: Arc<crate::key_turns::KeyTurns>,
    /// Credit leases, once [`Database::enable_credit_leases`] turned them on.
    pub(crate) leases: Arc<std::sync::OnceLock<Arc<LeaseBook>>>,
    /// Settlements of requests admitted from a lease, gathered like the others.
    pub(crate) leased_settlements:
        Arc<GroupCommit<LeasedSettlement, Result<Option<NanoUsd>, StoreError>>>,
    /// Kept for migrations, which run on a dedicated connection. May carry a
    /// password: never logged (see the `Debug` impl).
    url: Arc<str>,
}

impl fmt::Debug for Database {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let status = self.pool.status();
        f.debug_struct("Database")
            .field("max_size", &status.max_size)
            .field("size", &status.size)
            .field("available", &status.available)
            .finish_non_exhaustive()
    }
}

impl Database {
    /// Builds a pool of at most `max_size` connections to `url`
    /// (`postgres://user:password@host:port/database`) and checks that one
    /// connection can be made, so a wrong URL fails at startup.
    ///
    /// Pooled connections are recycled without a test query
    /// ([`RecyclingMethod::Fast`]): checking one out costs no round trip. A
    /// connection the server closed is still noticed (tokio-postgres marks it
    /// closed); one that died silently fails its next query, which reports
    /// [`StoreError::Unavailable`].
    ///
    /// A checkout takes the connection returned last (LIFO): a steady load
    /// keeps reusing the few server processes it needs, whose caches are
    /// warm, instead of rotating through every connection a burst opened.
    /// Rotating (FIFO) cost PostgreSQL about 0.72 ms of CPU per request at
    /// 1,000 requests/s, against 0.57 ms.
    pub async fn connect(url: &str, max_size: usize) -> Result<Database, StoreError> {
        let mut config = ManagerConfig::default();
        config.recycling_method = RecyclingMethod::Fast;
        config.custom_setup = Box::new(|url| Box::pin(establish_with_point_lookup_plans(url)));
        let manager =
            AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url, config);
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(POOL_TIMEOUT))
            .create_timeout(Some(POOL_TIMEOUT))
            .recycle_timeout(Some(POOL_TIMEOUT))
            .build()
            .map_err(|error| StoreError::Unavailable(error.to_string()))?;
        // Both kinds write the wallet rows: one set of slots for the two.
        let wallet_writes = BatchSlots::new(BATCHES_IN_FLIGHT);
        let database = Database {
            reservations: Arc::new(group_commit(&pool, &wallet_writes, billing::reserve_batch)),
            settlements: Arc::new(group_commit(
                &pool,
                &wallet_writes,
                crate::crash_points::settle_batch,
            )),
            leased_settlements: Arc::new(group_commit(
                &pool,
                &wallet_writes,
                crate::crash_points::settle_leased_batch,
            )),
            leases: Arc::default(),
            pool,
            keys: Arc::default(),
            responses: Arc::default(),
            experiments: Arc::default(),
            affinity: Arc::default(),
            key_turns: Arc::default(),
            url: url.into(),
        };
        database.ping().await?;
        Ok(database)
    }

    /// Applies pending embedded migrations (see
    /// [`migrations::run_pending_migrations`]); returns the versions applied.
    pub async fn migrate(&self) -> Result<Vec<String>, StoreError> {
        migrations::run_pending_migrations(&self.url).await
    }

    /// Which migrations are applied, pending, or unknown to this binary
    /// (read only; see [`migrations::status`]).
    pub async fn migration_status(&self) -> Result<migrations::MigrationStatus, StoreError> {
        let mut conn = self.connection().await?;
        migrations::status(&mut conn).await
    }

    /// Turns the in-process caches kept honest by NOTIFY on: a dedicated
    /// connection LISTENs for API-key changes, response-cache clearings and
    /// experiment changes from every instance (see [`crate::listener`]).
    /// Without it, every such lookup goes to the database.
    pub async fn listen_for_changes(&self) -> Result<(), StoreError> {
        let subscribers: Vec<Arc<dyn listener::Subscriber>> = vec![
            self.keys.clone(),
            self.responses.clone(),
            self.experiments.clone(),
        ];
        listener::start(self.url.clone(), subscribers).await
    }

    /// The database's URL, for the dedicated connections of listeners.
    pub(crate) fn url(&self) -> Arc<str> {
        self.url.clone()
    }

    /// Catalog release numbers as they are announced (see
    /// [`crate::catalog_releases::follow`]).
    pub fn follow_catalog_releases(&self) -> tokio::sync::mpsc::Receiver<i64> {
        crate::catalog_releases::follow(self.url.clone())
    }

    /// Whether key lookups are being served from the cache right now.
    pub fn key_cache_is_on(&self) -> bool {
        self.keys.is_listening()
    }

    /// Whether cached answers are being served from the front right now.
    pub fn response_front_is_on(&self) -> bool {
        self.responses.is_listening()
    }

    /// One round trip to the database, for `/readyz`.
    pub async fn ping(&self) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        diesel::select(1_i32.into_sql::<Integer>())
            .get_result::<i32>(&mut conn)
            .await
            .map(|_| ())
            .map_err(store_error)
    }

    /// A connection from the pool, for composing the query functions of this
    /// crate (they all take `&mut AsyncPgConnection`).
    pub async fn connection(&self) -> Result<PooledConnection, StoreError> {
        // Only a checkout that had to wait is timed: the common one finds a
        // connection at once and costs the hot path nothing more.
        if self.pool.status().available > 0 {
            return self.pool.get().await.map_err(pool_checkout_failed);
        }
        let started = std::time::Instant::now();
        let checkout = self.pool.get().await;
        metrics::histogram!("router_db_pool_wait_seconds").record(started.elapsed().as_secs_f64());
        checkout.map_err(pool_checkout_failed)
    }

    /// Holds outstanding across every instance (`/metrics`).
    pub async fn outstanding_holds(&self) -> Result<crate::gauges::OutstandingHolds, StoreError> {
        let mut conn = self.connection().await?;
        crate::gauges::outstanding_holds(&mut conn).await
    }

    /// Nano-USD of credit granted so far, by every path (`/metrics`).
    pub async fn credits_granted(&self) -> Result<i64, StoreError> {
        let mut conn = self.connection().await?;
        crate::gauges::credits_granted(&mut conn).await
    }

    /// Every background job's last pass (`/metrics`).
    pub async fn job_passes(&self) -> Result<Vec<crate::gauges::JobPass>, StoreError> {
        let mut conn = self.connection().await?;
        crate::gauges::job_passes(&mut conn).await
    }

    /// The pool now: (open, in use, futures waiting for a connection, the
    /// most it opens).
    pub fn pool_status(&self) -> (usize, usize, usize, usize) {
        let status = self.pool.status();
        (
            status.size,
            status.size.saturating_sub(status.available),
            status.waiting,
            status.max_size,
        )
    }

    /// Closes the pooled connections unused for `max_idle` or longer and
    /// returns how many. Checkouts take the connection returned last, so the
    /// ones a burst opened sink to the bottom of the pool and stay unused;
    /// this gives their server processes back (and drops connections that
    /// may have died silently while idle).
    pub fn close_idle_connections(&self, max_idle: Duration) -> usize {
        self.pool
            .retain(|_, metrics| metrics.last_used() < max_idle)
            .removed
            .len()
    }

    /// The pool's connections: (open, in use by a query or transaction).
    pub fn pool_connections(&self) -> (usize, usize) {
        let status = self.pool.status();
        (status.size, status.size.saturating_sub(status.available))
    }

    /// Releases holds that expired before `now` and fails their requests
    /// with reason [`billing::REAPED`], batch by batch; returns how many.
    /// Safe to run from every instance at once.
    pub async fn reap_expired_holds(&self, now: SystemTime) -> Result<u64, StoreError> {
        let mut conn = self.connection().await?;
        let mut total = 0;
        // Leases whose holder stopped renewing them (issue 34): released
        // whole, like an orphaned hold (counted with the holds).
        loop {
            let released = crate::leases::reap_expired(&mut conn, now).await?;
            total += released;
            if released < 500 {
                break;
            }
        }
        loop {
            let released = billing::reap_expired_holds(&mut conn, now).await?;
            total += released;
            if released < billing::REAP_BATCH.unsigned_abs() {
                return Ok(total);
            }
        }
    }

    pub async fn create_account(
        &self,
        email: &str,
        email_verified: bool,
    ) -> Result<AccountRow, AdminError> {
        let mut conn = self.connection().await?;
        accounts::create_account(&mut conn, email, email_verified).await
    }

    /// Adds credit to a wallet (recorded in the ledger); returns the new balance.
    pub async fn grant_credits(
        &self,
        account_id: Uuid,
        amount: NanoUsd,
    ) -> Result<NanoUsd, AdminError> {
        let mut conn = self.connection().await?;
        accounts::grant_credits(&mut conn, account_id, amount).await
    }

    /// Accounts with their wallets, newest first (see [`accounts::list_accounts`]).
    pub async fn list_accounts(
        &self,
        limit: i64,
        before: Option<Uuid>,
    ) -> Result<Vec<AccountView>, StoreError> {
        let mut conn = self.connection().await?;
        accounts::list_accounts(&mut conn, limit, before).await
    }

    pub async fn get_account(&self, id: Uuid) -> Result<Option<AccountView>, StoreError> {
        let mut conn = self.connection().await?;
        accounts::get_account(&mut conn, id).await
    }

    /// Issues a key; the returned secret is shown once and never stored.
    pub async fn create_api_key(
        &self,
        account_id: Uuid,
        scopes: &[Scope],
        expires_at: Option<SystemTime>,
        policy: &KeyPolicy,
    ) -> Result<NewApiKey, AdminError> {
        let mut conn = self.connection().await?;
        // The key and its `api_key_created` notifications (channels that
        // selected the event) commit together.
        conn.transaction(async move |conn| {
            let key =
                api_keys::create_api_key(conn, account_id, scopes, expires_at, policy).await?;
            let payload = format!(r#"{{"key_prefix":"{}"}}"#, key.prefix);
            crate::channels::enqueue_event(
                conn,
                account_id,
                "api_key_created",
                &key.id.to_string(),
                &payload,
            )
            .await?;
            Ok(key)
        })
        .await
    }

    pub async fn get_api_key(&self, id: Uuid) -> Result<Option<ApiKeyView>, StoreError> {
        let mut conn = self.connection().await?;
        api_keys::get_api_key(&mut conn, id).await
    }

    /// The keys of an account, deleted ones included, oldest first.
    pub async fn list_api_keys(&self, account_id: Uuid) -> Result<Vec<ApiKeyView>, StoreError> {
        let mut conn = self.connection().await?;
        api_keys::list_api_keys(&mut conn, account_id).await
    }

    /// What key `id` spent this month and in each of `window_seconds`.
    pub async fn key_spend(
        &self,
        id: Uuid,
        window_seconds: &[i64],
    ) -> Result<billing::KeySpend, StoreError> {
        let mut conn = self.connection().await?;
        billing::key_spend(&mut conn, id, window_seconds).await
    }

    /// Changes a key's scopes, expiry or policy (bumping its policy version).
    pub async fn update_api_key(
        &self,
        id: Uuid,
        change: &ApiKeyChange,
    ) -> Result<ApiKeyView, AdminError> {
        let mut conn = self.connection().await?;
        let view = api_keys::update_api_key(&mut conn, id, change).await?;
        // Other instances hear of it by NOTIFY; this one forgets it now.
        self.keys.forget_key_id(id);
        Ok(view)
    }

    pub async fn delete_api_key(&self, id: Uuid) -> Result<(), AdminError> {
        let mut conn = self.connection().await?;
        api_keys::delete_api_key(&mut conn, id).await?;
        // Other instances hear of it by NOTIFY; this one forgets it now.
        self.keys.forget_key_id(id);
        Ok(())
    }

    pub async fn get_request(&self, id: Uuid) -> Result<Option<RequestView>, StoreError> {
        let mut conn = self.connection().await?;
        history::get_request(&mut conn, id).await
    }

    /// Issues a sign-in link for the account with this email, if any.
    pub async fn issue_magic_link(&self, email: &str) -> Result<MagicLinkIssue, StoreError> {
        let mut conn = self.connection().await?;
        sessions::issue_magic_link(&mut conn, email).await
    }

    /// The address a live sign-in link signs into, without spending it.
    pub async fn magic_link_email(&self, token: &str) -> Result<Option<String>, StoreError> {
        let mut conn = self.connection().await?;
        sessions::magic_link_email(&mut conn, token).await
    }

    /// Spends a sign-in link and opens a session; `None` for a bad link.
    pub async fn redeem_magic_link(
        &self,
        token: &str,
        ttl: Duration,
    ) -> Result<Option<NewSession>, StoreError> {
        let mut conn = self.connection().await?;
        sessions::redeem_magic_link(&mut conn, token, ttl).await
    }

    /// Opens a session for an account (the operator's way in).
    pub async fn create_session(
        &self,
        account_id: Uuid,
        ttl: Duration,
    ) -> Result<NewSession, AdminError> {
        let mut conn = self.connection().await?;
        sessions::create_session(&mut conn, account_id, ttl).await
    }

    /// The live session whose cookie value is `token`.
    pub async fn find_session(&self, token: &str) -> Result<Option<SessionRecord>, StoreError> {
        let mut conn = self.connection().await?;
        sessions::find_session(&mut conn, token).await
    }

    /// Ends a session; `false` when no live session has this ID.
    pub async fn revoke_session(&self, id: Uuid) -> Result<bool, StoreError> {
        let mut conn = self.connection().await?;
        sessions::revoke_session(&mut conn, id).await
    }

    /// A new draft experiment of `account_id` (409 on a taken slug).
    pub async fn create_experiment(
        &self,
        account_id: Uuid,
        slug: &str,
        variants: &[router_core::Variant],
    ) -> Result<router_core::Experiment, AdminError> {
        let mut conn = self.connection().await?;
        let created = experiments::create(&mut conn, account_id, slug, variants).await;
        // Other instances hear of it by NOTIFY; this one forgets now.
        self.experiments.forget_account(account_id);
        created
    }

    /// The account's experiment `slug` (another account's is `None`).
    pub async fn find_experiment(
        &self,
        account_id: Uuid,
        slug: &str,
    ) -> Result<Option<router_core::Experiment>, StoreError> {
        let mut conn = self.connection().await?;
        experiments::find(&mut conn, account_id, slug).await
    }

    pub async fn list_experiments(
        &self,
        account_id: Uuid,
    ) -> Result<Vec<router_core::Experiment>, StoreError> {
        let mut conn = self.connection().await?;
        experiments::list(&mut conn, account_id).await
    }

    /// Moves an experiment along its lifecycle, if allowed from where it is.
    pub async fn set_experiment_status(
        &self,
        account_id: Uuid,
        slug: &str,
        to: router_core::ExperimentStatus,
        winner: Option<&str>,
    ) -> Result<experiments::StatusChange, StoreError> {
        let mut conn = self.connection().await?;
        let change = experiments::set_status(&mut conn, account_id, slug, to, winner).await;
        // Other instances hear of it by NOTIFY; this one forgets now.
        self.experiments.forget_account(account_id);
        change
    }

    /// Requests per variant of an experiment.
    pub async fn experiment_assignments(
        &self,
        experiment_id: Uuid,
    ) -> Result<Vec<(String, i64)>, StoreError> {
        let mut conn = self.connection().await?;
        experiments::assignment_counts(&mut conn, experiment_id).await
    }

    /// The account's cached answer to `key`, if stored within
    /// `ttl_seconds`, as stored (the canonical response JSON): from the
    /// in-process front when it holds it (see [`ResponseFront`]), else from
    /// the table.
    async fn cached_response_json(
        &self,
        account_id: Uuid,
        key: &[u8; 32],
        ttl_seconds: i32,
    ) -> Result<Option<Arc<str>>, StoreError> {
        if let Some(response) = self.responses.get(account_id, key, ttl_seconds) {
            return Ok(Some(response));
        }
        let generation = self.responses.generation();
        // Before the query: the row is at least `age` older than this.
        let asked = Instant::now();
        let mut conn = self.connection().await?;
        let Some(cached) = response_cache::lookup(&mut conn, account_id, key, ttl_seconds).await?
        else {
            return Ok(None);
        };
        let response: Arc<str> = cached.response.into();
        if let Some(stored) = asked.checked_sub(cached.age) {
            self.responses
                .insert(account_id, *key, response.clone(), stored, generation);
        }
        Ok(Some(response))
    }

    /// Deletes the account's exact-response cache (enabling account zero
    /// data retention calls this, J-09) and tells every instance.
    pub async fn clear_response_cache(&self, account_id: Uuid) -> Result<u64, StoreError> {
        let mut conn = self.connection().await?;
        let cleared = response_cache::clear(&mut conn, account_id).await;
        // Other instances hear of it by NOTIFY; this one forgets now.
        self.responses.forget_account(account_id);
        cleared
    }

    /// Deletes long-expired route preferences.
    pub async fn purge_affinity(&self) -> Result<u64, StoreError> {
        let mut conn = self.connection().await?;
        affinity::purge(&mut conn).await
    }

    /// Removes cache entries older than any key's TTL.
    pub async fn purge_response_cache(&self) -> Result<u64, StoreError> {
        let mut conn = self.connection().await?;
        response_cache::purge(&mut conn).await
    }

    /// The account's zero-data-retention switch; `None` for an unknown account.
    pub async fn zero_data_retention(&self, account_id: Uuid) -> Result<Option<bool>, StoreError> {
        let mut conn = self.connection().await?;
        data_protection::zero_data_retention(&mut conn, account_id).await
    }

    /// Sets the account's switch for browser session `session_id` (see
    /// [`data_protection::set_zero_data_retention`]). Other instances' key
    /// caches hear of it by NOTIFY at commit; this one forgets the
    /// account's keys now.
    pub async fn set_zero_data_retention(
        &self,
        account_id: Uuid,
        session_id: Uuid,
        enabled: bool,
    ) -> Result<Option<data_protection::SwitchChange>, StoreError> {
        let mut conn = self.connection().await?;
        let change =
            data_protection::set_zero_data_retention(&mut conn, account_id, session_id, enabled)
                .await?;
        self.keys.forget_account(account_id);
        if enabled {
            // The account's answers went with the switch (J-09).
            self.responses.forget_account(account_id);
        }
        Ok(change)
    }

    /// Takes a background job's lease (see [`jobs::try_lease`]).
    pub async fn try_lease_job(
        &self,
        name: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.connection().await?;
        jobs::try_lease(&mut conn, name, holder, lease).await
    }

    /// Extends a running pass's job lease (see [`jobs::renew`]).
    pub async fn renew_job_lease(
        &self,
        name: &str,
        holder: &str,
        lease: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.connection().await?;
        jobs::renew(&mut conn, name, holder, lease).await
    }

    /// How long until a job's lease runs out (see [`jobs::due_in`]).
    pub async fn job_due_in(&self, name: &str) -> Result<Duration, StoreError> {
        let mut conn = self.connection().await?;
        jobs::due_in(&mut conn, name).await
    }

    /// Ends a job's pass and schedules the next (see [`jobs::finish`]).
    pub async fn finish_job(
        &self,
        name: &str,
        holder: &str,
        next_after: Duration,
        outcome: Result<u64, &str>,
    ) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        jobs::finish(&mut conn, name, holder, next_after, outcome).await
    }

    /// Checks that the ledger balances and agrees with wallets and holds.
    pub async fn reconcile(&self) -> Result<Reconciliation, StoreError> {
        let mut conn = self.connection().await?;
        audit::reconcile(&mut conn).await
    }
}

impl Store for Database {
    async fn find_api_key(&self, key_hash: [u8; 32]) -> Result<Option<ApiKeyRecord>, StoreError> {
        if let Some(record) = self.keys.get(&key_hash) {
            return Ok(Some(record));
        }
        let generation = self.keys.generation();
        let mut conn = self.connection().await?;
        let found = api_keys::find_api_key(&mut conn, &key_hash).await?;
        // Unknown keys are not cached: a key created elsewhere works at once.
        if let Some(record) = &found {
            self.keys.insert(key_hash, record.clone(), generation);
        }
        Ok(found)
    }

    async fn reserve(&self, request: NewRequest) -> Result<(), ReserveError> {
        billing::check_reservation(&request)?;
        match self.lease_book() {
            Some(book) => self.reserve_with_leases(book, request).await,
            None => self.reserve_direct(request).await,
        }
    }

    async fn extend_hold(&self, request_id: Uuid, until: SystemTime) -> Result<(), StoreError> {
        // A leased request has no hold row yet: its lease is kept alive.
        if self.lease_book().is_some_and(|b| b.is_leased(request_id)) {
            return Ok(());
        }
        let mut conn = self.connection().await?;
        billing::extend_hold(&mut conn, request_id, until).await
    }

    async fn record_attempt(&self, attempt: AttemptRecord) -> Result<(), StoreError> {
        let attempt = match self.lease_book() {
            Some(book) => match book.buffer_attempt(attempt) {
                None => return Ok(()),
                Some(attempt) => attempt,
            },
            None => attempt,
        };
        let mut conn = self.connection().await?;
        history::record_attempt(&mut conn, &attempt).await
    }

    async fn settle(&self, settlement: Settlement) -> Result<NanoUsd, SettleError> {
        if let Some(book) = self.lease_book()
            && let Some(leased) = book.leased(settlement.request_id)
        {
            return self.settle_leased(book, leased, settlement).await;
        }
        billing::check_settlement(&settlement)?;
        let request_id = settlement.request_id;
        match self.settlements.submit(settlement).await {
            Some(Ok(Some(charge))) => Ok(charge),
            Some(Ok(None)) => Err(SettleError::NotReserved(request_id)),
            Some(Err(error @ StoreError::Unavailable(_))) => {
                self.settlement_outcome(request_id, error).await
            }
            Some(Err(error)) => Err(error.into()),
            None => Err(batching_stopped().into()),
        }
    }

    async fn void(&self, voiding: Voiding) -> Result<(), SettleError> {
        if let Some(book) = self.lease_book()
            && let Some(leased) = book.leased(voiding.request_id)
        {
            return self.void_leased(book, leased, &voiding).await;
        }
        let mut conn = self.connection().await?;
        billing::void(&mut conn, &voiding).await
    }
    async fn thinking_seal_key(&self, candidate: Vec<u8>) -> Result<Vec<u8>, StoreError> {
        let mut conn = self.connection().await?;
        thinking_seal_keys::load_or_insert(&mut conn, &candidate).await
    }

    async fn reap_expired_holds(&self, now: SystemTime) -> Result<u64, StoreError> {
        Database::reap_expired_holds(self, now).await
    }

    async fn ping(&self) -> Result<(), StoreError> {
        Database::ping(self).await
    }
}

/// The experiments `X-CI-Experiment` names, through the in-process front
/// (see [`ExperimentFront`]).
impl ExperimentStore for Database {
    async fn experiment(
        &self,
        account_id: Uuid,
        slug: &str,
    ) -> Result<Option<Arc<router_core::Experiment>>, StoreError> {
        if let Some(found) = self.experiments.get(account_id, slug) {
            return Ok(found);
        }
        let generation = self.experiments.generation();
        let mut conn = self.connection().await?;
        let found = experiments::find(&mut conn, account_id, slug)
            .await?
            .map(Arc::new);
        self.experiments
            .insert(account_id, slug, found.clone(), generation);
        Ok(found)
    }
}

impl AffinityStore for Database {
    /// A fresh preference from the in-process front when it holds one (see
    /// [`AffinityFront`]), else the row.
    async fn affinity_hint(
        &self,
        fingerprint: &[u8; 32],
    ) -> Result<Option<AffinityHint>, StoreError> {
        if let Some(hint) = self.affinity.get(fingerprint) {
            return Ok(Some(hint));
        }
        // Before the query: the preference ends no sooner than this plus
        // what the database says remains.
        let asked = Instant::now();
        let mut conn = self.connection().await?;
        let hint = affinity::lookup(&mut conn, fingerprint).await?;
        if let Some(hint) = hint.as_ref().filter(|hint| hint.fresh) {
            self.affinity
                .insert(*fingerprint, &hint.route_id, asked, hint.remaining, false);
        }
        Ok(hint)
    }

    /// A preference that held is not written at all when this instance
    /// wrote it within [`affinity::FRONT_TTL`].
    async fn record_affinity(
        &self,
        fingerprint: &[u8; 32],
        route_id: &str,
        ttl_seconds: i32,
        preferred: bool,
    ) -> Result<(), StoreError> {
        if preferred && self.affinity.wrote(fingerprint, route_id) {
            return Ok(());
        }
        let asked = Instant::now();
        let mut conn = self.connection().await?;
        let stored = if preferred {
            affinity::refresh(&mut conn, fingerprint, route_id, ttl_seconds).await?
        } else {
            affinity::record(&mut conn, fingerprint, route_id, ttl_seconds).await?;
            true
        };
        if stored {
            let ttl = Duration::from_secs(ttl_seconds.unsigned_abs().into());
            self.affinity
                .insert(*fingerprint, route_id, asked, ttl, true);
        } else {
            // Another instance's newer choice: read it next time.
            self.affinity.forget(fingerprint);
        }
        Ok(())
    }

    async fn purge_affinity(&self) -> Result<u64, StoreError> {
        Database::purge_affinity(self).await
    }
}

/// Answers are stored as the canonical response's JSON, in the table and
/// in this instance's front (see [`ResponseFront`]).
impl ResponseCacheStore for Database {
    async fn cached_response(
        &self,
        account_id: Uuid,
        key: &[u8; 32],
        ttl_seconds: i32,
    ) -> Result<Option<Response>, StoreError> {
        let Some(json) = self
            .cached_response_json(account_id, key, ttl_seconds)
            .await?
        else {
            return Ok(None);
        };
        Ok(serde_json::from_str(&json)
            .map_err(|e| tracing::warn!(error = %e, "unreadable response cache entry"))
            .ok())
    }

    async fn cache_response(
        &self,
        account_id: Uuid,
        key: &[u8; 32],
        response: &Response,
    ) -> Result<(), StoreError> {
        let json = serde_json::to_string(response)
            .map_err(|e| StoreError::Query(format!("response cache entry: {e}")))?;
        let generation = self.responses.generation();
        // Before the statement: no later than the row's `created_at`.
        let stored = Instant::now();
        let mut conn = self.connection().await?;
        response_cache::store(&mut conn, account_id, key, &json).await?;
        self.responses
            .insert(account_id, *key, json.into(), stored, generation);
        Ok(())
    }

    async fn record_cache_hit(&self, hit: &CacheHit) -> Result<(), StoreError> {
        let mut conn = self.connection().await?;
        response_cache::record_hit(&mut conn, hit).await
    }

    async fn purge_response_cache(&self) -> Result<u64, StoreError> {
        Database::purge_response_cache(self).await
    }
}

/// Opens a pooled connection and makes it plan for the tables it will meet.
///
/// Each connection prepares the request lifecycle's statements once and
/// keeps their generic plans until a table's statistics change. A plan made
/// while the tables were nearly empty, e.g. in a fresh deployment before
/// autovacuum's first round, joins by sequential scan, and it would keep
/// scanning as the tables grew: the one hot wallet row leaves dead versions
/// behind it faster than they are pruned, so such a scan costs more with every
/// request. Every statement of the router reads by key or by a short index
/// range, so sequential scans are only the last resort
/// (`enable_seqscan = off` weights them, it does not forbid them).
async fn establish_with_point_lookup_plans(url: &str) -> ConnectionResult<AsyncPgConnection> {
    let mut conn = AsyncPgConnection::establish(url).await?;
    conn.batch_execute("SET enable_seqscan = off")
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
    Ok(conn)
}

/// Billing batches in flight at once, reservations and settlements together.
/// One: a busy account's requests all lock its wallet row, so a second batch
/// would only queue on the first one's row lock (and PostgreSQL's lock waits,
/// wake-ups and re-checks of the updated row cost more than the batch
/// itself), while whatever arrives meanwhile joins the next batch for free.
/// Measured with one account at saturation (`cargo xtask bench`), per kind:
/// about 5,700 requests/s with one in flight, 4,400 with two, 2,900 with
/// four, 1,900 with eight; one for both kinds together then cut PostgreSQL's
/// CPU per request by a fifth (about 105 against 130 µs).
const BATCHES_IN_FLIGHT: usize = 1;
/// The most operations one statement carries.
const MAX_BATCH: usize = 128;

/// A group commit of `run_batch` over connections from `pool`, one batch at
/// a time per slot of `slots`. A failed batch (or no connection) fails each
/// of its operations with the same error.
fn group_commit<Item, Out, Run>(
    pool: &Pool<AsyncPgConnection>,
    slots: &BatchSlots,
    run_batch: Run,
) -> GroupCommit<Item, Result<Out, StoreError>>
where
    Item: Send + Sync + 'static,
    Out: Clone + Send + 'static,
    Run: for<'c> AsyncBatch<'c, Item, Out> + Copy + Send + Sync + 'static,
{
    let pool = pool.clone();
    GroupCommit::spawn(slots.clone(), MAX_BATCH, move |items: Vec<Item>| {
        let pool = pool.clone();
        async move {
            let outcome = match pool.get().await {
                Ok(mut conn) => run_batch.run(&mut conn, &items).await,
                Err(error) => Err(pool_error(error)),
            };
            match outcome {
                Ok(outputs) => outputs.into_iter().map(Ok).collect(),
                Err(error) => vec![Err(error); items.len()],
            }
        }
    })
}

impl Database {
    /// A reservation straight against the wallet (group-committed), or, for
    /// a key with limits, on the key's exclusive path.
    pub(crate) async fn reserve_direct(&self, request: NewRequest) -> Result<(), ReserveError> {
        if request.key_limited {
            // Not batched: the key's row is locked for the whole check. The
            // key's admissions in this process wait their turn before they
            // take a connection (key_turns.rs).
            let _turn = self.key_turns.take(request.api_key_id).await;
            let mut conn = self.connection().await?;
            return billing::reserve_limited(&mut conn, &request).await;
        }
        let (key_id, policy_version) = (request.api_key_id, request.policy_version);
        match self.reservations.submit(request).await {
            Some(Ok(true)) => Ok(()),
            Some(Ok(false)) => {
                let mut conn = self.connection().await?;
                Err(billing::refusal(&mut conn, key_id, policy_version).await)
            }
            Some(Err(error)) => Err(error.into()),
            None => Err(batching_stopped().into()),
        }
    }
}

/// How long a settlement whose outcome is unknown waits for the database to
/// say whether it committed.
const SETTLEMENT_OUTCOME_WAIT: Duration = Duration::from_secs(10);

impl Database {
    /// A settlement failed with the database unreachable: the connection
    /// may have broken after its COMMIT reached the server, so the request
    /// may be charged although the answer was lost (RELIABILITY.md D1: the
    /// client sees success exactly when the settlement committed; the
    /// reliability suite's outage part found such charges). Its hold is read
    /// again, retrying while the database is away, for at most
    /// [`SETTLEMENT_OUTCOME_WAIT`]: settled is the success it was; still held
    /// is the failure it was (the caller voids it); unknown after the wait
    /// stays the failure, and the hold is left to the reaper.
    async fn settlement_outcome(
        &self,
        request_id: Uuid,
        error: StoreError,
    ) -> Result<NanoUsd, SettleError> {
        match self.read_settlement_outcome(request_id).await {
            Some(Some((status, charged))) if status == "settled" => {
                Ok(NanoUsd(charged.unwrap_or(0)))
            }
            Some(Some((status, _))) if status == "held" => Err(error.into()),
            Some(_) => Err(SettleError::NotReserved(request_id)),
            None => Err(error.into()),
        }
    }

    /// The request's hold status and charge ([`billing::settlement_outcome`]),
    /// read again and again while the database is away, for at most
    /// [`SETTLEMENT_OUTCOME_WAIT`]; `None` when it could not be read.
    pub(crate) async fn read_settlement_outcome(
        &self,
        request_id: Uuid,
    ) -> Option<Option<(String, Option<i64>)>> {
        let give_up = Instant::now() + SETTLEMENT_OUTCOME_WAIT;
        let mut pause = Duration::from_millis(100);
        loop {
            let read = match self.connection().await {
                Ok(mut conn) => billing::settlement_outcome(&mut conn, request_id).await,
                Err(e) => Err(e),
            };
            match read {
                Ok(outcome) => return Some(outcome),
                Err(_) if Instant::now() + pause < give_up => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_secs(1));
                }
                Err(_) => return None,
            }
        }
    }
}

/// A batch statement: `billing::reserve_batch` or `billing::settle_batch`,
/// with one output per item.
trait AsyncBatch<'c, Item: 'c, Out> {
    fn run(
        self,
        conn: &'c mut AsyncPgConnection,
        items: &'c [Item],
    ) -> impl Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c;
}

impl<'c, Item: 'c, Out, F, Fut> AsyncBatch<'c, Item, Out> for F
where
    F: FnOnce(&'c mut AsyncPgConnection, &'c [Item]) -> Fut,
    Fut: Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c,
{
    fn run(
        self,
        conn: &'c mut AsyncPgConnection,
        items: &'c [Item],
    ) -> impl Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c {
        self(conn, items)
    }
}

fn batching_stopped() -> StoreError {
    StoreError::Unavailable("the billing batch queue has stopped".into())
}

/// A checkout that failed: counted by kind (a timeout waiting for a free
/// connection, or a new connection that could not be made), then the error.
fn pool_checkout_failed(error: diesel_async::pooled_connection::deadpool::PoolError) -> StoreError {
    use deadpool::managed::PoolError;
    let kind = match &error {
        PoolError::Timeout(_) => "timeout",
        PoolError::Backend(_) => "connect",
        _ => "other",
    };
    metrics::counter!("router_db_pool_checkout_failures_total", "kind" => kind).increment(1);
    pool_error(error)
}
