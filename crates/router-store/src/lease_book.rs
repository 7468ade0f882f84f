//! Credit leases, the in-process side (issue 34; the statements are in
//! [`crate::leases`]).
//!
//! With leases on, an instance holds, per busy account, one lease: part of
//! the wallet's available balance, held in PostgreSQL like any hold. A
//! request of a key without limits is then admitted by taking its
//! reservation from the lease's free part here, under one mutex, with no
//! round trip; its settlement still commits in PostgreSQL before the
//! response is sent (group-committed, [`crate::leases::settle_batch`]), and
//! writes the request's history row with it.
//!
//! The book keeps, per lease, `free + outstanding = the lease's amount in
//! the database`: a settlement lowers both sides by its charge and gives
//! the rest of its reservation back to `free`; a voiding gives it all back.
//!
//! The rules that keep the money exact:
//! - nothing is admitted beyond `free`, so a lease never pays for more than
//!   it holds, and a lease never holds more than the wallet had available;
//! - a lease is used only while its expiry, renewed in the background, is
//!   comfortably ahead, so a request never rides a lease the reaper may
//!   have released; a dead instance's leases return within their life;
//! - a request the lease cannot cover goes the direct way; if that is
//!   refused for credit while leases hold funds, every holder is asked to
//!   give its unused part back ([`crate::leases::RECALL_CHANNEL`]) and the
//!   request is retried, so no request is refused because funds sit in
//!   another instance's lease (no false 402); the retry also waits for the
//!   funds its own instance is moving (a lease being taken, topped up or
//!   given back), which come back to the wallet after a recall;
//! - while the change listener is down, recalls cannot be heard: no lease is
//!   used and their free parts go back.

use crate::Database;
use crate::leases::{self, LeasedRequest, LeasedSettlement};
use router_core::store::{AttemptRecord, NewRequest, ReserveError, StoreError};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};
use uuid::Uuid;

/// How leases are sized and kept (the `ROUTER_CREDIT_LEASE_*` settings).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSettings {
    /// A lease's life without renewal: a dead instance's leases go back to
    /// their wallets within it.
    pub ttl: Duration,
    /// The share of an account's available balance one lease takes, 1-100.
    pub share_percent: i64,
    /// A lease unused this long with nothing in flight is returned.
    pub idle: Duration,
    /// How long a request refused for credit waits for other instances to
    /// give leased funds back before its refusal stands.
    pub recall_wait: Duration,
    /// A lease is taken only when it covers at least this many of the
    /// reservations that asked for it: a small balance is not leased.
    pub min_requests: i64,
}

impl Default for LeaseSettings {
    fn default() -> Self {
        LeaseSettings {
            ttl: Duration::from_secs(30),
            share_percent: 25,
            idle: Duration::from_secs(10),
            recall_wait: Duration::from_secs(2),
            min_requests: 16,
        }
    }
}

/// Refusals a recall may lift: the wallet's, or a key's spend limit or
/// budget (funds committed to leases count against both).
fn recallable(refusal: &ReserveError) -> bool {
    matches!(
        refusal,
        ReserveError::InsufficientCredits
            | ReserveError::KeyLimit {
                limit: router_core::KeyLimit::Spend | router_core::KeyLimit::MonthlyBudget,
                ..
            }
    )
}

/// [`LeaseBook::recall`] of one lease of the book: one of `account_id`'s
/// drains and its free part goes to `recalled` (lease, amount, close it);
/// whether it stays in the book (requests still outstanding on it).
fn recall_lease(
    account_id: Uuid,
    key: &LeaseKey,
    lease: &mut Lease,
    recalled: &mut Vec<(Uuid, i64, bool)>,
) -> bool {
    if key.account_id != account_id {
        return true;
    }
    lease.draining = true;
    let free = std::mem::take(&mut lease.free);
    let close = lease.outstanding == 0;
    recalled.push((lease.id, free, close));
    !close
}

/// After a recall, or when nothing could be leased, the account is not
/// leased again for this long.
const COOLDOWN: Duration = Duration::from_secs(5);

/// One instance's leases and the requests admitted from them.
pub(crate) struct LeaseBook {
    settings: LeaseSettings,
    /// This instance, as written on its lease rows (for operators).
    holder: String,
    /// Whether recalls can be heard (the change listener is up).
    listening: AtomicBool,
    /// False after a statement found the database unavailable, until one
    /// succeeds: no lease admits a request whose end could not be written.
    healthy: AtomicBool,
    state: Mutex<State>,
}

/// Which lease a request rides: its account's (keys without limits), or
/// its key's own (a key whose only limits are on spend).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct LeaseKey {
    account_id: Uuid,
    api_key_id: Option<Uuid>,
}

impl LeaseKey {
    fn of(request: &NewRequest) -> LeaseKey {
        LeaseKey {
            account_id: request.account_id,
            api_key_id: request.key_limited.then_some(request.api_key_id),
        }
    }
}

