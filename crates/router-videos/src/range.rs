//! The content endpoint's `Range` header.
//!
//! One range of the `bytes` unit (compared case-insensitively, RFC 9110
//! §14.1), in one of the three RFC 9110 forms, with optional whitespace
//! around the range itself:
//!
//! | form | meaning | satisfiable when |
//! |---|---|---|
//! | `a-b` | bytes `a` to `b` inclusive, `b` clamped to `size − 1` | `a < size` |
//! | `a-` | bytes `a` to the end | `a < size` |
//! | `-n` | the last `n` bytes (all of them when `n ≥ size`) | `n > 0` and `size > 0` |
//!
//! A well-formed range that no byte satisfies is [`RangeOutcome::Unsatisfiable`]
//! (an empty 416): a start at or past the end, `-0`, and
//! every range of an empty file (size 0 has no byte to satisfy anything; it
//! is served whole, 200 with no body, only when no `Range` is sent).
//! Everything else is [`RangeOutcome::Invalid`] (416 `invalid_range`):
//! another unit, several ranges (any `,`), `a > b`, a
//! missing number on both sides, signs, spaces or anything but ASCII digits
//! inside a number, and a number too large for `u64` (the reliability plan's
//! "20-digit overflow → `invalid_range`": no file is that large, so such a
//! number is a broken client, not a seek past the end).

/// What a `Range` header asks of a file of `size` bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RangeOutcome {
    /// No `Range`: the whole file, 200.
    Full,
    /// One satisfiable range, 206; `start <= end < size`, `end` inclusive.
    Partial {
        /// The first byte.
        start: u64,
        /// The last byte, inclusive.
        end: u64,
    },
    /// A well-formed single range no byte satisfies: the empty 416 with
    /// `Content-Range: bytes */size`.
    Unsatisfiable,
    /// Malformed, another unit, several ranges, or start > end: 416
    /// `invalid_range` in the JSON envelope.
    Invalid,
}

impl RangeOutcome {
    /// The `Content-Range` value of this outcome for a file of `size`
    /// bytes: `bytes a-b/size` for a partial reply, `bytes */size` for the
    /// unsatisfiable one, none otherwise.
    pub fn content_range(self, size: u64) -> Option<String> {
        match self {
            RangeOutcome::Partial { start, end } => Some(format!("bytes {start}-{end}/{size}")),
            RangeOutcome::Unsatisfiable => Some(format!("bytes */{size}")),
            RangeOutcome::Full | RangeOutcome::Invalid => None,
        }
    }
}

/// Read a `Range` header for a file of `size` bytes.
pub fn parse_range(header: Option<&str>, size: u64) -> RangeOutcome {
    let Some(header) = header else {
        return RangeOutcome::Full;
    };
    let Some((unit, set)) = header.trim_matches(is_ows).split_once('=') else {
        return RangeOutcome::Invalid;
    };
    if !unit.eq_ignore_ascii_case("bytes") || set.contains(',') {
        return RangeOutcome::Invalid;
    }
    let Some((first, last)) = set.trim_matches(is_ows).split_once('-') else {
        return RangeOutcome::Invalid;
    };
    match (number(first), number(last)) {
        // `-n`: a suffix.
        (None, Some(Ok(n))) if first.is_empty() => {
            if n == 0 || size == 0 {
                RangeOutcome::Unsatisfiable
            } else {
                RangeOutcome::Partial {
                    start: size - n.min(size),
                    end: size - 1,
                }
            }
        }
        // `a-`: to the end.
        (Some(Ok(start)), None) if last.is_empty() => from(start, u64::MAX, size),
        // `a-b`.
        (Some(Ok(start)), Some(Ok(end))) if start <= end => from(start, end, size),
        _ => RangeOutcome::Invalid,
    }
}

/// Bytes `start..=end` of a file of `size` bytes, `start <= end`.
fn from(start: u64, end: u64, size: u64) -> RangeOutcome {
    if start >= size {
        RangeOutcome::Unsatisfiable
    } else {
        RangeOutcome::Partial {
            start,
            end: end.min(size - 1),
        }
    }
}

/// An unsigned decimal number: `None` when empty, `Some(Err)` when it holds
/// anything but ASCII digits or does not fit a `u64`.
fn number(text: &str) -> Option<Result<u64, ()>> {
    if text.is_empty() {
        return None;
    }
    if !text.bytes().all(|b| b.is_ascii_digit()) {
        return Some(Err(()));
    }
    Some(text.bytes().try_fold(0u64, |n, digit| {
        n.checked_mul(10)
            .and_then(|n| n.checked_add(u64::from(digit - b'0')))
            .ok_or(())
    }))
}

/// RFC 9110 optional whitespace.
fn is_ows(c: char) -> bool {
    c == ' ' || c == '\t'
}

#[cfg(test)]
mod tests {
    use super::*;
    use RangeOutcome::{Full, Invalid, Partial, Unsatisfiable};
    use proptest::prelude::*;

    const SIZE: u64 = 1000;

    fn at(header: &str) -> RangeOutcome {
        parse_range(Some(header), SIZE)
    }

    /// no header is the whole file.
    #[test]
    fn no_header_is_the_full_file() {
        assert_eq!(parse_range(None, SIZE), Full);
        assert_eq!(parse_range(None, 0), Full);
    }

