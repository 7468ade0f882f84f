//! Query strings and percent-encoded path segments, decoded exactly: no
//! trimming, no case folding. Invalid escapes or UTF-8 are refused.

/// Percent-decode `text`; `plus_is_space` for query components
/// (`application/x-www-form-urlencoded`), not for paths.
pub fn percent_decode(text: &str, plus_is_space: bool) -> Option<String> {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = bytes.get(i + 1..i + 3)?;
                let hex = std::str::from_utf8(hex).ok()?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}

/// The parameters of a query string.
#[derive(Debug, Default)]
pub struct Query {
    pairs: Vec<(String, String)>,
}

/// A parameter that cannot be read: its name (for `param`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadParam(pub String);

impl Query {
    /// Parse `uri`'s query. A component that does not decode is named.
    pub fn parse(uri: &http::Uri) -> Result<Query, BadParam> {
        let mut pairs = Vec::new();
        for part in uri.query().unwrap_or("").split('&') {
            if part.is_empty() {
                continue;
            }
            let (name, value) = part.split_once('=').unwrap_or((part, ""));
            let name = percent_decode(name, true).ok_or_else(|| BadParam(name.to_owned()))?;
            let value = percent_decode(value, true).ok_or_else(|| BadParam(name.clone()))?;
            pairs.push((name, value));
        }
        Ok(Query { pairs })
    }

    /// The single value of `name`: `Ok(None)` when absent, an error when
    /// it is given twice (ambiguous).
    pub fn one(&self, name: &str) -> Result<Option<&str>, BadParam> {
        let mut values = self.pairs.iter().filter(|(n, _)| n == name);
        let first = values.next().map(|(_, v)| v.as_str());
        if values.next().is_some() {
            return Err(BadParam(name.to_owned()));
        }
        Ok(first)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_exactly() {
        assert_eq!(
            percent_decode("vendor%2Fmodel-x", false).as_deref(),
            Some("vendor/model-x")
        );
        assert_eq!(percent_decode("%20a+b", false).as_deref(), Some(" a+b"));
        assert_eq!(percent_decode("a+b", true).as_deref(), Some("a b"));
        assert_eq!(percent_decode("%zz", false), None);
        assert_eq!(percent_decode("%2", false), None);
        assert_eq!(percent_decode("%ff", false), None, "not UTF-8");
    }

    #[test]
    fn repeated_parameters_are_ambiguous() {
        let uri: http::Uri = "/x?a=1&b=2&a=3&c".parse().unwrap();
        let q = Query::parse(&uri).unwrap();
        assert_eq!(q.one("b"), Ok(Some("2")));
        assert_eq!(q.one("c"), Ok(Some("")));
        assert_eq!(q.one("d"), Ok(None));
        assert_eq!(q.one("a"), Err(BadParam("a".into())));
    }
}
