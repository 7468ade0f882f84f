//! The supplier boundary: one physical attempt against one route.
//!
//! `router-supply` implements [`Suppliers`]. An attempt's error carries where
//! it came from and whether it may be retried as data, so the retry policy
//! never reads message text.

use crate::catalog::Route;
use crate::trace_context::TraceContext;
use bytes::Bytes;
use futures::Stream;
use router_canonical::{
    ApiError, ErrorCode, ImageRequest, Protocol, Request, Response, StreamEvent, SupplierError,
    SupplierErrorCategory, SupplierFailure, UpstreamVideo, VideoRequest,
};
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::time::Duration;
use tokio::time::Instant;
use uuid::Uuid;

/// Canonical events of a supplier stream that has started. An `Err` item
/// ends the stream (it is never retried: output was already returned).
pub type EventStream = Pin<Box<dyn Stream<Item = Result<StreamEvent, AttemptError>> + Send>>;

pub enum SupplierReply {
    Complete(Response),
    /// A stream whose first event already arrived (prebuffered), so failures
    /// before any output were still retryable.
    Stream(EventStream),
}

/// What the lifecycle may do after a failed attempt (requirements G-09..G-12, GP-47).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// Try the same route again, after `after` when the supplier asked for it.
    SameRoute { after: Option<Duration> },
    /// Do not retry this route; the next eligible route may be tried.
    NextRoute,
    /// Stop: a response arrived but was invalid; trying again would pay twice.
    Stop,
}

/// Stable failure classes, recorded on the Attempt row.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// Connection refused, reset or closed before a response.
    Transport,
    /// The routing deadline passed during the attempt.
    Timeout,
    /// The supplier answered with an error status.
    Status,
    /// The supplier reported a failure inside a success reply or a stream
    /// that had produced no output yet.
    Reported,
    /// The supplier's answer could not be decoded or its usage is invalid.
    InvalidResponse,
    /// The request cannot be expressed in the route's protocol.
    Conversion,
    /// The stream broke after output was returned.
    StreamInterrupted,
    /// The router's drain ended before the attempt did (`ROUTER_DRAIN_SECS`).
    Shutdown,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Transport => "transport",
            FailureKind::Timeout => "timeout",
            FailureKind::Status => "status",
            FailureKind::Reported => "reported",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::Conversion => "conversion",
            FailureKind::StreamInterrupted => "stream_interrupted",
            FailureKind::Shutdown => "shutdown",
        }
    }
}

/// What an attempt's failure is made of, kept typed from where it was seen
/// to the retry decision and the public code.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptCause {
    /// What the router itself observed: a transport failure, the deadline,
    /// a usage it will not bill. Internal text for logs and the attempt row.
    Observed(String),
    /// What the supplier's codec made of its answer.
    Supplier(SupplierError),
    /// The request cannot be expressed in the route's protocol: the public
    /// error to return if no route can serve it.
    Conversion(ApiError),
}

impl fmt::Display for AttemptCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttemptCause::Observed(detail) => f.write_str(detail),
            AttemptCause::Supplier(error) => write!(f, "{error}"),
            AttemptCause::Conversion(error) => write!(f, "{error}"),
        }
    }
}

/// One failed attempt: its class, what may be done next, and its cause.
/// Never shown to clients; the gateway maps it to a public error.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{kind:?} failure (status {upstream_status:?}): {cause}")]
pub struct AttemptError {
    pub kind: FailureKind,
    pub retry: Retry,
    pub upstream_status: Option<u16>,
    pub cause: AttemptCause,
}

impl AttemptError {
    fn observed(kind: FailureKind, retry: Retry, detail: impl Into<String>) -> Self {
        AttemptError {
            kind,
            retry,
            upstream_status: None,
            cause: AttemptCause::Observed(detail.into()),
        }
    }

    pub fn transport(detail: impl Into<String>) -> Self {
        Self::observed(
            FailureKind::Transport,
            Retry::SameRoute { after: None },
            detail,
        )
    }

    /// The route cannot be called from this process (a credential its
    /// supplier names is not set): nothing was sent; another route may serve.
    pub fn unconfigured(detail: impl Into<String>) -> Self {
        Self::observed(FailureKind::Transport, Retry::NextRoute, detail)
    }

    pub fn timeout() -> Self {
        Self::observed(
            FailureKind::Timeout,
            Retry::NextRoute,
            "routing deadline reached",
        )
    }

