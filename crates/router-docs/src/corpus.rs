//! The embedded pages and their split into sections.

use std::collections::HashSet;

/// One Markdown page of the manual.
#[derive(Debug, Clone, Copy)]
pub struct Page {
    /// The page's file name without `.md`; its address is `/docs/guide/{slug}`.
    pub slug: &'static str,
    pub text: &'static str,
}

macro_rules! pages {
    ($($slug:literal),* $(,)?) => {
        /// The manual, in reading order. A page file missing from this list
        /// fails the `every_page_file_is_listed` test.
        pub static PAGES: &[Page] = &[$(Page {
            slug: $slug,
            text: include_str!(concat!("../../../docs/guide/", $slug, ".md")),
        }),*];
    };
}

pages![
    "getting-started",
    "authentication",
    "chat-completions",
    "responses",
    "messages",
    "completions",
    "claude-code",
    "agents",
    "routing",
    "errors",
    "limits",
    "uploads",
    "data-protection",
    "catalog",
    "channels",
    "images",
    "videos",
    "documentation-search",
];

/// One section: a page's overview or one of its `##` headings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// Stable across edits of the text: written in the heading (`{#id}`).
    pub id: String,
    pub title: String,
    pub category: String,
    /// The slug of the page it belongs to.
    pub page: &'static str,
    /// The section's Markdown without its heading.
    pub body: String,
}

impl Section {
    /// The section's address relative to the public base URL.
    pub fn path(&self) -> String {
        format!("/docs/guide/{}#{}", self.page, self.id)
    }
}

/// A page that does not follow the format (see the crate docs).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum CorpusError {
    #[error("page {page}: the first line must be `# Title {{#id}}`")]
    MissingTitle { page: &'static str },
    #[error("page {page}: `<!-- category: name -->` must follow the title")]
    MissingCategory { page: &'static str },
    #[error("page {page}, line {line}: a heading needs an id, `{{#lowercase-words}}`")]
    MissingId { page: &'static str, line: usize },
    #[error("section id `{id}` is used twice")]
    DuplicateId { id: String },
    #[error("section `{id}` has no text")]
    EmptySection { id: String },
}

pub(crate) fn parse(pages: &[Page]) -> Result<Vec<Section>, CorpusError> {
    let mut sections = Vec::new();
    let mut ids = HashSet::new();
    for page in pages {
        for section in parse_page(page)? {
            if !ids.insert(section.id.clone()) {
                return Err(CorpusError::DuplicateId { id: section.id });
            }
            sections.push(section);
        }
    }
    Ok(sections)
}

fn parse_page(page: &Page) -> Result<Vec<Section>, CorpusError> {
    let mut lines = page.text.lines().enumerate();
    let (title, id) = lines
        .next()
        .and_then(|(_, line)| line.strip_prefix("# "))
        .and_then(split_id)
        .ok_or(CorpusError::MissingTitle { page: page.slug })?;
    let category = lines
        .by_ref()
        .map(|(_, line)| line.trim())
        .find(|line| !line.is_empty())
        .and_then(|line| line.strip_prefix("<!-- category:"))
        .and_then(|rest| rest.strip_suffix("-->"))
        .map(|c| c.trim().to_owned())
        .filter(|c| !c.is_empty())
        .ok_or(CorpusError::MissingCategory { page: page.slug })?;
    let mut sections = Vec::new();
    let mut current = (title, id, String::new());
    let mut in_code = false;
    for (n, line) in lines {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
        }
        if !in_code && let Some(heading) = line.strip_prefix("## ") {
            let (title, id) = split_id(heading).ok_or(CorpusError::MissingId {
                page: page.slug,
                line: n + 1,
            })?;
            let done = std::mem::replace(&mut current, (title, id, String::new()));
            sections.push(finish(page, &category, done)?);
            continue;
        }
        current.2.push_str(line);
        current.2.push('\n');
    }
    sections.push(finish(page, &category, current)?);
    Ok(sections)
}

fn finish(
    page: &Page,
    category: &str,
    (title, id, body): (String, String, String),
) -> Result<Section, CorpusError> {
    let body = body.trim().to_owned();
    if body.is_empty() {
        return Err(CorpusError::EmptySection { id });
    }
    Ok(Section {
        id,
        title,
        category: category.to_owned(),
        page: page.slug,
        body,
    })
}

/// `Title {#id}` into its title and id; `None` without a well-formed id.
fn split_id(heading: &str) -> Option<(String, String)> {
    let (title, rest) = heading.trim_end().rsplit_once("{#")?;
    let id = rest.strip_suffix('}')?;
    let well_formed = !id.is_empty()
        && id
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-');
    (well_formed && !title.trim().is_empty()).then(|| (title.trim().to_owned(), id.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn page(text: &'static str) -> Page {
        Page { slug: "p", text }
    }

    #[test]
    fn a_page_splits_into_its_overview_and_sections() {
        let text = "# Keys {#keys}\n<!-- category: auth -->\n\nOverview.\n\n## Scopes {#scopes}\nA scope.\n```sh\n## not a heading\n```\n### Deeper\nStill scopes.\n";
        let sections = parse(&[page(text)]).unwrap();
        assert_eq!(sections.len(), 2);
        assert_eq!(
            (sections[0].id.as_str(), sections[0].title.as_str()),
            ("keys", "Keys")
        );
        assert_eq!(sections[0].body, "Overview.");
        assert_eq!(sections[1].category, "auth");
        assert!(sections[1].body.contains("## not a heading"));
        assert!(sections[1].body.ends_with("Still scopes."));
        assert_eq!(sections[1].path(), "/docs/guide/p#scopes");
    }

    #[test]
    fn malformed_pages_are_refused() {
        let cases = [
            ("Keys\n", CorpusError::MissingTitle { page: "p" }),
            ("# Keys\n", CorpusError::MissingTitle { page: "p" }),
            (
                "# K {#k}\ntext\n",
                CorpusError::MissingCategory { page: "p" },
            ),
            (
                "# K {#k}\n<!-- category: a -->\nx\n## S\ny\n",
                CorpusError::MissingId { page: "p", line: 4 },
            ),
            (
                "# K {#k}\n<!-- category: a -->\nx\n## S {#Bad}\ny\n",
                CorpusError::MissingId { page: "p", line: 4 },
            ),
            (
                "# K {#k}\n<!-- category: a -->\nx\n## S {#k}\ny\n",
                CorpusError::DuplicateId { id: "k".into() },
            ),
            (
                "# K {#k}\n<!-- category: a -->\nx\n## S {#s}\n\n",
                CorpusError::EmptySection { id: "s".into() },
            ),
        ];
        for (text, expected) in cases {
            assert_eq!(parse(&[page(text)]).unwrap_err(), expected, "{text}");
        }
    }

    #[test]
    fn the_embedded_manual_parses() {
        let sections = parse(PAGES).unwrap();
        assert!(sections.len() >= 60, "{} sections", sections.len());
        for page in PAGES {
            assert!(sections.iter().any(|s| s.page == page.slug));
        }
    }

    /// Every `docs/guide/*.md` is embedded, so a new page cannot be forgotten.
    #[test]
    fn every_page_file_is_listed() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/guide");
        for entry in std::fs::read_dir(dir).unwrap() {
            let name = entry.unwrap().file_name().into_string().unwrap();
            if let Some(slug) = name.strip_suffix(".md") {
                assert!(
                    PAGES.iter().any(|p| p.slug == slug),
                    "docs/guide/{name} is not in PAGES"
                );
            }
        }
    }
}
