//! The gateway's product error codes: everything the gateway answers that
//! is not a protocol's own code ([`ErrorCode`]'s variants). Each is an
//! [`ErrorCode::Product`] with its wire string and HTTP status; every
//! protocol's envelope renders it like any other code (its `type` follows
//! from the status). The wings and the server use these; the wire crates
//! never do.

use router_canonical::{ErrorCode, ProductCode};

// Inference policy.

/// A minimum discount asked of a model whose official list price is unknown (400).
pub const LIST_PRICE_UNKNOWN: ErrorCode =
    ErrorCode::Product(&ProductCode::new("list_price_unknown", 400));

/// A prompt-rewriting experiment with image input (H-06, GP-45, 400).
pub const INCOMPATIBLE_IMAGE_INPUT: ErrorCode =
    ErrorCode::Product(&ProductCode::new("incompatible_image_input", 400));

/// A request with image input whose conservative input estimate is above the bound (400).
pub const IMAGE_INPUT_LIMIT: ErrorCode =
    ErrorCode::Product(&ProductCode::new("image_input_limit", 400));

/// The account's available credits do not cover the request's maximum cost (402).
pub const INSUFFICIENT_CREDITS: ErrorCode =
    ErrorCode::Product(&ProductCode::new("insufficient_credits", 402));

/// The key may not use the model (403).
pub const MODEL_NOT_ALLOWED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("model_not_allowed", 403));

/// The key's policy changed while the request was admitted (403).
pub const POLICY_CHANGED: ErrorCode = ErrorCode::Product(&ProductCode::new("policy_changed", 403));

/// An experiment name the account does not have (404).
pub const EXPERIMENT_NOT_FOUND: ErrorCode =
    ErrorCode::Product(&ProductCode::new("experiment_not_found", 404));

/// The single supplier attempt of an image generation outlived its deadline (GP-27, 408).
pub const GENERATION_TIMEOUT: ErrorCode =
    ErrorCode::Product(&ProductCode::new("generation_timeout", 408));

/// No supply meets the request's minimum discount (503).
pub const MIN_DISCOUNT_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("min_discount_unavailable", 503));

/// No zero-data-retention supply can serve the request (503).
pub const ZDR_CAPACITY_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("zdr_capacity_unavailable", 503));

/// A request with image input found no vision supply able to serve it; it is never served by text-only supply instead (503).
pub const IMAGE_CAPACITY_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("image_capacity_unavailable", 503));

// Spend limits and budgets.

/// The key's spend limit does not cover the request's maximum cost (429).
pub const API_KEY_SPEND_LIMIT_EXCEEDED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("api_key_spend_limit_exceeded", 429));

/// The key's monthly budget does not cover the request's maximum cost (429).
pub const API_KEY_MONTHLY_BUDGET_EXCEEDED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("api_key_monthly_budget_exceeded", 429));

/// The key's daily request limit is reached (429).
pub const DAILY_REQUEST_LIMIT_EXCEEDED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("daily_request_limit_exceeded", 429));

/// The key's concurrent request limit is reached (429).
pub const CONCURRENCY_LIMIT_EXCEEDED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("concurrency_limit_exceeded", 429));

// Sign-in and sessions.

/// No credential on a route that only a browser session opens (401).
pub const AUTHENTICATION_REQUIRED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("authentication_required", 401));

/// The key lacks the route's scope (403).
pub const INSUFFICIENT_SCOPE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("insufficient_scope", 403));

/// An API key on a route that only a browser session opens (403).
pub const SESSION_REQUIRED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("session_required", 403));

/// A cookie-authenticated mutation from another origin (GP-36, 403).
pub const CROSS_ORIGIN_FORBIDDEN: ErrorCode =
    ErrorCode::Product(&ProductCode::new("cross_origin_forbidden", 403));

/// The key may not be used from the caller's IP address (403).
pub const IP_NOT_ALLOWED: ErrorCode = ErrorCode::Product(&ProductCode::new("ip_not_allowed", 403));

