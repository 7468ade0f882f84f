//! What the wing's operations answer when they do not succeed: a storage
//! failure, the caller's channel not found, or a [`Refusal`] that names
//! the rule it broke. A refusal becomes the client's `ApiError` here
//! (`From<Refusal> for ApiError`); the storage failure and the not-found
//! answer are rendered by the server, which owns those two replies for
//! every resource (one 404 per kind, A-22).

use crate::destination::DestinationError;
use crate::platform::{Platform, listing};
use crate::report::Frequency;
use router_canonical::{ApiError, ErrorCode};
use router_core::ownership::Resource;
use router_core::product_codes;
use router_core::store::StoreError;

/// Why an operation of the wing did not succeed.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    #[error(transparent)]
    Store(#[from] StoreError),
    /// No connected channel of the caller's with this id: the same answer
    /// for an unknown, foreign or disconnected one.
    #[error("no such channel")]
    ChannelNotFound,
    #[error(transparent)]
    Refused(#[from] Refusal),
}

/// A request the rules refuse; each becomes one client error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("an update names no field")]
    NothingToChange,
    #[error("`{0}` cannot be changed")]
    Unchangeable(String),
    #[error("`{0}` is not accepted when connecting email")]
    NotAccepted(String),
    #[error("no consent to usage email")]
    NoConsent,
    #[error("not a frequency")]
    Frequency,
    #[error("`events` is not an array")]
    EventsNotArray,
    #[error("events[{index}] is not a string")]
    EventNotString { index: usize },
    #[error("events[{index}] is not an available event")]
    UnknownEvent { index: usize, id: String },
    #[error("the platform is not one the operator provisions")]
    UnknownPlatform,
    #[error("Telegram's fields on a webhook platform")]
    TelegramFieldsOnWebhook,
    #[error("no webhook_url")]
    WebhookUrlMissing,
    #[error("a webhook_url for Telegram")]
    WebhookUrlOnTelegram,
    #[error("no chat_id")]
    ChatIdMissing,
    #[error("`{field}` {error}")]
    Destination {
        field: &'static str,
        error: DestinationError,
    },
    #[error("no such account")]
    NoSuchAccount,
    #[error("no such connected channel")]
    NoConnectedChannel,
    #[error("the session's account is gone")]
    AccountGone,
    #[error("the account's email is not verified")]
    EmailNotVerified,
    #[error("the {0} transport is not configured")]
    Unconfigured(Platform),
    #[error("connected with another frequency")]
    AlreadyConnected,
    #[error("report limit reached; retry after {retry_after_secs} s")]
    RateLimited { retry_after_secs: u64 },
    #[error("the report does not fit the platform's limit")]
    ReportTooLarge,
    #[error("not delivered; queued for a retry")]
    ReportPending,
    #[error("the {0} delivery was refused")]
    DeliveryFailed(Platform),
    #[error("the {0} delivery was not acknowledged")]
    Unacknowledged(Platform),
}

/// The client's answer: the channel's one 404, the storage
/// failure's, or the refusal's own.
impl From<NotifyError> for ApiError {
    fn from(error: NotifyError) -> ApiError {
        match error {
            NotifyError::ChannelNotFound => Resource::Channel.not_found(),
            NotifyError::Store(e) => e.api_error(),
            NotifyError::Refused(refusal) => refusal.into(),
        }
    }
}