    /// An error status from the supplier, whatever its body said: 404, 408,
    /// 409, 425, 429 and 5xx are retried on the same route (G-09); others
    /// are not (G-10), a 3xx included: redirects are never followed, and
    /// asking again would only be redirected again.
    pub fn status(status: u16, retry_after: Option<Duration>) -> Self {
        let mut failure = SupplierFailure::with_status(status);
        failure.retry_after = retry_after;
        Self::supplier(SupplierError::Reported(failure))
    }

    /// What a supplier codec made of the supplier's answer (G-09..G-12,
    /// GP-47): an error status is classified by its category
    /// ([`same_route_retry`]), waiting the `Retry-After` the supplier
    /// asked for; a failure reported in a success reply or before a
    /// stream's first output is not retried on this route, but another
    /// route may serve; an invalid or unrepresentable reply stops the
    /// request (a supplier answered, so a second attempt could pay twice).
    pub fn supplier(error: SupplierError) -> Self {
        let (kind, retry, upstream_status) = match error.reported() {
            Some(
                failure @ SupplierFailure {
                    status: Some(status),
                    ..
                },
            ) => {
                let retry = if same_route_retry(failure.category()) {
                    Retry::SameRoute {
                        after: failure.retry_after,
                    }
                } else {
                    Retry::NextRoute
                };
                (FailureKind::Status, retry, Some(*status))
            }
            Some(_) => (FailureKind::Reported, Retry::NextRoute, None),
            None => (FailureKind::InvalidResponse, Retry::Stop, None),
        };
        AttemptError {
            kind,
            retry,
            upstream_status,
            cause: AttemptCause::Supplier(error),
        }
    }

    /// An answer the router itself will not accept (e.g. inconsistent usage).
    pub fn invalid_response(detail: impl Into<String>) -> Self {
        Self::observed(FailureKind::InvalidResponse, Retry::Stop, detail)
    }

    pub fn conversion(error: ApiError) -> Self {
        AttemptError {
            kind: FailureKind::Conversion,
            retry: Retry::NextRoute,
            upstream_status: None,
            cause: AttemptCause::Conversion(error),
        }
    }

    /// The stream broke after output reached the client (transport).
    /// The router is stopping and its drain ended with this attempt still
    /// running: never retried.
    pub fn shutdown() -> Self {
        Self::observed(
            FailureKind::Shutdown,
            Retry::Stop,
            "the router stopped before the attempt ended",
        )
    }

    pub fn stream_interrupted(detail: impl Into<String>) -> Self {
        Self::observed(FailureKind::StreamInterrupted, Retry::Stop, detail)
    }

    /// A stream that already produced output failed with what its codec
    /// decoded: never retried; the kind says whether the supplier reported
    /// the failure or sent something invalid.
    pub fn stream_failed(error: SupplierError) -> Self {
        let kind = if error.reported().is_some() {
            FailureKind::Reported
        } else {
            FailureKind::InvalidResponse
        };
        AttemptError {
            kind,
            retry: Retry::Stop,
            upstream_status: None,
            cause: AttemptCause::Supplier(error),
        }
    }

    /// The public error of a request whose last attempt failed this way,
    /// given that no route remains (GP-47).
    pub fn public_error(&self) -> ApiError {
        match (&self.cause, self.kind, self.retry) {
            (AttemptCause::Conversion(public), _, _) => public.clone(),
            (_, FailureKind::Shutdown, _) => shutdown_error(),
            (_, FailureKind::InvalidResponse, _) => ApiError::new(
                ErrorCode::InvalidUpstreamResponse,
                "The upstream response was invalid.",
            ),
            (_, FailureKind::Reported, _) | (_, FailureKind::Status, Retry::NextRoute) => {
                ApiError::new(
                    ErrorCode::UpstreamError,
                    "The upstream rejected the request.",
                )
            }
            (_, FailureKind::Timeout, _) => {
                ApiError::new(ErrorCode::UpstreamUnavailable, DEADLINE_PASSED)
            }
            (_, FailureKind::Transport, _) => ApiError::new(
                ErrorCode::UpstreamUnavailable,
                "Every eligible route failed; the last could not be reached.",
            ),
            (_, FailureKind::Status, _) if self.overloaded() => ApiError::new(
                ErrorCode::UpstreamUnavailable,
                "Every eligible route failed; the last was overloaded.",
            ),
            (_, FailureKind::Status, _) => ApiError::new(
                ErrorCode::UpstreamUnavailable,
                "Every eligible route failed; the last answered with a server error.",
            ),
            _ => ApiError::new(
                ErrorCode::UpstreamUnavailable,
                "Every eligible route failed; the last broke off before its reply.",
            ),
        }
    }

