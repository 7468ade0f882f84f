//! What a supplier's failure means, whatever protocol reported it.
//!
//! Every supplier codec decodes its protocol's error shapes into one
//! [`SupplierFailure`] (the HTTP status, the protocol's own error type and
//! code, its message and the `Retry-After` it asked for). Its
//! [`SupplierErrorCategory`] says what kind of failure that is in the same
//! terms for every protocol, and whether asking again may succeed
//! ([`SupplierErrorCategory::retryable`]). [`SupplierError::to_api_error`]
//! turns any supplier error into the public error a proxy answers its own
//! client with; each client codec renders that in its envelope
//! ([`crate::ClientCodec::supplier_error_reply`]).
//!
//! ```
//! use router_canonical::{SupplierError, SupplierErrorCategory, SupplierFailure};
//! use std::time::Duration;
//!
//! let error = SupplierError::Reported(
//!     SupplierFailure::with_status(429)
//!         .kind("rate_limit_error")
//!         .retry_after(Duration::from_secs(3)),
//! );
//! assert_eq!(error.category(), SupplierErrorCategory::RateLimited);
//! assert!(error.retryable());
//! assert_eq!(error.status(), Some(429));
//! assert_eq!(error.retry_after(), Some(Duration::from_secs(3)));
//!
//! let public = error.to_api_error();
//! assert_eq!(public.status(), 503);
//! assert_eq!(public.code.as_str(), "upstream_unavailable");
//! assert_eq!(public.retry_after, Some(3));
//! ```

use crate::header::HeaderSource;
use crate::{ApiError, ErrorCode};
use std::error::Error;
use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// What kind of failure a supplier reported, the same for every protocol.
///
/// With an HTTP status, the status decides (so two protocols that answer
/// the same status agree); the body only refines a 400 into
/// [`SupplierErrorCategory::ContextTooLong`]. A failure reported without a
/// status (an error object in a success reply, an error event in a stream)
/// is read from the protocol's error type or code. New categories may be
/// added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SupplierErrorCategory {
    /// Too many requests (HTTP 429, `rate_limit_error`, `ThrottlingException`,
    /// `RESOURCE_EXHAUSTED`).
    RateLimited,
    /// The supplier is busy or down for now (HTTP 503 and 529,
    /// `overloaded_error`, `UNAVAILABLE`).
    Overloaded,
    /// The supplier did not accept the credential (HTTP 401).
    Authentication,
    /// The credential may not do this (HTTP 403).
    Permission,
    /// The supplier account cannot pay for it (HTTP 402, `billing_error`,
    /// `insufficient_quota` without a status).
    Billing,
    /// The request is not valid for the supplier (HTTP 400, 413, 422 and
    /// other 4xx without a category of their own).
    InvalidRequest,
    /// The prompt and the requested output do not fit the model's context
    /// window (a 400 whose code or message says so).
    ContextTooLong,
    /// The model or endpoint does not exist there (HTTP 404).
    NotFound,
    /// The supplier gave up waiting (HTTP 408, 504 is a server error).
    Timeout,
    /// The request collided with another state (HTTP 409 Conflict, 425 Too
    /// Early): asking again later may succeed.
    Conflict,
    /// The supplier failed on its side (HTTP 5xx other than 503 and 529).
    ServerError,
    /// The supplier answered, but not validly in its protocol (bad JSON,
    /// missing members, events out of order, implausible usage).
    InvalidReply,
    /// The supplier's answer is valid but holds a construct the canonical
    /// model cannot represent.
    UnsupportedReply,
    /// A failure with nothing to classify it by (a 3xx, an unknown type).
    Other,
}

impl SupplierErrorCategory {
    /// Whether the same request may succeed if sent again later (after the
    /// supplier's `Retry-After`, where it gave one): rate limits, overload,
    /// timeouts, conflicts and server errors. A rejection of the request
    /// itself, or a reply that was not valid, is not retryable.
    pub fn retryable(self) -> bool {
        matches!(
            self,
            SupplierErrorCategory::RateLimited
                | SupplierErrorCategory::Overloaded
                | SupplierErrorCategory::Timeout
                | SupplierErrorCategory::Conflict
                | SupplierErrorCategory::ServerError
        )
    }

