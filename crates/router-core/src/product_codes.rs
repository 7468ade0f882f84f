//! The gateway's product error codes: everything the gateway answers that
//! is not a protocol's own code ([`ErrorCode`]'s variants). Each is an
//! [`ErrorCode::Product`] with its wire string and HTTP status; every
//! protocol's envelope renders it like any other code (its `type` follows
//! from the status). The wings and the server use these; the wire crates
//! never do.

use router_canonical::{ErrorCode, ProductCode};

/// Each code once: its const, wire string and status; `ALL` lists them.
macro_rules! product_codes {
    ($($(#[$doc:meta])* $name:ident = $code:literal, $status:literal;)*) => {
        $(
            $(#[$doc])*
            pub const $name: ErrorCode = ErrorCode::Product(&ProductCode::new($code, $status));
        )*

        /// Every product code, for documentation and tests.
        pub const ALL: &[ErrorCode] = &[$($name),*];
    };
}

product_codes! {
    // Inference policy.

    /// A minimum discount asked of a model whose official list price is unknown.
    LIST_PRICE_UNKNOWN = "list_price_unknown", 400;
    /// A prompt-rewriting experiment with image input (H-06, GP-45).
    INCOMPATIBLE_IMAGE_INPUT = "incompatible_image_input", 400;
    /// A request with image input whose conservative input estimate is
    /// above the bound.
    IMAGE_INPUT_LIMIT = "image_input_limit", 400;
    /// The account's available credits do not cover the request's maximum cost.
    INSUFFICIENT_CREDITS = "insufficient_credits", 402;
    /// The key may not use the model.
    MODEL_NOT_ALLOWED = "model_not_allowed", 403;
    /// The key's policy changed while the request was admitted.
    POLICY_CHANGED = "policy_changed", 403;
    /// An experiment name the account does not have.
    EXPERIMENT_NOT_FOUND = "experiment_not_found", 404;
    /// The single supplier attempt of an image generation outlived its deadline (GP-27).
    GENERATION_TIMEOUT = "generation_timeout", 408;
    /// No supply meets the request's minimum discount.
    MIN_DISCOUNT_UNAVAILABLE = "min_discount_unavailable", 503;
    /// No zero-data-retention supply can serve the request.
    ZDR_CAPACITY_UNAVAILABLE = "zdr_capacity_unavailable", 503;
    /// A request with image input found no vision supply able to serve it;
    /// it is never served by text-only supply instead.
    IMAGE_CAPACITY_UNAVAILABLE = "image_capacity_unavailable", 503;

    // Spend limits and budgets.

    /// The key's spend limit does not cover the request's maximum cost.
    API_KEY_SPEND_LIMIT_EXCEEDED = "api_key_spend_limit_exceeded", 429;
    /// The key's monthly budget does not cover the request's maximum cost.
    API_KEY_MONTHLY_BUDGET_EXCEEDED = "api_key_monthly_budget_exceeded", 429;
    /// The key's daily request limit is reached.
    DAILY_REQUEST_LIMIT_EXCEEDED = "daily_request_limit_exceeded", 429;
    /// The key's concurrent request limit is reached.
    CONCURRENCY_LIMIT_EXCEEDED = "concurrency_limit_exceeded", 429;

    // Sign-in and sessions.

    /// No credential on a route that only a browser session opens.
    AUTHENTICATION_REQUIRED = "authentication_required", 401;
    /// The key lacks the route's scope.
    INSUFFICIENT_SCOPE = "insufficient_scope", 403;
    /// An API key on a route that only a browser session opens.
    SESSION_REQUIRED = "session_required", 403;
    /// A cookie-authenticated mutation from another origin (GP-36).
    CROSS_ORIGIN_FORBIDDEN = "cross_origin_forbidden", 403;
    /// The key may not be used from the caller's IP address.
    IP_NOT_ALLOWED = "ip_not_allowed", 403;
    /// A sign-in link that is unknown, already used or expired.
    SIGN_IN_LINK_INVALID = "sign_in_link_invalid", 400;

    // Data protection.

    /// A data-protection body other than `{"zero_data_retention": bool}`.
    INVALID_DATA_PROTECTION = "invalid_data_protection", 400;
    /// The account's zero data retention forbids it (new uploads).
    DATA_PROTECTION_RESTRICTION = "data_protection_restriction", 403;

    // Uploads.

    /// An upload body that is not one multipart part named `file`.
    INVALID_UPLOAD = "invalid_upload", 400;
    /// An upload ID that is unknown, expired or another account's.
    UPLOAD_NOT_FOUND = "upload_not_found", 404;
    /// An empty or oversized upload, or an oversized multipart envelope.
    UPLOAD_TOO_LARGE = "upload_too_large", 413;
    /// An upload of a type other than PNG, JPEG, WebP or GIF.
    UNSUPPORTED_FILE_TYPE = "unsupported_file_type", 415;
    /// An upload whose declared type and content disagree.
    INVALID_CONTENT_TYPE = "invalid_content_type", 415;
    /// Too many uploads of the account in progress at once.
    UPLOAD_RATE_LIMIT = "upload_rate_limit", 429;
    /// The account's uploads are at their quota (files and bytes).
    UPLOAD_QUOTA_EXCEEDED = "upload_quota_exceeded", 429;
    /// No object store is configured, or it failed.
    UPLOADS_UNAVAILABLE = "uploads_unavailable", 503;

    // Video tasks.

    /// A video ID that is invalid, unknown or another team's.
    TASK_NOT_FOUND = "task_not_found", 404;
    /// A video's content before it completed (or of a failed video, GP-24).
    VIDEO_NOT_READY = "video_not_ready", 404;
    /// A video `client_task_id` reused with different parameters (O-17).
    IDEMPOTENCY_CONFLICT = "idempotency_conflict", 409;
    /// A malformed, non-`bytes` or multi-range `Range` on video content (CF-13).
    INVALID_RANGE = "invalid_range", 416;
    /// A video submission whose supplier task is unconfirmed (O-19).
    SUBMISSION_UNKNOWN = "submission_unknown", 503;

    // Email, channels and reports.

    /// A channel ID that is unknown or another account's.
    CHANNEL_NOT_FOUND = "channel_not_found", 404;
    /// Email cannot be sent: no SMTP transport is configured.
    EMAIL_UNAVAILABLE = "email_unavailable", 503;
    /// An email channel needs the account's email to be verified (M-30).
    EMAIL_VERIFICATION_REQUIRED = "email_verification_required", 403;
    /// A channel on this platform is connected with another frequency (M-28).
    CHANNEL_ALREADY_CONNECTED = "channel_already_connected", 409;
    /// A manual report too soon (M-16, M-17): with `Retry-After`.
    RATE_LIMITED = "rate_limited", 429;
    /// The channel's transport is not configured (M-21).
    CHANNEL_UNAVAILABLE = "channel_unavailable", 503;
    /// The complete report cannot fit the platform's message limit (M-21).
    REPORT_UNAVAILABLE = "report_unavailable", 503;
    /// The report's delivery failed for now and awaits a retry (M-21).
    REPORT_PENDING = "report_pending", 503;
    /// The email provider refused the report (M-21).
    EMAIL_DELIVERY_FAILED = "email_delivery_failed", 503;
    /// The platform refused the report, or may have received it (M-21, M-22).
    REPORT_DELIVERY_FAILED = "report_delivery_failed", 503;

    // Releases.

    /// The endpoint exists but its feature has not been released yet.
    NOT_AVAILABLE = "not_available", 503;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn product_codes_are_distinct_from_each_other_and_from_the_protocol_codes() {
        let mut seen = HashSet::new();
        for code in ErrorCode::PROTOCOL.iter().chain(ALL) {
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
