//! `GET /v1/docs` (documentation search, K) and `GET /docs/guide/{page}`
//! (the manual's pages, where the search's `url`s point). The manual and
//! its index are `router-docs`; this module maps HTTP onto them.

use crate::public_url::PublicBaseUrl;
use crate::reply::{self, Body};
use bytes::Bytes;
use http::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use http::{Response, StatusCode};
use router_canonical::{ApiError, ErrorCode};
use router_docs::{CorpusError, Library, MAX_QUERY_CHARS};
use serde::Serialize;

/// `limit` with `q`: 1 to 10, default 4 (K-06).
const DEFAULT_LIMIT: usize = 4;
const MAX_LIMIT: usize = 10;

/// The manual, its index and the absolute `url` of every section, built
/// once at start-up.
pub struct Docs {
    library: Library,
    /// `url` of each section, by position in `library.sections()`.
    urls: Vec<String>,
    /// The answer without `q`, which never changes (K-03).
    listing: Bytes,
}

/// The answer of `GET /v1/docs`.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DocsList<'a> {
    /// Always `list`.
    #[schema(pattern = "^list$")]
    pub object: &'static str,
    /// `q` as sent, or `null` without a (non-blank) `q`.
    #[schema(required)]
    pub query: Option<&'a str>,
    pub data: Vec<DocsSection<'a>>,
}

/// One section of the user manual.
#[derive(Serialize, utoipa::ToSchema)]
pub struct DocsSection<'a> {
    /// Stable across edits of the manual.
    pub id: &'a str,
    pub title: &'a str,
    pub category: &'a str,
    /// Absolute URL of the section, under `ROUTER_PUBLIC_BASE_URL`.
    #[schema(format = "uri")]
    pub url: &'a str,
    /// The section's Markdown; only in answers to a search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<&'a str>,
}

impl Docs {
    /// The embedded manual with `url`s under `public_base`
    /// (`ROUTER_PUBLIC_BASE_URL`).
    pub fn new(public_base: &PublicBaseUrl) -> Result<Docs, CorpusError> {
        let library = Library::embedded()?;
        let urls = library
            .sections()
            .iter()
            .map(|s| public_base.join(&s.path()))
            .collect();
        let mut docs = Docs {
            library,
            urls,
            listing: Bytes::new(),
        };
        let all = (0..docs.library.sections().len()).collect::<Vec<_>>();
        docs.listing = Bytes::from(docs.render(None, &all, false));
        Ok(docs)
    }

    fn render(&self, query: Option<&str>, positions: &[usize], bodies: bool) -> Vec<u8> {
        let sections = self.library.sections();
        let data = positions
            .iter()
            .map(|&i| {
                let s = &sections[i];
                DocsSection {
                    id: &s.id,
                    title: &s.title,
                    category: &s.category,
                    url: &self.urls[i],
                    body: bodies.then_some(s.body.as_str()),
                }
            })
            .collect();
        let list = DocsList {
            object: "list",
            query,
            data,
        };
        serde_json::to_vec(&list).unwrap_or_default()
    }

    /// Answer `GET /v1/docs` for the query string `query`.
    pub fn search(
        &self,
        query: Option<&str>,
        request_id: &str,
    ) -> Result<Response<Body>, ApiError> {
        let params = DocsQuery::parse(query.unwrap_or_default())?;
        let Some(q) = params.q.filter(|q| !q.trim().is_empty()) else {
            // Blank `q` is absent (GP-56); `limit` is then ignored, even
            // when invalid (CF-17).
            return Ok(reply::json(
                StatusCode::OK,
                self.listing.clone(),
                request_id,
            ));
        };
        let limit = match params.limit.as_deref() {
            None => DEFAULT_LIMIT,
            Some(text) => parse_limit(text)?,
        };
        let found = self.library.search(&q, limit);
        let body = self.render(Some(&q), &found, true);
        Ok(reply::json(StatusCode::OK, body, request_id))
    }

    /// Answer `GET /docs/guide/{page}`: the page's Markdown as embedded.
    pub fn page(&self, slug: Option<&str>, request_id: &str) -> Result<Response<Body>, ApiError> {
        let text = slug
            .and_then(|slug| self.library.page(slug))
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

/// `limit`: digits only, 1 to 10 (K-06).
fn parse_limit(text: &str) -> Result<usize, ApiError> {
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse::<usize>().ok())
        .flatten()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or_else(|| {
            ApiError::invalid(
                "limit",
                format!("`limit` must be an integer from 1 to {MAX_LIMIT}."),
            )
        })
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

    #[test]
    fn limit_is_an_integer_from_one_to_ten() {
        for good in ["1", "4", "10", "07"] {
            assert!(parse_limit(good).is_ok(), "{good}");
        }
        for bad in [
            "0",
            "11",
            "abc",
            "1.5",
            "",
            "+3",
            "-1",
            " 3",
            "99999999999999999999999",
        ] {
            assert_eq!(
                parse_limit(bad).unwrap_err().param.as_deref(),
                Some("limit"),
                "{bad}"
            );
        }
    }

    #[test]
    fn urls_are_absolute_under_the_base() {
        let base = PublicBaseUrl::parse("https://router.example.com/").unwrap();
        let docs = Docs::new(&base).unwrap();
        assert!(
            docs.urls
                .iter()
                .all(|u| u.starts_with("https://router.example.com/docs/guide/"))
        );
        assert_eq!(docs.urls.len(), docs.library.sections().len());
    }
}
