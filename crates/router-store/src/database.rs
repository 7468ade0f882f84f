//! The edge: a connection pool, and core's ports (`Store`, the pipeline's
//! `ExperimentStore`, `AffinityStore` and `ResponseCacheStore`) on top of
//! the query functions. Each method checks one connection out for one
//! operation.

use crate::accounts::{self, AccountRow, AccountView};
use crate::affinity::{self, AffinityFront};
use crate::api_keys::{self, ApiKeyChange, ApiKeyView, NewApiKey};
use crate::audit::{self, Reconciliation};
use crate::billing::{self, BatchBounds};
use crate::bounds::{DatabaseLimits, PooledConnection, is_lock_timeout, is_timeout, within};
use crate::data_protection;
use crate::error::{AdminError, pool_error, store_error};
use crate::experiments::{self, ExperimentFront};
use crate::group_commit::{BatchSlots, GroupCommit, Slot};
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
use diesel_async::pooled_connection::deadpool::Pool;
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
    /// The bounds of every database wait (see [`crate::bounds`]).
    pub(crate) limits: DatabaseLimits,
    /// Turns of the billing operations waiting out a row lock alone
    /// ([`Database::lock_turn`]).
    blocked: Arc<tokio::sync::Semaphore>,
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
        Database::connect_with(url, max_size, DatabaseLimits::default()).await
    }

    /// [`Database::connect`] with the given bounds on every wait (see
    /// [`crate::bounds`]); a new connection gets `limits.lock_timeout` as
    /// its `lock_timeout`.
    pub async fn connect_with(
        url: &str,
        max_size: usize,
        limits: DatabaseLimits,
    ) -> Result<Database, StoreError> {
        limits.check().map_err(StoreError::Query)?;
        let mut config = ManagerConfig::default();
        config.recycling_method = RecyclingMethod::Fast;
        config.custom_setup = Box::new(move |url| {
            Box::pin(establish_with_point_lookup_plans(url.to_owned(), limits))
        });
        let manager =
            AsyncDieselConnectionManager::<AsyncPgConnection>::new_with_config(url, config);
        let pool = Pool::builder(manager)
            .max_size(max_size)
            .queue_mode(deadpool::managed::QueueMode::Lifo)
            .runtime(deadpool::Runtime::Tokio1)
            .wait_timeout(Some(limits.checkout_timeout))
            .create_timeout(Some(limits.connect_timeout))
            .recycle_timeout(Some(limits.checkout_timeout))
            .build()
            .map_err(|error| StoreError::Unavailable(error.to_string()))?;
        // Both kinds write the wallet rows: one set of slots for the two.
        let wallet_writes = BatchSlots::new(BATCHES_IN_FLIGHT);
        let database = Database {
            reservations: Arc::new(group_commit(
                &pool,
                &wallet_writes,
                limits,
                billing::reserve_batch_within,
            )),
            settlements: Arc::new(group_commit(
                &pool,
                &wallet_writes,
                limits,
                crate::crash_points::settle_batch,
            )),
            leased_settlements: Arc::new(group_commit(
                &pool,
                &wallet_writes,
                limits,
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
            limits,
            // Operations waiting out a row lock hold at most half the pool.
            blocked: Arc::new(tokio::sync::Semaphore::new((max_size / 2).max(1))),
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

    /// One round trip to the database, for `/readyz` (bounded like a
    /// request's: a database that stops answering is not ready).
    pub async fn ping(&self) -> Result<(), StoreError> {
        self.bounded("a ping", async {
            let mut conn = self.connection().await?;
            diesel::select(1_i32.into_sql::<Integer>())
                .get_result::<i32>(&mut conn)
                .await
                .map(|_| ())
                .map_err(store_error)
        })
        .await
    }

    /// The bounds of this pool's waits.
    pub fn limits(&self) -> DatabaseLimits {
        self.limits
    }

    /// `operation` (a checkout and its statements), given at most
    /// [`DatabaseLimits::operation`]; past it, the database is unavailable.
    pub(crate) async fn bounded<T, E: From<StoreError>>(
        &self,
        what: &'static str,
        operation: impl Future<Output = Result<T, E>>,
    ) -> Result<T, E> {
        within(self.limits.operation(), what, operation).await
    }

    /// A connection from the pool, for composing the query functions of this
    /// crate (they all take `&mut AsyncPgConnection`). The checkout waits at
    /// most the checkout timeout (a new connection, the connect timeout).
    pub async fn connection(&self) -> Result<PooledConnection, StoreError> {
        checkout(&self.pool, &self.limits).await
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
        let Some(cached) = self
            .bounded("a cached response", async {
                let mut conn = self.connection().await?;
                response_cache::lookup(&mut conn, account_id, key, ttl_seconds).await
            })
            .await?
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
        let found = self
            .bounded("a key lookup", async {
                let mut conn = self.connection().await?;
                api_keys::find_api_key(&mut conn, &key_hash).await
            })
            .await?;
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
        self.bounded("a hold extension", async {
            let mut conn = self.connection().await?;
            billing::extend_hold(&mut conn, request_id, until).await
        })
        .await
    }

    async fn record_attempt(&self, attempt: AttemptRecord) -> Result<(), StoreError> {
        let attempt = match self.lease_book() {
            Some(book) => match book.buffer_attempt(attempt) {
                None => return Ok(()),
                Some(attempt) => attempt,
            },
            None => attempt,
        };
        self.bounded("an attempt", async {
            let mut conn = self.connection().await?;
            history::record_attempt(&mut conn, &attempt).await
        })
        .await
    }

    async fn settle(&self, settlement: Settlement) -> Result<NanoUsd, SettleError> {
        if let Some(book) = self.lease_book()
            && let Some(leased) = book.leased(settlement.request_id)
        {
            let (database, book) = (self.clone(), book.clone());
            return in_own_task(
                async move { database.settle_leased(&book, leased, settlement).await },
            )
            .await;
        }
        billing::check_settlement(&settlement)?;
        let request_id = settlement.request_id;
        // Kept for the fence, should the settlement's outcome be unknown.
        let attempt = settlement.attempt.clone();
        let mut settled = self.settlements.submit(settlement.clone()).await;
        if let Some(Err(error)) = &settled
            && is_lock_timeout(error)
        {
            let error = error.clone();
            settled = Some(self.settle_alone(&settlement, error).await);
        }
        match settled {
            Some(Ok(Some(charge))) => Ok(charge),
            Some(Ok(None)) => Err(SettleError::NotReserved(request_id)),
            Some(Err(error)) if is_lock_timeout(&error) => {
                // Rolled back on the server: not charged, for certain. The
                // hold is released once the lock is gone.
                self.release_in_background(
                    unanswered_settlement(request_id, attempt),
                    IfSettled::Leave,
                );
                Err(error.into())
            }
            Some(Err(error @ StoreError::Unavailable(_))) => {
                self.settlement_outcome(request_id, attempt, error).await
            }
            Some(Err(error)) => Err(error.into()),
            None => Err(batching_stopped().into()),
        }
    }

    async fn void(&self, voiding: Voiding) -> Result<(), SettleError> {
        if let Some(book) = self.lease_book()
            && let Some(leased) = book.leased(voiding.request_id)
        {
            let (database, book) = (self.clone(), book.clone());
            return in_own_task(async move { database.void_leased(&book, leased, &voiding).await })
                .await;
        }
        let released = self
            .bounded("a release", async {
                let mut conn = self.connection().await?;
                billing::void(&mut conn, &voiding).await
            })
            .await;
        if let Err(SettleError::Store(error)) = &released
            && (is_lock_timeout(error) || is_timeout(error))
        {
            // Its wallet row is locked, or the database did not answer: the
            // hold is released once it can be rather than at its expiry.
            self.release_in_background(voiding, IfSettled::Leave);
        }
        released
    }

    async fn thinking_seal_key(&self, candidate: Vec<u8>) -> Result<Vec<u8>, StoreError> {
        self.bounded("the thinking seal key", async {
            let mut conn = self.connection().await?;
            thinking_seal_keys::load_or_insert(&mut conn, &candidate).await
        })
        .await
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
        let found = self
            .bounded("an experiment", async {
                let mut conn = self.connection().await?;
                experiments::find(&mut conn, account_id, slug).await
            })
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
        let hint = self
            .bounded("an affinity hint", async {
                let mut conn = self.connection().await?;
                affinity::lookup(&mut conn, fingerprint).await
            })
            .await?;
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
        let stored = self
            .bounded("an affinity preference", async {
                let mut conn = self.connection().await?;
                if preferred {
                    affinity::refresh(&mut conn, fingerprint, route_id, ttl_seconds).await
                } else {
                    affinity::record(&mut conn, fingerprint, route_id, ttl_seconds).await?;
                    Ok(true)
                }
            })
            .await?;
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
        self.bounded("a response to cache", async {
            let mut conn = self.connection().await?;
            response_cache::store(&mut conn, account_id, key, &json).await
        })
        .await?;
        self.responses
            .insert(account_id, *key, json.into(), stored, generation);
        Ok(())
    }

    async fn record_cache_hit(&self, hit: &CacheHit) -> Result<(), StoreError> {
        self.bounded("a cache hit", async {
            let mut conn = self.connection().await?;
            response_cache::record_hit(&mut conn, hit).await
        })
        .await
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
async fn establish_with_point_lookup_plans(
    url: String,
    limits: DatabaseLimits,
) -> ConnectionResult<AsyncPgConnection> {
    // The connect timeout bounds the whole of it: a path that accepts the
    // connection and answers nothing must not hold the checkout forever.
    let establish = async {
        let mut conn = AsyncPgConnection::establish(&url).await?;
        // A statement blocked on a row lock ends on the server, rolled back,
        // before the router stops waiting for it (see crate::bounds).
        conn.batch_execute(&format!(
            "SET enable_seqscan = off; SET lock_timeout = '{}ms'",
            limits.lock_timeout.as_millis()
        ))
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
        // The server's clock, for the billing statements' `valid_until`.
        let sent = SystemTime::now();
        let server_ms: i64 = diesel::select(diesel::dsl::sql::<diesel::sql_types::BigInt>(
            "(extract(epoch FROM clock_timestamp()) * 1000)::bigint",
        ))
        .get_result(&mut conn)
        .await
        .map_err(ConnectionError::CouldntSetupConfiguration)?;
        crate::bounds::server_clock_read(server_ms, sent, SystemTime::now());
        Ok(conn)
    };
    match tokio::time::timeout(limits.connect_timeout, establish).await {
        Ok(established) => established,
        Err(_) => Err(ConnectionError::BadConnection(format!(
            "no connection within the connect timeout ({} ms)",
            limits.connect_timeout.as_millis()
        ))),
    }
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
/// How long a shared batch waits for a row lock. Batches take turns, so a
/// batch waiting on a row another session holds (a wallet locked by an
/// operator's transaction, another instance's batch) would hold up every
/// account's billing behind it. Past this wait the batch is rolled back and
/// its operations run again one by one, outside the turn, each waiting for
/// its locks as long as the connection's `lock_timeout`: the blocked
/// account's requests wait (and then fail with 503), the others go through
/// at once.
const BATCH_LOCK_WAIT: Duration = Duration::from_millis(100);

/// A group commit of `run_batch` over connections from `pool`, one batch at
/// a time per slot of `slots`, each bounded by `limits`. A failed batch (or
/// no connection) fails each of its operations with the same error; one
/// that met a lock held past [`BATCH_LOCK_WAIT`] gives its slot up and runs
/// each operation alone.
fn group_commit<Item, Out, Run>(
    pool: &Pool<AsyncPgConnection>,
    slots: &BatchSlots,
    limits: DatabaseLimits,
    run_batch: Run,
) -> GroupCommit<Item, Result<Out, StoreError>>
where
    Item: Send + Sync + 'static,
    Out: Clone + Send + 'static,
    Run: for<'c> AsyncBatch<'c, Item, Out> + Copy + Send + Sync + 'static,
{
    let pool = pool.clone();
    GroupCommit::spawn(
        slots.clone(),
        MAX_BATCH,
        move |items: Vec<Item>, mut slot: Slot| {
            let pool = pool.clone();
            async move {
                let shared = Some(format!("{}ms", BATCH_LOCK_WAIT.as_millis()));
                match run_bounded(&pool, &limits, run_batch, &items, shared.clone()).await {
                    Ok(outputs) => outputs.into_iter().map(Ok).collect(),
                    Err(error) if is_lock_timeout(&error) => {
                        // Rolled back on the server: safe to run again, out
                        // of the turn, each alone with the same short wait:
                        // every operation whose rows are free is done at
                        // once. One blocked again answers the lock timeout,
                        // and its caller waits out the lock on its own
                        // (`Database::lock_turn`).
                        slot.release();
                        metrics::counter!("router_billing_batches_split_total").increment(1);
                        let pool = &pool;
                        let limits = &limits;
                        futures::future::join_all(
                            items
                                .iter()
                                .map(|item| run_one(pool, limits, run_batch, item, shared.clone())),
                        )
                        .await
                    }
                    Err(error) => vec![Err(error); items.len()],
                }
            }
        },
    )
}

/// [`run_bounded`] over `item` alone.
async fn run_one<Item, Out, Run>(
    pool: &Pool<AsyncPgConnection>,
    limits: &DatabaseLimits,
    run_batch: Run,
    item: &Item,
    lock_wait: Option<String>,
) -> Result<Out, StoreError>
where
    Run: for<'c> AsyncBatch<'c, Item, Out>,
{
    let one = std::slice::from_ref(item);
    let mut outputs = run_bounded(pool, limits, run_batch, one, lock_wait).await?;
    outputs
        .pop()
        .ok_or_else(|| StoreError::Query("a batch of one gave no output".into()))
}

/// One run of `run_batch` over `items`: a checkout, then the statement
/// within the statement timeout, which the server will not start once the
/// router has stopped waiting for it (`valid_until`).
async fn run_bounded<Item, Out, Run>(
    pool: &Pool<AsyncPgConnection>,
    limits: &DatabaseLimits,
    run_batch: Run,
    items: &[Item],
    lock_wait: Option<String>,
) -> Result<Vec<Out>, StoreError>
where
    Run: for<'c> AsyncBatch<'c, Item, Out>,
{
    let mut conn = checkout(pool, limits).await?;
    let bounds = BatchBounds {
        lock_wait,
        valid_until: Some(SystemTime::now() + limits.statement_timeout),
    };
    within(
        limits.statement_timeout,
        "a billing batch",
        run_batch.run(&mut conn, items, &bounds),
    )
    .await
}

/// A connection from `pool` within `limits` (see [`Database::connection`]).
async fn checkout(
    pool: &Pool<AsyncPgConnection>,
    limits: &DatabaseLimits,
) -> Result<PooledConnection, StoreError> {
    // Only a checkout that had to wait is timed: the common one finds a
    // connection at once and costs the hot path nothing more.
    let conn = if pool.status().available > 0 {
        pool.get().await.map_err(pool_checkout_failed)?
    } else {
        let started = Instant::now();
        let checkout = pool.get().await;
        metrics::histogram!("router_db_pool_wait_seconds").record(started.elapsed().as_secs_f64());
        checkout.map_err(pool_checkout_failed)?
    };
    Ok(PooledConnection::new(conn, limits.statement_timeout))
}

impl Database {
    /// A reservation straight against the wallet (group-committed), or, for
    /// a key with limits, on the key's exclusive path.
    pub(crate) async fn reserve_direct(&self, request: NewRequest) -> Result<(), ReserveError> {
        let request_id = request.request_id;
        let reserved = if request.key_limited {
            // Not batched: the key's row is locked for the whole check. The
            // key's admissions in this process wait their turn before they
            // take a connection (key_turns.rs).
            let _turn = self.key_turns.take(request.api_key_id).await;
            self.bounded("a limited reservation", async {
                let mut conn = self.connection().await?;
                billing::reserve_limited(&mut conn, &request).await
            })
            .await
        } else {
            let (key_id, policy_version) = (request.api_key_id, request.policy_version);
            let mut admitted = self.reservations.submit(request.clone()).await;
            if let Some(Err(error)) = &admitted
                && is_lock_timeout(error)
            {
                let error = error.clone();
                admitted = Some(self.reserve_alone(&request, error).await);
            }
            match admitted {
                Some(Ok(true)) => Ok(()),
                Some(Ok(false)) => {
                    self.bounded("a refusal's reason", async {
                        let mut conn = self.connection().await?;
                        Err(billing::refusal(&mut conn, key_id, policy_version).await)
                    })
                    .await
                }
                Some(Err(error)) => Err(error.into()),
                None => Err(batching_stopped().into()),
            }
        };
        if let Err(ReserveError::Store(error)) = &reserved
            && is_timeout(error)
        {
            // The hold may have been taken although its answer was lost:
            // released as soon as the database lets it be.
            self.release_in_background(
                Voiding {
                    request_id,
                    reason: "service_unavailable".into(),
                    attempt: None,
                },
                IfSettled::Leave,
            );
        }
        reserved
    }
}

impl Database {
    /// A turn to wait out a row lock alone: a billing operation whose batch
    /// met a row lock held past [`BATCH_LOCK_WAIT`], and which met it again
    /// alone, runs once more, out of the turn, waiting for its locks as long
    /// as the connection's lock timeout. At most half the pool waits so at
    /// once; `None` after a lock timeout's wait for a turn.
    async fn lock_turn(&self) -> Option<tokio::sync::SemaphorePermit<'_>> {
        let turn = tokio::time::timeout(self.limits.lock_timeout, self.blocked.acquire()).await;
        turn.ok()?.ok()
    }

    /// The bounds of a billing statement run alone, starting now.
    pub(crate) fn alone_bounds(&self) -> BatchBounds {
        BatchBounds {
            lock_wait: None,
            valid_until: Some(crate::bounds::server_deadline(
                self.limits.statement_timeout,
            )),
        }
    }

    /// One billing statement for one item, out of the shared batches: it
    /// waits for a lock turn ([`Database::lock_turn`]; `blocked` when none
    /// came), runs under [`Database::alone_bounds`] and its statement
    /// timeout, and answers the item's one output.
    async fn alone<T>(
        &self,
        what: &'static str,
        blocked: StoreError,
        statement: impl AsyncFnOnce(&mut AsyncPgConnection, &BatchBounds) -> Result<Vec<T>, StoreError>,
    ) -> Result<Option<T>, StoreError> {
        let Some(_turn) = self.lock_turn().await else {
            return Err(blocked);
        };
        let mut conn = self.connection().await?;
        let bounds = self.alone_bounds();
        let outputs = within(
            self.limits.statement_timeout,
            what,
            statement(&mut conn, &bounds),
        )
        .await?;
        Ok(outputs.into_iter().next())
    }

    /// [`billing::reserve_batch_within`] of `request` alone.
    async fn reserve_alone(
        &self,
        request: &NewRequest,
        blocked: StoreError,
    ) -> Result<bool, StoreError> {
        let admitted = self
            .alone("a reservation alone", blocked, async |conn, bounds| {
                billing::reserve_batch_within(conn, std::slice::from_ref(request), bounds).await
            })
            .await?;
        Ok(admitted.unwrap_or(false))
    }

    /// [`billing::settle_batch_within`] of `settlement` alone.
    async fn settle_alone(
        &self,
        settlement: &Settlement,
        blocked: StoreError,
    ) -> Result<Option<NanoUsd>, StoreError> {
        let settled = self
            .alone("a settlement alone", blocked, async |conn, bounds| {
                crate::crash_points::settle_batch(conn, std::slice::from_ref(settlement), bounds)
                    .await
            })
            .await?;
        Ok(settled.flatten())
    }

    /// [`crate::leases::settle_batch_within`] of `item` alone.
    pub(crate) async fn settle_leased_alone(
        &self,
        item: &LeasedSettlement,
        blocked: StoreError,
    ) -> Result<Option<NanoUsd>, StoreError> {
        let settled = self
            .alone(
                "a leased settlement alone",
                blocked,
                async |conn, bounds| {
                    crate::crash_points::settle_leased_batch(
                        conn,
                        std::slice::from_ref(item),
                        bounds,
                    )
                    .await
                },
            )
            .await?;
        Ok(settled.flatten())
    }
}

/// How long a hold whose request could not be answered for (its reservation
/// or settlement went unanswered) is tried again in the background before
/// it is left to the reaper.
const RELEASE_PATIENCE: Duration = Duration::from_secs(120);

impl Database {
    /// A settlement failed with the database unreachable or not answering
    /// in time: it may have committed although its answer was lost
    /// (RELIABILITY.md D1: the client sees success exactly when the
    /// settlement committed). Its hold is fenced: released (with `attempt`
    /// recorded as failed), if it is still held, by a statement that
    /// excludes the settlement (both move the hold out of `held`, once). A
    /// fence that went through is a failure the client may retry, with
    /// nothing charged; a hold no longer held was settled (the success it
    /// was) or released by another path. The fence is tried for at most
    /// one bounded operation ([`DatabaseLimits::operation`]); a database
    /// still away then leaves the failure standing, and the fence is tried
    /// again in the background (the settlement itself can no longer commit:
    /// the server would receive it after its `valid_until`).
    async fn settlement_outcome(
        &self,
        request_id: Uuid,
        attempt: AttemptRecord,
        error: StoreError,
    ) -> Result<NanoUsd, SettleError> {
        let fence = unanswered_settlement(request_id, attempt);
        let give_up = Instant::now() + self.limits.operation();
        let mut pause = Duration::from_millis(50);
        loop {
            let remaining = give_up.saturating_duration_since(Instant::now());
            let fenced = within(remaining, "a settlement's fence", async {
                let mut conn = self.connection().await?;
                billing::void(&mut conn, &fence).await
            })
            .await;
            match fenced {
                Ok(()) => return Err(error.into()),
                Err(SettleError::NotReserved(_)) => {
                    return match self.read_settlement_outcome(request_id).await {
                        Some(Some((status, charged))) if status == "settled" => {
                            Ok(NanoUsd(charged.unwrap_or(0)))
                        }
                        Some(_) => Err(SettleError::NotReserved(request_id)),
                        // Unreadable: it may be settled, and the client is
                        // answered with an error; a settlement found later
                        // is reversed.
                        None => {
                            self.release_in_background(fence, IfSettled::Reverse);
                            Err(error.into())
                        }
                    };
                }
                Err(_) if Instant::now() + pause < give_up => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(_) => {
                    self.release_in_background(fence, IfSettled::Reverse);
                    return Err(error.into());
                }
            }
        }
    }

    /// Releases a hold whose request was answered without it once the
    /// database answers again, for at most [`RELEASE_PATIENCE`]; after
    /// that, the reaper releases it when its lease runs out. A hold found
    /// no longer held is left alone, unless `if_settled` says the client
    /// was answered with an error although its settlement may have
    /// committed: then that settlement is reversed
    /// ([`billing::reverse_unanswered_settlement`]).
    fn release_in_background(&self, voiding: Voiding, if_settled: IfSettled) {
        let database = self.clone();
        tokio::spawn(async move {
            let request_id = voiding.request_id;
            let give_up = Instant::now() + RELEASE_PATIENCE;
            let mut pause = Duration::from_millis(500);
            while Instant::now() < give_up {
                tokio::time::sleep(pause).await;
                let released = database
                    .bounded("a background release", async {
                        let mut conn = database.connection().await?;
                        match (billing::void(&mut conn, &voiding).await, if_settled) {
                            (Err(SettleError::NotReserved(_)), IfSettled::Reverse) => {
                                billing::reverse_unanswered_settlement(&mut conn, request_id)
                                    .await
                                    .map_err(SettleError::from)
                            }
                            (Err(SettleError::NotReserved(_)), IfSettled::Leave) => Ok(None),
                            (voided, _) => voided.map(|()| None),
                        }
                    })
                    .await;
                match released {
                    Ok(Some(charge)) => {
                        tracing::warn!(%request_id, charge_nano = charge.0,
                            "a settlement committed after its client was answered with an error: reversed");
                        return;
                    }
                    Ok(None) | Err(SettleError::NotReserved(_)) => return,
                    Err(SettleError::Store(_)) => pause = (pause * 2).min(Duration::from_secs(5)),
                }
            }
            tracing::warn!(%request_id, "a hold left to the reaper (reverse its charge by hand if it was settled and its client saw an error)");
        });
    }

    /// The request's hold status and charge ([`billing::settlement_outcome`]),
    /// read again and again while the database is away, for at most one
    /// bounded operation ([`DatabaseLimits::operation`]); `None` when it
    /// could not be read.
    pub(crate) async fn read_settlement_outcome(
        &self,
        request_id: Uuid,
    ) -> Option<Option<(String, Option<i64>)>> {
        let give_up = Instant::now() + self.limits.operation();
        let mut pause = Duration::from_millis(50);
        loop {
            let remaining = give_up.saturating_duration_since(Instant::now());
            let read = within(remaining, "a settlement's outcome", async {
                let mut conn = self.connection().await?;
                billing::settlement_outcome(&mut conn, request_id).await
            })
            .await;
            match read {
                Ok(outcome) => return Some(outcome),
                Err(_) if Instant::now() + pause < give_up => {
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(Duration::from_millis(500));
                }
                Err(_) => return None,
            }
        }
    }
}

/// Writes a leased request's end in a task of its own: a caller that leaves
/// mid-way (its future dropped) must not leave the request outstanding in
/// the book, nor its end unwritten. A task that stopped (it panicked) leaves
/// the outcome unknown to its caller.
async fn in_own_task<T: Send + 'static>(
    end: impl Future<Output = Result<T, SettleError>> + Send + 'static,
) -> Result<T, SettleError> {
    tokio::spawn(end).await.unwrap_or_else(|_| {
        Err(SettleError::Store(StoreError::Unavailable(
            "the task writing a leased request's end stopped".into(),
        )))
    })
}

/// What a background release does with a hold it finds no longer held
/// ([`Database::release_in_background`]).
#[derive(Clone, Copy)]
enum IfSettled {
    /// Leave it: released by another path, or a reservation that never
    /// reached a settlement.
    Leave,
    /// Reverse its settlement: the client was answered with an error
    /// while the settlement's outcome was unknown.
    Reverse,
}

/// The release of a settlement that could not be written: its request
/// fails with the answer it got (`service_unavailable`), and its attempt,
/// which the supplier served, is recorded as failed
/// (`settlement_unavailable`).
fn unanswered_settlement(request_id: Uuid, mut attempt: AttemptRecord) -> Voiding {
    attempt.outcome = router_core::store::AttemptOutcome::Failed {
        upstream_status: None,
        kind: "settlement_unavailable".into(),
        retryable: false,
    };
    Voiding {
        request_id,
        reason: "service_unavailable".into(),
        attempt: Some(attempt),
    }
}

/// A batch statement: `billing::reserve_batch_within` or
/// `billing::settle_batch_within`, with one output per item.
trait AsyncBatch<'c, Item: 'c, Out> {
    fn run(
        self,
        conn: &'c mut AsyncPgConnection,
        items: &'c [Item],
        bounds: &'c BatchBounds,
    ) -> impl Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c;
}

impl<'c, Item: 'c, Out, F, Fut> AsyncBatch<'c, Item, Out> for F
where
    F: FnOnce(&'c mut AsyncPgConnection, &'c [Item], &'c BatchBounds) -> Fut,
    Fut: Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c,
{
    fn run(
        self,
        conn: &'c mut AsyncPgConnection,
        items: &'c [Item],
        bounds: &'c BatchBounds,
    ) -> impl Future<Output = Result<Vec<Out>, StoreError>> + Send + 'c {
        self(conn, items, bounds)
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
