//! How the operator commands print: human lines by default, the admin
//! API's JSON with `--json`; and errors as one line.

use serde::Serialize;
use serde_json::Value;

pub(crate) struct Output {
    pub(crate) json: bool,
}

impl Output {
    /// Prints `value` as JSON, or as `human` renders its JSON.
    ///
    /// A stdout that cannot be written (a closed pipe: `router … | head -1`)
    /// ends the process with status 1 and one line, never a panic.
    pub(crate) fn show(&self, value: &impl Serialize, human: impl FnOnce(&Value) -> String) {
        use std::io::Write;
        let value = serde_json::to_value(value).unwrap_or_default();
        let text = if self.json {
            serde_json::to_string_pretty(&value).unwrap_or_default()
        } else {
            human(&value).trim_end().to_owned()
        };
        let mut stdout = std::io::stdout().lock();
        if let Err(e) = writeln!(stdout, "{text}").and_then(|()| stdout.flush()) {
            fail(&format!("cannot write the output: {e}"));
        }
    }
}

/// Ends the process with status 1 after one line on stderr (itself
/// ignored if stderr is gone too).
#[expect(
    clippy::disallowed_methods,
    reason = "the binary's own exit, also from deep in a command whose stdout closed"
)]
pub(crate) fn fail(message: &str) -> ! {
    use std::io::Write;
    let _ = writeln!(std::io::stderr(), "router: {}", one_line(message));
    std::process::exit(1)
}

/// Integer nano-USD as exact USD text: `1500000000` → `1.500000000`.
pub(crate) fn usd(nano: i64) -> String {
    const NANO_PER_USD: i64 = 1_000_000_000;
    let sign = if nano < 0 { "-" } else { "" };
    let abs = nano.unsigned_abs();
    let per = NANO_PER_USD.unsigned_abs();
    format!("{sign}{}.{:09}", abs / per, abs % per)
}

/// Exact USD text (`12`, `12.5`, `0.000000001`) as nano-USD; no floats, at
/// most nine decimals, positive.
pub(crate) fn parse_usd(text: &str) -> Option<i64> {
    let (whole, fraction) = text.trim().split_once('.').unwrap_or((text.trim(), ""));
    let digits = |s: &str| s.bytes().all(|b| b.is_ascii_digit());
    if whole.is_empty() && fraction.is_empty()
        || !digits(whole)
        || !digits(fraction)
        || fraction.len() > 9
    {
        return None;
    }
    let whole: i64 = if whole.is_empty() {
        0
    } else {
        whole.parse().ok()?
    };
    let fraction: i64 = format!("{fraction:0<9}").parse().ok()?;
    whole
        .checked_mul(1_000_000_000)?
        .checked_add(fraction)
        .filter(|n| *n > 0)
}

/// A multi-line error (a TOML snippet with its gutter, a chain of causes)
/// as one line: the text lines joined, the source excerpt left out.
pub(crate) fn one_line(text: &str) -> String {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !is_snippet(line))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `|`, `3 | foo = 1` or `|     ^`: the gutter of a quoted source line.
fn is_snippet(line: &str) -> bool {
    let rest = line
        .trim_start_matches(|c: char| c.is_ascii_digit())
        .trim_start();
    rest.starts_with('|')
}

/// A JSON field as display text (`-` when absent or null).
pub(crate) fn field(value: &Value, name: &str) -> String {
    match &value[name] {
        Value::Null => "-".to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn usd_text_round_trips_exactly() {
        assert_eq!(usd(1_500_000_000), "1.500000000");
        assert_eq!(usd(-1), "-0.000000001");
        assert_eq!(parse_usd("12.5"), Some(12_500_000_000));
        assert_eq!(parse_usd("0.000000001"), Some(1));
        assert_eq!(parse_usd("3"), Some(3_000_000_000));
        for bad in ["", ".", "1.0000000001", "-1", "1e3", "0", "abc", "1.2.3"] {
            assert_eq!(parse_usd(bad), None, "{bad}");
        }
    }

    #[test]
    fn multi_line_errors_become_one_line() {
        let toml = "ROUTER_CATALOG: invalid catalog TOML: TOML parse error at line 3, column 5\n  |\n3 | id = \n  |     ^\nstring values must be quoted\n";
        assert_eq!(
            one_line(toml),
            "ROUTER_CATALOG: invalid catalog TOML: TOML parse error at line 3, column 5 string values must be quoted"
        );
    }
}