#[derive(Default)]
struct State {
    /// Per account (and per key with spend limits), its lease.
    leases: HashMap<LeaseKey, Lease>,
    /// Draining leases replaced by a new one while requests were still
    /// outstanding on them, by lease id: they close when the last ends. A
    /// lease that drains (idle, recalled, unheard) must not keep its
    /// account from a new lease for as long as a long request runs.
    retired: HashMap<Uuid, (LeaseKey, Lease)>,
    /// Per request admitted from a lease, what its end must write.
    requests: HashMap<Uuid, LeasedRequest>,
    /// Leases being taken or topped up.
    busy: HashSet<LeaseKey>,
    /// Per account, this instance's lease operations in flight (taking,
    /// topping up, giving back): funds between the wallet and a lease that
    /// a refused request waits for (`Moving`).
    moving: HashMap<Uuid, usize>,
    /// Accounts not to lease until the instant.
    cooldown: HashMap<Uuid, Instant>,
    /// Leased requests whose end could not be written (the database was
    /// unavailable), with how they end if they were not settled: still
    /// outstanding on their lease until the keeper writes them.
    unresolved: HashMap<Uuid, router_core::store::Voiding>,
}

struct Lease {
    id: Uuid,
    /// A key's lease: the policy version it was sized under. A request
    /// admitted under another version (the key changed) does not use it.
    policy_version: Option<i64>,
    free: i64,
    outstanding: i64,
    /// What the lease aims to hold free: top-ups bring `free` back to it.
    target: i64,
    /// Past this the lease may be near its expiry in the database: it
    /// admits nothing more (renewals push it forward).
    usable_until: Instant,
    last_used: Instant,
    /// Recalled, idle or unheard: admits nothing, returns what comes back.
    draining: bool,
}

/// What admission found in the book.
pub(crate) enum Take {
    /// Reserved from the lease. `grow` is a top-up to start (lease, amount).
    Admitted { grow: Option<(Uuid, i64)> },
    /// Not from a lease; `acquire` says to take one for the account.
    Direct { acquire: bool },
}

/// One lease operation of this instance in flight for an account, counted
/// in the book until dropped. Taken before the operation's funds move, so a
/// refused request that finds none in flight knows no funds of its own
/// instance are on their way back.
struct Moving {
    book: Arc<LeaseBook>,
    account_id: Uuid,
}

impl Moving {
    fn begin(book: &Arc<LeaseBook>, state: &mut State, account_id: Uuid) -> Moving {
        *state.moving.entry(account_id).or_default() += 1;
        Moving {
            book: book.clone(),
            account_id,
        }
    }
}

impl Drop for Moving {
    fn drop(&mut self) {
        let mut state = self.book.state();
        if let Some(count) = state.moving.get_mut(&self.account_id) {
            *count -= 1;
            if *count == 0 {
                state.moving.remove(&self.account_id);
            }
        }
    }
}

/// Work the book asks for after a request ended.
enum Followup {
    Nothing,
    GiveBack(Uuid, i64),
    Close(Uuid),
}