impl From<Refusal> for ApiError {
    fn from(refusal: Refusal) -> ApiError {
        let failed = |platform| match platform {
            Platform::Email => product_codes::EMAIL_DELIVERY_FAILED,
            Platform::Slack | Platform::Discord | Platform::Telegram => {
                product_codes::REPORT_DELIVERY_FAILED
            }
        };
        match refusal {
            Refusal::NothingToChange => {
                ApiError::invalid("body", "Give at least one of `frequency` and `events`.")
            }
            Refusal::Unchangeable(field) => {
                let message =
                    format!("`{field}` cannot be changed: only `frequency` and `events` can.");
                ApiError::invalid(field, message)
            }
            Refusal::NotAccepted(field) => {
                let message = format!(
                    "`{field}` is not accepted: the destination is always your verified email."
                );
                ApiError::invalid(field, message)
            }
            Refusal::NoConsent => {
                ApiError::invalid("consent", "`consent` must be true to receive usage email.")
            }
            Refusal::Frequency => ApiError::invalid(
                "frequency",
                format!(
                    "`frequency` must be one of {}.",
                    Frequency::ALL.map(Frequency::as_str).join(", ")
                ),
            ),
            Refusal::EventsNotArray => {
                ApiError::invalid("events", "`events` must be an array of event ids.")
            }
            Refusal::EventNotString { index } => ApiError::invalid(
                format!("events[{index}]"),
                "Each event must be a string id from `available_events`.",
            ),
            Refusal::UnknownEvent { index, id } => ApiError::invalid(
                format!("events[{index}]"),
                format!("`{id}` is not an available event."),
            ),
            Refusal::UnknownPlatform => ApiError::invalid(
                "platform",
                format!(
                    "`platform` must be {} (email is connected by the account holder).",
                    listing(&Platform::EXTERNAL)
                ),
            ),
            Refusal::TelegramFieldsOnWebhook => ApiError::invalid(
                "chat_id",
                "`chat_id` and `api_base` are Telegram's; Slack and Discord take `webhook_url`.",
            ),
            Refusal::WebhookUrlMissing => {
                ApiError::invalid("webhook_url", "`webhook_url` is required.")
            }
            Refusal::WebhookUrlOnTelegram => ApiError::invalid(
                "webhook_url",
                "Telegram takes `chat_id` (and optionally `api_base`), not `webhook_url`.",
            ),
            Refusal::ChatIdMissing => ApiError::invalid("chat_id", "`chat_id` is required."),
            Refusal::Destination { field, error } => {
                ApiError::invalid(field, format!("`{field}` {error}."))
            }
            Refusal::NoSuchAccount => ApiError::new(ErrorCode::NotFound, "No such account."),
            Refusal::NoConnectedChannel => {
                ApiError::new(ErrorCode::NotFound, "No such connected channel.")
            }
            Refusal::AccountGone => {
                ApiError::new(product_codes::AUTHENTICATION_REQUIRED, "Sign in again.")
            }
            Refusal::EmailNotVerified => ApiError::new(
                product_codes::EMAIL_VERIFICATION_REQUIRED,
                "Verify your email address before connecting email reports.",
            ),
            Refusal::Unconfigured(Platform::Email) => ApiError::new(
                product_codes::EMAIL_UNAVAILABLE,
                "Email is not configured on this router.",
            ),
            Refusal::Unconfigured(platform) => ApiError::new(
                product_codes::CHANNEL_UNAVAILABLE,
                format!("The {platform} transport is not configured on this router."),
            ),
            Refusal::AlreadyConnected => ApiError::new(
                product_codes::CHANNEL_ALREADY_CONNECTED,
                "A channel on this platform is already connected with another frequency; change it with PATCH /v1/channels/{id}.",
            ),
            Refusal::RateLimited { retry_after_secs } => ApiError::new(
                product_codes::RATE_LIMITED,
                "Reports on this channel are limited to one a minute and 20 a day.",
            )
            .with_retry_after(Some(retry_after_secs)),
            Refusal::ReportTooLarge => ApiError::new(
                product_codes::REPORT_UNAVAILABLE,
                "The complete report does not fit this platform's message limit.",
            ),
            Refusal::ReportPending => ApiError::new(
                product_codes::REPORT_PENDING,
                "The platform did not take the report; it will be retried.",
            ),
            Refusal::DeliveryFailed(platform) => {
                ApiError::new(failed(platform), "The report could not be delivered.")
            }
            Refusal::Unacknowledged(platform) => ApiError::new(
                failed(platform),
                "The platform did not acknowledge the report; it may have arrived and is not resent.",
            ),
        }
    }
}
