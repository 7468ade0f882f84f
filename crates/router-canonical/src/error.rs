//! The public error every surface renders in its own envelope.
//!
//! Each wire crate owns its envelope; this type is what they render from.
//! The HTTP status and the OpenAI-style `type` follow from the code, so no
//! caller can pair them wrongly.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

/// A stable, public error code.
///
/// The variants are the codes a protocol itself answers: what a wire crate
/// or a plain protocol server needs. Anything else (a gateway's product
/// codes: uploads, channels, sign-in, budgets, ...) is a [`ProductCode`]
/// carried by [`ErrorCode::Product`], defined as a `const` by the crate that
/// answers it. New protocol codes may be added, hence `#[non_exhaustive]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorCode {
    /// 400: a field of the request is invalid (`param` names it).
    InvalidParameter,
    /// 400: the request holds what the target protocol cannot carry.
    UnsupportedConversion,
    /// 400: a parameter this service does not support.
    UnsupportedParameter,
    /// 401: the credential is missing or not valid.
    InvalidApiKey,
    /// 404: no such model.
    ModelNotFound,
    /// 404: no such resource.
    NotFound,
    /// 405: the path exists, not with this method.
    MethodNotAllowed,
    /// 409: the request conflicts with the resource's state.
    Conflict,
    /// 413: the body is larger than accepted.
    PayloadTooLarge,
    /// The request's body did not arrive in time: nothing for the body
    /// idle timeout, or below the minimum rate (408).
    RequestTimeout,
    /// 429: too many requests; retry after `Retry-After`.
    RateLimitExceeded,
    /// 502: the supplier rejected the request.
    UpstreamError,
    /// 502: the supplier answered something invalid.
    InvalidUpstreamResponse,
    /// 503: no supplier could answer (unreachable, overloaded, failing).
    UpstreamUnavailable,
    /// 503: no route can serve the model now.
    RouteUnavailable,
    /// The service itself cannot answer now (its database unreachable, a
    /// connection not free in time, shutting down): retry after
    /// `Retry-After`; nothing was charged.
    ServiceUnavailable,
    /// 500: the service failed.
    InternalError,
    /// A code outside the protocols, defined by the product that answers it.
    Product(&'static ProductCode),
}

/// A product's own error code: its wire string and its HTTP status. Each
/// protocol's envelope `type` follows from the status, exactly as for the
/// protocol codes. [`ErrorCode::Product`] holds a `'static` reference (so an
/// `ErrorCode` stays two words); define one as a `const`:
///
/// ```
/// use router_canonical::{ErrorCode, ProductCode};
/// const QUOTA_EXCEEDED: ErrorCode = ErrorCode::Product(&ProductCode::new("quota_exceeded", 429));
/// assert_eq!(QUOTA_EXCEEDED.as_str(), "quota_exceeded");
/// assert_eq!(QUOTA_EXCEEDED.openai_type(), "rate_limit_error");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ProductCode {
    code: &'static str,
    status: u16,
}

impl ProductCode {
    /// A code answered with the error status `status` (400..=599).
    pub const fn new(code: &'static str, status: u16) -> Self {
        assert!(
            status >= 400 && status <= 599,
            "an error status is 4xx or 5xx"
        );
        ProductCode { code, status }
    }

    /// The wire string.
    pub const fn as_str(self) -> &'static str {
        self.code
    }

    /// The HTTP status.
    pub const fn http_status(self) -> u16 {
        self.status
    }
}

impl ErrorCode {
    /// Every protocol code (the variants other than [`ErrorCode::Product`]).
    pub const PROTOCOL: [ErrorCode; 17] = [
        ErrorCode::InvalidParameter,
        ErrorCode::UnsupportedConversion,
        ErrorCode::UnsupportedParameter,
        ErrorCode::InvalidApiKey,
        ErrorCode::ModelNotFound,
        ErrorCode::NotFound,
        ErrorCode::MethodNotAllowed,
        ErrorCode::Conflict,
        ErrorCode::PayloadTooLarge,
        ErrorCode::RequestTimeout,
        ErrorCode::RateLimitExceeded,
        ErrorCode::UpstreamError,
        ErrorCode::InvalidUpstreamResponse,
        ErrorCode::UpstreamUnavailable,
        ErrorCode::RouteUnavailable,
        ErrorCode::ServiceUnavailable,
        ErrorCode::InternalError,
    ];

    /// The wire string (`invalid_parameter`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::UnsupportedConversion => "unsupported_conversion",
            ErrorCode::UnsupportedParameter => "unsupported_parameter",
            ErrorCode::InvalidApiKey => "invalid_api_key",
            ErrorCode::ModelNotFound => "model_not_found",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::UpstreamError => "upstream_error",
            ErrorCode::InvalidUpstreamResponse => "invalid_upstream_response",
            ErrorCode::UpstreamUnavailable => "upstream_unavailable",
            ErrorCode::RouteUnavailable => "route_unavailable",
            ErrorCode::ServiceUnavailable => "service_unavailable",
            ErrorCode::InternalError => "internal_error",
            ErrorCode::Product(code) => code.as_str(),
        }
    }

    /// The HTTP status the code is answered with.
    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidParameter
            | ErrorCode::UnsupportedConversion
            | ErrorCode::UnsupportedParameter => 400,
            ErrorCode::InvalidApiKey => 401,
            ErrorCode::ModelNotFound | ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::RequestTimeout => 408,
            ErrorCode::Conflict => 409,
            ErrorCode::PayloadTooLarge => 413,
            ErrorCode::RateLimitExceeded => 429,
            ErrorCode::UpstreamError | ErrorCode::InvalidUpstreamResponse => 502,
            ErrorCode::UpstreamUnavailable
            | ErrorCode::RouteUnavailable
            | ErrorCode::ServiceUnavailable => 503,
            ErrorCode::InternalError => 500,
            ErrorCode::Product(code) => code.http_status(),
        }
    }

    /// The OpenAI-style `error.type`, chosen by status.
    pub fn openai_type(self) -> &'static str {
        match self.http_status() {
            401 => "authentication_error",
            402 => "billing_error",
            403 => "permission_error",
            429 => "rate_limit_error",
            s if s >= 500 => "api_error",
            _ => "invalid_request_error",
        }
    }

    /// The Anthropic-style `error.type`, chosen by status.
    pub fn messages_type(self) -> &'static str {
        match self.http_status() {
            401 => "authentication_error",
            402 => "billing_error",
            403 => "permission_error",
            404 => "not_found_error",
            413 => "request_too_large",
            429 => "rate_limit_error",
            503 => "overloaded_error",
            s if s >= 500 => "api_error",
            _ => "invalid_request_error",
        }
    }
}

