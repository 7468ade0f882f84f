//! The attempt loop against scripted suppliers and an in-memory ledger,
//! with tokio's clock paused so deadlines and Retry-After are exact.
//! (Integration tests of the real server use PostgreSQL; this checks the
//! policy in isolation: G-01, G-03..G-17, GP-47.)

#![expect(clippy::unwrap_used)] // test harness code: a panic is a test failure

use futures::stream;
use router_canonical::{
    ApiError, ErrorCode, Message, NanoUsd, OutputBlock, Protocol, Request, Response, Role,
    StopReason, StreamEvent, Usage,
};
use router_core::gateway::Admission;
use router_core::product_codes;
use router_core::store::*;
use router_core::{
    AttemptError, Catalog, Gateway, GatewayConfig, Outcome, Route, SealKey, StreamItem,
    SupplierReply, Suppliers,
};
use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// The pipeline's upload step, counting the requests it was asked to
/// resolve (these tests reference no upload).
#[derive(Default)]
struct CountingUploads(std::sync::atomic::AtomicU32);

impl router_core::UploadReferences for CountingUploads {
    async fn resolve_references(
        &self,
        _: Uuid,
        _: bool,
        _: &mut router_canonical::Request,
    ) -> Result<(), router_canonical::ApiError> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    }
}

