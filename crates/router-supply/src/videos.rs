//! Video jobs against a `videos` route, with the route's
//! [`VideoSupplierCodec`]: submit once, poll, download the content in
//! chunks. No retry here: a submission is sent at most once (a retry could
//! make a second paid job), and the poller's next pass is the retry of a
//! poll.
//!
//! Failures are the typed [`AttemptError`]s of every supplier call (the
//! codec's `decode_error` classified by status, transport, timeout, an
//! invalid answer). A failed submission also says whether the request may
//! have reached the supplier ([`SubmitError`]): a connection never made
//! sent nothing; anything after the request went out may have made the
//! job. What that means for the money is core's decision
//! (`router_core::video_jobs`).
//!
//! The route's connection settings apply to every call as on inference
//! routes (`connection`): the `{model}` of the base URL, extra query
//! parameters, the supplier's authentication (a SigV4 signature per call)
//! and static headers.

use crate::attempt::read_body;
use crate::connection::{self, Outgoing};
use crate::transport_error;
use router_canonical::{UpstreamVideo, VideoRequest, VideoSupplierCodec};
use router_core::{AttemptCall, AttemptError, Route, SubmitError, VideoContent};
use std::time::Duration;

/// How long a submission may take before its answer counts as lost.
const SUBMIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one poll may take; a slow poll is simply retried next pass.
const POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait for the next chunk of content.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of an error reply read to classify it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

fn codec() -> &'static dyn VideoSupplierCodec {
    crate::codecs::video_codec()
}

/// Who a call is, to the supplier: the call's identity (`traceparent`, the
/// router's request id) and, for a supplier whose tokens the router fetches
/// (Google), the bearer token.
#[derive(Clone, Copy)]
pub(crate) struct VideoCall<'a> {
    pub(crate) call: &'a AttemptCall,
    pub(crate) bearer: Option<&'a str>,
}

/// A request to `path` on the route's supplier with the route's connection
/// settings and the call's identity, as on every supplier call; a JSON
/// `body` makes it a POST, none a GET.
fn request(
    client: &reqwest::Client,
    route: &Route,
    path: &str,
    body: Option<Vec<u8>>,
    identity: VideoCall<'_>,
) -> Result<reqwest::RequestBuilder, AttemptError> {
    let url = connection::url(route, path)?;
    let outgoing = Outgoing {
        method: if body.is_some() { "POST" } else { "GET" },
        url: &url,
        body: body.as_deref(),
    };
    let headers = connection::request_headers(
        route,
        &outgoing,
        |key| codec().headers(key),
        identity.bearer,
    )?;
    let mut builder = match body {
        Some(body) => client.post(url).body(body),
        None => client.get(url),
    };
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    for (name, value) in identity.call.headers() {
        builder = builder.header(name, value);
    }
    Ok(builder)
}

/// An error status, classified by its status with the supplier's error as
/// the codec reads it (the body only adds detail).
async fn error_status(mut response: reqwest::Response) -> AttemptError {
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    AttemptError::supplier(codec().decode_error(status, &crate::ReplyHeaders(&headers), &body))
}

pub(crate) async fn submit(
    client: &reqwest::Client,
    route: &Route,
    video: &VideoRequest,
    identity: VideoCall<'_>,
) -> Result<UpstreamVideo, SubmitError> {
    let call = identity.call;
    let body = codec()
        .encode_create(video, &route.upstream_model)
        .map_err(|public| SubmitError::NotSent(AttemptError::conversion(public)))?;
    let builder = request(client, route, codec().create_path(), Some(body), identity)
        .map_err(SubmitError::NotSent)?;
    let response = builder
        .timeout(SUBMIT_TIMEOUT)
        .send()
        .await
        .map_err(|error| {
            let attempt = transport_error(&error);
            if error.is_connect() {
                SubmitError::NotSent(attempt)
            } else {
                SubmitError::Sent(attempt)
            }
        })?;
    if !response.status().is_success() {
        return Err(SubmitError::Sent(error_status(response).await));
    }
    call.supplier_replied(|name| response.headers().get(name)?.to_str().ok());
    let body = read_body(response).await.map_err(SubmitError::Sent)?;
    codec()
        .decode_task(&body)
        .map_err(|error| SubmitError::Sent(AttemptError::supplier(error)))
}

/// Sends a GET; a reply other than 2xx is its classified error status.
async fn get_ok(builder: reqwest::RequestBuilder) -> Result<reqwest::Response, AttemptError> {
    let response = builder.send().await.map_err(|e| transport_error(&e))?;
    if !response.status().is_success() {
        return Err(error_status(response).await);
    }
    Ok(response)
}

/// One poll: the task as the supplier reports it now, or why not (retried
/// on the next pass).
pub(crate) async fn poll(
    client: &reqwest::Client,
    route: &Route,
    task_id: &str,
    identity: VideoCall<'_>,
) -> Result<UpstreamVideo, AttemptError> {
    let builder = request(client, route, &codec().poll_path(task_id), None, identity)?;
    let response = get_ok(builder.timeout(POLL_TIMEOUT)).await?;
    let body = read_body(response).await?;
    codec().decode_task(&body).map_err(AttemptError::supplier)
}

/// The completed video's content, chunk by chunk as it arrives (never whole
/// in memory); a stall longer than [`CHUNK_TIMEOUT`] ends it with a timeout.
pub(crate) async fn content(
    client: &reqwest::Client,
    route: &Route,
    task_id: &str,
    identity: VideoCall<'_>,
) -> Result<VideoContent, AttemptError> {
    let builder = request(
        client,
        route,
        &codec().content_path(task_id),
        None,
        identity,
    )?;
    let response = get_ok(builder).await?;
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let chunks = futures::stream::unfold(Some(response), |state| async move {
        let mut response = state?;
        match tokio::time::timeout(CHUNK_TIMEOUT, response.chunk()).await {
            Ok(Ok(Some(chunk))) => Some((Ok(chunk), Some(response))),
            Ok(Ok(None)) => None,
            Ok(Err(e)) => Some((
                Err(AttemptError::stream_interrupted(crate::error_chain(&e))),
                None,
            )),
            Err(_) => Some((Err(AttemptError::timeout()), None)),
        }
    });
    Ok(VideoContent {
        content_type,
        chunks: Box::pin(chunks),
    })
}