    /// The three single-range forms, the end clamped.
    #[test]
    fn the_three_forms_are_served() {
        assert_eq!(at("bytes=0-99"), Partial { start: 0, end: 99 });
        assert_eq!(at("bytes=0-0"), Partial { start: 0, end: 0 });
        assert_eq!(
            at("bytes=999-999"),
            Partial {
                start: 999,
                end: 999
            }
        );
        assert_eq!(
            at("bytes=900-5000"),
            Partial {
                start: 900,
                end: 999
            }
        );
        assert_eq!(
            at("bytes=500-"),
            Partial {
                start: 500,
                end: 999
            }
        );
        assert_eq!(
            at("bytes=-100"),
            Partial {
                start: 900,
                end: 999
            }
        );
        assert_eq!(at("bytes=-1000"), Partial { start: 0, end: 999 });
        assert_eq!(at("bytes=-5000"), Partial { start: 0, end: 999 });
        assert_eq!(
            at("bytes=0-18446744073709551615"),
            Partial { start: 0, end: 999 }
        );
        // Unit case-insensitive, whitespace around the range (RFC 9110).
        assert_eq!(at("Bytes=0-9"), Partial { start: 0, end: 9 });
        assert_eq!(at(" bytes= 0-9 "), Partial { start: 0, end: 9 });
        assert_eq!(
            Partial { start: 0, end: 99 }.content_range(SIZE).as_deref(),
            Some("bytes 0-99/1000")
        );
    }

    /// well formed, nothing to serve.
    #[test]
    fn a_start_at_or_past_the_end_is_unsatisfiable() {
        for header in [
            "bytes=1000-1010",
            "bytes=1000-",
            "bytes=5000-6000",
            "bytes=-0",
            "bytes=18446744073709551615-",
        ] {
            assert_eq!(at(header), Unsatisfiable, "{header}");
        }
        assert_eq!(
            Unsatisfiable.content_range(SIZE).as_deref(),
            Some("bytes */1000")
        );
    }

    /// Size 0: no range is satisfiable, every malformed one stays invalid.
    #[test]
    fn an_empty_file_satisfies_no_range() {
        for header in ["bytes=0-0", "bytes=0-", "bytes=-1", "bytes=-0"] {
            assert_eq!(parse_range(Some(header), 0), Unsatisfiable, "{header}");
        }
        assert_eq!(parse_range(Some("bytes=abc"), 0), Invalid);
    }

    /// malformed, another unit, several ranges, start > end.
    #[test]
    fn malformed_ranges_are_invalid() {
        for header in [
            "bytes=0-1,5-6",
            "bytes=0-1,",
            "bytes=abc",
            "items=0-1",
            "bytes 0-1",
            "bytes=",
            "bytes=-",
            "bytes=5-1",
            "bytes=1000-999",
            "bytes=+1-2",
            "bytes=1 -2",
            "bytes=0x10-20",
            "bytes=1-2-3",
            "bytes=--1",
            "bytes=1.0-2",
            // Past u64 (RELIABILITY.md: 20-digit overflow is invalid).
            "bytes=99999999999999999999-",
            "bytes=0-99999999999999999999",
            "bytes=-18446744073709551616",
            "bytes=٣-4",
            "=0-1",
            "",
        ] {
            assert_eq!(at(header), Invalid, "{header:?}");
        }
        assert_eq!(Invalid.content_range(SIZE), None);
    }

    /// The model the parser must agree with, on structured ranges.
    fn model(first: Option<u64>, last: Option<u64>, size: u64) -> RangeOutcome {
        match (first, last) {
            (None, None) => Invalid,
            (None, Some(n)) => {
                if n == 0 || size == 0 {
                    Unsatisfiable
                } else {
                    let start = size.saturating_sub(n);
                    Partial {
                        start,
                        end: size - 1,
                    }
                }
            }
            (Some(a), Some(b)) if a > b => Invalid,
            (Some(a), b) => {
                if a >= size {
                    Unsatisfiable
                } else {
                    Partial {
                        start: a,
                        end: b.unwrap_or(u64::MAX).min(size - 1),
                    }
                }
            }
        }
    }

    proptest! {
        /// Any header text: no panic, and a partial range is always inside
        /// the file.
        #[test]
        fn never_panics_and_stays_in_bounds(header in ".{0,40}", size in 0u64..5000) {
            let outcome = parse_range(Some(&header), size);
            if let Partial { start, end } = outcome {
                prop_assert!(start <= end && end < size);
            }
        }

        /// Bytes-looking headers too (random text rarely starts with `bytes=`).
        #[test]
        fn never_panics_on_near_misses(tail in "[0-9, \\-a]{0,20}", size in 0u64..5000) {
            let outcome = parse_range(Some(&format!("bytes={tail}")), size);
            if let Partial { start, end } = outcome {
                prop_assert!(start <= end && end < size);
            }
        }

        /// Structured single ranges agree with the model.
        #[test]
        fn agrees_with_the_model(
            first in proptest::option::of(0u64..3000),
            last in proptest::option::of(0u64..3000),
            size in 0u64..2000,
        ) {
            let text = |n: Option<u64>| n.map(|n| n.to_string()).unwrap_or_default();
            let header = format!("bytes={}-{}", text(first), text(last));
            prop_assert_eq!(parse_range(Some(&header), size), model(first, last, size));
        }
    }
}
