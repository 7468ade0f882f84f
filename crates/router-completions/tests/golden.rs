//! Golden tests over `fixtures/completions/<case>/`, compared as JSON values.
//!
//! Per case: `request.json` -> `canonical.json` (the request that rides the
//! Chat path, E-09); `canonical_response.json` -> `response.json`;
//! `canonical_events.json` -> `client_stream.sse`. The inputs
//! (`request.json`, `canonical_response.json`, `canonical_events.json`) are
//! written by hand; the rest are expectations. Run with `UPDATE_GOLDEN=1` to
//! rewrite the expectations, then review the diff.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test code: a panic is the failure report

use router_canonical::sse::{Decoder, Frame};
use router_canonical::{NanoUsd, Response, StreamEvent};
use router_completions::{
    ResponseContext, StreamContext, StreamEncoder, encode_response, parse_request,
};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

const ROUTER_ID: &str = "cmpl-router-0001";
const CREATED: i64 = 1_735_689_600;
/// $0.000123456: shows `usage.cost` keeps all nine fraction digits.
const COST: NanoUsd = NanoUsd(123_456);

/// The cases that must exist; a missing directory fails the test.
const CASES: [&str; 6] = [
    "array_prompt",
    "echo",
    "plain_prompt",
    "stop_and_sampling",
    "stream_echo",
    "stream_text",
];

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fixtures/completions")
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
        let expected = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) => {
                self.failures.push(format!("{}: {err}", path.display()));
                return;
            }
        };
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

/// Each frame's data as JSON (or as a string for `[DONE]`).
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

fn run_case(case: &Path, golden: &mut Golden) {
    let request = fs::read(case.join("request.json")).expect("every case has a request.json");
    let parsed = parse_request(&request)
        .unwrap_or_else(|err| panic!("{}: request rejected: {err:?}", case.display()));
    golden.json(
        case,
        "canonical.json",
        &serde_json::to_value(&parsed.request).unwrap(),
    );

    let mut outputs = 0;
    if let Ok(body) = fs::read(case.join("canonical_response.json")) {
        outputs += 1;
        let response: Response = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{}: bad canonical_response.json: {err}", case.display()));
        let ctx = ResponseContext {
            id: ROUTER_ID,
            model: &parsed.request.model,
            created: CREATED,
            cost: COST,
            echo: parsed.echo.as_deref(),
        };
        golden.json(
            case,
            "response.json",
            &serde_json::from_slice(&encode_response(&response, &ctx)).unwrap(),
        );
    }

    if let Ok(body) = fs::read(case.join("canonical_events.json")) {
        outputs += 1;
        let events: Vec<StreamEvent> = serde_json::from_slice(&body)
            .unwrap_or_else(|err| panic!("{}: bad canonical_events.json: {err}", case.display()));
        let mut encoder = StreamEncoder::new(StreamContext {
            id: ROUTER_ID.to_owned(),
            model: parsed.request.model.clone(),
            created: CREATED,
            echo: parsed.echo.clone(),
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
        golden.sse(case, "client_stream.sse", &out);
    }
    assert!(
        outputs > 0,
        "{}: a case needs canonical_response.json or canonical_events.json",
        case.display()
    );
}

#[test]
fn fixtures_match() {
    let mut cases: Vec<PathBuf> = fs::read_dir(fixtures())
        .expect("fixtures/completions exists")
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    for name in CASES {
        assert!(
            cases.iter().any(|c| c.ends_with(name)),
            "golden case `{name}` is missing from {cases:?}"
        );
    }
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
