//! The words of a tool definition and of a query, made the same way on
//! both sides so that they meet: split at anything not a letter or digit
//! and at case changes (`create_issue`, `createIssue`, `CreateIssue` and
//! `create-issue` are all *create*, *issue*), lower-cased, the commonest
//! English words dropped (they match everything and rank nothing), and
//! each word stemmed (Snowball's English stemmer: *files* and *file*,
//! *committed* and *commit* meet).

use std::collections::HashMap;

use rust_stemmers::{Algorithm, Stemmer};

/// Words people use for a task beside the words tools are described in:
/// a query's word also looks for these, at [`RELATED_WEIGHT`]. Generic
/// words of files, memory, arithmetic and asking, not any one server's.
const RELATED: [(&str, &[&str]); 52] = [
    ("folder", &["directory"]),
    ("picture", &["image", "media"]),
    ("photo", &["image", "media"]),
    ("show", &["read", "list"]),
    ("display", &["read", "list"]),
    ("view", &["read"]),
    ("see", &["read"]),
    ("open", &["read"]),
    ("inside", &["read", "contents"]),
    ("says", &["read", "contents"]),
    ("look", &["read", "search"]),
    ("save", &["write", "create"]),
    ("store", &["write", "create"]),
    ("make", &["create"]),
    ("rename", &["move"]),
    ("relocate", &["move"]),
    ("big", &["size"]),
    ("large", &["size"]),
    ("permitted", &["allowed", "access"]),
    ("touch", &["access"]),
    ("hierarchy", &["tree", "recursive"]),
    ("change", &["edit", "modify"]),
    ("modify", &["edit"]),
    ("replace", &["edit"]),
    ("tweak", &["edit"]),
    ("remember", &["memory", "entity", "observation"]),
    ("memorize", &["memory", "entity"]),
    ("know", &["knowledge", "node"]),
    ("fact", &["observation"]),
    ("detail", &["observation"]),
    ("person", &["entity", "node"]),
    ("people", &["entity", "node"]),
    ("someone", &["entity"]),
    ("link", &["relation"]),
    ("connection", &["relation"]),
    ("connect", &["relation"]),
    ("relationship", &["relation"]),
    ("forget", &["delete", "memory"]),
    ("erase", &["delete"]),
    ("remove", &["delete"]),
    ("drop", &["delete"]),
    ("undo", &["delete"]),
    ("lookup", &["search"]),
    ("find", &["search"]),
    ("total", &["sum"]),
    ("calculate", &["sum"]),
    ("plus", &["sum"]),
    ("repeat", &["echo"]),
    ("compress", &["gzip"]),
    ("dump", &["read", "entire"]),
    ("whole", &["entire"]),
    ("fetch", &["read", "get"]),
];

/// How much a related word counts beside a word of the query itself.
pub(crate) const RELATED_WEIGHT: f64 = 0.6;

/// Words that carry no meaning for finding a tool.
const STOPWORDS: [&str; 48] = [
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "get", "give", "how", "i",
    "if", "in", "into", "is", "it", "its", "me", "my", "of", "on", "or", "our", "please", "should", "so", "some",
    "that", "the", "their", "them", "then", "this", "to", "use", "want", "was", "what", "when", "which", "with", "you",
];

/// Makes words of texts.
pub(crate) struct Words {
    stemmer: Stemmer,
    /// [`RELATED`], stemmed.
    related: HashMap<String, Vec<String>>,
}

impl Default for Words {
    fn default() -> Words {
        let mut words = Words { stemmer: Stemmer::create(Algorithm::English), related: HashMap::new() };
        let related = RELATED
            .iter()
            .flat_map(|(word, others)| {
                let others: Vec<String> = others.iter().flat_map(|other| words.of(other)).collect();
                words.of(word).into_iter().map(move |stem| (stem, others.clone()))
            })
            .collect();
        words.related = related;
        words
    }
}

impl Words {
    /// The words people also mean by `stem` (a word made by [`Words::of`]).
    pub(crate) fn related(&self, stem: &str) -> &[String] {
        self.related.get(stem).map_or(&[], Vec::as_slice)
    }

    /// The words of `text`, in order, repeats kept.
    pub(crate) fn of(&self, text: &str) -> Vec<String> {
        let mut words = Vec::new();
        for piece in pieces(text) {
            let lower = piece.to_lowercase();
            if lower.len() < 2 && !lower.chars().all(|c| c.is_ascii_digit()) || STOPWORDS.contains(&lower.as_str()) {
                continue;
            }
            words.push(self.stemmer.stem(&lower).into_owned());
        }
        words
    }
}

/// `text` cut at every character that is not a letter or digit, and
/// between a lower-case letter and an upper-case one (`readFile`), between
/// an upper-case run and a capitalised word (`HTTPRequest`: HTTP, Request),
/// and between letters and digits.
fn pieces(text: &str) -> Vec<&str> {
    let mut pieces = Vec::new();
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    let mut start: Option<usize> = None;
    for (i, &(at, c)) in chars.iter().enumerate() {
        if !c.is_alphanumeric() {
            if let Some(from) = start.take() {
                pieces.push(&text[from..at]);
            }
            continue;
        }
        let Some(from) = start else {
            start = Some(at);
            continue;
        };
        let previous = chars[i - 1].1;
        let next = chars.get(i + 1).map(|&(_, next)| next);
        let boundary = (previous.is_lowercase() && c.is_uppercase())
            || (previous.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
            || (previous.is_alphabetic() != c.is_alphabetic());
        if boundary {
            pieces.push(&text[from..at]);
            start = Some(at);
        }
    }
    if let Some(from) = start {
        pieces.push(&text[from..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::Words;

    #[test]
    fn names_split_the_same_whatever_their_style() {
        let words = Words::default();
        for name in ["create_issue", "createIssue", "CreateIssue", "create-issue", "CREATE ISSUE"] {
            assert_eq!(words.of(name), ["creat", "issu"], "{name}");
        }
        assert_eq!(words.of("HTTPRequest"), ["http", "request"]);
        assert_eq!(words.of("get_file_info2"), ["file", "info", "2"]);
    }

    #[test]
    fn queries_meet_definitions_through_stems_and_lose_filler() {
        let words = Words::default();
        assert_eq!(words.of("Show me the last commits"), ["show", "last", "commit"]);
        assert_eq!(words.of("git_log: Shows the commit logs"), ["git", "log", "show", "commit", "log"]);
        assert_eq!(words.of("read the files"), words.of("read_file"));
        assert_eq!(words.of("  … — "), Vec::<String>::new());
    }
}
