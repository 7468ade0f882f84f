//! Read access to HTTP headers, without an HTTP crate: what a codec reads
//! from a client's request or a supplier's error reply.

/// Read access to a request's HTTP headers, by lower-case name.
///
/// Implemented for `()` (no headers) so a library user without HTTP can
/// call a codec directly.
pub trait HeaderSource {
    /// The header's value, if present and valid UTF-8.
    fn header(&self, name: &str) -> Option<&str>;
}

impl HeaderSource for () {
    fn header(&self, _name: &str) -> Option<&str> {
        None
    }
}

/// Name-value pairs, names matched without regard to case.
impl HeaderSource for &[(&str, &str)] {
    fn header(&self, name: &str) -> Option<&str> {
        find_header(self, name)
    }
}

/// Name-value pairs, names matched without regard to case.
impl<const N: usize> HeaderSource for [(&str, &str); N] {
    fn header(&self, name: &str) -> Option<&str> {
        find_header(self, name)
    }
}

fn find_header<'a>(pairs: &'a [(&str, &str)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(key, _)| key.eq_ignore_ascii_case(name))
        .map(|(_, value)| *value)
}
