//! `[metrics] listen`: a listener for metrics and health checks alone,
//! for a daemon without a front, or to keep scrapes off the front's port.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::header::{HeaderValue, CONTENT_TYPE, WWW_AUTHENTICATE};
use hyper::{Response, StatusCode};
use tokio::net::TcpListener;

use super::{Observe, Page};

/// How long a client may take to send its request's headers.
const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `listener` until `stop` resolves.
pub(crate) async fn serve(listener: TcpListener, observe: Arc<Observe>, stop: impl std::future::Future<Output = ()>) {
    tokio::pin!(stop);
    loop {
        let accepted = tokio::select! {
            () = &mut stop => return,
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let observe = Arc::clone(&observe);
        tokio::spawn(async move {
            let service = hyper::service::service_fn(move |request| {
                let page = observe.page(&request).unwrap_or_else(|| {
                    Page::text(StatusCode::NOT_FOUND, "this listener serves /metrics, /healthz and /readyz")
                });
                async move { Ok::<_, Infallible>(response(page)) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a metrics connection ended with an error");
            }
        });
    }
}

/// A page as an HTTP response.
pub(crate) fn response(page: Page) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(page.body)));
    *response.status_mut() = page.status;
    response.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(page.content_type));
    if page.challenge {
        response.headers_mut().insert(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"warden metrics\""));
    }
    response
}