#[derive(Default)]
struct Ledger {
    balance: i64,
    held: i64,
    holds: HashMap<Uuid, (i64, &'static str)>,
    charged: i64,
    /// The cost each settlement handed the store, before its cap.
    reported: Vec<i64>,
    attempts: Vec<AttemptRecord>,
    /// How long the reply to a reservation takes after the store committed it.
    reserve_reply_delay: Duration,
}

#[derive(Clone, Default)]
struct MemoryStore(Arc<Mutex<Ledger>>);

impl Store for MemoryStore {
    async fn find_api_key(&self, _key_hash: [u8; 32]) -> Result<Option<ApiKeyRecord>, StoreError> {
        Ok(None)
    }
    async fn reserve(&self, request: NewRequest) -> Result<(), ReserveError> {
        let delay = {
            let mut l = self.0.lock().unwrap();
            if l.balance - l.held < request.reserve.0 {
                return Err(ReserveError::InsufficientCredits);
            }
            l.held += request.reserve.0;
            l.holds
                .insert(request.request_id, (request.reserve.0, "held"));
            l.reserve_reply_delay
        };
        // Committed; the answer is still on its way back.
        tokio::time::sleep(delay).await;
        Ok(())
    }
    async fn extend_hold(
        &self,
        _id: Uuid,
        _until: std::time::SystemTime,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    async fn record_attempt(&self, attempt: AttemptRecord) -> Result<(), StoreError> {
        self.0.lock().unwrap().attempts.push(attempt);
        Ok(())
    }
    async fn settle(&self, s: Settlement) -> Result<NanoUsd, SettleError> {
        let mut l = self.0.lock().unwrap();
        let (amount, status) = *l.holds.get(&s.request_id).unwrap();
        if status != "held" {
            return Err(SettleError::NotReserved(s.request_id));
        }
        // The hold is a ceiling (I4), as in the PostgreSQL store.
        l.reported.push(s.reported.0);
        let charge = s.reported.0.min(amount);
        l.holds.insert(s.request_id, (amount, "settled"));
        l.held -= amount;
        l.balance -= charge;
        l.charged += charge;
        l.attempts.push(s.attempt);
        Ok(NanoUsd(charge))
    }
    async fn void(&self, v: Voiding) -> Result<(), SettleError> {
        let mut l = self.0.lock().unwrap();
        let (amount, status) = *l.holds.get(&v.request_id).unwrap();
        if status != "held" {
            return Err(SettleError::NotReserved(v.request_id));
        }
        l.holds.insert(v.request_id, (amount, "released"));
        l.held -= amount;
        l.attempts.extend(v.attempt);
        Ok(())
    }
    async fn thinking_seal_key(&self, candidate: Vec<u8>) -> Result<Vec<u8>, StoreError> {
        Ok(candidate)
    }
    // Holds here carry no expiry: no process dies under these tests.
    async fn reap_expired_holds(&self, _now: std::time::SystemTime) -> Result<u64, StoreError> {
        Ok(0)
    }
    async fn ping(&self) -> Result<(), StoreError> {
        Ok(())
    }
}

// The pipeline's policies find nothing stored and keep nothing.
impl ExperimentStore for MemoryStore {
    async fn experiment(
        &self,
        _account_id: Uuid,
        _slug: &str,
    ) -> Result<Option<Arc<router_core::Experiment>>, StoreError> {
        Ok(None)
    }
}

impl AffinityStore for MemoryStore {
    async fn affinity_hint(&self, _: &[u8; 32]) -> Result<Option<AffinityHint>, StoreError> {
        Ok(None)
    }
    async fn record_affinity(
        &self,
        _: &[u8; 32],
        _: &str,
        _: i32,
        _: bool,
    ) -> Result<(), StoreError> {
        Ok(())
    }
    async fn purge_affinity(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

impl ResponseCacheStore for MemoryStore {
    async fn cached_response(
        &self,
        _: Uuid,
        _: &[u8; 32],
        _: i32,
    ) -> Result<Option<Response>, StoreError> {
        Ok(None)
    }
    async fn cache_response(&self, _: Uuid, _: &[u8; 32], _: &Response) -> Result<(), StoreError> {
        Ok(())
    }
    async fn record_cache_hit(&self, _: &CacheHit) -> Result<(), StoreError> {
        Ok(())
    }
    async fn purge_response_cache(&self) -> Result<u64, StoreError> {
        Ok(0)
    }
}

#[derive(Clone)]
enum Step {
    Ok(u64, u64),
    Fail(AttemptError),
    Hang,
    Stream(Vec<Result<StreamEvent, AttemptError>>),
}

#[derive(Clone, Default)]
struct ScriptedSuppliers {
    scripts: Arc<Mutex<HashMap<String, VecDeque<Step>>>>,
    calls: Arc<Mutex<Vec<(String, Instant)>>>,
}

impl ScriptedSuppliers {
    fn push(&self, route: &str, step: Step) {
        self.scripts
            .lock()
            .unwrap()
            .entry(route.to_owned())
            .or_default()
            .push_back(step);
    }
    fn calls(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(r, _)| r.clone())
            .collect()
    }
}

fn reply(input: u64, output: u64) -> Response {
    Response {
        id: "up-1".into(),
        model: "upstream".into(),
        output: vec![OutputBlock::Text { text: "hi".into() }],
        stop_reason: StopReason::EndTurn,
        stop_sequence: None,
        usage: Usage {
            input_tokens: input,
            output_tokens: output,
            ..Default::default()
        },
        created: 0,
    }
}

impl Suppliers for ScriptedSuppliers {
    async fn attempt(
        &self,
        route: &Route,
        _request: &Request,
        _encoding: router_core::Encoding,
        _deadline: Instant,
        _call: &router_core::AttemptCall,
    ) -> Result<SupplierReply, AttemptError> {
        self.calls
            .lock()
            .unwrap()
            .push((route.id.clone(), Instant::now()));
        let step = self
            .scripts
            .lock()
            .unwrap()
            .get_mut(&route.id)
            .and_then(VecDeque::pop_front)
            .unwrap_or(Step::Ok(10, 10));
        match step {
            Step::Ok(i, o) => Ok(SupplierReply::Complete(reply(i, o))),
            Step::Fail(e) => Err(e),
            Step::Hang => std::future::pending().await,
            Step::Stream(events) => Ok(SupplierReply::Stream(Box::pin(stream::iter(events)))),
        }
    }
}

const CATALOG: &str = r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "fixed"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 100

[[models]]
id = "supply"
pricing = "supply"
max_output_tokens = 100

[[routes]]
id = "fixed-primary"
model = "fixed"
supplier = "s"
upstream_model = "a"
protocol = "chat"
capabilities = ["streaming"]
priority = 10
internal_cost = { input = 900, output = 900 }

[[routes]]
id = "fixed-cheap"
model = "fixed"
supplier = "s"
upstream_model = "b"
protocol = "chat"
capabilities = ["streaming", "stop"]
priority = 5
internal_cost = { input = 100, output = 100 }

[[routes]]
id = "fixed-pricey"
model = "fixed"
supplier = "s"
upstream_model = "c"
protocol = "chat"
capabilities = ["streaming", "stop"]
priority = 5
internal_cost = { input = 500, output = 500 }

[[routes]]
id = "supply-a"
model = "supply"
supplier = "s"
upstream_model = "a"
protocol = "chat"
priority = 10
internal_cost = { input = 1, output = 1 }
quote = { input = 1_000_000_000, output = 1_000_000_000 }

[[routes]]
id = "supply-b"
model = "supply"
supplier = "s"
upstream_model = "b"
protocol = "chat"
priority = 5
internal_cost = { input = 1, output = 1 }
quote = { input = 3_000_000_000, output = 3_000_000_000 }
"#;

struct Harness {
    gateway: Gateway<MemoryStore, ScriptedSuppliers>,
    store: MemoryStore,
    suppliers: ScriptedSuppliers,
}

fn harness(balance: i64) -> Harness {
    let catalog = Arc::new(Catalog::from_toml(CATALOG, |_| None).unwrap());
    let store = MemoryStore::default();
    store.0.lock().unwrap().balance = balance;
    let suppliers = ScriptedSuppliers::default();
    let config = GatewayConfig {
        deadline: Duration::from_secs(180),
        ..GatewayConfig::default()
    };
    Harness {
        gateway: Gateway::new(
            catalog,
            store.clone(),
            suppliers.clone(),
            config,
            SealKey::generate().unwrap(),
        ),
        store,
        suppliers,
    }
}

fn request(model: &str) -> Request {
    Request {
        model: model.into(),
        messages: vec![Message::text(Role::User, "hello")],
        ..Default::default()
    }
}

fn admission() -> Admission {
    Admission {
        zdr: false,
        preferred_route: None,
        request_id: Uuid::new_v4(),
        requester: Requester {
            account_id: Uuid::new_v4(),
            api_key_id: Uuid::new_v4(),
            policy_version: 0,
            key_limited: false,
            key_spend_only: true,
        },
        inbound: Protocol::Chat,
        experiment: None,
        trace: router_core::RequestTrace::new(),
    }
}

async fn run(h: &Harness, req: Request) -> Result<(String, i64), ApiError> {
    match h.gateway.run(admission(), req.into()).await? {
        Outcome::Complete { response, cost } => Ok((response.text(), cost.0)),
        Outcome::Stream(_) => panic!("unexpected stream"),
    }
}

const RICH: i64 = 1_000_000_000_000;

#[tokio::test(start_paused = true)]
async fn priority_first_then_cheaper_internal_cost() {
    let h = harness(RICH);
    run(&h, request("fixed")).await.unwrap();
    assert_eq!(h.suppliers.calls(), ["fixed-primary"]);
    // Stop excludes the primary (no `stop` capability); the cheaper of equal priority wins (G-01).
    let mut req = request("fixed");
    req.sampling.stop = vec!["END".into()];
    run(&h, req).await.unwrap();
    assert_eq!(h.suppliers.calls(), ["fixed-primary", "fixed-cheap"]);
}

#[tokio::test(start_paused = true)]
async fn two_attempts_per_route_then_fallback_one_reservation() {
    let h = harness(RICH);
    h.suppliers
        .push("fixed-primary", Step::Fail(AttemptError::status(500, None)));
    h.suppliers
        .push("fixed-primary", Step::Fail(AttemptError::status(503, None)));
    let (_, cost) = run(&h, request("fixed")).await.unwrap();
    assert_eq!(
        h.suppliers.calls(),
        ["fixed-primary", "fixed-primary", "fixed-cheap"]
    );
    // Fixed price: 10 in + 10 out at 1 and 2 USD/MTok = 30_000 nano (G-04).
    assert_eq!(cost, 30_000);
    let l = h.store.0.lock().unwrap();
    assert_eq!(l.holds.len(), 1);
    assert_eq!((l.held, l.charged), (0, 30_000));
    assert_eq!(
        l.attempts.iter().map(|a| a.attempt_no).collect::<Vec<_>>(),
        [1, 2, 3]
    );
}

#[tokio::test(start_paused = true)]
async fn retryable_statuses_retry_on_the_same_route() {
    for status in [404, 408, 409, 425, 429, 500, 502, 503, 504] {
        let h = harness(RICH);
        h.suppliers.push(
            "fixed-primary",
            Step::Fail(AttemptError::status(status, None)),
        );
        run(&h, request("fixed")).await.unwrap();
        assert_eq!(
            h.suppliers.calls(),
            ["fixed-primary", "fixed-primary"],
            "status {status}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn rejections_move_to_the_next_route_and_end_as_upstream_error() {
    for status in [400, 401, 403, 422] {
        let h = harness(RICH);
        for route in ["fixed-primary", "fixed-cheap", "fixed-pricey"] {
            h.suppliers
                .push(route, Step::Fail(AttemptError::status(status, None)));
        }
        let err = run(&h, request("fixed")).await.unwrap_err();
        assert_eq!(err.code, ErrorCode::UpstreamError);
        assert_eq!(
            h.suppliers.calls(),
            ["fixed-primary", "fixed-cheap", "fixed-pricey"],
            "status {status}"
        );
        let l = h.store.0.lock().unwrap();
        assert_eq!((l.held, l.charged), (0, 0));
    }
}

#[tokio::test(start_paused = true)]
async fn invalid_response_stops_without_charge() {
    let h = harness(RICH);
    h.suppliers.push(
        "fixed-primary",
        Step::Fail(AttemptError::invalid_response("bad json")),
    );
    let err = run(&h, request("fixed")).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::InvalidUpstreamResponse);
    assert_eq!(h.suppliers.calls(), ["fixed-primary"]);
    assert_eq!(h.store.0.lock().unwrap().held, 0);
}

#[tokio::test(start_paused = true)]
async fn inconsistent_usage_is_invalid_and_not_charged() {
    let h = harness(RICH);
    let mut bad = reply(5, 5);
    bad.usage.cache_read_input_tokens = 6;
    struct One(Response);
    impl Suppliers for One {
        async fn attempt(
            &self,
            _: &Route,
            _: &Request,
            _: router_core::Encoding,
            _: Instant,
            _: &router_core::AttemptCall,
        ) -> Result<SupplierReply, AttemptError> {
            Ok(SupplierReply::Complete(self.0.clone()))
        }
    }
    let catalog = Arc::new(Catalog::from_toml(CATALOG, |_| None).unwrap());
    let gw = Gateway::new(
        catalog,
        h.store.clone(),
        One(bad),
        GatewayConfig::default(),
        SealKey::generate().unwrap(),
    );
    let err = match gw.run(admission(), request("fixed").into()).await {
        Err(e) => e,
        Ok(_) => panic!("expected an error"),
    };
    assert_eq!(err.code, ErrorCode::InvalidUpstreamResponse);
    assert_eq!(h.store.0.lock().unwrap().charged, 0);
}

#[tokio::test(start_paused = true)]
async fn retry_after_is_honoured_when_it_fits_and_skipped_when_not() {
    let h = harness(RICH);
    h.suppliers.push(
        "fixed-primary",
        Step::Fail(AttemptError::status(429, Some(Duration::from_secs(1)))),
    );
    let start = Instant::now();
    run(&h, request("fixed")).await.unwrap();
    let calls = h.suppliers.calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 2);
    assert!(calls[1].1 - start >= Duration::from_secs(1));

    let h = harness(RICH);
    h.suppliers.push(
        "fixed-primary",
        Step::Fail(AttemptError::status(429, Some(Duration::from_secs(600)))),
    );
    let start = Instant::now();
    run(&h, request("fixed")).await.unwrap();
    // No same-route wait: the next route is tried at once (G-13).
    assert_eq!(h.suppliers.calls(), ["fixed-primary", "fixed-cheap"]);
    assert!(Instant::now() - start < Duration::from_secs(1));
}

#[tokio::test(start_paused = true)]
async fn deadline_is_shared_by_all_attempts() {
    let h = harness(RICH);
    for route in ["fixed-primary", "fixed-cheap", "fixed-pricey"] {
        h.suppliers.push(route, Step::Hang);
    }
    let start = Instant::now();
    let err = run(&h, request("fixed")).await.unwrap_err();
    assert_eq!(err.code, ErrorCode::UpstreamUnavailable);
    assert_eq!(Instant::now() - start, Duration::from_secs(180));
    // The first attempt consumed the whole deadline: no attempt after it (G-15).
    assert_eq!(h.suppliers.calls(), ["fixed-primary"]);
}

#[tokio::test(start_paused = true)]
async fn supply_priced_model_charges_the_quote_of_the_route_used() {
    let h = harness(RICH);
    let (_, cost) = run(&h, request("supply")).await.unwrap();
    assert_eq!(cost, 20_000); // 20 tokens at 1 USD/MTok
    h.suppliers
        .push("supply-a", Step::Fail(AttemptError::status(400, None)));
    let (_, cost) = run(&h, request("supply")).await.unwrap();
    assert_eq!(cost, 60_000); // fallback route's quote: 3 USD/MTok (G-05)
}

#[tokio::test(start_paused = true)]
async fn insufficient_credits_before_any_supplier_call() {
    let h = harness(10);
    let err = run(&h, request("fixed")).await.unwrap_err();
    assert_eq!(err.code, product_codes::INSUFFICIENT_CREDITS);
    assert!(h.suppliers.calls().is_empty());
}

#[tokio::test(start_paused = true)]
async fn unknown_model_is_404() {
    let h = harness(RICH);
    assert_eq!(
        run(&h, request("nope")).await.unwrap_err().code,
        ErrorCode::ModelNotFound
    );
}

#[tokio::test(start_paused = true)]
async fn admission_zdr_is_not_relaxed_by_the_request() {
    // F-27, J-06: the account's ZDR (carried by the admission) applies
    // although the request says `zdr:false`; no route here is ZDR.
    let h = harness(RICH);
    let mut req: router_core::GatewayRequest = request("fixed").into();
    req.routing.zdr = false;
    let admission = Admission {
        zdr: true,
        ..admission()
    };
    let Err(err) = h.gateway.run(admission, req).await else {
        panic!("a ZDR admission was served by a non-ZDR route");
    };
    assert_eq!(err.code, product_codes::ZDR_CAPACITY_UNAVAILABLE);
    assert!(h.suppliers.calls().is_empty());
    assert_eq!(h.store.0.lock().unwrap().balance, RICH);
}

fn finish(i: u64, o: u64) -> StreamEvent {
    StreamEvent::Finish {
        stop_reason: StopReason::EndTurn,
        stop_sequence: None,
        usage: Usage {
            input_tokens: i,
            output_tokens: o,
            ..Default::default()
        },
    }
}

#[tokio::test(start_paused = true)]
async fn stream_settles_on_finish_and_voids_on_failure_or_drop() {
    let h = harness(RICH);
    let start = StreamEvent::Start {
        id: "x".into(),
        model: "m".into(),
    };
    h.suppliers.push(
        "fixed-primary",
        Step::Stream(vec![Ok(start.clone()), Ok(finish(1, 1))]),
    );
    let mut req = request("fixed");
    req.stream = true;
    let Outcome::Stream(mut live) = h
        .gateway
        .run(admission(), req.clone().into())
        .await
        .unwrap()
    else {
        panic!()
    };
    assert!(matches!(live.next().await, Some(StreamItem::Event(_))));
    assert!(
        matches!(live.next().await, Some(StreamItem::Finished { cost, .. }) if cost.0 == 3_000)
    );
    assert!(live.next().await.is_none());
    assert_eq!(h.store.0.lock().unwrap().charged, 3_000);

    h.suppliers.push(
        "fixed-primary",
        Step::Stream(vec![
            Ok(start.clone()),
            Err(AttemptError::stream_interrupted("reset")),
        ]),
    );
    let Outcome::Stream(mut live) = h
        .gateway
        .run(admission(), req.clone().into())
        .await
        .unwrap()
    else {
        panic!()
    };
    live.next().await;
    assert!(matches!(live.next().await, Some(StreamItem::Failed(_))));
    // Mid-stream failure: never retried, never charged (G-14, G-24).
    assert_eq!(h.suppliers.calls().len(), 2);
    assert_eq!(h.store.0.lock().unwrap().charged, 3_000);

    h.suppliers.push(
        "fixed-primary",
        Step::Stream(vec![Ok(start), Ok(finish(1, 1))]),
    );
    let Outcome::Stream(live) = h.gateway.run(admission(), req.into()).await.unwrap() else {
        panic!()
    };
    drop(live); // the client left
    tokio::task::yield_now().await;
    tokio::task::yield_now().await;
    let l = h.store.0.lock().unwrap();
    assert_eq!(l.held, 0);
    assert_eq!(
        l.holds.values().filter(|(_, s)| *s == "released").count(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn a_client_leaving_while_the_hold_is_taken_leaves_no_hold() {
    let h = harness(1_000_000);
    h.store.0.lock().unwrap().reserve_reply_delay = Duration::from_millis(50);
    let gateway = h.gateway.clone();
    let handler = tokio::spawn(async move {
        let _ = gateway.run(admission(), request("fixed").into()).await;
    });
    // The hold is committed and its reply in flight when the client goes.
    tokio::time::sleep(Duration::from_millis(10)).await;
    handler.abort();
    assert!(handler.await.unwrap_err().is_cancelled());
    tokio::time::sleep(Duration::from_millis(100)).await;

    let ledger = h.store.0.lock().unwrap();
    assert_eq!(ledger.held, 0);
    let statuses: Vec<&str> = ledger.holds.values().map(|(_, status)| *status).collect();
    assert_eq!(statuses, ["released"]);
    assert_eq!(ledger.charged, 0);
    assert!(h.suppliers.calls().is_empty());
}

/// The reservation's answer has arrived but the handler is dropped before
/// it reads it (the client left in between): the hold is still released,
/// not left to the reaper.
#[tokio::test(start_paused = true)]
async fn a_client_leaving_after_the_hold_is_sent_but_before_it_is_read_leaves_no_hold() {
    let h = harness(1_000_000);
    // A store that does not answer on the first poll (a database): the
    // reservation finishes in a task of its own.
    h.store.0.lock().unwrap().reserve_reply_delay = Duration::from_millis(1);
    let mut handler = Box::pin(h.gateway.run(admission(), request("fixed").into()));
    // First poll: the reservation task is spawned; its answer is awaited.
    assert!(futures::poll!(handler.as_mut()).is_pending());
    // Let the task commit the hold and send its answer, unread.
    for _ in 0..10 {
        tokio::task::yield_now().await;
    }
    assert!(h.store.0.lock().unwrap().held > 0, "the hold was taken");
    drop(handler);
    tokio::time::sleep(Duration::from_millis(10)).await;

    let ledger = h.store.0.lock().unwrap();
    assert_eq!(ledger.held, 0);
    let statuses: Vec<&str> = ledger.holds.values().map(|(_, status)| *status).collect();
    assert_eq!(statuses, ["released"]);
    assert!(h.suppliers.calls().is_empty());
}

/// A store that answers on the first poll (a credit lease, in memory) is
/// answered inline, with no task hand-off (issue 34); a client leaving
/// after that drops the hold's guard, and the hold is still released.
#[tokio::test(start_paused = true)]
async fn a_hold_answered_at_once_is_taken_inline_and_released_when_the_client_leaves() {
    let h = harness(1_000_000);
    h.suppliers.push("fixed-primary", Step::Hang);
    let mut handler = Box::pin(h.gateway.run(admission(), request("fixed").into()));
    // One poll: the hold is taken and the supplier is being called.
    assert!(futures::poll!(handler.as_mut()).is_pending());
    assert!(
        h.store.0.lock().unwrap().held > 0,
        "the hold was taken inline"
    );
    drop(handler);
    tokio::time::sleep(Duration::from_millis(10)).await;
    let ledger = h.store.0.lock().unwrap();
    assert_eq!(ledger.held, 0);
    let statuses: Vec<&str> = ledger.holds.values().map(|(_, status)| *status).collect();
    assert_eq!(statuses, ["released"]);
    assert_eq!(ledger.charged, 0);
}

/// The hold is a ceiling (RELIABILITY.md I4; B-21, G-18). The cap is the
/// store's (PostgreSQL: the store's `a_batch_caps_each_settlement_at_its_own_hold`,
/// through the API: `billing::usage_beyond_max_tokens_is_charged_exactly_the_hold`);
/// what core owns is checked here: it hands the store the whole reported
/// cost (never a figure of its own) and gives the client the charge the
/// store answers, usage unchanged, for a complete reply and a stream
/// (issue 33: the test asserted only the cap its own store applied).
#[tokio::test(start_paused = true)]
async fn usage_beyond_the_reservation_costs_the_client_exactly_the_hold() {
    let h = harness(RICH);
    let mut req = request("fixed");
    req.sampling.max_output_tokens = Some(10);
    h.suppliers.push("fixed-primary", Step::Ok(10, 1_000));
    let (_, cost) = run(&h, req.clone()).await.unwrap();
    let hold = {
        let l = h.store.0.lock().unwrap();
        let [(amount, "settled")] = l.holds.values().copied().collect::<Vec<_>>()[..] else {
            panic!("one settled hold: {:?}", l.holds)
        };
        amount
    };
    // 10 in + 1000 out at 1 and 2 USD/MTok would be 2_010_000 nano.
    assert!(hold < 2_010_000);
    assert_eq!(h.store.0.lock().unwrap().reported, [2_010_000]);
    assert_eq!(cost, hold);
    assert_eq!(h.store.0.lock().unwrap().charged, hold);

    req.stream = true;
    h.suppliers.push(
        "fixed-primary",
        Step::Stream(vec![
            Ok(StreamEvent::Start {
                id: "x".into(),
                model: "m".into(),
            }),
            Ok(finish(10, 1_000)),
        ]),
    );
    let Outcome::Stream(mut live) = h.gateway.run(admission(), req.into()).await.unwrap() else {
        panic!()
    };
    assert!(matches!(live.next().await, Some(StreamItem::Event(_))));
    let Some(StreamItem::Finished { cost, usage, .. }) = live.next().await else {
        panic!("the stream settles")
    };
    assert_eq!(cost.0, hold, "the final chunk carries the charge");
    assert_eq!(usage.output_tokens, 1_000, "usage stays as reported");
    assert_eq!(h.store.0.lock().unwrap().charged, 2 * hold);
    assert_eq!(h.store.0.lock().unwrap().reported, [2_010_000, 2_010_000]);
}

/// A vision model whose preferred route takes images and whose fallback is
/// text-only (H-05, H-08).
const VISION_CATALOG: &str = r#"
[[suppliers]]
id = "s"
base_url = "http://127.0.0.1:1/v1"

[[models]]
id = "seeing"
pricing = "fixed"
rates = { input = 1_000_000_000, output = 2_000_000_000 }
max_output_tokens = 100

[[routes]]
id = "vision-route"
model = "seeing"
supplier = "s"
upstream_model = "v"
protocol = "chat"
capabilities = ["vision"]
priority = 10
internal_cost = { input = 1, output = 1 }

[[routes]]
id = "text-route"
model = "seeing"
supplier = "s"
upstream_model = "t"
protocol = "chat"
priority = 5
internal_cost = { input = 1, output = 1 }
"#;

fn vision_harness(catalog: &str) -> Harness {
    let catalog = Arc::new(Catalog::from_toml(catalog, |_| None).unwrap());
    let store = MemoryStore::default();
    store.0.lock().unwrap().balance = RICH;
    let suppliers = ScriptedSuppliers::default();
    Harness {
        gateway: Gateway::new(
            catalog,
            store.clone(),
            suppliers.clone(),
            GatewayConfig::default(),
            SealKey::generate().unwrap(),
        ),
        store,
        suppliers,
    }
}

fn image_request(model: &str) -> Request {
    Request {
        model: model.into(),
        messages: vec![Message {
            role: Role::User,
            content: vec![router_canonical::ContentPart::Image {
                source: router_canonical::ImageSource::Url {
                    url: "https://example.com/cat.png".into(),
                },
                detail: None,
                cache_control: None,
            }],
            content_was_string: false,
            name: None,
        }],
        ..Default::default()
    }
}

#[tokio::test(start_paused = true)]
async fn image_input_never_falls_back_to_text_only_supply() {
    // H-05: the vision route fails twice, the text route is healthy: 503
    // image_capacity_unavailable, the text route never called, nothing charged.
    let h = vision_harness(VISION_CATALOG);
    for status in [500, 503] {
        h.suppliers.push(
            "vision-route",
            Step::Fail(AttemptError::status(status, None)),
        );
    }
    let error = run(&h, image_request("seeing")).await.unwrap_err();
    assert_eq!(error.code, product_codes::IMAGE_CAPACITY_UNAVAILABLE);
    assert_eq!(error.status(), 503);
    assert_eq!(h.suppliers.calls(), ["vision-route", "vision-route"]);
    assert_eq!(h.store.0.lock().unwrap().charged, 0);
    // A text request still uses both.
    run(&h, request("seeing")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn no_enabled_vision_route_is_image_capacity_unavailable() {
    // H-08: the vision route disabled; the text route is not eligible.
    let catalog = VISION_CATALOG.replace(
        "capabilities = [\"vision\"]\n",
        "capabilities = [\"vision\"]\nenabled = false\n",
    );
    let h = vision_harness(&catalog);
    let error = run(&h, image_request("seeing")).await.unwrap_err();
    assert_eq!(error.code, product_codes::IMAGE_CAPACITY_UNAVAILABLE);
    assert!(h.suppliers.calls().is_empty());
}

fn key(policy: router_core::KeyPolicy) -> ApiKeyRecord {
    ApiKeyRecord {
        key_id: Uuid::new_v4(),
        account_id: Uuid::new_v4(),
        scopes: vec![Scope::Inference],
        expires_at: None,
        policy: Arc::new(policy),
        account_zdr: false,
    }
}

/// Request headers as (lower-case name, value) pairs.
struct Headers(&'static [(&'static str, &'static str)]);

impl router_canonical::HeaderSource for Headers {
    fn header(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| *n == name).map(|(_, v)| *v)
    }
}

fn call<'a>(
    key: &'a ApiKeyRecord,
    headers: &'a Headers,
    settings: &'a router_core::affinity::PromptCacheSettings,
) -> router_core::Call<'a> {
    router_core::Call {
        request_id: Uuid::new_v4(),
        key,
        inbound: Protocol::Chat,
        headers,
        prompt_cache: settings,
        trace: router_core::RequestTrace::new(),
    }
}

/// Without a policy that applies, the pipeline is the lifecycle: one
/// reservation, the priority route, charged; no cache or affinity state.
#[tokio::test(start_paused = true)]
async fn the_pipeline_without_policies_is_the_lifecycle() {
    let h = harness(RICH);
    let key = key(router_core::KeyPolicy::default());
    let settings = router_core::affinity::PromptCacheSettings::default();
    let call = call(&key, &Headers(&[]), &settings);
    let Ok(handled) = h
        .gateway
        .handle(call, request("fixed").into(), &CountingUploads::default())
        .await
    else {
        panic!("expected a reply");
    };
    let router_core::Reply::Complete { cost, .. } = handled.reply else {
        panic!("expected a complete reply");
    };
    assert_eq!((handled.model.as_str(), cost.0), ("fixed", 30_000));
    assert_eq!((handled.cache, handled.affinity), (None, None));
    assert_eq!(h.suppliers.calls(), ["fixed-primary"]);
    assert_eq!(h.store.0.lock().unwrap().charged, 30_000);
}

/// The pipeline's first steps (A-18, H-02): the key's model policy, then
/// the upload references, both before any reservation or supplier call;
/// the catalog model is noted for the log line either way.
#[tokio::test(start_paused = true)]
async fn the_pipeline_checks_the_model_policy_then_the_uploads() {
    let h = harness(RICH);
    let settings = router_core::affinity::PromptCacheSettings::default();
    let uploads = CountingUploads::default();
    let refused = key(router_core::KeyPolicy {
        allowed_models: Some(vec!["another-model".into()]),
        ..router_core::KeyPolicy::default()
    });
    let refused_call = call(&refused, &Headers(&[]), &settings);
    let trace = refused_call.trace.clone();
    let Err(router_core::HandleError::Api(error)) = h
        .gateway
        .handle(refused_call, request("fixed").into(), &uploads)
        .await
    else {
        panic!("expected a refusal");
    };
    assert_eq!(error.code, product_codes::MODEL_NOT_ALLOWED);
    assert_eq!(trace.model_id().as_deref(), Some("fixed"));
    assert_eq!(uploads.0.load(std::sync::atomic::Ordering::Relaxed), 0);
    assert!(h.suppliers.calls().is_empty());
    assert!(h.store.0.lock().unwrap().holds.is_empty());

    let allowed = key(router_core::KeyPolicy::default());
    let allowed_call = call(&allowed, &Headers(&[]), &settings);
    let trace = allowed_call.trace.clone();
    assert!(
        h.gateway
            .handle(allowed_call, request("fixed").into(), &uploads)
            .await
            .is_ok()
    );
    assert_eq!(trace.model_id().as_deref(), Some("fixed"));
    assert_eq!(uploads.0.load(std::sync::atomic::Ordering::Relaxed), 1);
}

/// The experiment comes first: an unknown slug is refused before any
/// reservation or supplier call, and a key with the response cache on
/// reports a miss after a served answer.
#[tokio::test(start_paused = true)]
async fn the_pipeline_refuses_an_unknown_experiment_before_reserving() {
    let h = harness(RICH);
    let key = key(router_core::KeyPolicy {
        response_cache_ttl_seconds: Some(60),
        ..router_core::KeyPolicy::default()
    });
    let settings = router_core::affinity::PromptCacheSettings::default();
    let headers = Headers(&[("x-ci-experiment", "tone")]);
    let Err(router_core::HandleError::Api(error)) = h
        .gateway
        .handle(
            call(&key, &headers, &settings),
            request("fixed").into(),
            &CountingUploads::default(),
        )
        .await
    else {
        panic!("expected a refusal");
    };
    assert_eq!(error.code, product_codes::EXPERIMENT_NOT_FOUND);
    assert!(h.suppliers.calls().is_empty());
    assert!(h.store.0.lock().unwrap().holds.is_empty());
    let call = call(&key, &Headers(&[]), &settings);
    let Ok(handled) = h
        .gateway
        .handle(call, request("fixed").into(), &CountingUploads::default())
        .await
    else {
        panic!("expected a reply");
    };
    assert_eq!(
        handled.cache,
        Some(router_core::response_cache::CacheStatus::Miss)
    );
}
