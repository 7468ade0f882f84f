//! `GET /v1/docs` (documentation search, K) and `GET /docs/guide/{page}`
//! (the manual's pages, where the search's `url`s point). The manual, its
//! index and its answers are `router-docs` ([`Manual`]); this module reads
//! the query string and writes the replies.

use crate::reply::{self, Body};
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use router_docs::{MAX_QUERY_CHARS, Manual};

/// Answer `GET /v1/docs` for the query string `query`.
pub fn search(
    manual: &Manual,
    query: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let params = DocsQuery::parse(query.unwrap_or_default())?;
    let body = manual
        .search(params.q.as_deref(), params.limit.as_deref())
        .map_err(|e| ApiError::invalid(e.param(), e.to_string()))?;
    Ok(reply::json(StatusCode::OK, body, request_id))
}

/// Answer `GET /docs/guide/{page}`: the page's Markdown as embedded.
pub fn page(
    manual: &Manual,
    slug: Option<&str>,
    request_id: &str,
) -> Result<Response<Body>, ApiError> {
    let text = slug
        .and_then(|slug| manual.page(slug))
        .ok_or_else(|| ApiError::new(ErrorCode::NotFound, "No such page in the manual."))?;
    let mut response = Response::new(reply::full(text));
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/markdown; charset=utf-8"),
    );
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=300"),
    );
    reply::set_request_id(headers, request_id);
    Ok(response)
}

/// The parameters `/v1/docs` reads; others are ignored.
#[derive(Debug, Default, PartialEq, Eq)]
struct DocsQuery {
    q: Option<String>,
    limit: Option<String>,
}

impl DocsQuery {
    /// Percent-decoded (`+` is a space), each parameter at most once.
    fn parse(query: &str) -> Result<DocsQuery, ApiError> {
        let mut out = DocsQuery::default();
        for (name, value) in form_urlencoded::parse(query.as_bytes()) {
            let slot = match name.as_ref() {
                "q" => &mut out.q,
                "limit" => &mut out.limit,
                _ => continue,
            };
            if slot.is_some() {
                return Err(ApiError::invalid(
                    name.as_ref(),
                    format!("`{name}` may be given once."),
                ));
            }
            *slot = Some(value.into_owned());
        }
        if let Some(q) = &out.q
            && q.chars().count() > MAX_QUERY_CHARS
        {
            return Err(ApiError::invalid(
                "q",
                format!("`q` must be at most {MAX_QUERY_CHARS} characters."),
            ));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_parameters_are_decoded_and_checked() {
        let q = DocsQuery::parse("q=rate+limits%21&limit=3&other=x").unwrap();
        assert_eq!(q.q.as_deref(), Some("rate limits!"));
        assert_eq!(q.limit.as_deref(), Some("3"));
        assert_eq!(DocsQuery::parse("").unwrap(), DocsQuery::default());
        assert_eq!(
            DocsQuery::parse("q=a&q=b").unwrap_err().param.as_deref(),
            Some("q")
        );
        let long = format!("q={}", "é".repeat(MAX_QUERY_CHARS));
        assert!(
            DocsQuery::parse(&long).is_ok(),
            "500 characters, 1000 bytes"
        );
        assert!(DocsQuery::parse(&format!("{long}e")).is_err());
    }
}
