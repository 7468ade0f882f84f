//! Every router log of the run (all at TRACE) grepped for every secret the
//! suite handed out or configured: API keys, the operator token, the
//! supplier key; as text, as hex and as the decimal byte arrays a `Debug`
//! of a byte slice prints (how SQL parameters were once logged).

use crate::harness::{ADMIN_TOKEN, SUPPLIER_KEY, Suite, poisoned};
use anyhow::Result;

/// The forms a secret can take in a log line.
fn forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let decimal = |sep: &str| {
        bytes
            .iter()
            .map(u8::to_string)
            .collect::<Vec<_>>()
            .join(sep)
    };
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    vec![secret.to_owned(), hex, decimal(", "), decimal(",")]
}

pub fn run(suite: &Suite) -> Result<(String, bool)> {
    let mut secrets = suite.secrets.lock().map_err(poisoned)?.clone();
    secrets.push(ADMIN_TOKEN.to_owned());
    secrets.push(SUPPLIER_KEY.to_owned());
    let logs = suite.logs.lock().map_err(poisoned)?.clone();
    let mut bytes_read = 0u64;
    let mut lines = 0usize;
    let mut hits = Vec::new();
    let patterns: Vec<(String, String)> = secrets
        .iter()
        .flat_map(|s| forms(s).into_iter().map(move |f| (s.clone(), f)))
        .collect();
    for log in &logs {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        bytes_read += text.len() as u64;
        lines += text.lines().count();
        for (secret, form) in &patterns {
            if text.contains(form.as_str()) {
                let shown: String = secret.chars().take(10).collect();
                hits.push(format!("{}: {shown}…", log.display()));
            }
        }
    }
    for hit in &hits {
        eprintln!("secrets: found in {hit}");
    }
    let ok = hits.is_empty() && lines > 0;
    let line = format!(
        "secrets: {} logs at TRACE ({lines} lines, {} MiB) searched for {} secrets in 4 forms: hits {}",
        logs.len(),
        bytes_read / (1024 * 1024),
        secrets.len(),
        hits.len()
    );
    Ok((line, ok))
}
