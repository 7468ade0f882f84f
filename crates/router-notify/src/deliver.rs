//! Delivery over the four transports: SMTP ([`Mailer`]), Slack
//! incoming webhooks (`200 ok`), Discord webhooks (`204`, or `200` JSON
//! with `?wait=true`) and the Telegram Bot API `sendMessage`
//! (`{"ok": true}`).
//!
//! Each outcome says whether the message may have arrived: a refused
//! connection or a 429/5xx answer certainly did not deliver (retry later),
//! another 4xx will not succeed on a retry, and a timeout or a connection
//! lost after the request went out is unknown: never resent (M-22).
//! Webhook URLs and the bot token are secrets: errors name only a kind and
//! a status, never a URL.
//!
//! Before anything is sent, the URL is checked again and its host resolved
//! under the destination rules (`destination.rs`): a refused destination
//! is [`Sent::Refused`] without a connection, and the request goes to the
//! addresses that were checked.

use crate::destination::{self, DestinationError};
use crate::mail::{MailError, Mailer, SendFailure};
use crate::platform::Platform;
use crate::report::Rendered;
use router_core::store::StoreError;
use router_store::channels::ChannelRow;
use router_supply::url_guard::UrlPolicy;
use std::fmt;
use std::time::Duration;

/// The public Telegram Bot API.
pub const TELEGRAM_API_BASE: &str = "https://api.telegram.org";

/// The chat transports' configuration (the email one is the [`Mailer`]).
#[derive(Clone)]
pub struct Transports {
    /// `ROUTER_CHANNEL_TIMEOUT_SECS`: one delivery, connection included.
    timeout: Duration,
    /// `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK`: which hosts destinations may
    /// name besides public ones.
    urls: UrlPolicy,
    /// `ROUTER_TELEGRAM_BOT_TOKEN`; `None`: Telegram is unavailable.
    telegram_token: Option<String>,
    /// `ROUTER_TELEGRAM_API_BASE`.
    telegram_base: String,
}

impl fmt::Debug for Transports {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Transports")
            .field("telegram", &self.telegram_token.is_some())
            .field("telegram_base", &self.telegram_base)
            .field("allow_loopback", &self.urls.allow_loopback)
            .finish_non_exhaustive()
    }
}

impl Transports {
    /// `timeout` bounds one delivery, connection included. Destinations
    /// must be public until [`Transports::allow_loopback`]. The Telegram
    /// base is checked by the caller ([`destination::check`]) and again at
    /// every delivery.
    pub fn new(
        telegram_token: Option<String>,
        telegram_base: Option<String>,
        timeout: Duration,
    ) -> Transports {
        Transports {
            timeout,
            urls: UrlPolicy::default(),
            telegram_token: telegram_token.filter(|t| !t.is_empty()),
            telegram_base: telegram_base
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| TELEGRAM_API_BASE.to_owned())
                .trim_end_matches('/')
                .to_owned(),
        }
    }

    /// `ROUTER_CHANNEL_URL_ALLOW_LOOPBACK`: destinations may also be
    /// loopback hosts, over plain http too (tests and the local demo only).
    pub fn allow_loopback(mut self, allow: bool) -> Transports {
        self.urls.allow_loopback = allow;
        self
    }

    /// Which hosts channel destinations may name.
    pub fn url_policy(&self) -> UrlPolicy {
        self.urls
    }

    /// Whether a platform's transport is configured (the status views'
    /// `configured`). Slack and Discord need nothing but the channel's URL.
    pub fn configured(&self, platform: Platform, mailer: Option<&Mailer>) -> bool {
        match platform {
            Platform::Email => mailer.is_some(),
            Platform::Telegram => self.telegram_token.is_some(),
            Platform::Slack | Platform::Discord => true,
        }
    }
}

/// How one delivery ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// Certainly not delivered; a retry may succeed.
    Retryable(String),
    /// Not delivered; a retry will not help.
    Refused(String),
    /// May have been delivered: not resent (M-22).
    Unknown(String),
    /// The transport is not configured.
    Unconfigured,
}

/// Where one message goes: a channel's platform, destination (an address,
/// a webhook URL or a chat id) and, for Telegram, its own Bot API base.
#[derive(Clone, Copy)]
pub struct Destination<'a> {
    pub platform: Platform,
    pub to: &'a str,
    pub api_base: Option<&'a str>,
}