impl LeaseBook {
    pub(crate) fn new(settings: LeaseSettings, holder: String) -> Self {
        LeaseBook {
            settings,
            holder,
            listening: AtomicBool::new(false),
            healthy: AtomicBool::new(true),
            state: Mutex::default(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic under the lock leaves plain numbers behind; keep serving.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts a lease operation for `account_id` from now until the guard
    /// is dropped.
    fn moving(self: &Arc<Self>, account_id: Uuid) -> Moving {
        Moving::begin(self, &mut self.state(), account_id)
    }

    /// Whether a lease operation of this instance is moving `account_id`'s
    /// funds.
    fn is_moving(&self, account_id: Uuid) -> bool {
        self.state().moving.contains_key(&account_id)
    }

    /// Admits `request` from its account's lease when the lease can cover
    /// it. Counts each answer by its reason
    /// (`router_credit_lease_admissions_total{outcome}`), so an operator
    /// sees why requests go to the database directly.
    pub(crate) fn take(&self, request: &NewRequest) -> Take {
        let (take, outcome) = self.take_counted(request);
        metrics::counter!("router_credit_lease_admissions_total", "outcome" => outcome)
            .increment(1);
        take
    }

    fn take_counted(&self, request: &NewRequest) -> (Take, &'static str) {
        if request.key_limited && !request.key_spend_only {
            return (Take::Direct { acquire: false }, "direct_key_limits");
        }
        if !self.listening.load(Ordering::Acquire) {
            return (Take::Direct { acquire: false }, "direct_not_listening");
        }
        if !self.healthy.load(Ordering::Acquire) {
            return (Take::Direct { acquire: false }, "direct_unresolved_ends");
        }
        let now = Instant::now();
        let amount = request.reserve.0;
        let key = LeaseKey::of(request);
        let mut state = self.state();
        let state = &mut *state;
        if let Some(lease) = state.leases.get_mut(&key)
            && lease
                .policy_version
                .is_some_and(|v| v != request.policy_version)
        {
            // The key changed since its lease was sized: it drains, and
            // the next lease is sized under the new limits.
            lease.draining = true;
        }
        if let Some(lease) = state.leases.get_mut(&key)
            && !lease.draining
            && now < lease.usable_until
        {
            if lease.free >= amount {
                lease.free -= amount;
                lease.outstanding += amount;
                lease.last_used = now;
                let lease_id = lease.id;
                let wanted = lease.target - lease.free;
                let grow = (lease.free < lease.target / 2 && state.busy.insert(key))
                    .then_some((lease_id, wanted));
                state.requests.insert(
                    request.request_id,
                    LeasedRequest {
                        lease_id,
                        request: request.clone(),
                        admitted_at: SystemTime::now(),
                        attempts: Vec::new(),
                    },
                );
                return (Take::Admitted { grow }, "leased");
            }
            // Too small for this one: top it up for the next, go direct now.
            let grow = state.busy.insert(key);
            return (Take::Direct { acquire: grow }, "direct_lease_too_small");
        }
        // A draining lease does not stop a new one (it retires when the new
        // one is taken); a stale one waits for its renewal.
        let existing = state.leases.get(&key).map(|lease| lease.draining);
        let cooling = state
            .cooldown
            .get(&request.account_id)
            .is_some_and(|until| now < *until);
        let acquire = existing != Some(false) && !cooling && state.busy.insert(key);
        let outcome = match (existing, cooling) {
            (Some(false), _) => "direct_lease_stale",
            (_, true) => "direct_cooling_down",
            (Some(true), false) => "direct_lease_draining",
            (None, false) => "direct_no_lease",
        };
        (Take::Direct { acquire }, outcome)
    }

    pub(crate) fn is_leased(&self, request_id: Uuid) -> bool {
        self.state().requests.contains_key(&request_id)
    }

    pub(crate) fn leased(&self, request_id: Uuid) -> Option<LeasedRequest> {
        self.state().requests.get(&request_id).cloned()
    }

    /// Keeps a failed attempt of a leased request until its end writes it;
    /// gives it back (`Some`) when the request is not leased.
    pub(crate) fn buffer_attempt(&self, attempt: AttemptRecord) -> Option<AttemptRecord> {
        match self.state().requests.get_mut(&attempt.request_id) {
            Some(leased) => {
                leased.attempts.push(attempt);
                None
            }
            None => Some(attempt),
        }
    }

    /// A leased request ended: `charge` when it was settled for that much,
    /// `None` when it was voided (or its write found the lease gone: then
    /// `lease_gone`).
    fn ended(&self, request_id: Uuid, charge: Option<i64>, lease_gone: bool) -> Followup {
        let mut state = self.state();
        let state = &mut *state;
        let Some(leased) = state.requests.remove(&request_id) else {
            return Followup::Nothing;
        };
        let key = LeaseKey::of(&leased.request);
        let lease = match state.leases.get_mut(&key) {
            Some(lease) if lease.id == leased.lease_id => Some(lease),
            _ => state
                .retired
                .get_mut(&leased.lease_id)
                .map(|(_, lease)| lease),
        };
        let Some(lease) = lease else {
            return Followup::Nothing;
        };
        let amount = leased.request.reserve.0;
        lease.outstanding -= amount;
        if lease_gone {
            // Released by the reaper: nothing of it is ours any more.
            lease.draining = true;
            lease.free = 0;
        } else {
            lease.free += amount - charge.unwrap_or(0);
        }
        if !lease.draining {
            return Followup::Nothing;
        }
        let id = lease.id;
        if lease.outstanding == 0 {
            if state.leases.get(&key).is_some_and(|l| l.id == id) {
                state.leases.remove(&key);
            } else {
                state.retired.remove(&id);
            }
            return if lease_gone {
                Followup::Nothing
            } else {
                Followup::Close(id)
            };
        }
        match std::mem::take(&mut lease.free) {
            0 => Followup::Nothing,
            free => Followup::GiveBack(id, free),
        }
    }

    fn acquired(
        &self,
        key: LeaseKey,
        policy_version: Option<i64>,
        lease_id: Uuid,
        amount: i64,
        usable_until: Instant,
    ) -> Followup {
        let mut state = self.state();
        state.busy.remove(&key);
        if amount == 0 {
            if key.api_key_id.is_none() {
                state
                    .cooldown
                    .insert(key.account_id, Instant::now() + COOLDOWN);
            }
            return Followup::Nothing;
        }
        // A recall arrived while this lease was being taken: it goes back at
        // once, or another instance would wait for funds it never hears of.
        let recalled = state
            .cooldown
            .get(&key.account_id)
            .is_some_and(|until| Instant::now() < *until);
        if recalled {
            return Followup::Close(lease_id);
        }
        if let Some(draining) = state.leases.remove(&key) {
            // Taken while the key's old lease drained: the old one closes
            // when its last request ends (or at the keeper's next pass).
            state.retired.insert(draining.id, (key, draining));
        }
        state.leases.insert(
            key,
            Lease {
                id: lease_id,
                policy_version,
                free: amount,
                outstanding: 0,
                target: amount,
                usable_until,
                last_used: Instant::now(),
                draining: false,
            },
        );
        Followup::Nothing
    }

    fn grown(&self, key: LeaseKey, lease_id: Uuid, added: i64) -> Followup {
        let mut state = self.state();
        state.busy.remove(&key);
        match state.leases.get_mut(&key) {
            Some(lease) if lease.id == lease_id => {
                lease.free += added;
                if lease.draining && lease.free > 0 {
                    let free = std::mem::take(&mut lease.free);
                    return Followup::GiveBack(lease_id, free);
                }
                Followup::Nothing
            }
            // The lease ended meanwhile: what was added goes back.
            _ if added > 0 => Followup::GiveBack(lease_id, added),
            _ => Followup::Nothing,
        }
    }

    /// Stops leasing `account_id` for a while and takes the free parts of
    /// its leases (the account's and its keys') out of the book: per lease,
    /// (lease, amount to give back, close it).
    ///
    /// The guard counts the give-back from the moment the free parts leave
    /// the book, under the same lock, so a concurrent refusal that finds
    /// nothing left to take still sees the funds on their way.
    fn recall(self: &Arc<Self>, account_id: Uuid) -> (Vec<(Uuid, i64, bool)>, Moving) {
        let mut state = self.state();
        state.cooldown.insert(account_id, Instant::now() + COOLDOWN);
        let mut recalled = Vec::new();
        let state = &mut *state;
        state
            .leases
            .retain(|key, lease| recall_lease(account_id, key, lease, &mut recalled));
        state
            .retired
            .retain(|_, (key, lease)| recall_lease(account_id, key, lease, &mut recalled));
        let moving = Moving::begin(self, state, account_id);
        (recalled, moving)
    }

    /// Every key's lease drains (a key changed: the next lease of each is
    /// sized under its new limits); their free parts to give back.
    fn drain_key_leases(&self) -> Vec<(Uuid, i64)> {
        let mut state = self.state();
        let mut drained = Vec::new();
        for (key, lease) in state.leases.iter_mut() {
            if key.api_key_id.is_some() && !lease.draining {
                lease.draining = true;
                drained.push((lease.id, std::mem::take(&mut lease.free)));
            }
        }
        drained
    }

    fn unresolved(&self, voiding: router_core::store::Voiding) {
        self.healthy.store(false, Ordering::Release);
        self.state().unresolved.insert(voiding.request_id, voiding);
    }

    fn take_unresolved(&self) -> Vec<(LeasedRequest, router_core::store::Voiding)> {
        let mut state = self.state();
        let ids: Vec<Uuid> = state.unresolved.keys().copied().collect();
        ids.into_iter()
            .filter_map(|id| {
                let voiding = state.unresolved.remove(&id)?;
                let leased = state.requests.get(&id)?.clone();
                Some((leased, voiding))
            })
            .collect()
    }

    /// The key's lease that admits requests (not a draining one), to top up.
    fn own_lease(&self, key: LeaseKey) -> Option<Uuid> {
        self.state()
            .leases
            .get(&key)
            .filter(|l| !l.draining)
            .map(|l| l.id)
    }

    /// The keeper's pass: leases to renew, and leases to close (idle or
    /// draining with nothing in flight). When recalls cannot be heard,
    /// every lease drains.
    fn keeper_pass(&self) -> (Vec<Uuid>, Vec<Uuid>, Vec<(Uuid, i64)>) {
        let listening = self.listening.load(Ordering::Acquire);
        let now = Instant::now();
        let mut state = self.state();
        let (mut renew, mut close, mut give_back) = (Vec::new(), Vec::new(), Vec::new());
        state.leases.retain(|_, lease| {
            if !listening || now.duration_since(lease.last_used) >= self.settings.idle {
                lease.draining = true;
            }
            if lease.draining && lease.outstanding == 0 {
                close.push(lease.id);
                return false;
            }
            if lease.draining && lease.free > 0 {
                give_back.push((lease.id, std::mem::take(&mut lease.free)));
            }
            renew.push(lease.id);
            true
        });
        state.retired.retain(|_, (_, lease)| {
            if lease.outstanding == 0 {
                close.push(lease.id);
                return false;
            }
            if lease.free > 0 {
                give_back.push((lease.id, std::mem::take(&mut lease.free)));
            }
            renew.push(lease.id);
            true
        });
        (renew, close, give_back)
    }

    fn renewed(&self, ids: &[Uuid], usable_until: Instant) {
        let mut state = self.state();
        for lease in state.leases.values_mut() {
            if ids.contains(&lease.id) {
                lease.usable_until = lease.usable_until.max(usable_until);
            }
        }
    }

    /// How much this instance holds in leases (free and in flight), for tests
    /// and metrics.
    pub(crate) fn held(&self) -> i64 {
        let state = self.state();
        let retired = state.retired.values().map(|(_, lease)| lease);
        state
            .leases
            .values()
            .chain(retired)
            .map(|l| l.free + l.outstanding)
            .sum()
    }
}

impl crate::listener::Subscriber for LeaseRecalls {
    fn channel(&self) -> &'static str {
        leases::RECALL_CHANNEL
    }

    fn notified(&self, payload: &str) {
        let Ok(account_id) = payload.parse::<Uuid>() else {
            tracing::warn!(payload = %payload, "unreadable lease recall");
            return;
        };
        let database = self.0.clone();
        tokio::spawn(async move { database.answer_recall(account_id).await });
    }

    fn set_listening(&self, listening: bool) {
        if let Some(book) = self.0.lease_book() {
            book.listening.store(listening, Ordering::Release);
        }
    }
}

/// The listener's handle on the leases: recalls are answered through the
/// database.
pub(crate) struct LeaseRecalls(pub(crate) Database);

/// Key changes reach the leases too: a key's lease is sized under its
/// limits, so every key's lease drains when a key changes (key changes are
/// rare; the next lease of each key is sized afresh).
pub(crate) struct KeyChanges(pub(crate) Database);

impl crate::listener::Subscriber for KeyChanges {
    fn channel(&self) -> &'static str {
        crate::api_keys::API_KEY_CHANGED_CHANNEL
    }

    fn notified(&self, _payload: &str) {
        let Some(book) = self.0.lease_book() else {
            return;
        };
        let drained = book.drain_key_leases();
        if drained.is_empty() {
            return;
        }
        let database = self.0.clone();
        tokio::spawn(async move {
            for (lease_id, free) in drained {
                database.follow_up(Followup::GiveBack(lease_id, free)).await;
            }
        });
    }

    fn set_listening(&self, _listening: bool) {}
}

impl Database {
    /// Turns credit leases on for this instance (see the module docs): its
    /// reservations of keys without limits, and of keys whose only limits
    /// are on spend, are taken from leases while the change listener is up.
    /// Starts the keeper, which renews, tops up and returns leases.
    pub async fn enable_credit_leases(&self, settings: LeaseSettings) -> Result<(), StoreError> {
        // Unique per instance, also for two instances in one process.
        let holder = format!(
            "{}:{}:{}",
            std::env::var("HOSTNAME").unwrap_or_else(|_| "router".into()),
            std::process::id(),
            &Uuid::new_v4().simple().to_string()[..8]
        );
        let book = Arc::new(LeaseBook::new(settings, holder));
        if self.leases.set(book).is_err() {
            return Ok(());
        }
        crate::listener::start(
            self.url(),
            vec![
                Arc::new(LeaseRecalls(self.clone())),
                Arc::new(KeyChanges(self.clone())),
            ],
        )
        .await?;
        let database = self.clone();
        tokio::spawn(async move { database.keep_leases().await });
        Ok(())
    }

