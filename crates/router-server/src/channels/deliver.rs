//! Delivery over the four transports: SMTP (`crate::mail::Mailer`), Slack
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

use super::report::Rendered;
use crate::mail::{MailError, Mailer, SendFailure};
use router_store::channels::ChannelRow;
use std::fmt;
use std::time::Duration;

/// The public Telegram Bot API.
pub const TELEGRAM_API_BASE: &str = "https://api.telegram.org";

/// The chat transports' configuration (the email one is `App::mailer`).
#[derive(Clone)]
pub struct Transports {
    http: reqwest::Client,
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
            .finish_non_exhaustive()
    }
}

impl Transports {
    /// `timeout` bounds one delivery, connection included.
    pub fn new(
        telegram_token: Option<String>,
        telegram_base: Option<String>,
        timeout: Duration,
    ) -> Result<Transports, reqwest::Error> {
        let http = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout)
            // A webhook that redirects is not followed: the operator gave
            // the URL, a redirect could point anywhere.
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(Transports {
            http,
            telegram_token: telegram_token.filter(|t| !t.is_empty()),
            telegram_base: telegram_base
                .filter(|b| !b.is_empty())
                .unwrap_or_else(|| TELEGRAM_API_BASE.to_owned())
                .trim_end_matches('/')
                .to_owned(),
        })
    }

    /// Whether a platform's transport is configured (the status views'
    /// `configured`). Slack and Discord need nothing but the channel's URL.
    pub fn configured(&self, platform: &str, mailer: Option<&Mailer>) -> bool {
        match platform {
            "email" => mailer.is_some(),
            "telegram" => self.telegram_token.is_some(),
            _ => true,
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

pub async fn send(
    transports: &Transports,
    mailer: Option<&Mailer>,
    channel: &ChannelRow,
    message: &Rendered,
) -> Sent {
    match (channel.platform.as_str(), message) {
        (
            "email",
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
                .send_alternative(&channel.destination, subject, text.clone(), html.clone())
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
        ("slack", Rendered::Json(body)) => {
            post(transports, &channel.destination, body, |status, text| {
                status == 200 && text.trim() == "ok"
            })
            .await
        }
        ("discord", Rendered::Json(body)) => {
            post(transports, &channel.destination, body, |status, _| {
                status == 204 || status == 200
            })
            .await
        }
        ("telegram", Rendered::Json(body)) => {
            let Some(token) = transports.telegram_token.as_deref() else {
                return Sent::Unconfigured;
            };
            let base = channel
                .api_base
                .as_deref()
                .unwrap_or(&transports.telegram_base)
                .trim_end_matches('/');
            let mut body = body.clone();
            body["chat_id"] = serde_json::Value::String(channel.destination.clone());
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
        _ => Sent::Refused("the message does not suit the platform".to_owned()),
    }
}

async fn post(
    transports: &Transports,
    url: &str,
    body: &serde_json::Value,
    accepted: impl Fn(u16, &str) -> bool,
) -> Sent {
    let response = match transports.http.post(url).json(body).send().await {
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
        let none = Transports::new(None, None, Duration::from_secs(1)).unwrap();
        assert!(!none.configured("telegram", None), "no bot token");
        assert!(!none.configured("email", None), "no SMTP server");
        assert!(none.configured("slack", None) && none.configured("discord", None));
        let token = Transports::new(Some("1:secret".into()), None, Duration::from_secs(1)).unwrap();
        assert!(token.configured("telegram", None));
        assert_eq!(token.telegram_base, TELEGRAM_API_BASE);
        assert!(
            !format!("{token:?}").contains("secret"),
            "Debug hides the token"
        );
    }
}
