//! One attempt against a supplier of any dialect, JSON or SSE.

use crate::dialect::{Dialect, StreamDecoder};
use crate::{MAX_RESPONSE_BYTES, error_chain, parse_retry_after, transport_error};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use router_canonical::sse::{Decoder as SseDecoder, Frame};
use router_canonical::{Request, StreamEvent};
use router_core::{AttemptError, Route, SupplierReply};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::RwLock;
use std::time::SystemTime;
use tokio::time::Instant;

/// Parsed endpoint URLs per route: parsing (IDNA and all) once per route,
/// not once per attempt.
#[derive(Default)]
pub(crate) struct UrlCache(RwLock<HashMap<String, (String, reqwest::Url)>>);

impl UrlCache {
    pub(crate) fn get(
        &self,
        route: &Route,
        dialect: Dialect,
    ) -> Result<reqwest::Url, AttemptError> {
        let base = &route.supplier.base_url;
        if let Some((cached_base, url)) = self
            .0
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .get(&route.id)
            && cached_base == base
        {
            return Ok(url.clone());
        }
        let url = reqwest::Url::parse(&format!("{base}{}", dialect.path()))
            .map_err(|e| AttemptError::transport(format!("supplier URL: {e}")))?;
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(route.id.clone(), (base.clone(), url.clone()));
        Ok(url)
    }
}

pub(crate) async fn attempt(
    client: &reqwest::Client,
    url: reqwest::Url,
    dialect: Dialect,
    route: &Route,
    request: &Request,
    deadline: Instant,
) -> Result<SupplierReply, AttemptError> {
    let body = dialect
        .encode(request, route)
        .map_err(AttemptError::conversion)?;
    let remaining = deadline.saturating_duration_since(Instant::now());
    let builder = client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .timeout(remaining)
        .body(body);
    let builder = dialect.headers(request, route, builder);
    let response = builder.send().await.map_err(|e| transport_error(&e))?;
    let status = response.status();
    if !status.is_success() {
        let retry_after = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, SystemTime::now()));
        return Err(AttemptError::status(status.as_u16(), retry_after));
    }
    if request.stream {
        return start_stream(response, dialect).await;
    }
    let bytes = read_body(response).await?;
    dialect
        .decode_response(&bytes)
        .map(|mut response| {
            // Messages replies carry no timestamp: the router's clock stands in.
            if response.created == 0 {
                response.created = unix_now();
            }
            SupplierReply::Complete(response)
        })
        .map_err(|e| AttemptError::invalid_response(format!("{} response: {e}", dialect.name())))
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Read a whole JSON body, capped. A failed read may be retried (G-11).
async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, AttemptError> {
    let mut body = Vec::with_capacity(
        response
            .content_length()
            .map_or(4096, |n| n.min(1 << 20) as usize),
    );
    while let Some(chunk) = response.chunk().await.map_err(|e| transport_error(&e))? {
        if body.len() + chunk.len() > MAX_RESPONSE_BYTES {
            return Err(AttemptError::invalid_response(
                "supplier response exceeds the size limit",
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

type ByteStream = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

struct SupplierStream {
    bytes: ByteStream,
    sse: SseDecoder,
    decoder: StreamDecoder,
    pending: VecDeque<StreamEvent>,
    frames: Vec<Frame>,
    ended: bool,
}

impl SupplierStream {
    /// The next canonical event, reading more bytes as needed. `Ok(None)`
    /// when the stream ended after its final event.
    async fn next_event(&mut self) -> Result<Option<StreamEvent>, StreamFailure> {
        loop {
            if let Some(event) = self.pending.pop_front() {
                return Ok(Some(event));
            }
            if self.ended || self.decoder.is_finished() {
                return Ok(None);
            }
            match self.bytes.next().await {
                Some(Ok(chunk)) => {
                    self.sse
                        .feed(&chunk, &mut self.frames)
                        .map_err(|e| StreamFailure::Invalid(e.to_string()))?;
                    for frame in self.frames.drain(..) {
                        let events = self
                            .decoder
                            .decode(&frame)
                            .map_err(StreamFailure::Invalid)?;
                        self.pending.extend(events);
                    }
                }
                Some(Err(e)) => return Err(StreamFailure::Transport(error_chain(&e))),
                None => {
                    self.ended = true;
                    return Err(StreamFailure::Transport(
                        "stream ended before its final event".to_owned(),
                    ));
                }
            }
        }
    }
}

enum StreamFailure {
    Transport(String),
    Invalid(String),
}

/// Prebuffer until the first event, so a failure before any output is
/// still an ordinary (retryable) attempt failure (G-11).
async fn start_stream(
    response: reqwest::Response,
    dialect: Dialect,
) -> Result<SupplierReply, AttemptError> {
    let mut stream = SupplierStream {
        bytes: Box::pin(response.bytes_stream()),
        sse: SseDecoder::default(),
        decoder: dialect.stream_decoder(),
        pending: VecDeque::new(),
        frames: Vec::new(),
        ended: false,
    };
    let first = match stream.next_event().await {
        Ok(Some(event)) => event,
        Ok(None) => {
            return Err(AttemptError::invalid_response(
                "stream finished without events",
            ));
        }
        Err(StreamFailure::Transport(detail)) => return Err(AttemptError::transport(detail)),
        Err(StreamFailure::Invalid(detail)) => return Err(AttemptError::invalid_response(detail)),
    };
    stream.pending.push_front(first);
    let events = futures::stream::unfold(Some(stream), |state| async move {
        let mut stream = state?;
        match stream.next_event().await {
            Ok(Some(event)) => Some((Ok(event), Some(stream))),
            Ok(None) => None,
            Err(StreamFailure::Transport(detail)) => {
                Some((Err(AttemptError::stream_interrupted(detail)), None))
            }
            Err(StreamFailure::Invalid(detail)) => {
                Some((Err(AttemptError::invalid_response(detail)), None))
            }
        }
    });
    Ok(SupplierReply::Stream(Box::pin(events)))
}