    /// A stable lower-case name (`rate_limited`, `context_too_long`, ...),
    /// for logs and metrics.
    pub fn as_str(self) -> &'static str {
        match self {
            SupplierErrorCategory::RateLimited => "rate_limited",
            SupplierErrorCategory::Overloaded => "overloaded",
            SupplierErrorCategory::Authentication => "authentication",
            SupplierErrorCategory::Permission => "permission",
            SupplierErrorCategory::Billing => "billing",
            SupplierErrorCategory::InvalidRequest => "invalid_request",
            SupplierErrorCategory::ContextTooLong => "context_too_long",
            SupplierErrorCategory::NotFound => "not_found",
            SupplierErrorCategory::Timeout => "timeout",
            SupplierErrorCategory::Conflict => "conflict",
            SupplierErrorCategory::ServerError => "server_error",
            SupplierErrorCategory::InvalidReply => "invalid_reply",
            SupplierErrorCategory::UnsupportedReply => "unsupported_reply",
            SupplierErrorCategory::Other => "other",
        }
    }

    /// The category of an HTTP error status alone.
    pub fn of_status(status: u16) -> Self {
        match status {
            401 => SupplierErrorCategory::Authentication,
            402 => SupplierErrorCategory::Billing,
            403 => SupplierErrorCategory::Permission,
            404 => SupplierErrorCategory::NotFound,
            408 => SupplierErrorCategory::Timeout,
            409 | 425 => SupplierErrorCategory::Conflict,
            429 => SupplierErrorCategory::RateLimited,
            503 | 529 => SupplierErrorCategory::Overloaded,
            400..=499 => SupplierErrorCategory::InvalidRequest,
            500..=599 => SupplierErrorCategory::ServerError,
            _ => SupplierErrorCategory::Other,
        }
    }

    /// The category a protocol's error type or code names (OpenAI,
    /// Anthropic, Gemini and Bedrock spellings), if any.
    fn of_name(name: &str) -> Option<Self> {
        let name = name.trim_end_matches("Exception").to_ascii_lowercase();
        Some(match name.as_str() {
            "rate_limit_error"
            | "rate_limit_exceeded"
            | "requests"
            | "tokens"
            | "throttling"
            | "resource_exhausted"
            | "toomanyrequests" => SupplierErrorCategory::RateLimited,
            "overloaded_error" | "overloaded" | "unavailable" | "serviceunavailable"
            | "modelnotready" => SupplierErrorCategory::Overloaded,
            "authentication_error"
            | "invalid_api_key"
            | "unauthenticated"
            | "unrecognizedclient" => SupplierErrorCategory::Authentication,
            "permission_error" | "permission_denied" | "accessdenied" => {
                SupplierErrorCategory::Permission
            }
            "billing_error" | "insufficient_quota" => SupplierErrorCategory::Billing,
            "context_length_exceeded" | "string_above_max_length" => {
                SupplierErrorCategory::ContextTooLong
            }
            "invalid_request_error"
            | "invalid_argument"
            | "validation"
            | "failed_precondition"
            | "request_too_large" => SupplierErrorCategory::InvalidRequest,
            "not_found_error" | "not_found" | "model_not_found" | "resourcenotfound" => {
                SupplierErrorCategory::NotFound
            }
            "timeout_error" | "deadline_exceeded" | "modeltimeout" => {
                SupplierErrorCategory::Timeout
            }
            "server_error" | "api_error" | "internal" | "internalserver" | "internal_error"
            | "modelstreamerror" => SupplierErrorCategory::ServerError,
            _ => return None,
        })
    }
}

impl fmt::Display for SupplierErrorCategory {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a supplier reported about its own failure, in whatever detail its
/// protocol gives. Never shown to clients verbatim.
///
/// Built with [`SupplierFailure::with_status`] (an error reply) or
/// [`SupplierFailure::default`] (a failure inside a success reply or a
/// stream) and the setters; new members may be added, hence
/// `#[non_exhaustive]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SupplierFailure {
    /// The HTTP status of an error reply; `None` for a failure reported
    /// inside a success reply or a stream.
    pub status: Option<u16>,
    /// The protocol's error type (`rate_limit_error`, `server_error`).
    pub kind: Option<String>,
    /// The protocol's error code, where it has one.
    pub code: Option<String>,
    /// The supplier's own message (may hold details of its account: log it,
    /// do not show it).
    pub message: Option<String>,
    /// How long the supplier asked to wait before asking again (its
    /// `Retry-After` header), where it said.
    pub retry_after: Option<Duration>,
}

impl SupplierFailure {
    /// A failure answered with the HTTP error status `status`.
    pub fn with_status(status: u16) -> Self {
        SupplierFailure {
            status: Some(status),
            ..SupplierFailure::default()
        }
    }

