//! Notifications: digest channels (section M) — the account's email
//! channel and the operator-provisioned Slack, Discord and Telegram ones —
//! their events, usage reports from the ledger, the digest scheduler, the
//! outbox relay, and delivery by mail and webhooks.
//!
//! The wing knows no HTTP. The server parses a request, checks the caller,
//! calls one operation of [`Notifier`] and renders its answer: a view that
//! serializes to the response body, or a [`NotifyError`] (a [`Refusal`]
//! converts to the client's `ApiError`).
//!
//! - `channels.rs`: the operations (list, show, update, send-report, the
//!   email channel's status, connect and disconnect, a platform's status,
//!   provision, deprovision) and their views; the connect state machine
//!   (M-34) is `router_store::channels::connect`.
//! - `jobs.rs`: the `digest-scheduler` and `outbox` passes.
//! - `platform.rs`: [`Platform`], the one list of platforms.
//! - `events.rs`: the selectable events; `report.rs`: periods and rendering
//!   per platform; `deliver.rs`: the transports; `destination.rs`: where a
//!   webhook may post; `mail.rs`: SMTP.
//! - `schema.rs` (feature `openapi`): the shapes of the channel forms.
//! - Rows, counters, usage and the outbox: `router_store::channels`.

pub mod channels;
pub mod deliver;
pub mod destination;
pub mod error;
pub mod events;
pub mod jobs;
pub mod mail;
pub mod platform;
pub mod report;
#[cfg(feature = "openapi")]
pub mod schema;

pub use channels::{
    ChannelChange, ChannelList, ChannelRecord, Connected, Disconnected, EmailConsent, EmailStatus,
    PlatformStatus, Provision, ReportSent,
};
pub use deliver::Transports;
pub use error::{NotifyError, Refusal};
pub use mail::Mailer;
pub use platform::Platform;

use router_store::Database;
use std::sync::Arc;

/// The wing's state: the database it reads and writes, the SMTP transport
/// and the chat transports. One per process; the operations are its
/// methods (`channels.rs`, `jobs.rs`).
#[derive(Debug, Clone)]
pub struct Notifier {
    database: Database,
    mailer: Option<Arc<Mailer>>,
    transports: Transports,
}

impl Notifier {
    /// `mailer`: `ROUTER_SMTP_URL`'s transport (`None`: email is
    /// unavailable); `transports`: Slack, Discord and Telegram.
    pub fn new(database: Database, mailer: Option<Arc<Mailer>>, transports: Transports) -> Self {
        Notifier {
            database,
            mailer,
            transports,
        }
    }

    /// The SMTP transport, also for sign-in links.
    pub fn mailer(&self) -> Option<&Arc<Mailer>> {
        self.mailer.as_ref()
    }

    /// The chat transports and their destination rules.
    pub fn transports(&self) -> &Transports {
        &self.transports
    }

    /// Whether a platform's transport is configured.
    pub fn configured(&self, platform: Platform) -> bool {
        self.transports.configured(platform, self.mailer.as_deref())
    }

    /// Sends `message` to `destination` through its platform's transport.
    pub(crate) async fn send(
        &self,
        destination: deliver::Destination<'_>,
        message: &report::Rendered,
    ) -> deliver::Sent {
        let mailer = self.mailer.as_deref();
        deliver::send(&self.transports, mailer, destination, message).await
    }
}
