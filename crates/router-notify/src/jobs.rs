//! The two background passes of channels, run by the server's
//! `digest-scheduler` and `outbox` jobs (and callable directly):
//!
//! - [`Notifier::digest_pass`] queues each connected channel's digest for the last
//!   complete period once it is due (period end + `report_hour_utc`), and
//!   only for periods that end after the channel was connected; one row per
//!   channel and period (a unique key), whichever instance gets there first.
//!   It also queues `api_key_expiring` seven days ahead.
//! - [`Notifier::outbox_pass`] claims due rows with `FOR UPDATE SKIP LOCKED` (marking
//!   them `sending` before anything is sent), delivers them and records the
//!   outcome: delivered, retried with backoff when it certainly did not
//!   arrive, failed, or ambiguous (never resent, M-22).

use crate::Notifier;
use crate::deliver::{Destination, Sent};
use crate::events;
use crate::report::{self, Frequency, Period};
use chrono::{DateTime, Duration, Utc};
use router_core::store::StoreError;
use router_store::channels::{self as store, Delivery, Outcome};

/// Deliveries claimed per statement, and statements per pass.
const CLAIM_BATCH: i64 = 32;
const MAX_BATCHES: usize = 64;
/// A delivery is tried this many times before it fails for good.
pub const MAX_ATTEMPTS: i32 = 5;
/// The first retry waits this long; each next one twice as long.
const FIRST_BACKOFF_SECS: i64 = 30;

/// Available credit under this (nano-USD, $1.00) is a `low_balance` event.
pub const LOW_BALANCE_NANO: i64 = 1_000_000_000;

impl Notifier {
    /// Queues the digests due at `as_of`; returns how many were queued.
    pub async fn digest_pass(&self, as_of: DateTime<Utc>) -> Result<u64, StoreError> {
        let mut conn = self.database.connection().await?;
        let mut queued = 0u64;
        for channel in store::scheduled(&mut conn).await? {
            let Some(frequency) = Frequency::parse(&channel.frequency) else {
                continue;
            };
            let period = frequency.previous_period(as_of);
            let due = period.end + Duration::hours(i64::from(channel.report_hour_utc));
            if as_of < due || period.end <= channel.connected_at {
                continue;
            }
            if store::enqueue_digest(&mut conn, channel.id, period.start, period.end).await? {
                queued += 1;
            }
        }
        let expiring = store::enqueue_keys_expiring(&mut conn, as_of).await?;
        Ok(queued + expiring as u64)
    }

    /// Test hook (`POST /admin/requests/backdate`, only with
    /// `ROUTER_ADMIN_TEST_HOOKS=1`): moves finished requests to `finished_at`,
    /// so a digest of an earlier period sees them. Returns how many moved.
    pub async fn backdate_requests(
        &self,
        request_ids: &[uuid::Uuid],
        finished_at: DateTime<Utc>,
    ) -> Result<usize, StoreError> {
        let mut conn = self.database.connection().await?;
        store::backdate_requests(&mut conn, request_ids, finished_at).await
    }

    /// Delivers what is due; returns how many rows it finished or rescheduled.
    /// Each pass first queues `low_balance` for accounts whose available credit
    /// fell under [`LOW_BALANCE_NANO`] (checked here, every outbox pass, rather
    /// than in the settlement statement, which stays two statements a request).
    pub async fn outbox_pass(&self) -> Result<u64, StoreError> {
        {
            let mut conn = self.database.connection().await?;
            store::enqueue_low_balance(&mut conn, LOW_BALANCE_NANO).await?;
        }
        let mut processed = 0u64;
        for _ in 0..MAX_BATCHES {
            let claimed = {
                let mut conn = self.database.connection().await?;
                store::claim_due(&mut conn, CLAIM_BATCH).await?
            };
            if claimed.is_empty() {
                break;
            }
            for delivery in claimed {
                let outcome = self.deliver_one(&delivery).await?;
                if let Outcome::Ambiguous(why) | Outcome::Failed(why) = &outcome {
                    tracing::warn!(delivery = %delivery.id, channel = %delivery.channel_id, reason = %why, "channel delivery not completed");
                }
                let mut conn = self.database.connection().await?;
                store::finish(&mut conn, delivery.id, &outcome).await?;
                processed += 1;
            }
        }
        Ok(processed)
    }

    async fn deliver_one(&self, delivery: &Delivery) -> Result<Outcome, StoreError> {
        let channel = {
            let mut conn = self.database.connection().await?;
            store::get(&mut conn, delivery.channel_id).await?
        };
        let Some(channel) = channel.filter(|c| c.is_connected()) else {
            return Ok(Outcome::Failed("channel disconnected".to_owned()));
        };
        let Ok(destination) = Destination::of(&channel) else {
            return Ok(Outcome::Failed("unknown platform".to_owned()));
        };
        let message = match (
            delivery.kind.as_str(),
            delivery.period_start,
            delivery.period_end,
        ) {
            ("digest" | "manual", Some(start), Some(end)) => {
                let period = Period { start, end };
                let report = self
                    .build_report(channel.account_id, frequency_of(&period), period)
                    .await?;
                if report.is_empty() {
                    return Ok(Outcome::Skipped);
                }
                match report::render(&report, destination.platform) {
                    Ok(message) => message,
                    Err(report::TooLarge) => {
                        return Ok(Outcome::Failed(
                            "the report does not fit the platform's limit".to_owned(),
                        ));
                    }
                }
            }
            ("event", _, _) => {
                let event = delivery.event.as_deref().unwrap_or_default();
                let payload = serde_json::from_str(&delivery.payload).unwrap_or_default();
                let (title, detail) = events::describe(event, &payload);
                report::render_event(destination.platform, &title, &detail)
            }
            _ => return Ok(Outcome::Failed("malformed delivery".to_owned())),
        };
        let retry = |why: String| {
            if delivery.attempts >= MAX_ATTEMPTS {
                Outcome::Failed(why)
            } else {
                let exponent = u32::try_from(delivery.attempts.max(1) - 1).unwrap_or(0);
                Outcome::RetryIn(FIRST_BACKOFF_SECS << exponent.min(10), why)
            }
        };
        Ok(match self.send(destination, &message).await {
            Sent::Delivered => Outcome::Delivered,
            Sent::Retryable(why) => retry(why),
            Sent::Unconfigured => retry("the transport is not configured".to_owned()),
            Sent::Refused(why) => Outcome::Failed(why),
            Sent::Unknown(why) => Outcome::Ambiguous(why),
        })
    }
}

/// The frequency whose period has this length (for the comparison).
fn frequency_of(period: &Period) -> Frequency {
    match (period.end - period.start).num_days() {
        1 => Frequency::Daily,
        7 => Frequency::Weekly,
        _ => Frequency::Monthly,
    }
}
