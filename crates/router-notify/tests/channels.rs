//! The wing without HTTP: provisioning's state machine and refusals, every
//! platform stored, and the scheduler and outbox passes delivering to a
//! loopback webhook receiver, each against a fresh PostgreSQL database.

// Helpers outside `#[test]` functions panic on failure like the tests do
// (clippy's allow-unwrap-in-tests covers only the test functions).
#![expect(clippy::unwrap_used)]

use router_mock_supplier::webhook_sink::WebhookSink;
use router_notify::destination::DestinationError;
use router_notify::{
    ChannelChange, EmailConsent, Mailer, Notifier, NotifyError, Platform, Provision, Refusal,
    Transports,
};
use router_store::test_support::TestDatabase;
use serde_json::json;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

const WAIT: Duration = Duration::from_secs(10);

fn transports(allow_loopback: bool) -> Transports {
    // reqwest is built without a TLS provider; the binary installs one.
    let _ = rustls::crypto::ring::default_provider().install_default();
    Transports::new(
        Some("123456:test-token".to_owned()),
        None,
        Duration::from_secs(2),
    )
    .allow_loopback(allow_loopback)
}

fn webhook(platform: &str, frequency: &str, url: &str) -> Provision {
    Provision {
        platform: platform.to_owned(),
        frequency: frequency.to_owned(),
        webhook_url: Some(url.to_owned()),
        chat_id: None,
        api_base: None,
    }
}

fn refusal(error: NotifyError) -> Refusal {
    match error {
        NotifyError::Refused(refusal) => refusal,
        other => panic!("not a refusal: {other:?}"),
    }
}

async fn account(db: &TestDatabase, email: &str) -> Uuid {
    db.create_account(email, true).await.unwrap().id
}

#[tokio::test]
async fn provisioning_follows_the_state_machine() {
    let db = TestDatabase::new().await;
    let notify = Notifier::new(db.database().clone(), None, transports(false));
    let owner = account(&db, "owner@example.com").await;
    let hook = "https://hooks.slack.example/services/T0/B0/SECRET";

    let created = notify
        .provision(owner, webhook("slack", "daily", hook))
        .await
        .unwrap();
    assert!(created.created);
    let channel = created.channel;
    assert_eq!(channel.platform, Platform::Slack);
    assert_eq!(channel.destination, "https://hooks.slack.example/…");
    assert_eq!(channel.frequency, "daily");

    let same = notify
        .provision(owner, webhook("slack", "daily", hook))
        .await
        .unwrap();
    assert!(!same.created, "identical: unchanged");
    assert_eq!(same.channel.id, channel.id);
    let other = notify
        .provision(owner, webhook("slack", "weekly", hook))
        .await
        .unwrap_err();
    assert_eq!(refusal(other), Refusal::AlreadyConnected);

    let gone = notify.deprovision(channel.id).await.unwrap();
    assert_eq!((gone.id, gone.status), (channel.id, "disconnected"));
    assert!(matches!(
        notify.show(owner, channel.id).await,
        Err(NotifyError::ChannelNotFound)
    ));
    assert_eq!(
        refusal(notify.deprovision(channel.id).await.unwrap_err()),
        Refusal::NoConnectedChannel
    );
    let back = notify
        .provision(owner, webhook("slack", "weekly", hook))
        .await
        .unwrap();
    assert!(!back.created, "reconnected");
    assert_eq!(back.channel.id, channel.id, "the same channel");
    assert_eq!(back.channel.frequency, "weekly");

    // Refused before any row is written.
    let cases = [
        (
            webhook("slack", "daily", "http://127.0.0.1:9/x"),
            Refusal::Destination {
                field: "webhook_url",
                error: DestinationError::NotPublic,
            },
        ),
        (webhook("email", "daily", hook), Refusal::UnknownPlatform),
        (webhook("sms", "daily", hook), Refusal::UnknownPlatform),
        (webhook("discord", "hourly", hook), Refusal::Frequency),
        (
            webhook("telegram", "daily", hook),
            Refusal::WebhookUrlOnTelegram,
        ),
    ];
    for (provision, expected) in cases {
        let error = notify.provision(owner, provision).await.unwrap_err();
        assert_eq!(refusal(error), expected);
    }
    let error = notify
        .provision(Uuid::now_v7(), webhook("discord", "daily", hook))
        .await
        .unwrap_err();
    assert_eq!(refusal(error), Refusal::NoSuchAccount);
    // Another account's channel is unknown to it.
    let stranger = account(&db, "stranger@example.com").await;
    assert!(matches!(
        notify.show(stranger, channel.id).await,
        Err(NotifyError::ChannelNotFound)
    ));
}

