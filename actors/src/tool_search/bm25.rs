//! BM25 over tool definitions, one part per server so that a server whose
//! tools change is indexed again alone.
//!
//! A tool is one document whose fields weigh differently: a word of its
//! name counts most, then its title, its parameters' names, its
//! description and its server's name, its parameters' descriptions least
//! (`WEIGHTS`). Term frequencies are weighted sums; a document's length is
//! the sum of its weights, and BM25's usual constants apply. Each posting
//! keeps the fields its word came from, for the one-line reason a result
//! gives. Document frequencies are kept for the whole index and adjusted
//! when a server's part is replaced, so an update costs that server's
//! tools, not everybody's.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::words::Words;
use crate::registry::ToolEntry;

const K1: f64 = 1.2;
const B: f64 = 0.3;

/// A field of a tool definition: its bit in a posting, its weight, and
/// what a reason calls it.
#[derive(Clone, Copy)]
struct Field {
    bit: u8,
    weight: f32,
    said: &'static str,
}

const NAME: Field = Field { bit: 1, weight: 3.0, said: "name" };
const TITLE: Field = Field { bit: 2, weight: 2.0, said: "title" };
const PARAMETER: Field = Field { bit: 4, weight: 1.5, said: "parameters" };
const DESCRIPTION: Field = Field { bit: 8, weight: 1.0, said: "description" };
const SERVER: Field = Field { bit: 16, weight: 1.0, said: "server's name" };
const PARAMETER_TEXT: Field = Field { bit: 32, weight: 0.5, said: "parameters' descriptions" };
const FIELDS: [Field; 6] = [NAME, TITLE, PARAMETER, DESCRIPTION, SERVER, PARAMETER_TEXT];

/// One tool found: the tool, its score, and which of the query's words
/// matched in which field.
pub(crate) struct Hit {
    pub(crate) entry: Arc<ToolEntry>,
    pub(crate) score: f64,
    pub(crate) reason: String,
}

/// The index of every tool.
#[derive(Default)]
pub(crate) struct Index {
    words: Words,
    parts: HashMap<String, Part>,
    /// In how many tools each word appears.
    df: HashMap<String, u32>,
    tools: usize,
    total_length: f64,
}

/// One server's tools.
struct Part {
    /// What was indexed (a change is told by pointer), in tool order.
    entries: Vec<Arc<ToolEntry>>,
    /// Each tool's length: the sum of its words' weights.
    lengths: Vec<f32>,
    /// word → (tool, weighted frequency, fields).
    postings: HashMap<String, Vec<(u32, f32, u8)>>,
}

impl Index {
    /// Makes the index match `tools` (every tool, by server), indexing
    /// again only the servers whose tools changed.
    pub(crate) fn sync(&mut self, by_server: HashMap<&str, Vec<Arc<ToolEntry>>>) {
        let gone: Vec<String> =
            self.parts.keys().filter(|server| !by_server.contains_key(server.as_str())).cloned().collect();
        for server in gone {
            self.remove(&server);
        }
        for (server, entries) in by_server {
            let same = self.parts.get(server).is_some_and(|part| {
                part.entries.len() == entries.len()
                    && part.entries.iter().zip(&entries).all(|(old, new)| Arc::ptr_eq(old, new))
            });
            if same {
                continue;
            }
            self.remove(server);
            let part = self.part_of(entries);
            for word in part.postings.keys() {
                *self.df.entry(word.clone()).or_default() += part.postings[word].len() as u32;
            }
            self.tools += part.lengths.len();
            self.total_length += part.lengths.iter().copied().map(f64::from).sum::<f64>();
            self.parts.insert(server.to_string(), part);
        }
    }

    fn remove(&mut self, server: &str) {
        let Some(part) = self.parts.remove(server) else { return };
        for (word, postings) in &part.postings {
            if let Some(count) = self.df.get_mut(word) {
                *count = count.saturating_sub(postings.len() as u32);
                if *count == 0 {
                    self.df.remove(word);
                }
            }
        }
        self.tools -= part.lengths.len();
        self.total_length -= part.lengths.iter().copied().map(f64::from).sum::<f64>();
    }

    fn part_of(&self, entries: Vec<Arc<ToolEntry>>) -> Part {
        let mut lengths = Vec::with_capacity(entries.len());
        let mut postings: HashMap<String, Vec<(u32, f32, u8)>> = HashMap::new();
        for (at, entry) in entries.iter().enumerate() {
            let mut terms: HashMap<String, (f32, u8)> = HashMap::new();
            let mut length = 0.0;
            for (field, text) in texts_of(entry) {
                for word in self.words.of(text) {
                    let term = terms.entry(word).or_default();
                    term.0 += field.weight;
                    term.1 |= field.bit;
                    length += field.weight;
                }
            }
            for (word, (frequency, fields)) in terms {
                postings.entry(word).or_default().push((at as u32, frequency, fields));
            }
            lengths.push(length);
        }
        Part { entries, lengths, postings }
    }

