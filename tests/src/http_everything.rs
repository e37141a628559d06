//! server-everything serving Streamable HTTP on loopback, for the HTTP
//! suites and the HTTP benchmark: the pinned npm package (see
//! [`crate::real_servers`]) started in its `streamableHttp` mode on a port
//! the kernel picks (see [`crate::listening`] for why not a "free" one),
//! killed when dropped so a failing test leaves nothing running. Its `sse`
//! mode serves the legacy HTTP+SSE transport the same way.

use std::process::Stdio;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use crate::listening::listening_port;
use crate::real_servers::EVERYTHING;

/// A running server-everything over HTTP.
pub struct HttpEverything {
    child: Child,
    /// Its MCP endpoint, `http://127.0.0.1:<port>/mcp` (`…/sse` in `sse`
    /// mode).
    pub url: String,
}

impl HttpEverything {
    /// Starts the server on a port of the kernel's choosing and waits until
    /// it listens.
    pub async fn start() -> HttpEverything {
        HttpEverything::start_on(0).await
    }

    /// Starts the server on `port` (0: any) and waits until it listens. A
    /// given port is for a server started again where the last one was.
    pub async fn start_on(port: u16) -> HttpEverything {
        HttpEverything::start_mode(port, "streamableHttp", "listening on port", "/mcp").await
    }

    /// Starts the server in its legacy HTTP+SSE mode on a port of the
    /// kernel's choosing: GET `/sse` opens the stream, which names
    /// `/message?sessionId=…`.
    pub async fn start_sse() -> HttpEverything {
        HttpEverything::start_mode(0, "sse", "Server is running on port", "/sse").await
    }

    /// Starts `node <script> <mode>` on `port`, waits for `ready` on its
    /// stderr, and serves at `path`. It says the port it was given, so for
    /// 0 the one it got is read from `/proc`.
    async fn start_mode(port: u16, mode: &str, ready: &str, path: &str) -> HttpEverything {
        // `node <script> stdio`: the same script, another transport.
        let (node, args) = EVERYTHING.command(&[]);
        let mut child = Command::new(node)
            .arg(&args[0])
            .arg(mode)
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        // It says so on stderr once it listens; the rest of stderr is its
        // request log, drained so the pipe never fills.
        let mut lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
        let listening = async {
            while let Some(line) = lines.next_line().await.expect("server-everything's stderr reads") {
                if line.contains(ready) {
                    return;
                }
            }
            panic!("server-everything exited before listening");
        };
        tokio::time::timeout(Duration::from_secs(30), listening).await.expect("server-everything listens in time");
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        let port = match port {
            0 => {
                listening_port(child.id().expect("server-everything runs"), "server-everything", Duration::from_secs(5))
            }
            given => given,
        };
        HttpEverything { child, url: format!("http://127.0.0.1:{port}{path}") }
    }

    /// Kills the server and waits for it.
    pub async fn stop(mut self) {
        if let Err(error) = self.child.kill().await {
            eprintln!("could not kill server-everything: {error}");
        }
    }
}

/// A loopback port nothing listens on right now: for a client that must
/// find no server there. Never hand it to a server (see
/// [`crate::listening`]).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}
