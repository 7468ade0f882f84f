//! The supplier half of a golden case, the same for every dialect: the
//! canonical request encoded for the supplier, its reply and its stream
//! decoded to canonical values, each compared with the case's expectations.

use crate::golden::{Golden, frames};
use router_canonical::eventstream::{Decoder, HeaderValue, Message};
use router_canonical::{
    Request, Response, StreamEvent, SupplierCodec, SupplierError, SupplierTarget,
};
use serde_json::Value;
use std::fs;
use std::path::Path;

/// The case's `canonical.json`, as the input of a conversion case.
pub fn canonical_input(case: &Path) -> Request {
    serde_json::from_slice(&fs::read(case.join("canonical.json")).unwrap()).unwrap()
}

/// `canonical` encoded by `supplier` for `target`, compared with
/// `upstream_request.json`; the upstream body as JSON.
pub fn upstream_request<S: SupplierCodec>(
    case: &Path,
    golden: &mut Golden,
    supplier: &S,
    canonical: &Request,
    target: &SupplierTarget<'_>,
) -> Value {
    let upstream = supplier
        .encode_request(canonical, target)
        .unwrap_or_else(|err| panic!("{}: encode_request failed: {err:?}", case.display()));
    let upstream: Value = serde_json::from_slice(&upstream).unwrap();
    golden.json(case, "upstream_request.json", &upstream);
    upstream
}

/// The case's `supplier_response.json`, if it has one, decoded by `supplier`
/// and compared with `canonical_response.json`.
pub fn canonical_response<S: SupplierCodec>(
    case: &Path,
    golden: &mut Golden,
    supplier: &S,
) -> Option<Response> {
    let body = fs::read(case.join("supplier_response.json")).ok()?;
    let response = supplier
        .decode_response(&body)
        .unwrap_or_else(|err| panic!("{}: supplier reply rejected: {err}", case.display()));
    golden.json(
        case,
        "canonical_response.json",
        &serde_json::to_value(&response).unwrap(),
    );
    Some(response)
}

/// The case's `supplier_stream.sse`, if it has one, decoded by `supplier`
/// (which must see the stream finish: `ending` names what ends it) and
/// compared with `canonical_events.json`.
pub fn canonical_events<S: SupplierCodec>(
    case: &Path,
    golden: &mut Golden,
    supplier: &S,
    ending: &str,
) -> Option<Vec<StreamEvent>> {
    let sse = fs::read(case.join("supplier_stream.sse")).ok()?;
    let mut decoder = supplier.stream_decoder();
    let mut events = Vec::new();
    for frame in frames(&sse) {
        events.extend(
            decoder
                .decode(&frame)
                .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display())),
        );
    }
    assert!(decoder.is_finished(), "{}: no {ending}", case.display());
    compare_events(case, golden, &events);
    Some(events)
}

/// Compare decoded stream events with the case's `canonical_events.json`.
pub fn compare_events(case: &Path, golden: &mut Golden, events: &[StreamEvent]) {
    golden.json(
        case,
        "canonical_events.json",
        &serde_json::to_value(events).unwrap(),
    );
}

/// The AWS event-stream bytes of fixture messages, each a JSON object of
/// string `headers` and a JSON `payload`.
pub fn event_stream_bytes(messages: &[Value]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for message in messages {
        let headers = message["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    HeaderValue::String(v.as_str().unwrap().to_owned()),
                )
            })
            .collect();
        let payload = serde_json::to_vec(&message["payload"]).unwrap();
        bytes.extend(Message { headers, payload }.encode());
    }
    bytes
}

/// The events of AWS event-stream `bytes` through `supplier`'s decoder, fed
/// in pieces of `piece` bytes, and whether the stream finished.
pub fn decode_event_stream<S: SupplierCodec>(
    supplier: &S,
    bytes: &[u8],
    piece: usize,
) -> Result<(Vec<StreamEvent>, bool), SupplierError> {
    let mut framing = Decoder::default();
    let mut decoder = supplier.stream_decoder();
    let mut events = Vec::new();
    for chunk in bytes.chunks(piece) {
        let mut messages = Vec::new();
        framing.feed(chunk, &mut messages).unwrap();
        for message in messages {
            events.extend(decoder.decode(&message.into_frame().unwrap())?);
        }
    }
    Ok((events, decoder.is_finished()))
}
