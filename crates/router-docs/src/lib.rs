//! The router's user manual (`docs/guide/*.md`), embedded in the binary,
//! split into sections with stable ids and categories, and searched with
//! BM25 over stemmed terms; and the answers of `GET /v1/docs` ([`Manual`]:
//! the listing, a search, a page). The server's `docs.rs` is a thin HTTP
//! layer over them; this crate knows nothing of HTTP.
//!
//! A page is Markdown: `# Title {#id}`, then `<!-- category: name -->`, an
//! overview (the page's first section), and `## Heading {#id}` sections.
//! Deeper headings and code blocks stay inside their section.

mod corpus;
pub mod manual;
mod search;

pub use corpus::{CorpusError, PAGES, Page, Section};
pub use manual::{DocsList, DocsSection, Manual, SearchError};
pub use search::{MAX_QUERY_CHARS, terms};

use search::Index;

/// The parsed manual and its search index, built once at start-up.
#[derive(Debug)]
pub struct Library {
    sections: Vec<Section>,
    index: Index,
}

impl Library {
    /// The manual compiled into this binary.
    pub fn embedded() -> Result<Library, CorpusError> {
        Library::from_pages(PAGES)
    }

    /// A library of other pages (tests, or a manual of another product).
    pub fn from_pages(pages: &[Page]) -> Result<Library, CorpusError> {
        let sections = corpus::parse(pages)?;
        let index = Index::build(&sections);
        Ok(Library { sections, index })
    }

    /// Every section, in reading order (page order, then page position).
    pub fn sections(&self) -> &[Section] {
        &self.sections
    }

    /// At most `limit` sections matching `query`, best first, as positions
    /// in [`Library::sections`]; ties keep reading order. A query with no
    /// indexable term matches nothing.
    pub fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        self.index.search(query, limit)
    }

    /// The Markdown of the page `slug`, as embedded.
    pub fn page(&self, slug: &str) -> Option<&'static str> {
        PAGES.iter().find(|p| p.slug == slug).map(|p| p.text)
    }
}
