//! Rejection tables: request bodies built from a protocol's base request,
//! and the checks that every rule rejects with the `param` it must name and
//! that each rule's boundaries are accepted.

use router_canonical::{ApiError, ErrorCode};
use serde_json::Value;

/// One rejection case: name, body, and the `param` the 400 must name.
pub type Case = (&'static str, Vec<u8>, Option<&'static str>);

/// The JSON bytes of `value`.
pub fn body(value: &Value) -> Vec<u8> {
    serde_json::to_vec(value).unwrap()
}

/// `base` with one top-level field set.
pub fn with(mut base: Value, field: &str, value: Value) -> Vec<u8> {
    base[field] = value;
    body(&base)
}

/// `base` with several top-level fields set.
pub fn with_all(mut base: Value, fields: &[(&str, Value)]) -> Vec<u8> {
    for (field, value) in fields {
        base[*field] = value.clone();
    }
    body(&base)
}

/// `base` without one top-level field.
pub fn without(mut base: Value, field: &str) -> Vec<u8> {
    base.as_object_mut().unwrap().remove(field);
    body(&base)
}

/// Every case is a 400 `invalid_parameter` naming its `param`, with a
/// non-empty message free of the parser's internal path marker.
pub fn check_rejected<T>(
    parse: impl Fn(&[u8]) -> Result<T, ApiError>,
    cases: &[(&str, Vec<u8>, Option<&str>)],
) {
    let mut failures = Vec::new();
    for (name, body, param) in cases {
        match parse(body) {
            Ok(_) => failures.push(format!("{name}: accepted")),
            Err(err) => {
                if err.code != ErrorCode::InvalidParameter || err.status() != 400 {
                    failures.push(format!("{name}: code {:?}", err.code));
                }
                if err.param.as_deref() != *param {
                    failures.push(format!(
                        "{name}: param {:?}, expected {param:?} ({})",
                        err.param, err.message
                    ));
                }
                if err.message.contains('\u{1f}') || err.message.is_empty() {
                    failures.push(format!("{name}: message {:?}", err.message));
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Every case is accepted.
pub fn check_accepted<T>(parse: impl Fn(&[u8]) -> Result<T, ApiError>, cases: &[(&str, Vec<u8>)]) {
    let failures: Vec<String> = cases
        .iter()
        .filter_map(|(name, body)| {
            parse(body)
                .err()
                .map(|err| format!("{name}: rejected: {err:?}"))
        })
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