    pub(crate) fn lease_book(&self) -> Option<&Arc<LeaseBook>> {
        self.leases.get()
    }

    /// What this instance holds in credit leases, in nano-USD (0 without them).
    pub fn leased_nano(&self) -> i64 {
        self.lease_book().map_or(0, |book| book.held())
    }

    /// Admission with leases on: from the lease, or the direct way (with a
    /// recall when that is refused for credit, or by a key's spend limit or
    /// budget, while leases hold funds).
    pub(crate) async fn reserve_with_leases(
        &self,
        book: &Arc<LeaseBook>,
        request: NewRequest,
    ) -> Result<(), ReserveError> {
        let key = LeaseKey::of(&request);
        let policy = request.key_limited.then_some(request.policy_version);
        match book.take(&request) {
            Take::Admitted { grow } => {
                if let Some((lease_id, wanted)) = grow {
                    let database = self.clone();
                    let moving = book.moving(key.account_id);
                    tokio::spawn(async move {
                        database.grow_lease(key, policy, lease_id, wanted).await;
                        drop(moving);
                    });
                }
                Ok(())
            }
            Take::Direct { acquire } => {
                let amount = request.reserve.0;
                let reserved = match self.reserve_direct(request.clone()).await {
                    Err(refusal) if recallable(&refusal) => {
                        self.reserve_after_recall(book, request).await
                    }
                    Err(ReserveError::Store(StoreError::Unavailable(cause))) => {
                        // Leased admissions stop until the database answers
                        // again: their ends could not be written.
                        book.healthy.store(false, Ordering::Release);
                        Err(ReserveError::Store(StoreError::Unavailable(cause)))
                    }
                    other => other,
                };
                // After this request's own hold: the lease is sized from
                // what is left, and takes nothing this request needed.
                if acquire {
                    let database = self.clone();
                    let moving = book.moving(key.account_id);
                    match book.own_lease(key) {
                        Some(lease_id) => {
                            let wanted = amount.saturating_mul(book.settings.min_requests);
                            tokio::spawn(async move {
                                database.grow_lease(key, policy, lease_id, wanted).await;
                                drop(moving);
                            });
                        }
                        None => {
                            tokio::spawn(async move {
                                database.acquire_lease(key, policy, amount).await;
                                drop(moving);
                            });
                        }
                    }
                }
                reserved
            }
        }
    }