impl<'a> Destination<'a> {
    /// Where a stored channel delivers.
    pub fn of(channel: &'a ChannelRow) -> Result<Destination<'a>, StoreError> {
        Ok(Destination {
            platform: Platform::of(channel)?,
            to: &channel.destination,
            api_base: channel.api_base.as_deref(),
        })
    }
}

/// Sends `message` to `destination` over its platform's transport.
pub async fn send(
    transports: &Transports,
    mailer: Option<&Mailer>,
    destination: Destination<'_>,
    message: &Rendered,
) -> Sent {
    let Destination {
        platform,
        to,
        api_base,
    } = destination;
    match (platform, message) {
        (
            Platform::Email,
            Rendered::Email {
                subject,
                text,
                html,
            },
        ) => {
            let Some(mailer) = mailer else {
                return Sent::Unconfigured;
            };
            match mailer
                .send_alternative(to, subject, text.clone(), html.clone())
                .await
            {
                Ok(()) => Sent::Delivered,
                Err(MailError::Delivery(failure, kind)) => match failure {
                    SendFailure::Transient | SendFailure::Unreached => Sent::Retryable(kind),
                    SendFailure::Permanent => Sent::Refused(kind),
                    SendFailure::Unknown => Sent::Unknown(kind),
                },
                Err(other) => Sent::Refused(other.to_string()),
            }
        }
        (Platform::Slack, Rendered::Json(body)) => {
            post(transports, to, body, |status, text| {
                status == 200 && text.trim() == "ok"
            })
            .await
        }
        (Platform::Discord, Rendered::Json(body)) => {
            post(transports, to, body, |status, _| {
                status == 204 || status == 200
            })
            .await
        }
        (Platform::Telegram, Rendered::Json(body)) => {
            let Some(token) = transports.telegram_token.as_deref() else {
                return Sent::Unconfigured;
            };
            let base = api_base
                .unwrap_or(&transports.telegram_base)
                .trim_end_matches('/');
            let mut body = body.clone();
            body["chat_id"] = serde_json::Value::String(to.to_owned());
            post(
                transports,
                &format!("{base}/bot{token}/sendMessage"),
                &body,
                |status, text| {
                    status == 200
                        && serde_json::from_str::<serde_json::Value>(text)
                            .is_ok_and(|v| v["ok"] == serde_json::Value::Bool(true))
                },
            )
            .await
        }
        (Platform::Email, Rendered::Json(_))
        | (Platform::Slack | Platform::Discord | Platform::Telegram, Rendered::Email { .. }) => {
            Sent::Refused("the message does not suit the platform".to_owned())
        }
    }
}

async fn post(
    transports: &Transports,
    url: &str,
    body: &serde_json::Value,
    accepted: impl Fn(u16, &str) -> bool,
) -> Sent {
    // A fresh client per delivery, pinned to the addresses just checked;
    // it follows no redirect (one could point anywhere).
    let builder = reqwest::Client::builder()
        .timeout(transports.timeout)
        .connect_timeout(transports.timeout);
    let checked = match destination::resolve(url, transports.urls, builder).await {
        Ok(checked) => checked,
        // A name that does not resolve now may later: nothing was sent.
        Err(DestinationError::Unresolved) => {
            return Sent::Retryable("the destination does not resolve".to_owned());
        }
        Err(refused) => return Sent::Refused(format!("the destination {refused}")),
    };
    let response = match checked.client.post(checked.url).json(body).send().await {
        Ok(response) => response,
        // Errors are described by kind only: their text carries the URL.
        Err(e) if e.is_connect() => return Sent::Retryable("connection failed".to_owned()),
        Err(e) if e.is_builder() => return Sent::Refused("invalid destination".to_owned()),
        Err(e) if e.is_timeout() => {
            return Sent::Unknown("no answer before the timeout".to_owned());
        }
        Err(_) => return Sent::Unknown("the connection broke".to_owned()),
    };
    let status = response.status().as_u16();
    let text = match response.text().await {
        Ok(text) => text,
        Err(_) if (200..300).contains(&status) => {
            return Sent::Unknown(format!("answer {status} could not be read"));
        }
        Err(_) => String::new(),
    };
    if accepted(status, &text) {
        Sent::Delivered
    } else if status == 429 || status >= 500 {
        Sent::Retryable(format!("the platform answered {status}"))
    } else if (200..300).contains(&status) {
        // A success status with an unexpected body: it may have posted.
        Sent::Unknown(format!(
            "the platform answered {status} without its acknowledgement"
        ))
    } else {
        Sent::Refused(format!("the platform answered {status}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_platform_is_configured_only_with_its_transport() {
        // reqwest is built without a TLS provider; the binary installs one.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let none = Transports::new(None, None, Duration::from_secs(1));
        assert!(!none.configured(Platform::Telegram, None), "no bot token");
        assert!(!none.configured(Platform::Email, None), "no SMTP server");
        assert!(none.configured(Platform::Slack, None) && none.configured(Platform::Discord, None));
        let token = Transports::new(Some("1:secret".into()), None, Duration::from_secs(1));
        assert!(token.configured(Platform::Telegram, None));
        assert_eq!(token.telegram_base, TELEGRAM_API_BASE);
        assert!(
            !format!("{token:?}").contains("secret"),
            "Debug hides the token"
        );
    }
}
