//! The supplier boundary: one physical attempt against one route.
//!
//! `router-supply` implements [`Suppliers`]. An attempt's error carries where
//! it came from and whether it may be retried as data, so the retry policy
//! never reads message text.

use crate::catalog::Route;
use futures::Stream;
use router_canonical::{ApiError, Request, Response, StreamEvent};
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;
use tokio::time::Instant;

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
    /// The supplier's answer could not be decoded or its usage is invalid.
    InvalidResponse,
    /// The request cannot be expressed in the route's protocol.
    Conversion,
    /// The stream broke after output was returned.
    StreamInterrupted,
}

impl FailureKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FailureKind::Transport => "transport",
            FailureKind::Timeout => "timeout",
            FailureKind::Status => "status",
            FailureKind::InvalidResponse => "invalid_response",
            FailureKind::Conversion => "conversion",
            FailureKind::StreamInterrupted => "stream_interrupted",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{kind:?} failure (status {upstream_status:?}): {detail}")]
pub struct AttemptError {
    pub kind: FailureKind,
    pub retry: Retry,
    pub upstream_status: Option<u16>,
    /// Internal detail for logs and the attempt row; never shown to clients.
    pub detail: String,
    /// For `Conversion`: the public error to return if no route can serve.
    pub public: Option<ApiError>,
}

impl AttemptError {
    pub fn transport(detail: impl Into<String>) -> Self {
        AttemptError {
            kind: FailureKind::Transport,
            retry: Retry::SameRoute { after: None },
            upstream_status: None,
            detail: detail.into(),
            public: None,
        }
    }

    pub fn timeout() -> Self {
        AttemptError {
            kind: FailureKind::Timeout,
            retry: Retry::NextRoute,
            upstream_status: None,
            detail: "routing deadline reached".into(),
            public: None,
        }
    }

    /// An error status from the supplier: 404, 408, 409, 425, 429 and 5xx
    /// are retried on the same route (G-09); others are not (G-10).
    pub fn status(status: u16, retry_after: Option<Duration>) -> Self {
        let retryable =
            matches!(status, 404 | 408 | 409 | 425 | 429) || (500..600).contains(&status);
        AttemptError {
            kind: FailureKind::Status,
            retry: if retryable {
                Retry::SameRoute { after: retry_after }
            } else {
                Retry::NextRoute
            },
            upstream_status: Some(status),
            detail: format!("supplier answered HTTP {status}"),
            public: None,
        }
    }

    pub fn invalid_response(detail: impl Into<String>) -> Self {
        AttemptError {
            kind: FailureKind::InvalidResponse,
            retry: Retry::Stop,
            upstream_status: None,
            detail: detail.into(),
            public: None,
        }
    }

    pub fn conversion(error: ApiError) -> Self {
        AttemptError {
            kind: FailureKind::Conversion,
            retry: Retry::NextRoute,
            upstream_status: None,
            detail: error.message.clone(),
            public: Some(error),
        }
    }

    pub fn stream_interrupted(detail: impl Into<String>) -> Self {
        AttemptError {
            kind: FailureKind::StreamInterrupted,
            retry: Retry::Stop,
            upstream_status: None,
            detail: detail.into(),
            public: None,
        }
    }
}

/// Sends one attempt to a route's supplier.
pub trait Suppliers: Send + Sync + 'static {
    /// One physical attempt. Must give up by `deadline`.
    fn attempt(
        &self,
        route: &Route,
        request: &Request,
        deadline: Instant,
    ) -> impl Future<Output = Result<SupplierReply, AttemptError>> + Send;
}