/// A sign-in link that is unknown, already used or expired (400).
pub const SIGN_IN_LINK_INVALID: ErrorCode =
    ErrorCode::Product(&ProductCode::new("sign_in_link_invalid", 400));

// Data protection.

/// A data-protection body other than `{"zero_data_retention": bool}` (400).
pub const INVALID_DATA_PROTECTION: ErrorCode =
    ErrorCode::Product(&ProductCode::new("invalid_data_protection", 400));

/// The account's zero data retention forbids it (new uploads, 403).
pub const DATA_PROTECTION_RESTRICTION: ErrorCode =
    ErrorCode::Product(&ProductCode::new("data_protection_restriction", 403));

// Uploads.

/// An upload body that is not one multipart part named `file` (400).
pub const INVALID_UPLOAD: ErrorCode = ErrorCode::Product(&ProductCode::new("invalid_upload", 400));

/// An upload ID that is unknown, expired or another account's (404).
pub const UPLOAD_NOT_FOUND: ErrorCode =
    ErrorCode::Product(&ProductCode::new("upload_not_found", 404));

/// An empty or oversized upload, or an oversized multipart envelope (413).
pub const UPLOAD_TOO_LARGE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("upload_too_large", 413));

/// An upload of a type other than PNG, JPEG, WebP or GIF (415).
pub const UNSUPPORTED_FILE_TYPE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("unsupported_file_type", 415));

/// An upload whose declared type and content disagree (415).
pub const INVALID_CONTENT_TYPE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("invalid_content_type", 415));

/// Too many uploads of the account in progress at once (429).
pub const UPLOAD_RATE_LIMIT: ErrorCode =
    ErrorCode::Product(&ProductCode::new("upload_rate_limit", 429));

/// The account's uploads are at their quota (files and bytes, 429).
pub const UPLOAD_QUOTA_EXCEEDED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("upload_quota_exceeded", 429));

/// No object store is configured, or it failed (503).
pub const UPLOADS_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("uploads_unavailable", 503));

// Video tasks.

/// A video ID that is invalid, unknown or another team's (404).
pub const TASK_NOT_FOUND: ErrorCode = ErrorCode::Product(&ProductCode::new("task_not_found", 404));

/// A video's content before it completed (or of a failed video, GP-24, 404).
pub const VIDEO_NOT_READY: ErrorCode =
    ErrorCode::Product(&ProductCode::new("video_not_ready", 404));

/// A video `client_task_id` reused with different parameters (O-17, 409).
pub const IDEMPOTENCY_CONFLICT: ErrorCode =
    ErrorCode::Product(&ProductCode::new("idempotency_conflict", 409));

/// A malformed, non-`bytes` or multi-range `Range` on video content (CF-13, 416).
pub const INVALID_RANGE: ErrorCode = ErrorCode::Product(&ProductCode::new("invalid_range", 416));

/// A video submission whose supplier task is unconfirmed (O-19, 503).
pub const SUBMISSION_UNKNOWN: ErrorCode =
    ErrorCode::Product(&ProductCode::new("submission_unknown", 503));

// Email, channels and reports.

/// A channel ID that is unknown or another account's (404).
pub const CHANNEL_NOT_FOUND: ErrorCode =
    ErrorCode::Product(&ProductCode::new("channel_not_found", 404));

/// Email cannot be sent: no SMTP transport is configured (503).
pub const EMAIL_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("email_unavailable", 503));

/// An email channel needs the account's email to be verified (M-30, 403).
pub const EMAIL_VERIFICATION_REQUIRED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("email_verification_required", 403));

/// A channel on this platform is connected with another frequency (M-28, 409).
pub const CHANNEL_ALREADY_CONNECTED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("channel_already_connected", 409));

/// A manual report too soon (M-16, M-17): with `Retry-After` (429).
pub const RATE_LIMITED: ErrorCode = ErrorCode::Product(&ProductCode::new("rate_limited", 429));

/// The channel's transport is not configured (M-21, 503).
pub const CHANNEL_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("channel_unavailable", 503));

