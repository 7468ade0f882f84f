//! The channel operations and their views: what `GET /v1/channels`,
//! `GET|PATCH /v1/channels/{id}`, `POST /v1/channels/{id}/send-report`,
//! `/api/channels/email*`, `GET /api/channels/{platform}` and the
//! operator's `POST /admin/accounts/{id}/channels` and
//! `DELETE /admin/channels/{id}` do once the server has parsed the request
//! and checked the caller.
//!
//! Connecting follows one state machine for every platform (M-34,
//! `router_store::channels::connect`): a new channel is [`Connected`] with
//! `created`, an identical or reconnected one without, another frequency
//! is [`Refusal::AlreadyConnected`]. A channel's destination is never shown
//! whole ([`Platform::mask`]).

use crate::Notifier;
use crate::deliver::{Destination, Sent};
use crate::error::{NotifyError, Refusal};
use crate::events;
use crate::platform::Platform;
use crate::report::{self, Frequency, Period, Report};
use router_core::store::StoreError;
use router_store::PooledConnection;
use router_store::channels::{self as store, Admission, ChannelRow, Connect, NewChannel};
use serde::Serialize;
use serde_json::{Map, Value};
use uuid::Uuid;

/// The hour (UTC) after a period's end when its digest is due; read-only
/// for clients (GP-15).
pub const REPORT_HOUR_UTC: i16 = 6;

/// How long a manual report waits before the outbox retries it.
const MANUAL_RETRY_SECS: i64 = 60;

/// The channel record (GP-15).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelRecord {
    pub id: Uuid,
    /// `"channel"`.
    pub object: &'static str,
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub platform: Platform,
    pub frequency: String,
    pub events: Vec<String>,
    /// Masked ([`Platform::mask`]).
    pub destination: String,
    pub report_hour_utc: i16,
    pub status: String,
    /// RFC 3339, seconds.
    pub created_at: String,
    pub updated_at: String,
}

impl ChannelRecord {
    fn of(row: &ChannelRow) -> Result<ChannelRecord, StoreError> {
        let platform = Platform::of(row)?;
        Ok(ChannelRecord {
            id: row.id,
            object: "channel",
            platform,
            frequency: row.frequency.clone(),
            events: row.events.clone(),
            destination: platform.mask(&row.destination),
            report_hour_utc: row.report_hour_utc,
            status: row.status.clone(),
            created_at: rfc3339(row.created_at),
            updated_at: rfc3339(row.updated_at),
        })
    }
}

fn rfc3339(t: chrono::DateTime<chrono::Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// `GET /v1/channels`: the connected channels and the selectable events.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ChannelList {
    /// `"list"`.
    pub object: &'static str,
    pub data: Vec<ChannelRecord>,
    #[cfg_attr(feature = "openapi", schema(value_type = Vec<String>))]
    pub available_events: [&'static str; 9],
}

/// A change of a channel (`PATCH /v1/channels/{id}`, M-06..M-12, GP-66):
/// `frequency` and/or `events`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelChange {
    pub frequency: Option<Frequency>,
    pub events: Option<Vec<String>>,
}

impl ChannelChange {
    /// From a JSON object: anything else (a destination, the report hour)
    /// is refused, and one bad event refuses the whole change.
    pub fn from_json(body: &Map<String, Value>) -> Result<ChannelChange, Refusal> {
        if body.is_empty() {
            return Err(Refusal::NothingToChange);
        }
        if let Some(field) = body.keys().find(|k| *k != "frequency" && *k != "events") {
            return Err(Refusal::Unchangeable(field.clone()));
        }
        let frequency = match body.get("frequency") {
            Some(value) => Some(frequency(Some(value))?),
            None => None,
        };
        let events = match body.get("events") {
            Some(value) => Some(events::parse_selection(value)?),
            None => None,
        };
        Ok(ChannelChange { frequency, events })
    }
}

/// A frequency field: one of [`Frequency::ALL`]'s names.
fn frequency(value: Option<&Value>) -> Result<Frequency, Refusal> {
    value
        .and_then(Value::as_str)
        .and_then(Frequency::parse)
        .ok_or(Refusal::Frequency)
}

/// `POST /v1/channels/{id}/send-report`'s answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReportSent {
    pub sent: bool,
    /// Why nothing was sent (`null` when it was).
    #[cfg_attr(feature = "openapi", schema(required))]
    pub message: Option<&'static str>,
    pub period_start: String,
    pub period_end: String,
}

/// `GET /api/channels/email` (M-24, GP-15).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EmailStatus {
    pub configured: bool,
    pub email: String,
    pub email_verified: bool,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub channel: Option<ChannelRecord>,
}