    /// A direct reservation was refused for credit (or by a key's spend
    /// limit or budget): asks every lease of the account to give its unused
    /// part back, and retries until it is admitted, no lease of the account
    /// holds unanswered funds and no lease operation of this instance is
    /// moving the account's funds, or the recall wait is over; the last
    /// retry's refusal is the answer.
    async fn reserve_after_recall(
        &self,
        book: &Arc<LeaseBook>,
        request: NewRequest,
    ) -> Result<(), ReserveError> {
        let account_id = request.account_id;
        self.answer_recall(account_id).await;
        let others = self
            .bounded("a lease count", async {
                let mut conn = self.connection().await?;
                leases::unanswered(&mut conn, account_id, &book.holder, None).await
            })
            .await?;
        let asked = if others > 0 {
            let asked = self
                .bounded("a lease recall", async {
                    let mut conn = self.connection().await?;
                    leases::recall(&mut conn, account_id).await
                })
                .await?;
            Some(asked)
        } else {
            None
        };
        // At least one retry, whatever was found: funds may have come back
        // (given back here, or by another instance) since the refusal. The
        // retries go on while another instance's lease has not answered, or
        // while a lease operation of this instance (taking or topping up a
        // lease, or another request giving one back) moves the account's
        // funds: they reach the wallet after the recall, as the cooldown
        // closes a lease taken meanwhile. Both are read before the retry,
        // so the last retry comes after what they waited for.
        let give_up = Instant::now() + book.settings.recall_wait;
        let mut pause = Duration::from_millis(5);
        loop {
            let unanswered = match asked {
                Some(asked) => {
                    self.bounded("a lease count", async {
                        let mut conn = self.connection().await?;
                        leases::unanswered(&mut conn, account_id, &book.holder, Some(asked)).await
                    })
                    .await?
                }
                None => 0,
            };
            let moving = book.is_moving(account_id);
            match self.reserve_direct(request.clone()).await {
                Err(refusal)
                    if recallable(&refusal)
                        && (unanswered > 0 || moving)
                        && Instant::now() < give_up => {}
                other => return other,
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_millis(200));
        }
    }

