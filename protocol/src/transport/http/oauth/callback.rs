//! The loopback listener the browser is sent back to (RFC 8252 §7.3): a
//! socket on `127.0.0.1`, a random port (or the port a saved registration
//! names), open only while one login waits for its redirect, and closed
//! as soon as the redirect arrived.
//!
//! It speaks just enough HTTP/1.1 for a browser's GET: one request per
//! connection, the answer a short page telling the person to go back to
//! their terminal. Anything but `GET /callback` (a favicon, a probe) is
//! answered 404 and ignored.

use std::collections::BTreeMap;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};

/// The path of the redirect URI.
pub(crate) const CALLBACK_PATH: &str = "/callback";

/// The longest request head read.
const MAX_HEAD: usize = 16 * 1024;

/// A bound listener.
pub(crate) struct Callback {
    listener: TcpListener,
    port: u16,
}

impl Callback {
    /// Binds `127.0.0.1:port` (0: any free port).
    pub(crate) async fn bind(port: u16) -> std::io::Result<Callback> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        Ok(Callback { listener, port })
    }

    /// The redirect URI this listener receives.
    pub(crate) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{CALLBACK_PATH}", self.port)
    }

    /// Waits for the browser's redirect and returns its query parameters;
    /// the listener closes when this returns (it is consumed).
    pub(crate) async fn wait(self) -> std::io::Result<BTreeMap<String, String>> {
        loop {
            let (stream, _) = self.listener.accept().await?;
            if let Some(params) = serve(stream).await {
                return Ok(params);
            }
        }
    }
}

/// Answers one connection; the query when it was the redirect.
async fn serve(mut stream: TcpStream) -> Option<BTreeMap<String, String>> {
    let mut head = Vec::new();
    let mut buffer = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
        match tokio::time::timeout(std::time::Duration::from_secs(10), stream.read(&mut buffer)).await {
            Ok(Ok(0)) | Ok(Err(_)) | Err(_) => break,
            Ok(Ok(n)) => head.extend_from_slice(&buffer[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let target = text.lines().next().and_then(|line| {
        let mut parts = line.split(' ');
        (parts.next() == Some("GET")).then(|| parts.next()).flatten()
    });
    let (path, query) = match target {
        Some(target) => target.split_once('?').unwrap_or((target, "")),
        None => ("", ""),
    };
    if path != CALLBACK_PATH {
        let _ = respond(&mut stream, "404 Not Found", "Not the Warden login callback.").await;
        return None;
    }
    let params: BTreeMap<String, String> = url::form_urlencoded::parse(query.as_bytes()).into_owned().collect();
    let page = if params.contains_key("error") {
        "Warden's login was refused. Your terminal says why; you can close this tab."
    } else {
        "Warden received the authorization. You can close this tab and go back to your terminal."
    };
    let _ = respond(&mut stream, "200 OK", page).await;
    Some(params)
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) -> std::io::Result<()> {
    let body = format!("<!doctype html><meta charset=utf-8><title>Warden</title><p>{text}</p>");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(response.as_bytes()).await?;
    stream.shutdown().await
}