    /// The `limit` best tools for `query` among those `allowed` lets
    /// through, best first; none when no word of the query is known.
    pub(crate) fn search(&self, query: &str, allowed: &dyn Fn(&str) -> bool, limit: usize) -> Vec<Hit> {
        // Each word once, with how the query spelled it (for the reason)
        // and its weight: the query's own words, then the related ones.
        let mut asked: Vec<(String, String)> = Vec::new();
        let mut weights: Vec<f64> = Vec::new();
        let mut related: Vec<(String, String)> = Vec::new();
        for shown in query.split_whitespace() {
            let spelled = shown.trim_matches(|c: char| !c.is_alphanumeric()).to_lowercase();
            for word in self.words.of(shown) {
                for other in self.words.related(&word) {
                    related.push((other.clone(), format!("{other} (for {spelled})")));
                }
                if !asked.iter().any(|(known, _)| *known == word) {
                    asked.push((word, spelled.clone()));
                    weights.push(1.0);
                }
            }
        }
        for (word, shown) in related {
            if !asked.iter().any(|(known, _)| *known == word) {
                asked.push((word, shown));
                weights.push(super::words::RELATED_WEIGHT);
            }
        }
        if self.tools == 0 || asked.is_empty() {
            return Vec::new();
        }
        let average = self.total_length / self.tools as f64;
        let n = self.tools as f64;
        let idf: Vec<f64> = asked
            .iter()
            .map(|(word, _)| {
                let df = f64::from(*self.df.get(word).unwrap_or(&1));
                (1.0 + (n - df + 0.5) / (df + 0.5)).ln()
            })
            .collect();
        // Scores only: names and reasons are made for the few kept.
        let parts: Vec<&Part> = self.parts.values().collect();
        let mut candidates: Vec<(f64, usize, u32)> = Vec::new();
        let mut scores: Vec<f64> = Vec::new();
        for (at_part, part) in parts.iter().enumerate() {
            scores.clear();
            scores.resize(part.lengths.len(), 0.0);
            for (at, (word, _)) in asked.iter().enumerate() {
                let Some(postings) = part.postings.get(word) else { continue };
                for &(doc, frequency, _) in postings {
                    let length = f64::from(part.lengths[doc as usize]);
                    let tf = f64::from(frequency);
                    scores[doc as usize] +=
                        weights[at] * idf[at] * tf * (K1 + 1.0) / (tf + K1 * (1.0 - B + B * length / average));
                }
            }
            for (doc, score) in scores.iter().enumerate() {
                if *score > 0.0 && allowed(&part.entries[doc].name) {
                    candidates.push((*score, at_part, doc as u32));
                }
            }
        }
        let order = |a: &(f64, usize, u32), b: &(f64, usize, u32)| {
            let name = |at: &(f64, usize, u32)| &parts[at.1].entries[at.2 as usize].name;
            b.0.total_cmp(&a.0).then_with(|| name(a).cmp(name(b)))
        };
        if candidates.len() > limit {
            candidates.select_nth_unstable_by(limit, order);
            candidates.truncate(limit);
        }
        candidates.sort_by(order);
        candidates
            .into_iter()
            .map(|(score, at_part, doc)| {
                let part = parts[at_part];
                let matched: Vec<(usize, u8)> = asked
                    .iter()
                    .enumerate()
                    .filter_map(|(at, (word, _))| {
                        let postings = part.postings.get(word)?;
                        let found = postings.binary_search_by_key(&doc, |posting| posting.0).ok()?;
                        Some((at, postings[found].2))
                    })
                    .collect();
                Hit { entry: part.entries[doc as usize].clone(), score, reason: reason(&asked, &matched) }
            })
            .collect()
    }
}

/// The texts of a tool's fields.
fn texts_of(entry: &ToolEntry) -> Vec<(Field, &str)> {
    let tool = &entry.tool;
    let mut texts = vec![(NAME, tool.name.as_str()), (SERVER, entry.server.as_str())];
    if let Some(title) = &tool.title {
        texts.push((TITLE, title));
    }
    if let Some(description) = &tool.description {
        texts.push((DESCRIPTION, description));
    }
    if let Some(Value::Object(properties)) = tool.input_schema.get("properties") {
        for (name, property) in properties {
            texts.push((PARAMETER, name));
            if let Some(text) = property.get("description").and_then(Value::as_str) {
                texts.push((PARAMETER_TEXT, text));
            }
        }
    }
    texts
}

/// "matched "create", "issue" in its name; "repository" in its description".
fn reason(asked: &[(String, String)], matched: &[(usize, u8)]) -> String {
    let mut parts = Vec::new();
    for field in FIELDS {
        let words: Vec<String> = matched
            .iter()
            .filter(|(_, fields)| fields & field.bit != 0)
            .map(|(at, _)| format!("\"{}\"", asked[*at].1))
            .collect();
        if !words.is_empty() {
            parts.push(format!("{} in its {}", words.join(", "), field.said));
        }
    }
    format!("matched {}", parts.join("; "))
}