/// The complete report cannot fit the platform's message limit (M-21, 503).
pub const REPORT_UNAVAILABLE: ErrorCode =
    ErrorCode::Product(&ProductCode::new("report_unavailable", 503));

/// The report's delivery failed for now and awaits a retry (M-21, 503).
pub const REPORT_PENDING: ErrorCode = ErrorCode::Product(&ProductCode::new("report_pending", 503));

/// The email provider refused the report (M-21, 503).
pub const EMAIL_DELIVERY_FAILED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("email_delivery_failed", 503));

/// The platform refused the report, or may have received it (M-21, M-22, 503).
pub const REPORT_DELIVERY_FAILED: ErrorCode =
    ErrorCode::Product(&ProductCode::new("report_delivery_failed", 503));

// Releases.

/// The endpoint exists but its feature has not been released yet (503).
pub const NOT_AVAILABLE: ErrorCode = ErrorCode::Product(&ProductCode::new("not_available", 503));

/// Every product code, for documentation and tests.
pub const ALL: [ErrorCode; 47] = [
    LIST_PRICE_UNKNOWN,
    INCOMPATIBLE_IMAGE_INPUT,
    IMAGE_INPUT_LIMIT,
    INSUFFICIENT_CREDITS,
    MODEL_NOT_ALLOWED,
    POLICY_CHANGED,
    EXPERIMENT_NOT_FOUND,
    GENERATION_TIMEOUT,
    API_KEY_SPEND_LIMIT_EXCEEDED,
    API_KEY_MONTHLY_BUDGET_EXCEEDED,
    DAILY_REQUEST_LIMIT_EXCEEDED,
    CONCURRENCY_LIMIT_EXCEEDED,
    MIN_DISCOUNT_UNAVAILABLE,
    ZDR_CAPACITY_UNAVAILABLE,
    IMAGE_CAPACITY_UNAVAILABLE,
    AUTHENTICATION_REQUIRED,
    INSUFFICIENT_SCOPE,
    SESSION_REQUIRED,
    CROSS_ORIGIN_FORBIDDEN,
    IP_NOT_ALLOWED,
    SIGN_IN_LINK_INVALID,
    INVALID_DATA_PROTECTION,
    DATA_PROTECTION_RESTRICTION,
    INVALID_UPLOAD,
    UPLOAD_NOT_FOUND,
    UPLOAD_TOO_LARGE,
    UNSUPPORTED_FILE_TYPE,
    INVALID_CONTENT_TYPE,
    UPLOAD_RATE_LIMIT,
    UPLOAD_QUOTA_EXCEEDED,
    UPLOADS_UNAVAILABLE,
    TASK_NOT_FOUND,
    VIDEO_NOT_READY,
    IDEMPOTENCY_CONFLICT,
    INVALID_RANGE,
    SUBMISSION_UNKNOWN,
    CHANNEL_NOT_FOUND,
    EMAIL_UNAVAILABLE,
    EMAIL_VERIFICATION_REQUIRED,
    CHANNEL_ALREADY_CONNECTED,
    RATE_LIMITED,
    CHANNEL_UNAVAILABLE,
    REPORT_UNAVAILABLE,
    REPORT_PENDING,
    EMAIL_DELIVERY_FAILED,
    REPORT_DELIVERY_FAILED,
    NOT_AVAILABLE,
];

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn product_codes_are_distinct_from_each_other_and_from_the_protocol_codes() {
        let mut seen = HashSet::new();
        for code in ErrorCode::PROTOCOL.into_iter().chain(ALL) {
            assert!(seen.insert(code.as_str()), "{code} twice");
        }
    }

    #[test]
    fn video_codes_keep_their_statuses() {
        for (code, status) in [
            (TASK_NOT_FOUND, 404),
            (VIDEO_NOT_READY, 404),
            (IDEMPOTENCY_CONFLICT, 409),
            (INVALID_RANGE, 416),
            (SUBMISSION_UNKNOWN, 503),
        ] {
            assert_eq!(code.http_status(), status, "{code}");
        }
    }
}