    /// A failure reported inside a success reply or a stream (no status),
    /// with whatever detail the protocol gave.
    pub fn in_reply(kind: Option<String>, code: Option<String>, message: Option<String>) -> Self {
        SupplierFailure {
            kind,
            code,
            message,
            ..SupplierFailure::default()
        }
    }

    /// A failure answered with `status` and these reply headers: the
    /// status, and the wait the `Retry-After` header asks for (delta
    /// seconds or an HTTP date). What every codec's `decode_error` starts from.
    pub fn from_reply(status: u16, headers: &dyn HeaderSource) -> Self {
        SupplierFailure {
            retry_after: headers
                .header("retry-after")
                .and_then(|value| parse_retry_after(value, SystemTime::now())),
            ..SupplierFailure::with_status(status)
        }
    }

    /// This failure with the protocol's error type.
    pub fn kind(mut self, kind: impl Into<String>) -> Self {
        self.kind = Some(kind.into());
        self
    }

    /// This failure with the protocol's error code.
    pub fn code(mut self, code: impl Into<String>) -> Self {
        self.code = Some(code.into());
        self
    }

    /// This failure with the supplier's message.
    pub fn message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// This failure with the wait the supplier asked for.
    pub fn retry_after(mut self, wait: Duration) -> Self {
        self.retry_after = Some(wait);
        self
    }

    /// What kind of failure this is (see [`SupplierErrorCategory`] for the
    /// rule: the status first, then the type and code).
    pub fn category(&self) -> SupplierErrorCategory {
        let named = || {
            [&self.code, &self.kind]
                .into_iter()
                .flatten()
                .find_map(|name| SupplierErrorCategory::of_name(name))
        };
        match self.status {
            Some(400) if named() == Some(SupplierErrorCategory::ContextTooLong) => {
                SupplierErrorCategory::ContextTooLong
            }
            Some(400) if self.message.as_deref().is_some_and(says_context_too_long) => {
                SupplierErrorCategory::ContextTooLong
            }
            Some(status) => SupplierErrorCategory::of_status(status),
            None => named().unwrap_or(SupplierErrorCategory::Other),
        }
    }
}

/// How the suppliers say a prompt does not fit: Anthropic ("prompt is too
/// long"), Bedrock ("input is too long"), Gemini ("input token count ...
/// exceeds"), OpenAI-compatible servers ("maximum context length").
fn says_context_too_long(message: &str) -> bool {
    let message = message.to_ascii_lowercase();
    [
        "prompt is too long",
        "input is too long",
        "maximum context length",
        "context length exceeded",
        "context window",
        "input token count",
    ]
    .iter()
    .any(|phrase| message.contains(phrase))
}

/// The wait a `Retry-After` value asks for: delta-seconds or an HTTP date
/// (a date in the past is no wait); `None` when it is neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let when = httpdate::parse_http_date(value).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Why a supplier's answer yields no canonical value. The kind decides what
/// a gateway may do next: a reported failure may be tried elsewhere; an
/// invalid or unrepresentable reply means the supplier answered, so trying
/// again could pay twice.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SupplierError {
    /// The supplier reported a failure: an error reply, an error body in a
    /// success reply, or an error event in a stream.
    #[error("the supplier reported a failure{}", describe_failure(.0))]
    Reported(SupplierFailure),
    /// The reply is not valid in the protocol: bad JSON, a missing member,
    /// events out of order, implausible usage.
    #[error("invalid supplier reply: {0}")]
    InvalidReply(Arc<dyn Error + Send + Sync>),
    /// The reply is valid in the protocol but holds a construct the
    /// canonical model cannot represent (an unknown content type).
    #[error("unsupported construct in the supplier reply: {0}")]
    Unsupported(Arc<dyn Error + Send + Sync>),
}

impl SupplierError {
    /// An invalid reply, keeping the decoder's typed error as its source.
    pub fn invalid(error: impl Error + Send + Sync + 'static) -> Self {
        SupplierError::InvalidReply(Arc::new(error))
    }

    /// An unrepresentable construct, keeping the decoder's typed error.
    pub fn unsupported(error: impl Error + Send + Sync + 'static) -> Self {
        SupplierError::Unsupported(Arc::new(error))
    }

    /// The failure the supplier reported, if that is what this is.
    pub fn reported(&self) -> Option<&SupplierFailure> {
        match self {
            SupplierError::Reported(failure) => Some(failure),
            _ => None,
        }
    }

    /// What kind of failure this is, the same for every protocol.
    pub fn category(&self) -> SupplierErrorCategory {
        match self {
            SupplierError::Reported(failure) => failure.category(),
            SupplierError::InvalidReply(_) => SupplierErrorCategory::InvalidReply,
            SupplierError::Unsupported(_) => SupplierErrorCategory::UnsupportedReply,
        }
    }

