//! BM25 over stemmed terms. A hundred-odd sections make a small inverted
//! index in memory: a search is a few hash lookups, far under a millisecond,
//! with no search engine to build or run (see docs/architecture.md).

use crate::corpus::Section;
use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;

/// The longest query `GET /v1/docs` accepts, in characters (K-05).
pub const MAX_QUERY_CHARS: usize = 500;

/// BM25's usual constants: term-frequency saturation and length weight.
const K1: f32 = 1.2;
const B: f32 = 0.75;
/// A title term counts as this many occurrences in the body.
const TITLE_WEIGHT: f32 = 3.0;

/// Words too common to say anything about a section.
const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "if", "in", "is", "it", "its", "my", "of", "on", "or", "so", "that", "the", "this", "to",
    "what", "when", "which", "with", "you", "your",
];

#[derive(Debug)]
pub(crate) struct Index {
    /// Term -> (section position, weighted term frequency).
    postings: HashMap<String, Vec<(usize, f32)>>,
    /// Weighted length of each section.
    lengths: Vec<f32>,
    average_length: f32,
}

impl Index {
    pub(crate) fn build(sections: &[Section]) -> Index {
        let mut postings: HashMap<String, Vec<(usize, f32)>> = HashMap::new();
        let mut lengths = Vec::with_capacity(sections.len());
        for (i, section) in sections.iter().enumerate() {
            let mut counts: HashMap<String, f32> = HashMap::new();
            for term in terms(&section.title) {
                *counts.entry(term).or_default() += TITLE_WEIGHT;
            }
            for term in terms(&section.body) {
                *counts.entry(term).or_default() += 1.0;
            }
            lengths.push(counts.values().sum());
            for (term, count) in counts {
                postings.entry(term).or_default().push((i, count));
            }
        }
        let average_length = if lengths.is_empty() {
            1.0
        } else {
            lengths.iter().sum::<f32>() / lengths.len() as f32
        };
        Index {
            postings,
            lengths,
            average_length,
        }
    }

    /// Positions of the best `limit` sections for `query`.
    pub(crate) fn search(&self, query: &str, limit: usize) -> Vec<usize> {
        let mut query_terms = terms(query);
        query_terms.sort_unstable();
        query_terms.dedup();
        let n = self.lengths.len() as f32;
        let mut scores: HashMap<usize, f32> = HashMap::new();
        for term in &query_terms {
            let Some(postings) = self.postings.get(term) else {
                continue;
            };
            let df = postings.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(section, tf) in postings {
                let norm = 1.0 - B + B * self.lengths[section] / self.average_length;
                *scores.entry(section).or_default() += idf * tf * (K1 + 1.0) / (tf + K1 * norm);
            }
        }
        let mut ranked: Vec<(usize, f32)> = scores.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        ranked.into_iter().take(limit).map(|(i, _)| i).collect()
    }
}

/// The index terms of `text`: lower-case words, stemmed (Snowball English),
/// without stop words; a joined word such as `invalid_api_key` or
/// `x-api-key` is also kept whole, so an error code or header finds itself.
pub fn terms(text: &str) -> Vec<String> {
    thread_local! {
        static STEMMER: Stemmer = Stemmer::create(Algorithm::English);
    }
    let mut out = Vec::new();
    STEMMER.with(|stemmer| {
        let words = text.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'));
        for word in words {
            let word = word.trim_matches(|c| c == '_' || c == '-').to_lowercase();
            if word.is_empty() {
                continue;
            }
            let mut parts = word.split(['_', '-']).filter(|p| !p.is_empty()).peekable();
            let first = parts.next();
            let joined = parts.peek().is_some();
            for part in first.into_iter().chain(parts) {
                if !STOP_WORDS.contains(&part) {
                    out.push(stemmer.stem(part).into_owned());
                }
            }
            if joined {
                out.push(word);
            }
        }
    });
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Library;
    use crate::corpus::Page;

    #[test]
    fn terms_are_stemmed_lowercase_and_keep_joined_words() {
        assert_eq!(terms("Models"), terms("model"));
        assert_eq!(terms("Streaming streams"), vec!["stream", "stream"]);
        assert_eq!(
            terms("invalid_api_key"),
            vec!["invalid", "api", "key", "invalid_api_key"]
        );
        assert_eq!(
            terms("the X-API-Key header"),
            vec!["x", "api", "key", "x-api-key", "header"]
        );
        assert!(terms("the of and  --  __").is_empty());
        assert_eq!(terms("Größe 429"), vec!["größe", "429"]);
    }

    fn library() -> Library {
        Library::from_pages(&[Page {
            slug: "p",
            text: "# Intro {#intro}\n<!-- category: c -->\nA gateway for models.\n\n\
                   ## Streaming {#streaming}\nServer-sent events stream tokens.\n\n\
                   ## Errors {#errors}\nA 401 invalid_api_key error means the key is wrong. Errors errors errors.\n\n\
                   ## Keys {#keys}\nEach key has scopes. An error here is rare.\n",
        }])
        .unwrap()
    }

    fn ids(library: &Library, query: &str, limit: usize) -> Vec<String> {
        library
            .search(query, limit)
            .into_iter()
            .map(|i| library.sections()[i].id.clone())
            .collect()
    }

    #[test]
    fn ranking_prefers_the_title_and_frequent_terms() {
        let lib = library();
        assert_eq!(ids(&lib, "model", 4), ["intro"]);
        assert_eq!(ids(&lib, "streamed", 4), ["streaming"]);
        assert_eq!(ids(&lib, "error", 4), ["errors", "keys"]);
        assert_eq!(ids(&lib, "error", 1), ["errors"]);
        assert_eq!(ids(&lib, "INVALID_API_KEY", 4), ["errors", "keys"]);
        assert!(ids(&lib, "xyzzy", 4).is_empty());
        assert!(ids(&lib, "the of", 4).is_empty());
        assert!(ids(&lib, "", 4).is_empty());
    }
}
