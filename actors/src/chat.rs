//! One OpenAI-compatible chat-completions endpoint, shared by whatever
//! asks a model: tool summaries (`[summary]`) and servers' sampling
//! requests (`[sampling]`).
//!
//! Answers are sorted by what the asker should do next: an answer to use,
//! an endpoint that is down for now (no connection, a timeout, 429, 5xx:
//! the same request may work later), or a refusal of this request (any
//! other 4xx). The API key goes in the `Authorization` header and nowhere
//! else, errors included.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE};
use hyper::{Method, Request, StatusCode, Uri};
use serde_json::Value;
use warden_protocol::HttpClient;

/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 4 << 20;

/// How one request went.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer {
    /// The endpoint's JSON answer.
    Json(Value),
    /// The endpoint could not answer now; the same request may work later.
    Unreachable(String),
    /// The endpoint refused this request (the status and its words).
    Rejected(String),
}

/// A chat-completions endpoint.
pub(crate) struct ChatClient {
    client: HttpClient,
    uri: Uri,
    authorization: Option<HeaderValue>,
    timeout: Duration,
}

impl ChatClient {
    /// A client for `url`; `Err` says why the URL or key is unusable.
    pub(crate) fn new(url: &str, api_key: Option<&str>, timeout: Duration) -> Result<ChatClient, String> {
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
        Ok(ChatClient { client, uri, authorization, timeout })
    }

    /// POSTs one chat-completions request body.
    pub(crate) async fn complete(&self, body: &Value) -> Answer {
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
            Ok(answer) => answer,
            Err(_) => Answer::Unreachable(format!("no answer within {:?}", self.timeout)),
        }
    }

    async fn exchange(&self, request: Request<Full<Bytes>>) -> Answer {
        let response = match self.client.request(request).await {
            Ok(response) => response,
            Err(error) => return Answer::Unreachable(describe(&error)),
        };
        let status = response.status();
        let body = match Limited::new(response.into_body(), MAX_ANSWER_BYTES).collect().await {
            Ok(body) => body.to_bytes(),
            Err(error) => return Answer::Unreachable(format!("the answer could not be read: {error}")),
        };
        if status == StatusCode::TOO_MANY_REQUESTS || status.is_server_error() {
            return Answer::Unreachable(format!("HTTP {status}"));
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Answer::Rejected(format!("HTTP {status}: {}", clean(&text, 200)));
        }
        match serde_json::from_slice::<Value>(&body) {
            Ok(answer) => Answer::Json(answer),
            Err(error) => Answer::Rejected(format!("the answer is not JSON: {error}")),
        }
    }
}

/// `text` with whitespace collapsed, cut at `max` characters.
pub(crate) fn clean(text: &str, max: usize) -> String {
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