    /// Whether the same request may succeed if sent again later
    /// ([`SupplierErrorCategory::retryable`]).
    pub fn retryable(&self) -> bool {
        self.category().retryable()
    }

    /// The HTTP status of the supplier's error reply, if it was one.
    pub fn status(&self) -> Option<u16> {
        self.reported().and_then(|failure| failure.status)
    }

    /// The supplier's own error code, or its error type where it has no
    /// code (`rate_limit_exceeded`, `overloaded_error`, `RESOURCE_EXHAUSTED`).
    pub fn supplier_code(&self) -> Option<&str> {
        let failure = self.reported()?;
        failure.code.as_deref().or(failure.kind.as_deref())
    }

    /// How long the supplier asked to wait before asking again.
    pub fn retry_after(&self) -> Option<Duration> {
        self.reported().and_then(|failure| failure.retry_after)
    }

    /// The public error a proxy answers its own client with when this is
    /// the last word on a request. The supplier's message is never copied
    /// (it may describe the supplier's account). The rule:
    ///
    /// | the supplier's failure | public error |
    /// |---|---|
    /// | a retryable category ([`SupplierErrorCategory::retryable`]) | 503 `upstream_unavailable`, with the supplier's `Retry-After` (whole seconds, at least 1) |
    /// | an invalid or unrepresentable reply | 502 `invalid_upstream_response` |
    /// | any other reported failure (a rejection) | 502 `upstream_error` |
    ///
    /// Render it in the client's protocol with its codec's
    /// [`crate::ClientCodec::error_body`], or in one call with
    /// [`crate::ClientCodec::supplier_error_reply`].
    pub fn to_api_error(&self) -> ApiError {
        let category = self.category();
        match category {
            SupplierErrorCategory::InvalidReply | SupplierErrorCategory::UnsupportedReply => {
                ApiError::new(
                    ErrorCode::InvalidUpstreamResponse,
                    "The upstream response was invalid.",
                )
            }
            _ if category.retryable() => ApiError::new(
                ErrorCode::UpstreamUnavailable,
                format!("The upstream is unavailable ({category}); retry later."),
            )
            .with_retry_after(
                self.retry_after()
                    .map(|wait| wait.as_secs() + u64::from(wait.subsec_nanos() > 0)),
            ),
            _ => ApiError::new(
                ErrorCode::UpstreamError,
                format!("The upstream rejected the request ({category})."),
            ),
        }
    }
}

impl PartialEq for SupplierError {
    /// Reported failures compare by content; decoder errors by their text.
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (SupplierError::Reported(a), SupplierError::Reported(b)) => a == b,
            (SupplierError::InvalidReply(a), SupplierError::InvalidReply(b))
            | (SupplierError::Unsupported(a), SupplierError::Unsupported(b)) => {
                a.to_string() == b.to_string()
            }
            _ => false,
        }
    }
}

fn describe_failure(failure: &SupplierFailure) -> String {
    let mut text = String::new();
    if let Some(status) = failure.status {
        text.push_str(&format!(" (HTTP {status})"));
    }
    for (label, value) in [("type", &failure.kind), ("code", &failure.code)] {
        if let Some(value) = value {
            text.push_str(&format!(", {label} {value}"));
        }
    }
    text
}

