//! The golden-fixture harness: cases under `fixtures/<protocol>/<case>/`,
//! compared as JSON values (SSE as the JSON of each frame), with
//! `UPDATE_GOLDEN=1` to rewrite the expected files.

use router_canonical::sse::{Decoder, Frame};
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};

/// `fixtures/<protocol>` at the workspace root.
pub fn fixtures(protocol: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fixtures")
        .join(protocol)
}

/// The case directories of `fixtures/<protocol>`, sorted.
pub fn cases(protocol: &str) -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(fixtures(protocol))
        .unwrap_or_else(|err| panic!("fixtures/{protocol} exists: {err}"))
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_dir())
        .collect();
    cases.sort();
    cases
}

/// Run `run_case` over every case of `fixtures/<protocol>`, of which there
/// must be at least `at_least`, and fail with every mismatch found.
pub fn run_cases(protocol: &str, at_least: usize, mut run_case: impl FnMut(&Path, &mut Golden)) {
    let cases = cases(protocol);
    assert!(
        cases.len() >= at_least,
        "expected the golden cases, found {cases:?}"
    );
    let mut golden = Golden::new();
    for case in &cases {
        run_case(case, &mut golden);
    }
    golden.finish();
}

/// Whether the expectations are being rewritten (`UPDATE_GOLDEN=1`).
pub fn updating() -> bool {
    std::env::var_os("UPDATE_GOLDEN").is_some_and(|v| v == "1")
}

/// Collects every mismatch of a run, so one test reports all of them.
#[derive(Debug, Default)]
pub struct Golden {
    failures: Vec<String>,
}

impl Golden {
    pub fn new() -> Self {
        Golden::default()
    }

    /// Compare `actual` with the JSON in `case/file` (or write it there).
    pub fn json(&mut self, case: &Path, file: &str, actual: &Value) {
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

    /// Compare the SSE `actual` with `case/file` frame by frame, each frame's
    /// data as JSON (or write it there).
    pub fn sse(&mut self, case: &Path, file: &str, actual: &[u8]) {
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

    /// Fail with every mismatch found, if any.
    pub fn finish(self) {
        assert!(
            self.failures.is_empty(),
            "{}\n\n(run with UPDATE_GOLDEN=1 to accept intended changes)",
            self.failures.join("\n\n")
        );
    }
}

/// The frames of a complete SSE stream.
pub fn frames(bytes: &[u8]) -> Vec<Frame> {
    let mut decoder = Decoder::default();
    let mut frames = Vec::new();
    decoder.feed(bytes, &mut frames).unwrap();
    assert!(!decoder.has_partial(), "SSE ends mid-frame");
    frames
}

/// Each frame's event name and data as JSON (or as a string, as for `[DONE]`).
pub fn frame_values(bytes: &[u8]) -> Vec<(Option<String>, Value)> {
    frames(bytes)
        .into_iter()
        .map(|f| {
            let data =
                serde_json::from_str(&f.data).unwrap_or_else(|_| Value::String(f.data.clone()));
            (f.event, data)
        })
        .collect()
}