/// The account holder's consent to usage email (`POST
/// /api/channels/email`, M-25..M-30, GP-63): the destination is always the
/// account's verified address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmailConsent {
    pub frequency: Frequency,
}

impl EmailConsent {
    /// From `{consent: true, frequency}`; any other field is refused.
    pub fn from_json(body: &Map<String, Value>) -> Result<EmailConsent, Refusal> {
        if let Some(field) = body.keys().find(|k| *k != "consent" && *k != "frequency") {
            return Err(Refusal::NotAccepted(field.clone()));
        }
        if body.get("consent") != Some(&Value::Bool(true)) {
            return Err(Refusal::NoConsent);
        }
        Ok(EmailConsent {
            frequency: frequency(body.get("frequency"))?,
        })
    }
}

/// `GET /api/channels/{platform}` (M-33, GP-17).
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PlatformStatus {
    #[cfg_attr(feature = "openapi", schema(value_type = String))]
    pub platform: Platform,
    pub configured: bool,
    pub connected: bool,
    #[cfg_attr(feature = "openapi", schema(required))]
    pub channel: Option<ChannelRecord>,
}

/// What connecting did: `created` (201) or an identical or reconnected
/// channel (200).
#[derive(Debug, Clone)]
pub struct Connected {
    pub created: bool,
    pub channel: ChannelRecord,
}

/// A disconnected channel's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Disconnected {
    pub id: Uuid,
    /// `"disconnected"`.
    pub status: &'static str,
}

impl Disconnected {
    fn of(row: &ChannelRow) -> Disconnected {
        Disconnected {
            id: row.id,
            status: "disconnected",
        }
    }
}

/// The operator's channel: `{platform, frequency, webhook_url}` for Slack
/// and Discord, `{platform: "telegram", frequency, chat_id, api_base?}`.
#[derive(serde::Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct Provision {
    #[cfg_attr(feature = "openapi", schema(pattern = "^(slack|discord|telegram)$"))]
    pub platform: String,
    #[cfg_attr(feature = "openapi", schema(pattern = "^(off|daily|weekly|monthly)$"))]
    pub frequency: String,
    /// Slack and Discord: the incoming webhook, `https` on a public host.
    pub webhook_url: Option<String>,
    /// Telegram: the chat to post to.
    pub chat_id: Option<String>,
    pub api_base: Option<String>,
}

impl std::fmt::Debug for Provision {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Provision")
            .field("platform", &self.platform)
            .field("frequency", &self.frequency)
            .finish_non_exhaustive()
    }
}

impl Notifier {
    async fn connection(&self) -> Result<PooledConnection, StoreError> {
        self.database.connection().await
    }

    /// The account's connected channel `id`; [`NotifyError::ChannelNotFound`]
    /// for an unknown, foreign or disconnected one alike (M-05, A-22).
    async fn owned(&self, account: Uuid, id: Uuid) -> Result<ChannelRow, NotifyError> {
        let mut conn = self.connection().await?;
        store::get(&mut conn, id)
            .await?
            .filter(|row| row.is_connected() && row.account_id == account)
            .ok_or(NotifyError::ChannelNotFound)
    }

    /// `GET /v1/channels` (M-01..M-03).
    pub async fn list(&self, account: Uuid) -> Result<ChannelList, NotifyError> {
        let mut conn = self.connection().await?;
        let rows = store::list_connected(&mut conn, account).await?;
        let data = rows
            .iter()
            .map(ChannelRecord::of)
            .collect::<Result<_, _>>()?;
        Ok(ChannelList {
            object: "list",
            data,
            available_events: events::IDS,
        })
    }

    /// `GET /v1/channels/{id}` (M-05): the account's connected channel.
    pub async fn show(&self, account: Uuid, id: Uuid) -> Result<ChannelRecord, NotifyError> {
        let row = self.owned(account, id).await?;
        Ok(ChannelRecord::of(&row)?)
    }

    /// `PATCH /v1/channels/{id}` (M-06..M-12, GP-66).
    pub async fn update(
        &self,
        account: Uuid,
        id: Uuid,
        change: ChannelChange,
    ) -> Result<ChannelRecord, NotifyError> {
        let mut conn = self.connection().await?;
        let updated = store::update(
            &mut conn,
            id,
            account,
            change.frequency.map(Frequency::as_str),
            change.events.as_deref(),
        )
        .await?
        .ok_or(NotifyError::ChannelNotFound)?;
        Ok(ChannelRecord::of(&updated)?)
    }

