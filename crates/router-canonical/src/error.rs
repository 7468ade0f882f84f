//! The public error every surface renders in its own envelope.
//!
//! Each wire crate owns its envelope; this type is what they render from.
//! The HTTP status and the OpenAI-style `type` follow from the code, so no
//! caller can pair them wrongly.

use serde::{Deserialize, Serialize};
use std::fmt;

/// A stable, public error code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    InvalidParameter,
    UnsupportedConversion,
    UnsupportedParameter,
    ListPriceUnknown,
    /// A prompt-rewriting experiment with image input (H-06, GP-45).
    IncompatibleImageInput,
    InvalidApiKey,
    /// No credential on a route that only a browser session opens.
    AuthenticationRequired,
    InsufficientCredits,
    InsufficientScope,
    /// An API key on a route that only a browser session opens.
    SessionRequired,
    /// A cookie-authenticated mutation from another origin (GP-36).
    CrossOriginForbidden,
    /// A sign-in link that is unknown, already used or expired.
    SignInLinkInvalid,
    ModelNotAllowed,
    IpNotAllowed,
    PolicyChanged,
    ModelNotFound,
    ExperimentNotFound,
    UploadNotFound,
    ChannelNotFound,
    /// A video ID that is invalid, unknown or another team's.
    TaskNotFound,
    /// A video's content before it completed (or of a failed video, GP-24).
    VideoNotReady,
    /// A video `client_task_id` reused with different parameters (O-17).
    IdempotencyConflict,
    /// A malformed, non-`bytes` or multi-range `Range` on video content
    /// (416, CF-13).
    InvalidRange,
    /// A video submission whose supplier task is unconfirmed (503, O-19).
    SubmissionUnknown,
    NotFound,
    MethodNotAllowed,
    Conflict,
    PayloadTooLarge,
    /// The single supplier attempt of an image generation outlived its
    /// deadline (408, GP-27).
    GenerationTimeout,
    /// The request's body did not arrive in time: nothing for the body
    /// idle timeout, or below the minimum rate (408).
    RequestTimeout,
    ApiKeySpendLimitExceeded,
    ApiKeyMonthlyBudgetExceeded,
    RateLimitExceeded,
    DailyRequestLimitExceeded,
    ConcurrencyLimitExceeded,
    UpstreamError,
    InvalidUpstreamResponse,
    UpstreamUnavailable,
    RouteUnavailable,
    MinDiscountUnavailable,
    ZdrCapacityUnavailable,
    /// A request with image input found no vision supply able to serve it;
    /// it is never served by text-only supply instead.
    ImageCapacityUnavailable,
    /// A request with image input whose conservative input estimate is
    /// above the bound (400).
    ImageInputLimit,
    /// A data-protection body other than `{"zero_data_retention": bool}`.
    InvalidDataProtection,
    /// The account's zero data retention forbids it (new uploads).
    DataProtectionRestriction,
    /// An upload body that is not one multipart part named `file`.
    InvalidUpload,
    /// An empty or oversized upload, or an oversized multipart envelope.
    UploadTooLarge,
    /// An upload of a type other than PNG, JPEG, WebP or GIF (415).
    UnsupportedFileType,
    /// An upload whose declared type and content disagree (415).
    InvalidContentType,
    UploadRateLimit,
    UploadQuotaExceeded,
    /// No object store is configured, or it failed.
    UploadsUnavailable,
    /// The endpoint exists but its feature has not been released yet.
    NotAvailable,
    /// Email cannot be sent: no SMTP transport is configured.
    EmailUnavailable,
    /// An email channel needs the account's email to be verified (M-30).
    EmailVerificationRequired,
    /// A channel on this platform is connected with another frequency (M-28).
    ChannelAlreadyConnected,
    /// A manual report too soon (M-16, M-17): with `Retry-After`.
    RateLimited,
    /// The channel's transport is not configured (M-21).
    ChannelUnavailable,
    /// The complete report cannot fit the platform's message limit (M-21).
    ReportUnavailable,
    /// The report's delivery failed for now and awaits a retry (M-21).
    ReportPending,
    /// The email provider refused the report (M-21).
    EmailDeliveryFailed,
    /// The platform refused the report, or may have received it (M-21, M-22).
    ReportDeliveryFailed,
    /// The router's database cannot be reached (or a connection was not
    /// free in time): retry after `Retry-After`; nothing was charged.
    ServiceUnavailable,
    InternalError,
}