impl fmt::Display for SupplierFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(describe_failure(self).trim_start_matches(", "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("no choices")]
    struct NoChoices;

    #[test]
    fn a_decoder_error_keeps_its_type() {
        let error = SupplierError::invalid(NoChoices);
        let SupplierError::InvalidReply(source) = &error else {
            panic!("wrong kind");
        };
        assert!(source.downcast_ref::<NoChoices>().is_some());
        assert_eq!(error.to_string(), "invalid supplier reply: no choices");
        assert!(error.reported().is_none());
        assert_eq!(error.category(), SupplierErrorCategory::InvalidReply);
        assert!(!error.retryable());
        assert_eq!(
            error.to_api_error().code,
            ErrorCode::InvalidUpstreamResponse
        );
    }

    #[test]
    fn a_reported_failure_describes_itself() {
        let failure = SupplierFailure::with_status(429).kind("rate_limit_error");
        let error = SupplierError::Reported(failure.clone());
        assert_eq!(
            error.to_string(),
            "the supplier reported a failure (HTTP 429), type rate_limit_error"
        );
        assert_eq!(error.reported().unwrap(), &failure);
    }

    /// The status decides: every status the gateway retries on the same
    /// route (404, 408, 409, 425, 429, 5xx) is retryable or
    /// `NotFound`; the others are neither.
    #[test]
    fn the_status_decides_the_category() {
        use SupplierErrorCategory as C;
        let cases = [
            (400, C::InvalidRequest),
            (401, C::Authentication),
            (402, C::Billing),
            (403, C::Permission),
            (404, C::NotFound),
            (408, C::Timeout),
            (409, C::Conflict),
            (413, C::InvalidRequest),
            (422, C::InvalidRequest),
            (425, C::Conflict),
            (429, C::RateLimited),
            (500, C::ServerError),
            (502, C::ServerError),
            (503, C::Overloaded),
            (504, C::ServerError),
            (529, C::Overloaded),
            (302, C::Other),
        ];
        for (status, category) in cases {
            // A body's type never overrides the status.
            let failure = SupplierFailure::with_status(status).kind("overloaded_error");
            assert_eq!(failure.category(), category, "HTTP {status}");
            let g09 = matches!(status, 404 | 408 | 409 | 425 | 429) || status >= 500;
            assert_eq!(
                category.retryable() || category == C::NotFound,
                g09,
                "HTTP {status}"
            );
        }
    }

    #[test]
    fn a_400_may_say_the_context_is_too_long() {
        let openai = SupplierFailure::with_status(400)
            .kind("invalid_request_error")
            .code("context_length_exceeded");
        assert_eq!(openai.category(), SupplierErrorCategory::ContextTooLong);
        let anthropic = SupplierFailure::with_status(400)
            .kind("invalid_request_error")
            .message("prompt is too long: 210000 tokens > 200000 maximum");
        assert_eq!(anthropic.category(), SupplierErrorCategory::ContextTooLong);
        let plain = SupplierFailure::with_status(400).message("bad temperature");
        assert_eq!(plain.category(), SupplierErrorCategory::InvalidRequest);
        assert!(!openai.category().retryable());
    }

    #[test]
    fn without_a_status_the_type_or_code_decides() {
        use SupplierErrorCategory as C;
        for (kind, category) in [
            ("overloaded_error", C::Overloaded),
            ("rate_limit_error", C::RateLimited),
            ("ThrottlingException", C::RateLimited),
            ("RESOURCE_EXHAUSTED", C::RateLimited),
            ("server_error", C::ServerError),
            ("api_error", C::ServerError),
            ("invalid_request_error", C::InvalidRequest),
            ("ValidationException", C::InvalidRequest),
            ("prompt_blocked", C::Other),
        ] {
            let failure = SupplierFailure::default().kind(kind);
            assert_eq!(failure.category(), category, "{kind}");
        }
        let coded = SupplierFailure::default().code("rate_limit_exceeded");
        assert_eq!(coded.category(), C::RateLimited);
    }

    #[test]
    fn retry_after_is_read_from_the_reply_headers() {
        let headers: &[(&str, &str)] = &[("Retry-After", "7")];
        let failure = SupplierFailure::from_reply(429, &headers);
        assert_eq!(failure.retry_after, Some(Duration::from_secs(7)));
        let error = SupplierError::Reported(failure);
        assert_eq!(error.retry_after(), Some(Duration::from_secs(7)));
        assert_eq!(error.to_api_error().retry_after, Some(7));
        let failure = SupplierFailure::from_reply(429, &());
        assert_eq!(failure.retry_after, None);
    }

    #[test]
    fn retry_after_is_seconds_or_a_date() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(parse_retry_after("2", now), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(now + Duration::from_secs(30));
        assert_eq!(
            parse_retry_after(&later, now),
            Some(Duration::from_secs(30))
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn the_public_error_follows_the_category() {
        let rejected = SupplierError::Reported(SupplierFailure::with_status(401));
        let public = rejected.to_api_error();
        assert_eq!(public.code, ErrorCode::UpstreamError);
        assert_eq!(public.status(), 502);
        assert_eq!(public.retry_after, None);
        let busy = SupplierError::Reported(
            SupplierFailure::with_status(529).retry_after(Duration::from_millis(1_500)),
        );
        let public = busy.to_api_error();
        assert_eq!(public.code, ErrorCode::UpstreamUnavailable);
        assert_eq!(public.retry_after, Some(2));
        // The supplier's message never reaches the client.
        let secret = SupplierError::Reported(SupplierFailure::with_status(400).message("acct 42"));
        assert!(!secret.to_api_error().message.contains("acct"));
    }
}
