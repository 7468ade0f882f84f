//! One attempt against a supplier of any dialect, JSON or SSE. What differs
//! between dialects is the codec's; timeouts, status classification and
//! stream prebuffering are shared here.

use crate::{MAX_RESPONSE_BYTES, ReplyHeaders, connection, error_chain, transport_error};
use bytes::Bytes;
use futures::{Stream, StreamExt};
use router_canonical::sse::Frame;
use router_canonical::translate::FrameDecoder;
use router_canonical::{Request, StreamEvent, SupplierCodec, SupplierError, SupplierStreamDecoder};
use router_core::{AttemptCall, AttemptError, Encoding, Route, SupplierReply};
use std::collections::{HashMap, VecDeque};
use std::pin::Pin;
use std::sync::RwLock;
use std::time::SystemTime;
use tokio::time::Instant;

/// Parsed endpoint URLs per route and streaming choice: parsing (IDNA and
/// all) once per route, not once per attempt.
#[derive(Default)]
pub(crate) struct UrlCache(RwLock<HashMap<(String, bool), (String, reqwest::Url)>>);

impl UrlCache {
    pub(crate) fn get(
        &self,
        route: &Route,
        codec: &dyn SupplierCodec,
        stream: bool,
    ) -> Result<reqwest::Url, AttemptError> {
        let base = &route.supplier.base_url;
        let key = (route.id.clone(), stream);
        if let Some((cached_base, url)) = self.0.read().unwrap_or_else(|e| e.into_inner()).get(&key)
            && cached_base == base
        {
            return Ok(url.clone());
        }
        let url = connection::endpoint(route, codec, stream)?;
        self.0
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, (base.clone(), url.clone()));
        Ok(url)
    }
}

/// Who an attempt is, to its supplier: the call's ids and, for a supplier
/// whose tokens the router fetches (Google), the bearer token.
pub(crate) struct Identity<'a> {
    pub(crate) call: &'a AttemptCall,
    pub(crate) bearer: Option<&'a str>,
}

/// The most of an error reply the router reads to classify it.
const MAX_ERROR_BODY_BYTES: usize = 64 * 1024;

/// One attempt's request: its content, how it is encoded for the route,
/// its deadline and who sends it.
pub(crate) struct Attempt<'a> {
    pub(crate) request: &'a Request,
    pub(crate) encoding: Encoding,
    pub(crate) deadline: Instant,
    pub(crate) identity: Identity<'a>,
}

pub(crate) async fn attempt(
    client: &reqwest::Client,
    url: reqwest::Url,
    codec: &dyn SupplierCodec,
    route: &Route,
    attempt: Attempt<'_>,
) -> Result<SupplierReply, AttemptError> {
    let Attempt {
        request,
        encoding,
        deadline,
        identity,
    } = attempt;
    let call = identity.call;
    let target = connection::target(route)
        .with_thinking_signed_by(encoding.thinking_signed_by)
        .with_prompt_cache_marker(encoding.prompt_cache_marker);
    let body = codec
        .encode_request(request, &target)
        .map_err(AttemptError::conversion)?;
    let remaining = deadline.saturating_duration_since(Instant::now());
    let headers = connection::headers(route, codec, request, &url, &body, identity.bearer)?;
    let mut builder = client.post(url).timeout(remaining);
    for (name, value) in headers {
        builder = builder.header(name, value);
    }
    for (name, value) in call.headers() {
        builder = builder.header(name, value);
    }
    let response = builder
        .body(body)
        .send()
        .await
        .map_err(|e| transport_error(&e))?;
    call.supplier_replied(|name| response.headers().get(name)?.to_str().ok());
    let status = response.status();
    if !status.is_success() {
        let headers = response.headers().clone();
        // The status decides; the body only adds detail, so a body that
        // cannot be read is no reason to fail differently.
        let body = read_capped(response, MAX_ERROR_BODY_BYTES)
            .await
            .unwrap_or_default();
        let error = codec.decode_error(status.as_u16(), &ReplyHeaders(&headers), &body);
        return Err(AttemptError::supplier(error));
    }
    if request.stream {
        let framing = FrameDecoder::new(codec.stream_framing());
        return start_stream(response, framing, codec.stream_decoder()).await;
    }
    let bytes = read_body(response).await?;
    codec
        .decode_response(&bytes)
        .map(|mut response| {
            // Messages replies carry no timestamp: the router's clock stands in.
            if response.created == 0 {
                response.created = unix_now();
            }
            SupplierReply::Complete(response)
        })
        .map_err(AttemptError::supplier)
}

fn unix_now() -> i64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// At most `cap` bytes of an error reply (the rest is dropped).
async fn read_capped(mut response: reqwest::Response, cap: usize) -> reqwest::Result<Vec<u8>> {
    let mut body = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        let room = cap.saturating_sub(body.len());
        body.extend_from_slice(&chunk[..chunk.len().min(room)]);
        if body.len() >= cap {
            break;
        }
    }
    Ok(body)
}

/// Read a whole JSON body, capped. A failed read may be retried (G-11).
pub(crate) async fn read_body(mut response: reqwest::Response) -> Result<Vec<u8>, AttemptError> {
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
    framing: FrameDecoder,
    decoder: Box<dyn SupplierStreamDecoder>,
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
                    self.framing
                        .feed(&chunk, &mut self.frames)
                        .map_err(StreamFailure::Decoded)?;
                    for frame in self.frames.drain(..) {
                        let events = self
                            .decoder
                            .decode(&frame)
                            .map_err(StreamFailure::Decoded)?;
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
    /// What the codec made of the stream: a reported failure or an invalid frame.
    Decoded(SupplierError),
}

/// Prebuffer until the first event, so a failure before any output is
/// still an ordinary (retryable) attempt failure (G-11).
async fn start_stream(
    response: reqwest::Response,
    framing: FrameDecoder,
    decoder: Box<dyn SupplierStreamDecoder>,
) -> Result<SupplierReply, AttemptError> {
    let mut stream = SupplierStream {
        bytes: Box::pin(response.bytes_stream()),
        framing,
        decoder,
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
        Err(StreamFailure::Decoded(error)) => return Err(AttemptError::supplier(error)),
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
            Err(StreamFailure::Decoded(error)) => {
                Some((Err(AttemptError::stream_failed(error)), None))
            }
        }
    });
    Ok(SupplierReply::Stream(Box::pin(events)))
}
