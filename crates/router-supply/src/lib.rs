//! Supplier clients: encode a canonical request with the route protocol's
//! [`SupplierCodec`](router_canonical::SupplierCodec), send it over HTTP,
//! decode the answer, stream or error reply with the same codec.
//!
//! Implements `router_core::Suppliers`. Failures stay typed data
//! (`AttemptError` holding the codec's `SupplierError`), never message
//! text: transport errors before any output and the statuses the spec lists
//! are retryable; a failure the supplier reported may go to another route;
//! a response that arrived but cannot be decoded stops the request (GP-47).

#![warn(unreachable_pub)]

mod attempt;
mod codecs;
mod connection;
mod google_auth;
mod images;
mod sigv4;
pub mod url_guard;
mod videos;

use router_canonical::{ApiError, ImageRequest, Request, UpstreamVideo, VideoRequest};
use router_core::{
    AttemptCall, AttemptError, Encoding, Route, SubmitError, SupplierReply, Suppliers, VideoContent,
};
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

pub use codecs::video_codec;

/// A supplier reply's headers, as a codec's `decode_error` reads them.
struct ReplyHeaders<'a>(&'a reqwest::header::HeaderMap);

impl router_canonical::HeaderSource for ReplyHeaders<'_> {
    fn header(&self, name: &str) -> Option<&str> {
        self.0.get(name)?.to_str().ok()
    }
}

/// Largest non-streaming supplier body the router reads.
const MAX_RESPONSE_BYTES: usize = 32 * 1024 * 1024;

#[derive(Debug, thiserror::Error)]
pub enum SupplyError {
    #[error("cannot build the HTTP client: {0}")]
    Client(#[from] reqwest::Error),
}

/// HTTP clients for every supplier protocol, sharing one connection pool.
#[derive(Clone)]
pub struct HttpSuppliers {
    client: reqwest::Client,
    urls: Arc<attempt::UrlCache>,
    /// OAuth tokens of Google suppliers (service account, metadata server).
    google: Arc<google_auth::GoogleTokens>,
    /// Where an image answer's `url` may point (public addresses only,
    /// unless loopback is allowed for tests and the demo).
    image_urls: url_guard::UrlPolicy,
}

impl HttpSuppliers {
    /// The client never follows a redirect and sends no `Referer`: a 3xx
    /// would replay the customer's prompt, and the supplier key with it, to
    /// whatever host the `Location` names (private addresses included). A
    /// 3xx is therefore an error status like any other: a failure the
    /// supplier reported, tried on the next route, never on the same one
    /// (`AttemptError::status`); for a video submission it is a refusal.
    pub fn new() -> Result<Self, SupplyError> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .tcp_nodelay(true)
            .pool_idle_timeout(Duration::from_secs(90))
            .pool_max_idle_per_host(1024)
            .connect_timeout(Duration::from_secs(10))
            .build()?;
        Ok(HttpSuppliers {
            client,
            urls: Arc::default(),
            google: Arc::default(),
            image_urls: url_guard::UrlPolicy::default(),
        })
    }

    /// The OAuth token of a route whose supplier authenticates with Google
    /// tokens the router fetches; `None` for every other scheme.
    async fn bearer(&self, route: &Route) -> Result<Option<String>, AttemptError> {
        let supplier = &route.supplier;
        self.google
            .bearer(&self.client, &supplier.id, &supplier.auth)
            .await
    }

    /// These clients with `policy` for downloading image URLs.
    pub fn with_image_url_policy(mut self, policy: url_guard::UrlPolicy) -> Self {
        self.image_urls = policy;
        self
    }
}

impl Suppliers for HttpSuppliers {
    async fn attempt(
        &self,
        route: &Route,
        request: &Request,
        encoding: Encoding,
        deadline: Instant,
        call: &AttemptCall,
    ) -> Result<SupplierReply, AttemptError> {
        let compat = codecs::chat_compat(route);
        let codec = match &compat {
            Some(compat) => Some(compat as &dyn router_canonical::SupplierCodec),
            None => codecs::for_protocol(route.protocol),
        };
        match codec {
            Some(codec) => {
                let url = self.urls.get(route, codec, request.stream)?;
                let bearer = self.bearer(route).await?;
                let identity = attempt::Identity {
                    call,
                    bearer: bearer.as_deref(),
                };
                let attempt = attempt::Attempt {
                    request,
                    encoding,
                    deadline,
                    identity,
                };
                attempt::attempt(&self.client, url, codec, route, attempt).await
            }
            None => Err(AttemptError::conversion(ApiError::unsupported_conversion(
                format!("routes cannot speak `{}`", route.protocol),
            ))),
        }
    }

    async fn generate_image(
        &self,
        route: &Route,
        request: &ImageRequest,
        call: &AttemptCall,
    ) -> Result<Vec<u8>, AttemptError> {
        let bearer = self.bearer(route).await?;
        images::generate(
            &self.client,
            self.image_urls,
            route,
            request,
            call,
            bearer.as_deref(),
        )
        .await
    }

    async fn submit_video(
        &self,
        route: &Route,
        request: &VideoRequest,
        call: &AttemptCall,
    ) -> Result<UpstreamVideo, SubmitError> {
        let bearer = self.bearer(route).await.map_err(SubmitError::NotSent)?;
        let identity = videos::VideoCall {
            call,
            bearer: bearer.as_deref(),
        };
        videos::submit(&self.client, route, request, identity).await
    }

    async fn poll_video(
        &self,
        route: &Route,
        task_id: &str,
        call: &AttemptCall,
    ) -> Result<UpstreamVideo, AttemptError> {
        let bearer = self.bearer(route).await?;
        let identity = videos::VideoCall {
            call,
            bearer: bearer.as_deref(),
        };
        videos::poll(&self.client, route, task_id, identity).await
    }

    async fn video_content(
        &self,
        route: &Route,
        task_id: &str,
        call: &AttemptCall,
    ) -> Result<VideoContent, AttemptError> {
        let bearer = self.bearer(route).await?;
        let identity = videos::VideoCall {
            call,
            bearer: bearer.as_deref(),
        };
        videos::content(&self.client, route, task_id, identity).await
    }
}

/// Classify a reqwest error raised before any output reached the client.
fn transport_error(error: &reqwest::Error) -> AttemptError {
    if error.is_timeout() {
        AttemptError::timeout()
    } else {
        AttemptError::transport(format!("transport failure: {}", error_chain(error)))
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}
