//! Video jobs against a `videos` route, with the route's
//! [`VideoSupplierCodec`]: submit once, poll, download the content in
//! chunks. No retry here: a submission is sent at most once (a retry could
//! make a second paid job), and the poller's next pass is the retry of a
//! poll.
//!
//! A submission ends one of four ways, and the difference is money:
//! accepted (the supplier's task id), refused (a status that says the job
//! was not taken: release the hold), not sent (the connection was never
//! made: release), or unknown (the request went out and no usable answer
//! came back: the supplier may have the job, so the hold stays until an
//! operator reconciles, GP-25).

use crate::attempt::read_body;
use bytes::Bytes;
use router_canonical::{ApiError, SupplierError, UpstreamVideo, VideoRequest, VideoSupplierCodec};
use router_core::Route;
use std::time::Duration;

/// How long a submission may take before its answer counts as lost.
const SUBMIT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long one poll may take; a slow poll is simply retried next pass.
const POLL_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest wait for the next chunk of content.
const CHUNK_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of an error reply read to classify it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// How one submission ended.
#[derive(Debug)]
pub enum Submission {
    /// The supplier took the job.
    Accepted(UpstreamVideo),
    /// The supplier said it did not take the job (its error stays typed;
    /// its text is for operators only).
    Refused { status: u16, error: SupplierError },
    /// Nothing reached the supplier (connection refused, the request could
    /// not be encoded for this dialect): `Err` carries a public error when
    /// the request itself is at fault.
    NotSent {
        detail: String,
        public: Option<ApiError>,
    },
    /// The request was sent and no usable answer came back.
    Unknown { detail: String },
}

fn codec() -> &'static dyn VideoSupplierCodec {
    crate::codecs::video_codec()
}

fn url(route: &Route, path: &str) -> Result<reqwest::Url, String> {
    reqwest::Url::parse(&format!("{}{path}", route.supplier.base_url))
        .map_err(|e| format!("supplier URL: {e}"))
}

fn with_headers(mut builder: reqwest::RequestBuilder, route: &Route) -> reqwest::RequestBuilder {
    for (name, value) in codec().headers(route.supplier.api_key.as_deref()) {
        builder = builder.header(name, value);
    }
    builder
}

async fn error_body(mut response: reqwest::Response) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk);
        if body.len() >= MAX_ERROR_BODY_BYTES {
            break;
        }
    }
    body
}

/// Whether a status says the supplier did not take the job: every 4xx, 503
/// (not accepting work), and every 3xx (a redirect asks for the request to
/// be made elsewhere, so this one did nothing; it is never followed). Other
/// 5xx (500, 502, 504) may come after the job was made, so they are unknown.
fn refused(status: u16) -> bool {
    (300..500).contains(&status) || status == 503
}

pub(crate) async fn submit(
    client: &reqwest::Client,
    route: &Route,
    request: &VideoRequest,
) -> Submission {
    let body = match codec().encode_create(request, &route.upstream_model) {
        Ok(body) => body,
        Err(public) => {
            return Submission::NotSent {
                detail: "the request cannot be written in the route's dialect".into(),
                public: Some(public),
            };
        }
    };
    let url = match url(route, codec().create_path()) {
        Ok(url) => url,
        Err(detail) => {
            return Submission::NotSent {
                detail,
                public: None,
            };
        }
    };
    let builder = client
        .post(url)
        .timeout(SUBMIT_TIMEOUT)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body);
    let response = match with_headers(builder, route).send().await {
        Ok(response) => response,
        Err(error) if error.is_connect() => {
            return Submission::NotSent {
                detail: crate::error_chain(&error),
                public: None,
            };
        }
        Err(error) => {
            return Submission::Unknown {
                detail: crate::error_chain(&error),
            };
        }
    };
    let status = response.status().as_u16();
    if !response.status().is_success() {
        let body = error_body(response).await;
        let error = codec().decode_error(status, &body);
        return if refused(status) {
            Submission::Refused { status, error }
        } else {
            Submission::Unknown {
                detail: format!("status {status}: {error}"),
            }
        };
    }
    let body = match read_body(response).await {
        Ok(body) => body,
        Err(error) => {
            return Submission::Unknown {
                detail: format!("reading the answer: {error}"),
            };
        }
    };
    match codec().decode_task(&body) {
        Ok(task) => Submission::Accepted(task),
        Err(error) => Submission::Unknown {
            detail: format!("undecodable answer: {error}"),
        },
    }
}

/// Sends a GET; a reply other than 2xx is an error naming `what`, with
/// the supplier's error as its codec reads it.
async fn get_ok(
    builder: reqwest::RequestBuilder,
    route: &Route,
    what: &str,
) -> Result<reqwest::Response, String> {
    let response = with_headers(builder, route)
        .send()
        .await
        .map_err(|e| crate::error_chain(&e))?;
    let status = response.status().as_u16();
    if !response.status().is_success() {
        let body = error_body(response).await;
        return Err(format!(
            "{what} status {status}: {}",
            codec().decode_error(status, &body)
        ));
    }
    Ok(response)
}

/// One poll: the task as the supplier reports it now, or why not (retried
/// on the next pass).
pub(crate) async fn poll(
    client: &reqwest::Client,
    route: &Route,
    task_id: &str,
) -> Result<UpstreamVideo, String> {
    let url = url(route, &codec().poll_path(task_id))?;
    let response = get_ok(client.get(url).timeout(POLL_TIMEOUT), route, "poll").await?;
    let body = read_body(response).await.map_err(|e| e.to_string())?;
    codec()
        .decode_task(&body)
        .map_err(|e| format!("undecodable poll answer: {e}"))
}

/// A video's content as it arrives, chunk by chunk (never whole in memory).
pub struct VideoDownload {
    response: reqwest::Response,
    /// The supplier's `Content-Type`, when it sent one.
    pub content_type: Option<String>,
}

impl VideoDownload {
    /// The next chunk; `None` at the end.
    pub async fn next_chunk(&mut self) -> Result<Option<Bytes>, String> {
        match tokio::time::timeout(CHUNK_TIMEOUT, self.response.chunk()).await {
            Ok(Ok(chunk)) => Ok(chunk),
            Ok(Err(e)) => Err(crate::error_chain(&e)),
            Err(_) => Err("the content stalled".into()),
        }
    }
}

pub(crate) async fn content(
    client: &reqwest::Client,
    route: &Route,
    task_id: &str,
) -> Result<VideoDownload, String> {
    let url = url(route, &codec().content_path(task_id))?;
    let response = get_ok(client.get(url), route, "content").await?;
    let content_type = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    Ok(VideoDownload {
        response,
        content_type,
    })
}