    /// Builds the report of `period` for an account, with the period
    /// before it (of `frequency`) for comparison.
    pub(crate) async fn build_report(
        &self,
        account_id: Uuid,
        frequency: Frequency,
        period: Period,
    ) -> Result<Report, StoreError> {
        let mut conn = self.connection().await?;
        let lines = store::usage(&mut conn, account_id, period.start, period.end).await?;
        let before = frequency.period_before(&period);
        let previous = store::usage(&mut conn, account_id, before.start, before.end).await?;
        Ok(Report::new(period, &lines, &previous))
    }

    /// `POST /v1/channels/{id}/send-report` (M-13..M-23, GP-16, GP-65): the
    /// previous complete period, now, at most once a minute and 20 times a
    /// UTC day per channel. A delivery that certainly did not arrive is
    /// queued for the outbox ([`Refusal::ReportPending`]); one that may have
    /// arrived is never resent.
    pub async fn send_report(&self, account: Uuid, id: Uuid) -> Result<ReportSent, NotifyError> {
        let row = self.owned(account, id).await?;
        let destination = Destination::of(&row)?;
        let platform = destination.platform;
        if !self.configured(platform) {
            return Err(Refusal::Unconfigured(platform).into());
        }
        let mut conn = self.connection().await?;
        match store::admit_report(&mut conn, row.id).await? {
            Admission::Admitted => {}
            Admission::RetryAfter(secs) => {
                return Err(Refusal::RateLimited {
                    retry_after_secs: secs,
                }
                .into());
            }
        }
        drop(conn);
        let frequency = Frequency::parse(&row.frequency).unwrap_or(Frequency::Off);
        let period = frequency.previous_period(chrono::Utc::now());
        let report = self.build_report(account, frequency, period).await?;
        let answer = |sent: bool, message: Option<&'static str>| ReportSent {
            sent,
            message,
            period_start: period.start_text(),
            period_end: period.end_text(),
        };
        if report.is_empty() {
            return Ok(answer(
                false,
                Some("No activity in this period: nothing was sent."),
            ));
        }
        let message = report::render(&report, platform).map_err(|_| Refusal::ReportTooLarge)?;
        match self.send(destination, &message).await {
            Sent::Delivered => Ok(answer(true, None)),
            Sent::Unconfigured => Err(Refusal::Unconfigured(platform).into()),
            Sent::Retryable(why) => {
                tracing::warn!(channel = %row.id, %platform, reason = %why, "manual report delivery failed; queued for a retry");
                let mut conn = self.connection().await?;
                store::enqueue_manual_retry(
                    &mut conn,
                    row.id,
                    period.start,
                    period.end,
                    &why,
                    MANUAL_RETRY_SECS,
                )
                .await?;
                Err(Refusal::ReportPending.into())
            }
            Sent::Refused(why) => {
                tracing::warn!(channel = %row.id, %platform, reason = %why, "manual report refused");
                Err(Refusal::DeliveryFailed(platform).into())
            }
            Sent::Unknown(why) => {
                tracing::warn!(channel = %row.id, %platform, reason = %why, "manual report outcome unknown; not resent");
                let mut conn = self.connection().await?;
                store::record_ambiguous_manual(&mut conn, row.id, period.start, period.end, &why)
                    .await?;
                Err(Refusal::Unacknowledged(platform).into())
            }
        }
    }

    /// `GET /api/channels/email` (M-24, GP-15).
    pub async fn email_status(&self, account_id: Uuid) -> Result<EmailStatus, NotifyError> {
        let account = self
            .database
            .get_account(account_id)
            .await?
            .ok_or(Refusal::AccountGone)?;
        let channel = self.connected_on(account_id, Platform::Email).await?;
        Ok(EmailStatus {
            configured: self.mailer.is_some(),
            email: account.email,
            email_verified: account.email_verified,
            channel,
        })
    }

    /// The account's connected channel on `platform`, as a record.
    async fn connected_on(
        &self,
        account_id: Uuid,
        platform: Platform,
    ) -> Result<Option<ChannelRecord>, StoreError> {
        let mut conn = self.connection().await?;
        store::for_platform(&mut conn, account_id, platform.as_str())
            .await?
            .filter(ChannelRow::is_connected)
            .as_ref()
            .map(ChannelRecord::of)
            .transpose()
    }

    /// `POST /api/channels/email` (M-25..M-30, M-34, GP-63, GP-64): connect
    /// with consent; the destination is the account's verified email. No
    /// report is sent now.
    pub async fn connect_email(
        &self,
        account_id: Uuid,
        consent: EmailConsent,
    ) -> Result<Connected, NotifyError> {
        let account = self
            .database
            .get_account(account_id)
            .await?
            .ok_or(Refusal::AccountGone)?;
        if !account.email_verified {
            return Err(Refusal::EmailNotVerified.into());
        }
        if self.mailer.is_none() {
            return Err(Refusal::Unconfigured(Platform::Email).into());
        }
        self.connect(NewChannel {
            account_id,
            platform: Platform::Email.as_str(),
            frequency: consent.frequency.as_str(),
            destination: &account.email,
            api_base: None,
            report_hour_utc: REPORT_HOUR_UTC,
        })
        .await
    }

    /// The state machine's answer (M-34).
    async fn connect(&self, new: NewChannel<'_>) -> Result<Connected, NotifyError> {
        let mut conn = self.connection().await?;
        let (created, row) = match store::connect(&mut conn, new).await? {
            Connect::Created(row) => (true, row),
            Connect::Unchanged(row) | Connect::Reconnected(row) => (false, row),
            Connect::Conflict(_) => return Err(Refusal::AlreadyConnected.into()),
        };
        Ok(Connected {
            created,
            channel: ChannelRecord::of(&row)?,
        })
    }

    /// `DELETE /api/channels/email/{id}` (M-31).
    pub async fn disconnect_email(
        &self,
        account_id: Uuid,
        id: Uuid,
    ) -> Result<Disconnected, NotifyError> {
        let mut conn = self.connection().await?;
        let row = store::disconnect(
            &mut conn,
            id,
            Some(account_id),
            Some(Platform::Email.as_str()),
        )
        .await?
        .ok_or(NotifyError::ChannelNotFound)?;
        Ok(Disconnected::of(&row))
    }

    /// `GET /api/channels/{platform}` (M-33, GP-17).
    pub async fn platform_status(
        &self,
        account_id: Uuid,
        platform: Platform,
    ) -> Result<PlatformStatus, NotifyError> {
        let channel = self.connected_on(account_id, platform).await?;
        Ok(PlatformStatus {
            platform,
            configured: self.configured(platform),
            connected: channel.is_some(),
            channel,
        })
    }

    /// A webhook URL or API base under the destination rules (https, a
    /// public host, no credentials), judged by its form: no DNS here, the
    /// delivery resolves and checks again.
    fn destination_url(&self, field: &'static str, text: &str) -> Result<(), Refusal> {
        crate::destination::check(text, self.transports.url_policy())
            .map(drop)
            .map_err(|error| Refusal::Destination { field, error })
    }

    /// `POST /admin/accounts/{id}/channels` (GP-17): the same state machine
    /// as email (created, identical or reconnected, another frequency).
    pub async fn provision(
        &self,
        account_id: Uuid,
        p: Provision,
    ) -> Result<Connected, NotifyError> {
        let frequency = Frequency::parse(&p.frequency).ok_or(Refusal::Frequency)?;
        let platform = Platform::parse(&p.platform)
            .filter(|p| p.is_external())
            .ok_or(Refusal::UnknownPlatform)?;
        let (destination, api_base) = match platform {
            Platform::Slack | Platform::Discord => {
                if p.chat_id.is_some() || p.api_base.is_some() {
                    return Err(Refusal::TelegramFieldsOnWebhook.into());
                }
                let url = p.webhook_url.ok_or(Refusal::WebhookUrlMissing)?;
                self.destination_url("webhook_url", &url)?;
                (url, None)
            }
            Platform::Telegram => {
                if p.webhook_url.is_some() {
                    return Err(Refusal::WebhookUrlOnTelegram.into());
                }
                let chat = p
                    .chat_id
                    .filter(|c| !c.is_empty() && c.len() <= 128)
                    .ok_or(Refusal::ChatIdMissing)?;
                if let Some(base) = &p.api_base {
                    self.destination_url("api_base", base)?;
                }
                (chat, p.api_base)
            }
            Platform::Email => return Err(Refusal::UnknownPlatform.into()),
        };
        if self.database.get_account(account_id).await?.is_none() {
            return Err(Refusal::NoSuchAccount.into());
        }
        self.connect(NewChannel {
            account_id,
            platform: platform.as_str(),
            frequency: frequency.as_str(),
            destination: &destination,
            api_base: api_base.as_deref(),
            report_hour_utc: REPORT_HOUR_UTC,
        })
        .await
    }

    /// `DELETE /admin/channels/{id}`: disconnects any channel.
    pub async fn deprovision(&self, id: Uuid) -> Result<Disconnected, NotifyError> {
        let mut conn = self.connection().await?;
        let row = store::disconnect(&mut conn, id, None, None)
            .await?
            .ok_or(Refusal::NoConnectedChannel)?;
        Ok(Disconnected::of(&row))
    }
}
