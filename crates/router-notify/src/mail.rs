//! Outgoing email through the SMTP server of `ROUTER_SMTP_URL`: sign-in
//! links, usage digests and event notifications.
//!
//! The URL is lettre's: `smtp://host:port` (plain, for a local relay or a
//! test sink), `smtp://host:587?tls=required` (STARTTLS) or
//! `smtps://user:password@host:465` (implicit TLS). It may carry a
//! password, so it is never logged.

use lettre::message::header::ContentType;
use lettre::message::{Mailbox, MessageBuilder, MultiPart};
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use std::fmt;

/// Why an email was not sent, or the transport could not be configured.
#[derive(Debug, thiserror::Error)]
pub enum MailError {
    #[error("ROUTER_SMTP_URL is not a valid SMTP URL: {0}")]
    Url(String),
    #[error("ROUTER_EMAIL_FROM is not a valid address: {0}")]
    From(String),
    #[error("not a valid recipient address: {0}")]
    Recipient(String),
    #[error("the message could not be built: {0}")]
    Build(String),
    #[error("the SMTP server did not accept the message: {0}")]
    Send(String),
    /// Whether the message may have reached the server is what a digest's
    /// retry decision needs (M-22); see [`SendFailure`].
    #[error("the SMTP server did not accept the message: {1}")]
    Delivery(SendFailure, String),
}

/// How a send failed, as far as a retry is concerned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendFailure {
    /// The server answered 4xx: certainly not delivered, try again later.
    Transient,
    /// The server answered 5xx (or the address is refused): not delivered,
    /// and trying again will not help.
    Permanent,
    /// No connection: certainly not delivered, try again later.
    Unreached,
    /// It timed out or broke mid-way: it may have been delivered.
    Unknown,
}

/// One SMTP transport (pooled connections) and the sender's address.
pub struct Mailer {
    transport: AsyncSmtpTransport<Tokio1Executor>,
    from: Mailbox,
}

impl fmt::Debug for Mailer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The transport holds the URL's credentials.
        f.debug_struct("Mailer")
            .field("from", &self.from.to_string())
            .finish_non_exhaustive()
    }
}

impl Mailer {
    pub fn from_url(url: &str, from: &str) -> Result<Mailer, MailError> {
        let transport = AsyncSmtpTransport::<Tokio1Executor>::from_url(url)
            // lettre's error text may quote the URL; name only the kind.
            .map_err(|e| MailError::Url(smtp_error_kind(&e)))?
            .build();
        let from = from
            .parse::<Mailbox>()
            .map_err(|e| MailError::From(e.to_string()))?;
        Ok(Mailer { transport, from })
    }

    /// A message from the configured sender to one recipient.
    fn message(&self, to: &str, subject: &str) -> Result<MessageBuilder, MailError> {
        let to = to
            .parse::<Mailbox>()
            .map_err(|e| MailError::Recipient(e.to_string()))?;
        Ok(Message::builder()
            .from(self.from.clone())
            .to(to)
            .subject(subject))
    }

    /// Sends a plain-text email to one recipient.
    pub async fn send(&self, to: &str, subject: &str, text: String) -> Result<(), MailError> {
        let message = self
            .message(to, subject)?
            .header(ContentType::TEXT_PLAIN)
            .body(text)
            .map_err(|e| MailError::Build(e.to_string()))?;
        self.transport
            .send(message)
            .await
            .map(|_| ())
            .map_err(|e| MailError::Send(smtp_error_kind(&e)))
    }
}

impl Mailer {
    /// Sends one email with a plain-text and an HTML alternative (a
    /// digest). The error says whether the message may have been delivered.
    pub async fn send_alternative(
        &self,
        to: &str,
        subject: &str,
        text: String,
        html: String,
    ) -> Result<(), MailError> {
        let message = self
            .message(to, subject)?
            .multipart(MultiPart::alternative_plain_html(text, html))
            .map_err(|e| MailError::Build(e.to_string()))?;
        self.transport.send(message).await.map(|_| ()).map_err(|e| {
            let failure = if e.is_permanent() {
                SendFailure::Permanent
            } else if e.is_transient() {
                SendFailure::Transient
            } else if e.is_timeout() {
                SendFailure::Unknown
            } else if e.is_client() || e.is_tls() {
                SendFailure::Unreached
            } else {
                // lettre reports a refused or lost connection alike; a
                // lost one may come after DATA, so it is not resent.
                SendFailure::Unknown
            };
            MailError::Delivery(failure, smtp_error_kind(&e))
        })
    }
}

/// A transport error without anything that could carry a credential.
fn smtp_error_kind(error: &lettre::transport::smtp::Error) -> String {
    if error.is_client() {
        "invalid configuration".to_owned()
    } else if error.is_permanent() || error.is_transient() {
        format!(
            "the server answered {}",
            error
                .status()
                .map_or("an error".to_owned(), |c| c.to_string())
        )
    } else if error.is_timeout() {
        "timed out".to_owned()
    } else if error.is_tls() {
        "TLS failed".to_owned()
    } else {
        "connection failed".to_owned()
    }
}

/// Checks the sender (`ROUTER_EMAIL_FROM`) even when no transport is
/// configured, so a typo is found at start-up, not at the first email.
pub fn check_sender(from: &str) -> Result<(), MailError> {
    from.parse::<Mailbox>()
        .map(|_| ())
        .map_err(|e| MailError::From(e.to_string()))
}

/// Whether `address` looks like one mailbox (`local@domain`), as lettre
/// parses it; the sign-in form refuses anything else with 400.
pub fn is_email_address(address: &str) -> bool {
    address.len() <= 254 && address.parse::<lettre::Address>().is_ok()
}