    /// A supplier's "too many requests" or "overloaded" answer (HTTP 429,
    /// 503 or 529).
    fn overloaded(&self) -> bool {
        self.upstream_status.is_some_and(|status| {
            matches!(
                SupplierErrorCategory::of_status(status),
                SupplierErrorCategory::RateLimited | SupplierErrorCategory::Overloaded
            )
        })
    }

    /// The public error of a stream that failed after output reached the
    /// client (P-17).
    pub fn stream_public_error(&self) -> ApiError {
        match self.kind {
            FailureKind::Shutdown => shutdown_error(),
            FailureKind::InvalidResponse => ApiError::new(
                ErrorCode::InvalidUpstreamResponse,
                "The upstream stream was invalid.",
            ),
            FailureKind::Reported => ApiError::new(
                ErrorCode::UpstreamError,
                "The upstream failed while generating the response.",
            ),
            _ => ApiError::new(
                ErrorCode::UpstreamError,
                "The upstream stream was interrupted.",
            ),
        }
    }
}

/// Whether a supplier's error status of this category is retried on the
/// same route: every retryable category (429, 503, 529, 408, 409, 425 and
/// the other 5xx), and a 404 (G-09: a deployment may answer it while a model
/// rolls out). The others (400, 401, 402, 403, 413, 422, ...) are not (G-10).
pub fn same_route_retry(category: SupplierErrorCategory) -> bool {
    category.retryable() || category == SupplierErrorCategory::NotFound
}

/// A request cut by the router's shutdown: retryable at once elsewhere
/// (another instance behind the load balancer); nothing was charged.
pub(crate) fn shutdown_error() -> ApiError {
    ApiError::new(
        ErrorCode::ServiceUnavailable,
        "The router shut down before the request finished; nothing was charged. Retry it.",
    )
    .with_retry_after(Some(1))
}

/// The 503 of a request whose routing deadline passed before any route
/// answered.
pub const DEADLINE_PASSED: &str = "No route completed the request before the routing deadline.";

/// A video submission that got no task. Whether the request may have
/// reached the supplier is what decides the money: nothing sent is released
/// at once; something sent may have made a paid job (`video_jobs`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SubmitError {
    /// Nothing reached the supplier: the connection was never made, or the
    /// request cannot be written for the route (a `Conversion` kind).
    #[error("not sent: {0}")]
    NotSent(AttemptError),
    /// The request went out; this is what came back, or why nothing usable
    /// did (an error status, a transport failure or timeout mid-call, an
    /// answer that could not be read).
    #[error("sent: {0}")]
    Sent(AttemptError),
}

/// A completed video's content as it arrives from the supplier, chunk by
/// chunk (never whole in memory). An `Err` item ends it.
pub type VideoChunks = Pin<Box<dyn Stream<Item = Result<Bytes, AttemptError>> + Send>>;

/// A completed video being downloaded.
pub struct VideoContent {
    /// The supplier's `Content-Type`, when it sent one.
    pub content_type: Option<String>,
    pub chunks: VideoChunks,
}

fn no_videos() -> AttemptError {
    AttemptError::conversion(ApiError::unsupported_conversion(
        "this supplier client makes no videos",
    ))
}

/// What one attempt tells its supplier about the request (the router's
/// request id, the W3C trace context of the attempt's span) and what the
/// supplier tells back (its own request id), for the attempt's record.
#[derive(Debug)]
pub struct AttemptCall {
    /// The router's request id (sent as `x-request-id` and
    /// `x-client-request-id`).
    pub request_id: Uuid,
    /// The attempt's span: a child of the request's trace context.
    pub trace: TraceContext,
    supplier_request_id: OnceLock<String>,
}

impl AttemptCall {
    pub fn new(request_id: Uuid, trace: TraceContext) -> Self {
        AttemptCall {
            request_id,
            trace,
            supplier_request_id: OnceLock::new(),
        }
    }

