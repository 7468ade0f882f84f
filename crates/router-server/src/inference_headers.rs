//! The common inference headers (F-04..F-15, F-29, GP-33): validated on
//! every inference surface before any routing or billing.

use router_canonical::ApiError;

fn header<'a>(headers: &'a http::HeaderMap, name: &str) -> Result<Option<&'a str>, ApiError> {
    match headers.get(name) {
        None => Ok(None),
        Some(value) => value
            .to_str()
            .map(Some)
            .map_err(|_| ApiError::invalid(name, format!("`{name}` must be printable ASCII"))),
    }
}

fn one_of(headers: &http::HeaderMap, name: &str, allowed: &[&str]) -> Result<(), ApiError> {
    match header(headers, name)? {
        Some(v) if !allowed.contains(&v) => Err(ApiError::invalid(
            name,
            format!("`{name}` must be one of {}", allowed.join(", ")),
        )),
        _ => Ok(()),
    }
}

/// Validate the `X-CI-*` and `x-ci-prompt-cache*` headers.
pub fn validate(headers: &http::HeaderMap) -> Result<(), ApiError> {
    one_of(headers, "x-ci-prompt-cache", &["on", "off", "passthrough"])?;
    one_of(
        headers,
        "x-ci-prompt-cache-scope",
        &["session", "user", "org"],
    )?;
    if let Some(label) = headers.get("x-ci-prompt-cache-session") {
        // 1..=256 printable ASCII (space to tilde), at least one non-space (F-15).
        let bytes = label.as_bytes();
        let valid = (1..=256).contains(&bytes.len())
            && bytes.iter().all(|b| (b' '..=b'~').contains(b))
            && bytes.iter().any(|b| *b != b' ');
        if !valid {
            return Err(ApiError::invalid(
                "x-ci-prompt-cache-session",
                "`x-ci-prompt-cache-session` must be 1 to 256 printable ASCII characters, not only spaces",
            ));
        }
    }
    if let Some(user) = headers.get("x-ci-end-user") {
        let text = user
            .to_str()
            .map_err(|_| ApiError::invalid("x-ci-end-user", "`X-CI-End-User` must be a string"))?;
        if text.chars().count() > 200 {
            return Err(ApiError::invalid(
                "x-ci-end-user",
                "`X-CI-End-User` must be at most 200 characters",
            ));
        }
    }
    // Which experiment a slug names is looked up once the key's account is
    // known (core's pipeline, `Gateway::handle`).
    if header(headers, "x-ci-experiment")?.is_some_and(str::is_empty) {
        return Err(ApiError::invalid(
            "x-ci-experiment",
            "`X-CI-Experiment` must not be empty",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use router_canonical::ErrorCode;

    fn check(name: &'static str, value: &str) -> Result<(), ApiError> {
        let mut h = http::HeaderMap::new();
        h.insert(name, value.parse().unwrap());
        validate(&h)
    }

    #[test]
    fn values_are_checked() {
        assert!(check("x-ci-prompt-cache", "on").is_ok());
        assert!(check("x-ci-prompt-cache", "maybe").is_err());
        assert!(check("x-ci-prompt-cache", "ON").is_err());
        assert!(check("x-ci-prompt-cache-scope", "org").is_ok());
        assert!(check("x-ci-prompt-cache-scope", "team").is_err());
        assert!(check("x-ci-prompt-cache-session", "abc").is_ok());
        assert!(check("x-ci-prompt-cache-session", &"a".repeat(256)).is_ok());
        assert!(check("x-ci-prompt-cache-session", &"a".repeat(257)).is_err());
        assert!(check("x-ci-prompt-cache-session", "   ").is_err());
        assert!(check("x-ci-prompt-cache-session", "").is_err());
        assert!(check("x-ci-prompt-cache-session", "a\tb").is_err());
        assert!(check("x-ci-end-user", &"u".repeat(200)).is_ok());
        assert!(check("x-ci-end-user", &"u".repeat(201)).is_err());
        assert!(check("x-ci-experiment", "exp").is_ok());
        assert_eq!(
            check("x-ci-experiment", "").unwrap_err().code,
            ErrorCode::InvalidParameter
        );
    }
}