/// The wire string; a product code is written like a protocol code.
impl Serialize for ErrorCode {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Reads a protocol code; a product code's status is not in its string, so
/// the product that defined it reads it.
impl<'de> Deserialize<'de> for ErrorCode {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        ErrorCode::PROTOCOL
            .into_iter()
            .find(|code| code.as_str() == text)
            .ok_or_else(|| {
                serde::de::Error::custom(format_args!("unknown protocol error code `{text}`"))
            })
    }
}

impl fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A request field in the canonical model's terms. Code that knows no wire
/// protocol (routing, pricing) names the field it refuses this way; each
/// client codec renders it under its own protocol's name. Deliberately
/// exhaustive: a new field must be named by every codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Field {
    /// The output cap (`max_tokens`, `max_output_tokens`, ...).
    MaxOutputTokens,
    /// Stop sequences (`stop`, `stop_sequences`).
    StopSequences,
    /// An image in the input.
    ImageInput,
    /// The tool definitions.
    Tools,
    /// The reasoning effort.
    ReasoningEffort,
    /// The thinking configuration.
    Thinking,
    /// The structured output format.
    ResponseFormat,
    /// Streaming.
    Stream,
    /// The sampling temperature.
    Temperature,
    /// Frequency and presence penalties.
    Penalties,
    /// The conversation's content: a message or content part that cannot be
    /// carried (Chat and Messages `messages`, Responses `input`, legacy
    /// Completions `prompt`).
    Messages,
}

/// A public error: a code, a message safe to show a client, and the
/// offending field or header when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    /// The stable code (it decides the status and the envelope's type).
    pub code: ErrorCode,
    /// A message safe to show the client.
    pub message: String,
    /// The offending field as the client named it (a path such as
    /// `messages[2].content`), or a header.
    pub param: Option<String>,
    /// The offending field in canonical terms, for an error raised where the
    /// protocol is unknown; [`ApiError::named_in`] turns it into `param`.
    #[serde(skip)]
    pub field: Option<Field>,
    /// Seconds (≥ 1) after which the request may succeed, sent as the
    /// reply's `Retry-After` header (a 429 whose reset time is known).
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl ApiError {
    /// An error with this code and message.
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            param: None,
            field: None,
            retry_after: None,
        }
    }

    /// An `invalid_parameter` error about `param`.
    pub fn invalid(param: impl Into<String>, message: impl Into<String>) -> Self {
        ApiError {
            code: ErrorCode::InvalidParameter,
            message: message.into(),
            param: Some(param.into()),
            field: None,
            retry_after: None,
        }
    }

    /// An error about a canonical field, to be named by the client's codec.
    pub fn for_field(code: ErrorCode, field: Field, message: impl Into<String>) -> Self {
        ApiError {
            field: Some(field),
            ..ApiError::new(code, message)
        }
    }

    /// This error with its canonical field (if any) named by `name`, the
    /// client protocol's name for each field.
    pub fn named_in(&self, name: fn(Field) -> &'static str) -> std::borrow::Cow<'_, ApiError> {
        match self.field {
            Some(field) => std::borrow::Cow::Owned(ApiError {
                param: Some(name(field).to_owned()),
                field: None,
                ..self.clone()
            }),
            None => std::borrow::Cow::Borrowed(self),
        }
    }

    /// A conversion refusal of the content at `path`, a canonical path
    /// (`messages[i].content[j]`, `messages[i].role`): its field is
    /// [`Field::Messages`], so a client's codec names its own conversation
    /// field (`messages`, `input`, `prompt`); `param` holds the path for a
    /// caller that renders no client envelope, and the message starts with
    /// it for every caller.
    pub fn unsupported_content(path: impl Into<String>, message: impl fmt::Display) -> Self {
        let path = path.into();
        ApiError::unsupported_conversion(format!("{path}: {message}"))
            .with_field(Field::Messages)
            .with_param(path)
    }

    /// This error about the canonical `field`, which the client's codec
    /// names in its own protocol's terms ([`ApiError::named_in`]).
    pub fn with_field(mut self, field: Field) -> Self {
        self.field = Some(field);
        self
    }

    /// This error naming the offending field or header.
    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// This error with a `Retry-After` of `seconds` (raised to at least 1).
    pub fn with_retry_after(mut self, seconds: Option<u64>) -> Self {
        self.retry_after = seconds.map(|s| s.max(1));
        self
    }

    /// An `unsupported_conversion` error.
    pub fn unsupported_conversion(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::UnsupportedConversion, message)
    }

    /// The HTTP status.
    pub fn status(&self) -> u16 {
        self.code.http_status()
    }
}
