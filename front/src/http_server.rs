//! Accepting HTTP/1 connections for Warden's own listeners: the MCP
//! front's and `[metrics] listen`.
//!
//! Both need the same guards against a client that only connects: at most
//! [`MAX_CONNECTIONS`] at once, the longest-idle one closed to make room
//! for a newcomer (`connections.rs`: a flood of silent connections cannot
//! lock clients out), and request headers within [`HEADER_READ_TIMEOUT`]
//! (slow-loris; hyper also applies it to a kept-alive connection waiting
//! for its next request). Each listener gives its handler; the loop ends
//! when `stop` resolves (connections already open finish on their own
//! tasks).

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::{Request, Response};
use tokio::net::TcpListener;

mod connections;

use connections::{Connections, Held};

/// The most connections one listener holds open.
pub(crate) const MAX_CONNECTIONS: usize = 1024;
/// How long a client may take to send a request's headers.
pub(crate) const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// Every body Warden's listeners send.
pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// What answers one request.
pub(crate) type Handler =
    Arc<dyn Fn(Request<Incoming>) -> Pin<Box<dyn Future<Output = Response<Body>> + Send>> + Send + Sync>;

/// Serves `listener` with `handler` until `stop` resolves; `what` names the
/// listener in the logs.
pub(crate) async fn serve(listener: TcpListener, stop: impl Future<Output = ()>, what: &'static str, handler: Handler) {
    let connections = Connections::new(MAX_CONNECTIONS);
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
        let Some(place) = connections.admit() else {
            tracing::warn!("{what} holds {MAX_CONNECTIONS} connections, every one answering a request; refused one");
            continue;
        };
        let place = Arc::new(place);
        let handler = Arc::clone(&handler);
        let serving = Arc::clone(&place);
        let task = tokio::spawn(async move {
            let _ = stream.set_nodelay(true);
            let service = hyper::service::service_fn(move |request| {
                let busy = serving.busy();
                let answer = handler(request);
                async move { Ok::<_, Infallible>(answer.await.map(|body| Held::new(body, busy))) }
            });
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(hyper_util::rt::TokioIo::new(stream), service);
            if let Err(error) = connection.await {
                tracing::debug!(%error, "a connection to {what} ended with an error");
            }
        });
        place.serving(task.abort_handle());
    }
}
