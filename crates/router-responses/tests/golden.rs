//! Golden tests over `fixtures/responses/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` -> `canonical.json` -> `upstream_request.json`;
//! `supplier_response.json` -> `canonical_response.json` -> `response.json`;
//! `supplier_stream.sse` -> `canonical_events.json` -> `client_stream.sse`.
//! The inputs (`request.json`, `supplier_*`) are written by hand from the
//! public OpenAI Responses reference; the rest are expectations. Run with
//! `UPDATE_GOLDEN=1` to rewrite the expectations, then review the diff.
//!
//! Besides the comparison, every client stream is checked for the protocol's
//! own rules: each SSE `event:` name equals its data's `type`, and
//! `sequence_number` counts 0, 1, 2, ... (C-10, GP-04).

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use router_canonical::sse::{Decoder, Frame};
use router_canonical::{NanoUsd, StreamEvent};
use router_responses::{
    ResponseContext, StreamContext, StreamDecoder, StreamEncoder, decode_response, encode_request,
    encode_response, parse_request,
};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const UPSTREAM_MODEL: &str = "supplier-resp-model-2025-01";
const ROUTER_ID: &str = "resp_router0001";
const CREATED: i64 = 1_735_689_600;
/// $0.000123456: shows `usage.cost` keeps all nine fraction digits.
const COST: NanoUsd = NanoUsd(123_456);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/responses")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

struct Golden {
    failures: Vec<String>,
}

impl Golden {
    fn json(&mut self, case: &Path, file: &str, actual: &Value) {
        let path = case.join(file);
        if updating() {
            let mut text = serde_json::to_string_pretty(actual).unwrap();
            text.push('\n');
            fs::write(&path, text).unwrap();
            return;
        }
        let expected: Value = match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap(),
            Err(err) => {
                self.failures.push(format!("{}: {err}", path.display()));
                return;
            }
        };
        if &expected != actual {
            self.failures.push(format!(
                "{} differs\n--- expected\n{}\n--- actual\n{}",
                path.display(),
                serde_json::to_string_pretty(&expected).unwrap(),
                serde_json::to_string_pretty(actual).unwrap()
            ));
        }
    }

    fn sse(&mut self, case: &Path, file: &str, actual: &[u8]) {
        let path = case.join(file);
        if updating() {
            fs::write(&path, actual).unwrap();
            return;
        }
        let expected = fs::read(&path).unwrap_or_default();
        let (expected, actual) = (frame_values(&expected), frame_values(actual));
        if expected != actual {
            self.failures.push(format!(
                "{} differs\n--- expected\n{expected:#?}\n--- actual\n{actual:#?}",
                path.display()
            ));
        }
    }
}

fn frames(bytes: &[u8]) -> Vec<Frame> {
    let mut decoder = Decoder::default();
    let mut frames = Vec::new();
    decoder.feed(bytes, &mut frames).unwrap();
    assert!(!decoder.has_partial(), "SSE ends mid-frame");
    frames
}

/// Each frame's event name and data as JSON.
fn frame_values(bytes: &[u8]) -> Vec<(Option<String>, Value)> {
    frames(bytes)
        .into_iter()
        .map(|f| {
            let data =
                serde_json::from_str(&f.data).unwrap_or_else(|_| Value::String(f.data.clone()));
            (f.event, data)
        })
        .collect()
}

/// The Responses stream rules every client stream must keep.
fn check_client_stream(case: &Path, bytes: &[u8]) {
    let values = frame_values(bytes);
    assert!(
        !values.is_empty(),
        "{}: empty client stream",
        case.display()
    );
    for (n, (event, data)) in values.iter().enumerate() {
        assert_eq!(
            event.as_deref(),
            data["type"].as_str(),
            "{}: frame {n}: `event:` differs from the data's type",
            case.display()
        );
        assert_eq!(
            data["sequence_number"],
            Value::from(n),
            "{}: frame {n}: sequence_number",
            case.display()
        );
    }
    let names: Vec<_> = values.iter().map(|(e, _)| e.as_deref()).collect();
    assert_eq!(
        names[..2],
        [Some("response.created"), Some("response.in_progress")],
        "{}",
        case.display()
    );
    let (_, last) = values.last().unwrap();
    assert!(
        matches!(
            last["type"].as_str(),
            Some("response.completed" | "response.incomplete")
        ),
        "{}: the stream must end with response.completed",
        case.display()
    );
    assert_eq!(last["response"]["usage"]["cost"], 0.000123456);
}

fn run_case(case: &Path, golden: &mut Golden) {
    let request = fs::read(case.join("request.json")).expect("every case has a request.json");
    let canonical = parse_request(&request)
        .unwrap_or_else(|err| panic!("{}: request rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&canonical).unwrap(),
    );
    let upstream = encode_request(&canonical, UPSTREAM_MODEL).unwrap();
    golden.json(
        case,
        "upstream_request.json",
        &serde_json::from_slice(&upstream).unwrap(),
    );

    if let Ok(body) = fs::read(case.join("supplier_response.json")) {
        let response = decode_response(&body)
            .unwrap_or_else(|err| panic!("{}: supplier reply rejected: {err}", case.display()));
        golden.json(
            case,
            "canonical_response.json",
            &serde_json::to_value(&response).unwrap(),
        );
        let ctx = ResponseContext {
            id: ROUTER_ID,
            model: &canonical.model,
            created: CREATED,
            cost: COST,
        };
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&encode_response(&response, &ctx)).unwrap(),
        );
    }

    if let Ok(sse) = fs::read(case.join("supplier_stream.sse")) {
        let mut decoder = StreamDecoder::new();
        let mut events = Vec::new();
        for frame in frames(&sse) {
            events.extend(
                decoder
                    .decode(&frame)
                    .unwrap_or_else(|err| panic!("{}: stream rejected: {err}", case.display())),
            );
        }
        assert!(
            decoder.is_finished(),
            "{}: no response.completed",
            case.display()
        );
        golden.json(
            case,
            "canonical_events.json",
            &serde_json::to_value(&events).unwrap(),
        );
        let mut encoder = StreamEncoder::new(StreamContext {
            id: ROUTER_ID.to_owned(),
            model: canonical.model.clone(),
            created: CREATED,
        });
        let mut out = Vec::new();
        for event in &events {
            match event {
                StreamEvent::Finish {
                    stop_reason, usage, ..
                } => encoder.encode_finish(stop_reason, usage, COST, &mut out),
                other => encoder.encode(other, &mut out),
            }
        }
        check_client_stream(case, &out);
        golden.sse(case, "client_stream.sse", &out);
    }
}

#[test]
fn fixtures_match() {
    let mut cases: Vec<PathBuf> = fs::read_dir(fixtures())
        .expect("fixtures/responses exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 10,
        "expected the golden cases, found {cases:?}"
    );
    let mut golden = Golden {
        failures: Vec::new(),
    };
    for case in &cases {
        run_case(case, &mut golden);
    }
    assert!(
        golden.failures.is_empty(),
        "{}\n\n(run with UPDATE_GOLDEN=1 to accept intended changes)",
        golden.failures.join("\n\n")
    );
}