impl ErrorCode {
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorCode::InvalidParameter => "invalid_parameter",
            ErrorCode::UnsupportedConversion => "unsupported_conversion",
            ErrorCode::UnsupportedParameter => "unsupported_parameter",
            ErrorCode::ListPriceUnknown => "list_price_unknown",
            ErrorCode::IncompatibleImageInput => "incompatible_image_input",
            ErrorCode::ExperimentNotFound => "experiment_not_found",
            ErrorCode::MinDiscountUnavailable => "min_discount_unavailable",
            ErrorCode::ZdrCapacityUnavailable => "zdr_capacity_unavailable",
            ErrorCode::ImageCapacityUnavailable => "image_capacity_unavailable",
            ErrorCode::ImageInputLimit => "image_input_limit",
            ErrorCode::InvalidApiKey => "invalid_api_key",
            ErrorCode::AuthenticationRequired => "authentication_required",
            ErrorCode::SessionRequired => "session_required",
            ErrorCode::CrossOriginForbidden => "cross_origin_forbidden",
            ErrorCode::SignInLinkInvalid => "sign_in_link_invalid",
            ErrorCode::EmailUnavailable => "email_unavailable",
            ErrorCode::EmailVerificationRequired => "email_verification_required",
            ErrorCode::ChannelAlreadyConnected => "channel_already_connected",
            ErrorCode::RateLimited => "rate_limited",
            ErrorCode::ChannelUnavailable => "channel_unavailable",
            ErrorCode::ReportUnavailable => "report_unavailable",
            ErrorCode::ReportPending => "report_pending",
            ErrorCode::EmailDeliveryFailed => "email_delivery_failed",
            ErrorCode::ReportDeliveryFailed => "report_delivery_failed",
            ErrorCode::UploadNotFound => "upload_not_found",
            ErrorCode::ChannelNotFound => "channel_not_found",
            ErrorCode::TaskNotFound => "task_not_found",
            ErrorCode::VideoNotReady => "video_not_ready",
            ErrorCode::IdempotencyConflict => "idempotency_conflict",
            ErrorCode::InvalidRange => "invalid_range",
            ErrorCode::SubmissionUnknown => "submission_unknown",
            ErrorCode::NotAvailable => "not_available",
            ErrorCode::InvalidDataProtection => "invalid_data_protection",
            ErrorCode::DataProtectionRestriction => "data_protection_restriction",
            ErrorCode::InvalidUpload => "invalid_upload",
            ErrorCode::UploadTooLarge => "upload_too_large",
            ErrorCode::UnsupportedFileType => "unsupported_file_type",
            ErrorCode::InvalidContentType => "invalid_content_type",
            ErrorCode::UploadRateLimit => "upload_rate_limit",
            ErrorCode::UploadQuotaExceeded => "upload_quota_exceeded",
            ErrorCode::UploadsUnavailable => "uploads_unavailable",
            ErrorCode::InsufficientCredits => "insufficient_credits",
            ErrorCode::InsufficientScope => "insufficient_scope",
            ErrorCode::ModelNotAllowed => "model_not_allowed",
            ErrorCode::IpNotAllowed => "ip_not_allowed",
            ErrorCode::PolicyChanged => "policy_changed",
            ErrorCode::ModelNotFound => "model_not_found",
            ErrorCode::NotFound => "not_found",
            ErrorCode::MethodNotAllowed => "method_not_allowed",
            ErrorCode::Conflict => "conflict",
            ErrorCode::PayloadTooLarge => "payload_too_large",
            ErrorCode::GenerationTimeout => "generation_timeout",
            ErrorCode::RequestTimeout => "request_timeout",
            ErrorCode::ApiKeySpendLimitExceeded => "api_key_spend_limit_exceeded",
            ErrorCode::ApiKeyMonthlyBudgetExceeded => "api_key_monthly_budget_exceeded",
            ErrorCode::RateLimitExceeded => "rate_limit_exceeded",
            ErrorCode::DailyRequestLimitExceeded => "daily_request_limit_exceeded",
            ErrorCode::ConcurrencyLimitExceeded => "concurrency_limit_exceeded",
            ErrorCode::UpstreamError => "upstream_error",
            ErrorCode::InvalidUpstreamResponse => "invalid_upstream_response",
            ErrorCode::UpstreamUnavailable => "upstream_unavailable",
            ErrorCode::RouteUnavailable => "route_unavailable",
            ErrorCode::ServiceUnavailable => "service_unavailable",
            ErrorCode::InternalError => "internal_error",
        }
    }

    pub fn http_status(self) -> u16 {
        match self {
            ErrorCode::InvalidParameter
            | ErrorCode::UnsupportedConversion
            | ErrorCode::UnsupportedParameter
            | ErrorCode::ListPriceUnknown
            | ErrorCode::IncompatibleImageInput
            | ErrorCode::SignInLinkInvalid
            | ErrorCode::InvalidDataProtection
            | ErrorCode::InvalidUpload
            | ErrorCode::ImageInputLimit => 400,
            ErrorCode::InvalidApiKey | ErrorCode::AuthenticationRequired => 401,
            ErrorCode::InsufficientCredits => 402,
            ErrorCode::InsufficientScope
            | ErrorCode::SessionRequired
            | ErrorCode::CrossOriginForbidden
            | ErrorCode::ModelNotAllowed
            | ErrorCode::IpNotAllowed
            | ErrorCode::PolicyChanged
            | ErrorCode::EmailVerificationRequired
            | ErrorCode::DataProtectionRestriction => 403,
            ErrorCode::ModelNotFound
            | ErrorCode::ExperimentNotFound
            | ErrorCode::UploadNotFound
            | ErrorCode::ChannelNotFound
            | ErrorCode::TaskNotFound
            | ErrorCode::VideoNotReady
            | ErrorCode::NotFound => 404,
            ErrorCode::MethodNotAllowed => 405,
            ErrorCode::Conflict
            | ErrorCode::ChannelAlreadyConnected
            | ErrorCode::IdempotencyConflict => 409,
            ErrorCode::GenerationTimeout | ErrorCode::RequestTimeout => 408,
            ErrorCode::PayloadTooLarge | ErrorCode::UploadTooLarge => 413,
            ErrorCode::UnsupportedFileType | ErrorCode::InvalidContentType => 415,
            ErrorCode::InvalidRange => 416,
            ErrorCode::ApiKeySpendLimitExceeded
            | ErrorCode::ApiKeyMonthlyBudgetExceeded
            | ErrorCode::RateLimitExceeded
            | ErrorCode::DailyRequestLimitExceeded
            | ErrorCode::ConcurrencyLimitExceeded
            | ErrorCode::RateLimited
            | ErrorCode::UploadRateLimit
            | ErrorCode::UploadQuotaExceeded => 429,
            ErrorCode::UpstreamError | ErrorCode::InvalidUpstreamResponse => 502,
            ErrorCode::UpstreamUnavailable
            | ErrorCode::RouteUnavailable
            | ErrorCode::MinDiscountUnavailable
            | ErrorCode::ZdrCapacityUnavailable
            | ErrorCode::ImageCapacityUnavailable
            | ErrorCode::NotAvailable
            | ErrorCode::EmailUnavailable
            | ErrorCode::ChannelUnavailable
            | ErrorCode::ReportUnavailable
            | ErrorCode::ReportPending
            | ErrorCode::EmailDeliveryFailed
            | ErrorCode::ReportDeliveryFailed
            | ErrorCode::SubmissionUnknown
            | ErrorCode::UploadsUnavailable
            | ErrorCode::ServiceUnavailable => 503,
            ErrorCode::InternalError => 500,
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
    MaxOutputTokens,
    StopSequences,
    ImageInput,
    Tools,
    ReasoningEffort,
    Thinking,
    ResponseFormat,
    Stream,
    Temperature,
    Penalties,
}

/// A public error: a code, a message safe to show a client, and the
/// offending field or header when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{code}: {message}")]
pub struct ApiError {
    pub code: ErrorCode,
    pub message: String,
    /// The offending field as the client named it (a path such as
    /// `messages[2].content`), or a header.
    pub param: Option<String>,
    /// The offending field in canonical terms, for an error raised where the
    /// protocol is unknown; [`ApiError::named_in`] turns it into `param`.
    #[serde(skip)]
    pub field: Option<Field>,
    /// Seconds (≥ 1) after which the request may succeed, sent as the
    /// reply's `Retry-After` header (a 429 whose reset time is known, GP-08).
    #[serde(skip)]
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError {
            code,
            message: message.into(),
            param: None,
            field: None,
            retry_after: None,
        }
    }

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

    pub fn with_param(mut self, param: impl Into<String>) -> Self {
        self.param = Some(param.into());
        self
    }

    /// This error with a `Retry-After` of `seconds` (raised to at least 1).
    pub fn with_retry_after(mut self, seconds: Option<u64>) -> Self {
        self.retry_after = seconds.map(|s| s.max(1));
        self
    }

    pub fn unsupported_conversion(message: impl Into<String>) -> Self {
        ApiError::new(ErrorCode::UnsupportedConversion, message)
    }

    pub fn status(&self) -> u16 {
        self.code.http_status()
    }
}