    /// The headers that identify the attempt to its supplier.
    pub fn headers(&self) -> Vec<(&'static str, String)> {
        let id = self.request_id.to_string();
        let mut headers = vec![
            ("traceparent", self.trace.traceparent()),
            ("x-request-id", id.clone()),
            // OpenAI's name for a caller-chosen id it keeps for support.
            ("x-client-request-id", id),
        ];
        if let Some(state) = self.trace.tracestate() {
            headers.push(("tracestate", state.to_owned()));
        }
        headers
    }

    /// Keeps the supplier's request id read from its reply headers
    /// ([`crate::trace_context::supplier_request_id`]); the first one wins.
    pub fn supplier_replied<'a>(&self, header: impl Fn(&str) -> Option<&'a str>) {
        if let Some(id) = crate::trace_context::supplier_request_id(header) {
            let _ = self.supplier_request_id.set(id);
        }
    }

    /// The supplier's request id, once its reply head arrived.
    pub fn supplier_request_id(&self) -> Option<&str> {
        self.supplier_request_id.get().map(String::as_str)
    }
}

/// How one attempt's request is encoded for its route beyond its content:
/// the gateway's decisions for that route, which the supplier client passes
/// on in the codec's `SupplierTarget`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Encoding {
    /// Who signed the thinking the gateway restored for this route, when it
    /// is not the inbound protocol's suppliers
    /// (`SupplierTarget::thinking_signed_by`).
    pub thinking_signed_by: Option<Protocol>,
    /// Add an automatic prompt-cache marker (`x-ci-prompt-cache: on` on a
    /// route that honours it, F-08; `SupplierTarget::prompt_cache_marker`).
    pub prompt_cache_marker: bool,
}

