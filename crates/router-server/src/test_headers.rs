//! Unit-test input: a header map from (name, value) pairs.

/// The pairs appended in order, so a name may repeat.
pub(crate) fn headers(pairs: &[(&'static str, &str)]) -> http::HeaderMap {
    let mut h = http::HeaderMap::new();
    for (k, v) in pairs {
        h.append(*k, v.parse().unwrap());
    }
    h
}