    /// Gives this instance's unused lease funds of `account_id` (its own
    /// lease and its keys') back (a recall, from another instance or this
    /// one) and stops leasing the account for a while.
    pub(crate) async fn answer_recall(&self, account_id: Uuid) {
        let Some(book) = self.lease_book() else {
            return;
        };
        // Counted as moving until the last statement below has answered.
        let (recalled, _moving) = book.recall(account_id);
        if recalled.is_empty() {
            return;
        }
        let answering = self.bounded("a lease recall's answer", async {
            let mut conn = self.connection().await?;
            for (lease_id, free, close) in recalled {
                let answered = match leases::give_back(&mut conn, lease_id, free, true).await {
                    Ok(_) if close => leases::close(&mut conn, lease_id).await.map(|_| true),
                    other => other,
                };
                if let Err(error) = answered {
                    tracing::warn!(%error, "lease recall not answered");
                }
            }
            Ok::<_, StoreError>(())
        });
        if let Err(error) = answering.await {
            tracing::warn!(%error, "lease recall not answered");
        }
    }

    async fn acquire_lease(&self, key: LeaseKey, policy_version: Option<i64>, reservation: i64) {
        let Some(book) = self.lease_book() else {
            return;
        };
        let lease_id = Uuid::now_v7();
        let started = Instant::now();
        let new = leases::NewLease {
            lease_id,
            account_id: key.account_id,
            key: key.api_key_id.zip(policy_version),
            holder: &book.holder,
            share_percent: book.settings.share_percent,
            minimum: reservation.saturating_mul(book.settings.min_requests),
            expires_at: SystemTime::now() + book.settings.ttl,
        };
        let acquired = match self.connection().await {
            Ok(mut conn) => leases::acquire(&mut conn, &new).await,
            Err(error) => Err(error),
        };
        let amount = acquired.unwrap_or_else(|error| {
            tracing::debug!(%error, "no lease taken");
            0
        });
        let followup = book.acquired(
            key,
            policy_version,
            lease_id,
            amount,
            started + book.settings.ttl / 2,
        );
        self.follow_up(followup).await;
    }