/// Sends one attempt to a route's supplier.
pub trait Suppliers: Send + Sync + 'static {
    /// One physical attempt, identified to the supplier by `call` (whose
    /// supplier request id it fills when the reply head arrives), its body
    /// encoded as `encoding` says. Must give up by `deadline`.
    fn attempt(
        &self,
        route: &Route,
        request: &Request,
        encoding: Encoding,
        deadline: Instant,
        call: &AttemptCall,
    ) -> impl Future<Output = Result<SupplierReply, AttemptError>> + Send;

    /// One image generation on an `images` route: the supplier's image (its
    /// bytes, or downloaded from the URL it answered) checked to be one
    /// complete PNG. Anything else is an [`AttemptError`]: a PNG that fails
    /// the check is an invalid response. The caller bounds the time.
    /// Suppliers without image dialects keep the default, which refuses.
    fn generate_image(
        &self,
        route: &Route,
        request: &ImageRequest,
        call: &AttemptCall,
    ) -> impl Future<Output = Result<Vec<u8>, AttemptError>> + Send {
        let _ = (route, request, call);
        std::future::ready(Err(AttemptError::conversion(
            ApiError::unsupported_conversion("this supplier client generates no images"),
        )))
    }

    /// Sends a video job to a `videos` route, once (never retried: a
    /// second submission could make a second paid job). The supplier's
    /// task, or why there is none ([`SubmitError`]). Suppliers without video
    /// dialects keep the default, which sends nothing.
    fn submit_video(
        &self,
        route: &Route,
        request: &VideoRequest,
        call: &AttemptCall,
    ) -> impl Future<Output = Result<UpstreamVideo, SubmitError>> + Send {
        let _ = (route, request, call);
        std::future::ready(Err(SubmitError::NotSent(no_videos())))
    }

    /// The supplier's view of task `task_id` now (a failed poll is simply
    /// polled again later).
    fn poll_video(
        &self,
        route: &Route,
        task_id: &str,
        call: &AttemptCall,
    ) -> impl Future<Output = Result<UpstreamVideo, AttemptError>> + Send {
        let _ = (route, task_id, call);
        std::future::ready(Err(no_videos()))
    }

    /// The completed video of task `task_id`, as it arrives.
    fn video_content(
        &self,
        route: &Route,
        task_id: &str,
        call: &AttemptCall,
    ) -> impl Future<Output = Result<VideoContent, AttemptError>> + Send {
        let _ = (route, task_id, call);
        std::future::ready(Err(no_videos()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, thiserror::Error)]
    #[error("no choices")]
    struct NoChoices;

    fn reported(status: Option<u16>) -> SupplierError {
        let mut failure = SupplierFailure::default().kind("server_error");
        failure.status = status;
        SupplierError::Reported(failure)
    }

    /// The retry table by category is the table by status it replaced
    /// (G-09, G-10): 404, 408, 409, 425, 429 and 5xx on the same route,
    /// waiting the supplier's `Retry-After`; every other status on the next.
    #[test]
    fn the_retry_table_by_category_is_the_spec_table() {
        let wait = Some(Duration::from_secs(2));
        for status in 100..=999 {
            let error = AttemptError::status(status, wait);
            let g09 = matches!(status, 404 | 408 | 409 | 425 | 429) || (500..600).contains(&status);
            let expected = if g09 {
                Retry::SameRoute { after: wait }
            } else {
                Retry::NextRoute
            };
            assert_eq!(error.retry, expected, "HTTP {status}");
            assert_eq!(error.kind, FailureKind::Status);
        }
    }

    #[test]
    fn an_error_status_is_retried_by_its_status() {
        // G-09, G-10
        let error = AttemptError::supplier(reported(Some(503)));
        assert_eq!(error.kind, FailureKind::Status);
        assert_eq!(error.retry, Retry::SameRoute { after: None });
        assert_eq!(error.upstream_status, Some(503));
        let error = AttemptError::supplier(reported(Some(400)));
        assert_eq!(error.retry, Retry::NextRoute);
        assert_eq!(error.public_error().code, ErrorCode::UpstreamError);
    }

    #[test]
    fn a_redirect_is_a_reported_failure_for_the_next_route() {
        // Issue 33: a 3xx is never followed; another route may serve.
        for status in [301, 302, 303, 307, 308] {
            let error = AttemptError::status(status, None);
            assert_eq!(error.kind, FailureKind::Status, "{status}");
            assert_eq!(error.retry, Retry::NextRoute, "{status}");
            assert_eq!(error.upstream_status, Some(status));
            assert_eq!(error.public_error().code, ErrorCode::UpstreamError);
        }
    }

    #[test]
    fn a_failure_reported_in_a_success_reply_is_an_upstream_error() {
        // GP-47: a supplier rejection, not an invalid reply; another route may serve.
        let error = AttemptError::supplier(reported(None));
        assert_eq!(error.kind, FailureKind::Reported);
        assert_eq!(error.retry, Retry::NextRoute);
        assert_eq!(error.public_error().code, ErrorCode::UpstreamError);
        assert_eq!(
            AttemptError::stream_failed(reported(None))
                .stream_public_error()
                .code,
            ErrorCode::UpstreamError
        );
    }

    #[test]
    fn an_invalid_reply_stops_and_keeps_its_typed_cause() {
        // G-12
        let error = AttemptError::supplier(SupplierError::invalid(NoChoices));
        assert_eq!(error.kind, FailureKind::InvalidResponse);
        assert_eq!(error.retry, Retry::Stop);
        assert_eq!(
            error.public_error().code,
            ErrorCode::InvalidUpstreamResponse
        );
        let AttemptCause::Supplier(SupplierError::InvalidReply(source)) = &error.cause else {
            panic!("the cause lost its kind: {error}");
        };
        assert!(source.downcast_ref::<NoChoices>().is_some());
        let unsupported = AttemptError::supplier(SupplierError::unsupported(NoChoices));
        assert_eq!(unsupported.retry, Retry::Stop);
        assert_eq!(
            AttemptError::stream_failed(SupplierError::invalid(NoChoices))
                .stream_public_error()
                .code,
            ErrorCode::InvalidUpstreamResponse
        );
    }

    /// Issue 29: a 503 after every route failed fast says what happened to
    /// the last one; only a passed deadline speaks of the deadline.
    #[test]
    fn the_last_failure_is_what_the_503_says() {
        let says = |error: AttemptError| {
            let public = error.public_error();
            assert_eq!(public.code, ErrorCode::UpstreamUnavailable);
            public.message
        };
        assert_eq!(
            says(AttemptError::status(529, None)),
            "Every eligible route failed; the last was overloaded."
        );
        assert_eq!(
            says(AttemptError::status(429, None)),
            "Every eligible route failed; the last was overloaded."
        );
        assert_eq!(
            says(AttemptError::status(500, None)),
            "Every eligible route failed; the last answered with a server error."
        );
        assert_eq!(
            says(AttemptError::transport("refused")),
            "Every eligible route failed; the last could not be reached."
        );
        assert_eq!(says(AttemptError::timeout()), DEADLINE_PASSED);
    }
}
