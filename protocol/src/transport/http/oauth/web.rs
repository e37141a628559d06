//! The OAuth side's HTTP: GET a metadata document, POST a form or a JSON
//! body, and read a JSON answer — bounded in size and time, never
//! following a redirect, and with errors that name the URL and what was
//! wrong with what came back.
//!
//! Redirects are not followed on purpose: metadata and token endpoints are
//! named by their documents, and a 3xx to somewhere else is either a
//! misconfiguration or an attempt to send Warden's client secret or code
//! verifier to another host; either way the person should see it.

use std::path::Path;
use std::time::Duration;

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full, Limited};
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use hyper::{Method, StatusCode};
use serde_json::Value;
use url::Url;

use crate::transport::{oauth_connector, HttpClient};

/// The largest document or answer read.
const MAX_BODY: usize = 1 << 20;
/// How long one request may take, answer included.
const TIMEOUT: Duration = Duration::from_secs(30);

/// An HTTP client for the OAuth endpoints.
#[derive(Clone)]
pub(crate) struct Web {
    client: HttpClient,
}

/// What a POST sends.
pub(crate) enum Body<'a> {
    /// `application/x-www-form-urlencoded`.
    Form(&'a [(String, String)]),
    /// `application/json`.
    Json(&'a Value),
}

/// A JSON answer and its status.
pub(crate) struct Answer {
    pub(crate) status: StatusCode,
    pub(crate) json: Value,
}

impl Web {
    /// A client trusting the system's roots plus `ca_cert`.
    pub(crate) fn new(ca_cert: Option<&Path>) -> Result<Web, String> {
        Ok(Web { client: oauth_connector(ca_cert)? })
    }

    /// GETs a JSON document; `Ok(None)` when the server has none there (a
    /// 4xx), so discovery can try the next place.
    pub(crate) async fn get_json(&self, url: &Url, what: &str) -> Result<Option<Value>, String> {
        let request = hyper::Request::builder()
            .method(Method::GET)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .body(Full::new(Bytes::new()))
            .map_err(|error| format!("{what} URL {url} is not usable: {error}"))?;
        let (status, location, body) = self.send(request, url, what).await?;
        if status.is_client_error() {
            return Ok(None);
        }
        check_status(status, location, &body, url, what)?;
        json_of(&body, url, what).map(Some)
    }

    /// POSTs `body` (with HTTP Basic credentials when given) and reads the
    /// JSON answer, whatever its status: token endpoints explain their
    /// refusals in JSON with a 400.
    pub(crate) async fn post(
        &self,
        url: &Url,
        body: Body<'_>,
        basic: Option<(&str, &str)>,
        what: &str,
    ) -> Result<Answer, String> {
        let (content_type, bytes) = match body {
            Body::Form(pairs) => {
                let encoded = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(pairs).finish();
                ("application/x-www-form-urlencoded", Bytes::from(encoded))
            }
            Body::Json(value) => ("application/json", Bytes::from(value.to_string())),
        };
        let mut builder = hyper::Request::builder()
            .method(Method::POST)
            .uri(url.as_str())
            .header(ACCEPT, "application/json")
            .header(CONTENT_TYPE, content_type);
        if let Some((id, secret)) = basic {
            builder = builder.header(AUTHORIZATION, basic_credentials(id, secret));
        }
        let request =
            builder.body(Full::new(bytes)).map_err(|error| format!("{what} URL {url} is not usable: {error}"))?;
        let (status, location, body) = self.send(request, url, what).await?;
        if status.is_redirection() || status.is_server_error() {
            check_status(status, location, &body, url, what)?;
        }
        // A revocation endpoint answers 200 and nothing (RFC 7009 §2.2).
        let json = if body.iter().all(u8::is_ascii_whitespace) { Value::Null } else { json_of(&body, url, what)? };
        Ok(Answer { status, json })
    }

    /// Sends `request` and returns the response with its body unread.
    pub(crate) async fn raw(
        &self,
        request: hyper::Request<Full<Bytes>>,
    ) -> Result<hyper::Response<hyper::body::Incoming>, String> {
        tokio::time::timeout(TIMEOUT, self.client.request(request))
            .await
            .map_err(|_| format!("no answer within {} s", TIMEOUT.as_secs()))?
            .map_err(|error| crate::transport::error_chain(&error))
    }

    async fn send(
        &self,
        request: hyper::Request<Full<Bytes>>,
        url: &Url,
        what: &str,
    ) -> Result<(StatusCode, Option<String>, Bytes), String> {
        let exchange = async {
            let response = self.client.request(request).await.map_err(|error| {
                format!("could not reach the {what} at {url}: {}", crate::transport::error_chain(&error))
            })?;
            let status = response.status();
            let location = response.headers().get(LOCATION).and_then(|v| v.to_str().ok()).map(str::to_string);
            let body = Limited::new(response.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|error| format!("reading the {what} from {url} failed: {error}"))?
                .to_bytes();
            Ok((status, location, body))
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| format!("the {what} at {url} did not answer within {} s", TIMEOUT.as_secs()))?
    }
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
fn basic_credentials(id: &str, secret: &str) -> String {
    let encode = |text: &str| url::form_urlencoded::byte_serialize(text.as_bytes()).collect::<String>();
    format!("Basic {}", STANDARD.encode(format!("{}:{}", encode(id), encode(secret))))
}

fn check_status(
    status: StatusCode,
    location: Option<String>,
    body: &[u8],
    url: &Url,
    what: &str,
) -> Result<(), String> {
    if status.is_redirection() {
        let to = location.unwrap_or_else(|| "(no Location)".into());
        return Err(format!(
            "the {what} at {url} redirected (HTTP {}) to {to}; Warden does not follow redirects on OAuth endpoints — fix the URL the server advertises",
            status.as_u16()
        ));
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(body);
        return Err(format!(
            "the {what} at {url} answered HTTP {}: {}",
            status.as_u16(),
            crate::transport::excerpt(text.trim(), 200)
        ));
    }
    Ok(())
}

fn json_of(body: &[u8], url: &Url, what: &str) -> Result<Value, String> {
    serde_json::from_slice(body).map_err(|error| {
        let text = String::from_utf8_lossy(body);
        format!("the {what} at {url} is not JSON ({error}): {}", crate::transport::excerpt(text.trim(), 120))
    })
}
