//! `[metrics] listen`: a listener for metrics and health checks alone,
//! for a daemon without a front, or to keep scrapes off the front's port.

use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::header::{HeaderValue, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use tokio::net::TcpListener;

use super::{Observe, Page};
use crate::http_server::Body;

/// Serves `listener` until `stop` resolves.
pub async fn serve(listener: TcpListener, observe: Arc<Observe>, stop: impl std::future::Future<Output = ()>) {
    let handler: crate::http_server::Handler = Arc::new(move |request| {
        let page = observe.page(&request).unwrap_or_else(|| {
            Page::text(StatusCode::NOT_FOUND, "this listener serves /metrics, /healthz and /readyz")
        });
        Box::pin(std::future::ready(response(page)))
    });
    crate::http_server::serve(listener, stop, "the metrics listener", handler).await;
}

/// A page as an HTTP response.
pub(crate) fn response(page: Page) -> Response<Body> {
    let mut response = Response::new(Full::new(Bytes::from(page.body)).boxed());
    *response.status_mut() = page.status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
    if page.challenge {
        response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"warden metrics\""));
    }
    response
}
