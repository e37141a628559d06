//! The summary request: one tool in, one sentence out (over the shared
//! chat-completions client, `chat.rs`).
//!
//! Answers are sorted by what the Summarizer should do next: a summary to
//! keep, an endpoint that is down for now (no connection, a timeout, 429,
//! 5xx: retry later with backoff), or a refusal of this one tool (any other
//! 4xx, or an answer without a usable sentence: skip it). The API key goes
//! in the `Authorization` header and nowhere else, errors included.

use serde_json::{json, Value};

use crate::chat::{clean, Answer, ChatClient};

/// What the model is told to do.
pub(crate) const SYSTEM_PROMPT: &str = "Summarise what this tool does in one sentence of at most 25 words.";

/// The longest summary kept, in characters.
const MAX_SUMMARY_CHARS: usize = 300;

/// How one request went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Outcome {
    /// The summary, on one line.
    Summary(String),
    /// The endpoint could not answer now; the same request may work later.
    Unreachable(String),
    /// The endpoint refused this tool, or answered nothing usable.
    Rejected(String),
}

/// Asks `chat` for a one-sentence summary of a tool.
pub(crate) async fn summarise(
    chat: &ChatClient,
    model: &str,
    name: &str,
    description: &str,
    input_schema: &Value,
) -> Outcome {
    let user = format!("Tool name: {name}\nDescription: {description}\nInput schema (JSON): {input_schema}");
    let body = json!({
        "model": model,
        "messages": [
            {"role": "system", "content": SYSTEM_PROMPT},
            {"role": "user", "content": user},
        ],
    });
    let answer = match chat.complete(&body).await {
        Answer::Json(answer) => answer,
        Answer::Unreachable(why) => return Outcome::Unreachable(why),
        Answer::Rejected(why) => return Outcome::Rejected(why),
    };
    let content = answer.pointer("/choices/0/message/content").and_then(Value::as_str).map(first_line);
    match content {
        Some(summary) if !summary.is_empty() => Outcome::Summary(summary),
        _ => Outcome::Rejected("the answer has no `choices[0].message.content` text".into()),
    }
}

/// The first non-empty line of `text`, whitespace collapsed, at most
/// [`MAX_SUMMARY_CHARS`] characters.
pub(crate) fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
    clean(line, MAX_SUMMARY_CHARS)
}