    async fn grow_lease(
        &self,
        key: LeaseKey,
        policy_version: Option<i64>,
        lease_id: Uuid,
        wanted: i64,
    ) {
        let Some(book) = self.lease_book() else {
            return;
        };
        let started = Instant::now();
        let added = match self.connection().await {
            Ok(mut conn) => leases::grow(
                &mut conn,
                lease_id,
                key.api_key_id.zip(policy_version),
                wanted.max(0),
                book.settings.share_percent,
                SystemTime::now() + book.settings.ttl,
            )
            .await
            .unwrap_or(0),
            Err(_) => 0,
        };
        if added > 0 {
            book.renewed(&[lease_id], started + book.settings.ttl / 2);
        }
        let followup = book.grown(key, lease_id, added);
        self.follow_up(followup).await;
    }

    async fn follow_up(&self, followup: Followup) {
        let outcome = match followup {
            Followup::Nothing => return,
            Followup::GiveBack(lease_id, amount) => {
                self.bounded("a lease's give-back", async {
                    let mut conn = self.connection().await?;
                    leases::give_back(&mut conn, lease_id, amount, false)
                        .await
                        .map(|_| ())
                })
                .await
            }
            Followup::Close(lease_id) => {
                self.bounded("a lease's close", async {
                    let mut conn = self.connection().await?;
                    leases::close(&mut conn, lease_id).await.map(|_| ())
                })
                .await
            }
        };
        if let Err(error) = outcome {
            // The lease keeps the funds until it expires and is reaped.
            tracing::warn!(%error, "lease funds not given back");
        }
    }

    /// At shutdown, after the drain: no more admissions from leases, and
    /// every lease goes back to its wallet now instead of at its expiry
    /// (one with a request still outstanding gives back its free part; the
    /// reaper returns the rest after the lease's life). How many leases
    /// were returned.
    pub async fn return_credit_leases(&self) -> usize {
        let Some(book) = self.lease_book() else {
            return 0;
        };
        book.listening.store(false, Ordering::Release);
        let (_renew, close, give_back) = book.keeper_pass();
        let returned = close.len();
        for (lease_id, amount) in give_back {
            self.follow_up(Followup::GiveBack(lease_id, amount)).await;
        }
        for lease_id in close {
            self.follow_up(Followup::Close(lease_id)).await;
        }
        returned
    }

    /// Renews, returns and closes leases every quarter of their life.
    async fn keep_leases(self) {
        let Some(book) = self.lease_book().cloned() else {
            return;
        };
        let every = (book.settings.ttl / 4).max(Duration::from_millis(100));
        loop {
            tokio::time::sleep(every).await;
            self.resolve_unwritten(&book).await;
            let (renew, close, give_back) = book.keeper_pass();
            for (lease_id, amount) in give_back {
                self.follow_up(Followup::GiveBack(lease_id, amount)).await;
            }
            for lease_id in close {
                self.follow_up(Followup::Close(lease_id)).await;
            }
            if renew.is_empty() {
                if !book.healthy.load(Ordering::Acquire)
                    && book.state().unresolved.is_empty()
                    && self.ping().await.is_ok()
                {
                    book.healthy.store(true, Ordering::Release);
                }
                continue;
            }
            let started = Instant::now();
            let renewed = match self.connection().await {
                Ok(mut conn) => {
                    leases::renew(&mut conn, &renew, SystemTime::now() + book.settings.ttl).await
                }
                Err(error) => Err(error),
            };
            match renewed {
                Ok(_) => {
                    book.renewed(&renew, started + book.settings.ttl / 2);
                    if book.state().unresolved.is_empty() {
                        book.healthy.store(true, Ordering::Release);
                    }
                }
                Err(error) => tracing::warn!(%error, "leases not renewed"),
            }
        }
    }

    /// Writes the ends of leased requests that could not be written when
    /// they ended, whose clients were answered with an error: failed, or
    /// settled after all (the commit's answer was lost), whose charge is
    /// then reversed ([`crate::billing::reverse_unanswered_settlement`]:
    /// the client saw no success). Until then their reservations stay
    /// outstanding.
    async fn resolve_unwritten(&self, book: &LeaseBook) {
        for (leased, voiding) in book.take_unresolved() {
            let request_id = leased.request.request_id;
            let written = match self.connection().await {
                Ok(mut conn) => {
                    match crate::billing::settlement_outcome(&mut conn, request_id).await {
                        Ok(Some((status, charged))) if status == "settled" => {
                            // The lease keeps the charge apart either way:
                            // its amount went down with the settlement, and
                            // the reversal gives the charge to the wallet.
                            crate::billing::reverse_unanswered_settlement(&mut conn, request_id)
                                .await
                                .map(|_| charged)
                        }
                        Ok(Some(_)) => Ok(None),
                        Ok(None) => leases::void(&mut conn, &leased, &voiding)
                            .await
                            .map(|_| None),
                        Err(error) => Err(error),
                    }
                }
                Err(error) => Err(error),
            };
            match written {
                Ok(charged) => {
                    let followup = book.ended(request_id, charged.or(None), false);
                    self.follow_up(followup).await;
                }
                Err(_) => book.unresolved(voiding),
            }
        }
    }

