//! The chat-completions call: one tool in, one sentence out.
//!
//! Answers are sorted by what the Summarizer should do next: a summary to
//! keep, an endpoint that is down for now (no connection, a timeout, 429,
//! 5xx: retry later with backoff), or a refusal of this one tool (any other
//! 4xx, or an answer without a usable sentence: skip it). The API key goes
//! in the `Authorization` header and nowhere else, errors included.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode, Uri};
use serde_json::{json, Value};
use warden_protocol::HttpClient;

/// What the model is told to do.
pub(crate) const SYSTEM_PROMPT: &str = "Summarise what this tool does in one sentence of at most 25 words.";

/// The longest summary kept, in characters.
const MAX_SUMMARY_CHARS: usize = 300;

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

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

/// A chat-completions endpoint.
pub(crate) struct ChatClient {
    client: HttpClient,
    uri: Uri,
    model: String,
    authorization: Option<HeaderValue>,
    timeout: Duration,
}

impl ChatClient {
    /// A client for `url`; `Err` says why the URL or key is unusable.
    pub(crate) fn new(url: &str, model: &str, api_key: Option<&str>, timeout: Duration) -> Result<ChatClient, String> {
        let uri: Uri = url.parse().map_err(|error| format!("`{url}` is not a valid URL: {error}"))?;
        let client = warden_protocol::http_client(uri.scheme_str() == Some("https"))?;
        let authorization = match api_key {
            None => None,
            Some(key) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {key}"))
                    .map_err(|_| "the API key is not a valid header value".to_string())?;
                value.set_sensitive(true);
                Some(value)
            }
        };
        Ok(ChatClient { client, uri, model: model.to_string(), authorization, timeout })
    }

    /// Asks for a one-sentence summary of a tool.
    pub(crate) async fn summarise(&self, name: &str, description: &str, input_schema: &Value) -> Outcome {
        let user = format!("Tool name: {name}\nDescription: {description}\nInput schema (JSON): {input_schema}");
        let body = json!({
            "model": self.model,
            "messages": [
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": user},
            ],
        });
        let mut request = Request::builder()
            .method(Method::POST)
            .uri(self.uri.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body.to_string())))
            .expect("a request from a parsed URI builds");
        if let Some(authorization) = &self.authorization {
            request.headers_mut().insert(AUTHORIZATION, authorization.clone());
        }
        match tokio::time::timeout(self.timeout, self.exchange(request)).await {
            Ok(outcome) => outcome,
            Err(_) => Outcome::Unreachable(format!("no answer within {:?}", self.timeout)),
        }
    }

    async fn exchange(&self, request: Request<Full<Bytes>>) -> Outcome {
        let response = match self.client.request(request).await {
            Ok(response) => response,
            Err(error) => return Outcome::Unreachable(describe(&error)),
        };
        let status = response.status();
        let body = match Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) => return Outcome::Unreachable(format!("the answer could not be read: {error}")),
        };
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Outcome::Unreachable(format!("HTTP {status}"));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Outcome::Rejected(format!("HTTP {status}: {}", clean(&text, 200)));
        }
        let content = serde_json::from_slice::<Value>(&body).ok().and_then(|answer| {
            answer.pointer("/choices/0/message/content").and_then(Value::as_str).map(str::to_string)
        });
        match content.map(|content| first_line(&content)) {
            Some(summary) if !summary.is_empty() => Outcome::Summary(summary),
            _ => Outcome::Rejected("the answer has no `choices[0].message.content` text".into()),
        }
    }
}

/// The first non-empty line of `text`, whitespace collapsed, at most
/// [`MAX_SUMMARY_CHARS`] characters.
pub(crate) fn first_line(text: &str) -> String {
    let line = text.lines().map(str::trim).find(|line| !line.is_empty()).unwrap_or_default();
    clean(line, MAX_SUMMARY_CHARS)
}

fn clean(text: &str, max: usize) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text,
    }
}

/// The error and its causes, innermost last ("client error (Connect):
/// tcp connect error: Connection refused").
fn describe(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}