/// The database takes every platform the enum names (its check and the
/// enum agree), and the views name each one as JSON does.
#[tokio::test]
async fn every_platform_is_stored_and_listed() {
    let db = TestDatabase::new().await;
    // lettre connects at the first send: no SMTP server is needed here.
    let mailer = Mailer::from_url("smtp://127.0.0.1:9", "Router <router@localhost>").unwrap();
    let notify = Notifier::new(
        db.database().clone(),
        Some(Arc::new(mailer)),
        transports(false),
    );
    let owner = account(&db, "all@example.com").await;
    for platform in Platform::EXTERNAL {
        let provision = match platform {
            Platform::Telegram => Provision {
                platform: "telegram".to_owned(),
                frequency: "monthly".to_owned(),
                webhook_url: None,
                chat_id: Some("-1001234567890".to_owned()),
                api_base: None,
            },
            _ => webhook(platform.as_str(), "monthly", "https://hooks.example/x"),
        };
        assert!(notify.provision(owner, provision).await.unwrap().created);
    }
    let body = json!({"consent": true, "frequency": "daily"});
    let consent = EmailConsent::from_json(body.as_object().unwrap()).unwrap();
    let email = notify.connect_email(owner, consent).await.unwrap();
    assert!(email.created);
    assert_eq!(email.channel.destination, "a***@example.com");

    let list = notify.list(owner).await.unwrap();
    let mut platforms: Vec<Platform> = list.data.iter().map(|c| c.platform).collect();
    platforms.sort_by_key(|p| Platform::ALL.iter().position(|q| q == p));
    assert_eq!(platforms, Platform::ALL);
    let listed = serde_json::to_value(&list).unwrap();
    let names: Vec<&str> = listed["data"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["platform"].as_str().unwrap())
        .collect();
    for platform in Platform::ALL {
        assert!(names.contains(&platform.as_str()), "{names:?}");
        let status = notify.platform_status(owner, platform).await.unwrap();
        assert!(status.connected && status.configured, "{platform}");
    }
    let telegram = notify
        .platform_status(owner, Platform::Telegram)
        .await
        .unwrap();
    assert_eq!(telegram.channel.unwrap().destination, "chat …7890");
}

/// The outbox pass queues `low_balance` for an empty wallet and posts it;
/// the scheduler queues a digest once its period is over, and the outbox
/// skips it when the period had no activity.
#[tokio::test]
async fn the_passes_deliver_events_and_skip_empty_digests() {
    let db = TestDatabase::new().await;
    let sink = WebhookSink::start("127.0.0.1:0".parse().unwrap())
        .await
        .unwrap();
    let notify = Notifier::new(db.database().clone(), None, transports(true));
    let owner = account(&db, "events@example.com").await;
    let url = format!("{}/slack/hook", sink.base_url());
    let channel = notify
        .provision(owner, webhook("slack", "daily", &url))
        .await
        .unwrap()
        .channel;
    let body = json!({"events": ["low_balance"]});
    let change = ChannelChange::from_json(body.as_object().unwrap()).unwrap();
    let updated = notify.update(owner, channel.id, change).await.unwrap();
    assert_eq!(updated.events, ["low_balance"]);

    assert_eq!(notify.outbox_pass().await.unwrap(), 1);
    let received = sink.wait_for(1, WAIT).await;
    assert_eq!(received[0].path, "/slack/hook");
    let text = received[0].body["text"].as_str().unwrap();
    assert!(text.starts_with("Your balance is low: "), "{text}");
    assert_eq!(notify.outbox_pass().await.unwrap(), 0, "once per refill");

    let now = chrono::Utc::now();
    assert_eq!(
        notify.digest_pass(now).await.unwrap(),
        0,
        "no complete period since the channel was connected"
    );
    // Noon three days on: yesterday's period is complete and due (06:00).
    let noon = (now.date_naive() + chrono::Duration::days(3))
        .and_hms_opt(12, 0, 0)
        .unwrap();
    let later = chrono::DateTime::from_naive_utc_and_offset(noon, chrono::Utc);
    assert_eq!(notify.digest_pass(later).await.unwrap(), 1);
    assert_eq!(notify.digest_pass(later).await.unwrap(), 0, "queued once");
    assert_eq!(notify.outbox_pass().await.unwrap(), 1, "skipped: no usage");
    assert_eq!(sink.received().len(), 1, "nothing more was posted");
}
