//! The manual as `GET /v1/docs` answers it (K): every section with its
//! absolute `url`, or the sections matching a search, best first, with
//! their Markdown. Built once at start-up; the answer without a query never
//! changes, so it is rendered once too.

use crate::{CorpusError, Library};
use bytes::Bytes;
use serde::Serialize;

/// `limit` with `q`: 1 to 10, default 4 (K-06).
pub const DEFAULT_LIMIT: usize = 4;
pub const MAX_LIMIT: usize = 10;

/// A search the manual refuses.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SearchError {
    /// `limit` is not an integer from 1 to [`MAX_LIMIT`] (K-06).
    #[error("`limit` must be an integer from 1 to {MAX_LIMIT}.")]
    Limit,
}

impl SearchError {
    /// The query parameter at fault.
    pub fn param(&self) -> &'static str {
        match self {
            SearchError::Limit => "limit",
        }
    }
}

/// The manual, its index and the absolute `url` of every section.
pub struct Manual {
    library: Library,
    /// `url` of each section, by position in `library.sections()`.
    urls: Vec<String>,
    /// The answer without `q`, which never changes (K-03).
    listing: Bytes,
}

/// The answer of `GET /v1/docs`.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DocsList<'a> {
    /// Always `list`.
    #[cfg_attr(feature = "openapi", schema(pattern = "^list$"))]
    pub object: &'static str,
    /// `q` as sent, or `null` without a (non-blank) `q`.
    #[cfg_attr(feature = "openapi", schema(required))]
    pub query: Option<&'a str>,
    pub data: Vec<DocsSection<'a>>,
}

/// One section of the user manual.
#[derive(Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DocsSection<'a> {
    /// Stable across edits of the manual.
    pub id: &'a str,
    pub title: &'a str,
    pub category: &'a str,
    /// Absolute URL of the section, under `ROUTER_PUBLIC_BASE_URL`.
    #[cfg_attr(feature = "openapi", schema(format = "uri"))]
    pub url: &'a str,
    /// The section's Markdown; only in answers to a search.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<&'a str>,
}

impl Manual {
    /// The embedded manual; `url_of` makes a section's path
    /// (`/docs/guide/{page}#{id}`) absolute (under `ROUTER_PUBLIC_BASE_URL`).
    pub fn new(url_of: impl Fn(&str) -> String) -> Result<Manual, CorpusError> {
        let library = Library::embedded()?;
        let urls = library
            .sections()
            .iter()
            .map(|s| url_of(&s.path()))
            .collect();
        let mut manual = Manual {
            library,
            urls,
            listing: Bytes::new(),
        };
        let all = (0..manual.library.sections().len()).collect::<Vec<_>>();
        manual.listing = Bytes::from(manual.render(None, &all, false));
        Ok(manual)
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

    /// The JSON answer of `GET /v1/docs` to `q` and `limit` as sent
    /// (decoded): without a (non-blank) `q`, every section in reading order
    /// without bodies; with one, at most `limit` matching sections, best
    /// first, with their bodies.
    pub fn search(&self, q: Option<&str>, limit: Option<&str>) -> Result<Bytes, SearchError> {
        let Some(q) = q.filter(|q| !q.trim().is_empty()) else {
            // Blank `q` is absent (GP-56); `limit` is then ignored, even
            // when invalid (CF-17).
            return Ok(self.listing.clone());
        };
        let limit = match limit {
            None => DEFAULT_LIMIT,
            Some(text) => parse_limit(text)?,
        };
        let found = self.library.search(q, limit);
        Ok(Bytes::from(self.render(Some(q), &found, true)))
    }

    /// The Markdown of the page `slug` (`GET /docs/guide/{page}`).
    pub fn page(&self, slug: &str) -> Option<&'static str> {
        self.library.page(slug)
    }
}

/// `limit`: digits only, 1 to 10 (K-06).
fn parse_limit(text: &str) -> Result<usize, SearchError> {
    text.bytes()
        .all(|b| b.is_ascii_digit())
        .then(|| text.parse::<usize>().ok())
        .flatten()
        .filter(|n| (1..=MAX_LIMIT).contains(n))
        .ok_or(SearchError::Limit)
}

#[cfg(test)]
mod tests {
    use super::*;

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
            assert_eq!(parse_limit(bad).unwrap_err().param(), "limit", "{bad}");
        }
    }

    #[test]
    fn urls_are_absolute_under_the_base() {
        let manual = Manual::new(|path| format!("https://router.example.com{path}")).unwrap();
        assert!(
            manual
                .urls
                .iter()
                .all(|u| u.starts_with("https://router.example.com/docs/guide/"))
        );
        assert_eq!(manual.urls.len(), manual.library.sections().len());
    }
}