    /// Settles a request admitted from a lease (see [`leases::settle_batch`]).
    pub(crate) async fn settle_leased(
        &self,
        book: &LeaseBook,
        leased: LeasedRequest,
        settlement: router_core::store::Settlement,
    ) -> Result<router_canonical::NanoUsd, router_core::store::SettleError> {
        use router_core::store::SettleError;
        crate::billing::check_settlement(&settlement)?;
        let request_id = settlement.request_id;
        let item = LeasedSettlement { leased, settlement };
        let mut outcome = self.leased_settlements.submit(item.clone()).await;
        if let Some(Err(error)) = &outcome
            && crate::bounds::is_lock_timeout(error)
        {
            let error = error.clone();
            // Its wallet row is locked: waited out alone (Database::lock_turn).
            outcome = Some(self.settle_leased_alone(&item, error).await);
        }
        let outcome = match outcome {
            Some(Err(error @ StoreError::Unavailable(_))) => {
                self.leased_settlement_outcome(request_id, error).await
            }
            Some(outcome) => outcome,
            None => Err(StoreError::Unavailable("batching stopped".into())),
        };
        match outcome {
            Ok(Some(charge)) => {
                let followup = book.ended(request_id, Some(charge.0), false);
                self.follow_up(followup).await;
                Ok(charge)
            }
            Ok(None) => {
                // The lease was released (it expired while the database was
                // away, and the reaper took it back) or the request was
                // already written: nothing is charged, and the request still
                // gets its history row, as failed (a no-op if it has one).
                if let Some(leased) = book.leased(request_id) {
                    let voiding = router_core::store::Voiding {
                        request_id,
                        reason: "service_unavailable".into(),
                        attempt: None,
                    };
                    let written = self
                        .bounded("a leased request's row", async {
                            let mut conn = self.connection().await?;
                            leases::void(&mut conn, &leased, &voiding).await
                        })
                        .await;
                    if let Err(error) = written {
                        tracing::warn!(%error, %request_id, "a leased request's row not written");
                    }
                }
                let followup = book.ended(request_id, None, true);
                self.follow_up(followup).await;
                Err(SettleError::NotReserved(request_id))
            }
            // Not known to be settled, and core leaves a failed commit to
            // the reaper: the keeper writes its end once it can.
            Err(error) => {
                book.unresolved(router_core::store::Voiding {
                    request_id,
                    reason: "service_unavailable".into(),
                    attempt: None,
                });
                Err(error.into())
            }
        }
    }

    /// Voids a request admitted from a lease: its rows are written, and its
    /// reservation goes back to the lease.
    pub(crate) async fn void_leased(
        &self,
        book: &LeaseBook,
        leased: LeasedRequest,
        voiding: &router_core::store::Voiding,
    ) -> Result<(), router_core::store::SettleError> {
        let request_id = leased.request.request_id;
        let written = self
            .bounded("a leased release", async {
                let mut conn = self.connection().await?;
                leases::void(&mut conn, &leased, voiding).await
            })
            .await;
        if let Err(error) = written {
            // Nothing was charged, but its rows are not written yet: the
            // keeper writes them once it can.
            book.unresolved(voiding.clone());
            return Err(error.into());
        }
        // Nothing was charged: the reservation is free again (the lease's
        // amount in the database never counted it apart).
        let followup = book.ended(request_id, None, false);
        self.follow_up(followup).await;
        match written {
            Ok(true) => Ok(()),
            _ => Err(router_core::store::SettleError::NotReserved(request_id)),
        }
    }

    /// Whether a leased settlement whose commit went unanswered was
    /// written: its history row tells ([`Database::read_settlement_outcome`]).
    /// No row means not settled, and the request stays leased.
    async fn leased_settlement_outcome(
        &self,
        request_id: Uuid,
        error: StoreError,
    ) -> Result<Option<router_canonical::NanoUsd>, StoreError> {
        match self.read_settlement_outcome(request_id).await {
            Some(Some((status, charged))) if status == "settled" => {
                Ok(Some(router_canonical::NanoUsd(charged.unwrap_or(0))))
            }
            _ => Err(error),
        }
    }
}
