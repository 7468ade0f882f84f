//! Relaying a live stream to the client in its own SSE dialect, through
//! the surface codec's [`ClientStreamEncoder`]. Every upstream event is
//! encoded and sent as it arrives (no buffering of whole responses). If the
//! client goes away, the live stream is abandoned (GP-48): released when no
//! output had reached the client, else read to its end and settled; the
//! request's log line waits for that outcome.

use crate::app::RouterStream;
use crate::metrics::OpenStream;
use crate::reply::{self, Body};
use bytes::Bytes;
use futures::FutureExt;
use http::Response;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use router_canonical::{ClientStreamEncoder, StreamEnd};
use router_core::StreamItem;
use router_telemetry::request_log::RequestLog;

/// Start relaying `live` through `encoder`; the response streams as SSE.
pub fn relay(
    mut live: RouterStream,
    mut encoder: impl ClientStreamEncoder,
    request_id: &str,
    log: RequestLog,
) -> Response<Body> {
    let open = OpenStream::start();
    let (tx, rx) = tokio::sync::mpsc::channel::<Bytes>(64);
    // The supplier's first event is already buffered (the attempt waited for
    // it): encoded here, it is in the body before the response head is
    // written, so head and first event leave in one write, without waiting
    // for the relay task to be scheduled.
    let mut ended = false;
    if let Some(first) = live.next().now_or_never() {
        match first {
            Some(item) => {
                note_failure(&log, &item);
                let frame = encode(&mut encoder, &item);
                if !frame.is_empty() {
                    // The channel is new and empty: this cannot be full.
                    let _ = tx.try_send(Bytes::from(frame));
                }
            }
            None => ended = true,
        }
    }
    if !ended {
        tokio::spawn(async move {
            // Until the relay ends: the stream is open, and the request's
            // log line waits for its end.
            let _open = open;
            let log = log;
            loop {
                let item = tokio::select! {
                    biased;
                    item = live.next() => item,
                    () = tx.closed() => {
                        log.client_closed();
                        live.abandon().await;
                        return;
                    }
                };
                let Some(item) = item else { return };
                note_failure(&log, &item);
                let frame = encode(&mut encoder, &item);
                // Hand the encoded frame over without copying it.
                if !frame.is_empty() && tx.send(Bytes::from(frame)).await.is_err() {
                    log.client_closed();
                    live.abandon().await;
                    return;
                }
            }
        });
    }
    let mut response = Response::new(crate::reply::channel_body(rx));
    let headers = response.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    reply::set_request_id(headers, request_id);
    response
}

/// A stream that fails after its head carries its code in the log line.
fn note_failure(log: &RequestLog, item: &StreamItem) {
    if let StreamItem::Failed(error) = item {
        log.stream_failed(error.code);
    }
}

/// One stream item in the client's dialect (empty when it has no frame).
fn encode(encoder: &mut impl ClientStreamEncoder, item: &StreamItem) -> Vec<u8> {
    let mut buf = Vec::with_capacity(512);
    match item {
        StreamItem::Event(event) => encoder.event(event, &mut buf),
        StreamItem::Finished {
            stop_reason,
            stop_sequence,
            usage,
            cost,
        } => {
            let end = StreamEnd::new(stop_reason, usage)
                .with_stop_sequence(stop_sequence.as_deref())
                .with_cost(Some(*cost));
            encoder.finish(&end, &mut buf);
        }
        StreamItem::Failed(error) => encoder.error(error, &mut buf),
    }
    buf
}
