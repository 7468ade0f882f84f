//! What a route's handler is given and what it answers: the [`Call`] the
//! dispatcher fills once the guard has let a request through, and the
//! boxed [`Answer`]. Its own module so that the handlers' modules and the
//! route table (`routes`), which names them, need not import each other.

use crate::app::App;
use crate::body::Incoming;
use crate::reply;
use router_canonical::ApiError;
use router_telemetry::request_log::RequestLog;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use uuid::Uuid;

/// What a handler gets besides its caller: the request and what the
/// dispatcher knows of it.
pub struct Call<'a> {
    pub app: Arc<App>,
    pub request: http::Request<Incoming>,
    /// The path's parameters, in order: only the experiment rows have two
    /// (`{slug}` after the account's `{id}`).
    pub params: Params,
    pub request_id: Uuid,
    /// `request_id` as text, for the answer's `x-request-id`.
    pub id: &'a str,
    pub log: &'a RequestLog,
}

/// A row's path parameters.
pub struct Params {
    pub first: Option<String>,
    pub second: Option<String>,
}

impl Call<'_> {
    /// The first path parameter (the one the guard checks).
    pub fn param(&self) -> Option<&str> {
        self.params.first.as_deref()
    }

    /// The `Range` header; one that is not text reads as a range no parse accepts.
    pub fn range(&self) -> Option<&str> {
        self.request
            .headers()
            .get(http::header::RANGE)
            .map(|v| v.to_str().unwrap_or("\u{0}"))
    }
}

/// A handler's answer: the reply, or an error the dispatcher renders in the
/// row's envelope.
pub type Answer<'a> = Pin<Box<dyn Future<Output = Result<reply::Reply, ApiError>> + Send + 'a>>;

/// Boxes a handler's future where it is built: the allocation comes first
/// and the future is written into it, so the inference futures (several
/// KiB) are not built on the stack and then copied into the box, a copy
/// per request that `Box::pin(async { .. })` leaves to the optimizer.
pub fn answer<'a, F>(future: impl FnOnce() -> F) -> Answer<'a>
where
    F: Future<Output = Result<reply::Reply, ApiError>> + Send + 'a,
{
    let slot: Box<std::mem::MaybeUninit<F>> = Box::new_uninit();
    let boxed: Box<F> = Box::write(slot, future());
    Box::into_pin(boxed)
}
