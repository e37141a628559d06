//! What kind of message a POST carries, read from its JSON before it is
//! sent: a request someone waits for (and its trace context, sent as a
//! header too), or a notification or response that expects 202.

use hyper::header::HeaderValue;
use serde::Deserialize;

use crate::jsonrpc::RequestId;

/// What was POSTed, as far as the transport cares.
#[derive(Debug)]
pub(super) enum Kind {
    /// A request: someone waits for the answer with this id. Its
    /// `_meta.traceparent` is also sent as the W3C `traceparent` header,
    /// for HTTP servers and proxies that trace by headers.
    Request { id: RequestId, initialize: bool, traceparent: Option<HeaderValue> },
    /// A notification or a response: expects 202. `initialized` marks
    /// `notifications/initialized`, after which the GET stream is opened.
    Other { initialized: bool },
}

impl Kind {
    pub(super) fn of(json: &[u8]) -> Kind {
        #[derive(Deserialize)]
        struct Envelope<'a> {
            id: Option<RequestId>,
            #[serde(borrow)]
            method: Option<&'a str>,
            #[serde(default)]
            params: Option<Params>,
        }
        #[derive(Deserialize)]
        struct Params {
            #[serde(rename = "_meta", default)]
            meta: Option<Meta>,
        }
        #[derive(Deserialize)]
        struct Meta {
            #[serde(default)]
            traceparent: Option<String>,
        }
        match serde_json::from_slice::<Envelope<'_>>(json) {
            Ok(Envelope { id: Some(id), method: Some(method), params }) => {
                let traceparent = params.and_then(|params| params.meta?.traceparent);
                let traceparent = traceparent.and_then(|value| HeaderValue::from_str(&value).ok());
                Kind::Request { id, initialize: method == "initialize", traceparent }
            }
            Ok(Envelope { id: None, method, .. }) => {
                Kind::Other { initialized: method == Some("notifications/initialized") }
            }
            _ => Kind::Other { initialized: false },
        }
    }
}
