//! The accounts, keys and requests tests start from.

use diesel_async::{AsyncConnection, AsyncPgConnection, RunQueryDsl};
use futures::StreamExt;
use router_canonical::{NanoUsd, Protocol, Usage};
use router_core::store::{AttemptOutcome, AttemptRecord, NewRequest, Scope, Settlement, Voiding};
use router_store::api_keys::API_KEY_CHANGED_CHANNEL;
use router_store::test_support::TestDatabase;
use router_store::{Database, NewApiKey};
use std::time::{Duration, SystemTime};
use uuid::Uuid;

/// A key on `account_id` with `scopes`, no expiry and the default policy.
pub async fn key_with(db: &Database, account_id: Uuid, scopes: &[Scope]) -> NewApiKey {
    let policy = router_core::KeyPolicy::default();
    let issued = db.create_api_key(account_id, scopes, None, &policy).await;
    issued.unwrap()
}

/// A connection that LISTENs to the key-change channel key caches follow.
pub struct KeyChanges(AsyncPgConnection);

impl KeyChanges {
    pub async fn listen(db: &TestDatabase) -> KeyChanges {
        let mut listener = AsyncPgConnection::establish(db.url()).await.unwrap();
        let listen = format!("LISTEN {API_KEY_CHANGED_CHANNEL}");
        diesel::sql_query(listen)
            .execute(&mut listener)
            .await
            .unwrap();
        KeyChanges(listener)
    }

    /// The next notification's payload (the key's hash in hex), within 5 s.
    pub async fn next(&mut self) -> String {
        let mut notifications = std::pin::pin!(self.0.notifications_stream());
        let next = tokio::time::timeout(Duration::from_secs(5), notifications.next()).await;
        let Ok(Some(Ok(notification))) = next else {
            panic!("no notification within 5 s");
        };
        assert_eq!(notification.channel, API_KEY_CHANGED_CHANNEL);
        notification.payload
    }
}

/// An account with a wallet balance and an inference key.
pub struct Funded {
    pub account_id: Uuid,
    pub api_key_id: Uuid,
}

pub async fn funded_account(db: &Database, balance: i64) -> Funded {
    let email = format!("{}@example.test", Uuid::new_v4());
    let account = db.create_account(&email, true).await.unwrap();
    if balance > 0 {
        let new_balance = db
            .grant_credits(account.id, NanoUsd(balance))
            .await
            .unwrap();
        assert_eq!(new_balance, NanoUsd(balance));
    }
    let key = key_with(db, account.id, &[Scope::Inference]).await;
    Funded {
        account_id: account.id,
        api_key_id: key.id,
    }
}

/// A streaming Chat request reserving `reserve` nano-USD, with a hold that
/// expires in ten minutes.
pub fn new_request(funded: &Funded, reserve: i64) -> NewRequest {
    expiring_request(
        funded,
        reserve,
        SystemTime::now() + Duration::from_secs(600),
    )
}

pub fn expiring_request(funded: &Funded, reserve: i64, hold_expires_at: SystemTime) -> NewRequest {
    NewRequest {
        request_id: Uuid::now_v7(),
        account_id: funded.account_id,
        api_key_id: funded.api_key_id,
        policy_version: 0,
        key_limited: false,
        key_spend_only: true,
        model: "acme/chat-large".to_owned(),
        inbound_protocol: Protocol::Completions,
        recorded_protocol: Protocol::Chat,
        stream: true,
        reserve: NanoUsd(reserve),
        hold_expires_at,
        experiment: None,
    }
}

pub fn settlement(request_id: Uuid, reported: i64) -> Settlement {
    Settlement {
        request_id,
        reported: NanoUsd(reported),
        usage: Usage {
            input_tokens: 120,
            output_tokens: 45,
            cache_read_input_tokens: 100,
            cache_creation_input_tokens: 10,
            reasoning_tokens: 7,
        },
        attempt: AttemptRecord {
            request_id,
            attempt_no: 1,
            route_id: "acme-direct".to_owned(),
            supplier_id: "acme".to_owned(),
            upstream_protocol: Protocol::Chat,
            started_at: SystemTime::now(),
            duration_ms: 12,
            outcome: AttemptOutcome::Succeeded,
            supplier_request_id: Some("req_seed_1".to_owned()),
        },
    }
}

pub fn voiding(request_id: Uuid, reason: &str) -> Voiding {
    Voiding {
        request_id,
        reason: reason.to_owned(),
        attempt: None,
    }
}

/// (balance_nano, held_nano) of the account's wallet.
pub async fn wallet(db: &Database, account_id: Uuid) -> (i64, i64) {
    let account = db.get_account(account_id).await.unwrap().unwrap();
    (account.balance_nano, account.held_nano)
}

/// Asserts the ledger balances and agrees with wallets and holds.
pub async fn assert_books_agree(db: &Database) {
    let reconciliation = db.reconcile().await.unwrap();
    assert!(reconciliation.is_consistent(), "{reconciliation:?}");
}

#[derive(diesel::QueryableByName)]
struct Count {
    #[diesel(sql_type = diesel::sql_types::BigInt)]
    n: i64,
}

/// Runs `sql`, which selects one BIGINT named `n` (e.g. `SELECT count(*) AS n ...`).
pub async fn count(db: &Database, sql: &str) -> i64 {
    use diesel_async::RunQueryDsl;
    let mut conn = db.connection().await.unwrap();
    diesel::sql_query(sql)
        .get_result::<Count>(&mut conn)
        .await
        .unwrap_or_else(|error| panic!("{sql}: {error}"))
        .n
}
