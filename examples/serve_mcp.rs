//! A host that embeds Warden and serves every configured server as one MCP
//! server, on a port it chose, with its own sign-in and its own approver.
//!
//! What it shows, in order:
//!
//! 1. Warden built with the host's approver: calls of low and medium risk
//!    are approved, high-risk ones refused (a real host would ask its
//!    user), each said on stderr.
//! 2. The MCP front (`warden-front`) over that handle, with the host's own
//!    authentication: one token from `SERVE_MCP_TOKEN`, every client that
//!    shows it signed in as "the host's user". The standard checks stay
//!    (this listener's `Host`, same-origin pages only, a protocol version
//!    Warden speaks). Another way of signing in (an SSO's tokens, a header a
//!    proxy sets) is another `Authenticate`.
//! 3. The front mounted as a service on the host's own listener and
//!    connection loop (hyper's HTTP/1); a router (axum's
//!    `route_service("/mcp", …)`) takes the same service. A host without a
//!    loop of its own calls `HttpFront::serve`, which also caps
//!    connections and times their headers.
//! 4. Ctrl-C: every session is ended (their calls cancelled upstream) and
//!    Warden shuts its servers down.
//!
//! ```text
//! SERVE_MCP_TOKEN=… serve-mcp CONFIG [PORT]
//! SERVE_MCP_TOKEN=$(openssl rand -hex 16) serve-mcp examples/warden.toml 8931
//! ```
//!
//! It prints `serving http://127.0.0.1:PORT/mcp` once it listens (port 0:
//! one the kernel picks). Any MCP client then connects there with
//! `Authorization: Bearer $SERVE_MCP_TOKEN`.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;

use hyper::header::{HeaderValue, AUTHORIZATION, WWW_AUTHENTICATE};
use hyper::http::request::Parts;
use hyper::StatusCode;
use warden_actors::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, Risk, Warden, WardenConfig};
use warden_front::http::checks::{Authenticate, Identity, Refusal};
use warden_front::http::HttpFront;
use warden_front::Front;

/// The host's sign-in: one shared token.
struct HostToken(String);

impl Authenticate for HostToken {
    fn authenticate(&self, request: &Parts) -> Result<Identity, Refusal> {
        let shown = request.headers.get(AUTHORIZATION).and_then(|value| value.to_str().ok());
        match shown.and_then(|value| value.strip_prefix("Bearer ")) {
            // Compared in constant time: the time taken says nothing of the token.
            Some(token) if warden_front::secret::same(token, &self.0) => {
                Ok(Identity { subject: "host-user".into(), label: "the host's user".into(), agent: None })
            }
            _ => Err(Refusal::new(StatusCode::UNAUTHORIZED, "send `Authorization: Bearer $SERVE_MCP_TOKEN`")
                .with_header(WWW_AUTHENTICATE, HeaderValue::from_static("Bearer realm=\"serve-mcp\""))),
        }
    }
}

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (config, port) = match args.as_slice() {
        [config] => (config.clone(), 0),
        [config, port] => match port.parse::<u16>() {
            Ok(port) => (config.clone(), port),
            Err(_) => return usage(&format!("'{port}' is not a port number")),
        },
        _ => return usage("a config is needed"),
    };
    let token = match std::env::var("SERVE_MCP_TOKEN") {
        Ok(token) if token.len() >= 16 => token,
        _ => {
            return usage(
                "set SERVE_MCP_TOKEN to a secret of at least 16 characters; clients send it as a bearer token",
            )
        }
    };
    let config = match WardenConfig::load(std::path::Path::new(&config)) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };

    // 1. Warden, with the host's approver.
    let approver = |request: ApprovalRequest, answer: ApprovalAnswer| {
        let decision = if request.risk == Risk::High {
            ApprovalDecision::Deny { reason: "this host refuses high-risk tools".into() }
        } else {
            ApprovalDecision::Approve
        };
        eprintln!("approval asked for {} ({}): {decision:?}", request.tool, request.risk);
        answer.send(decision, "serve-mcp's rule");
    };
    let warden = match Warden::builder().config(&config).approver(Arc::new(approver)).start().await {
        Ok(warden) => warden,
        Err(error) => {
            eprintln!("Warden did not start: {error}");
            return ExitCode::FAILURE;
        }
    };

    // 2. The front, on the address the host chose.
    let listener = match tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], port))).await {
        Ok(listener) => listener,
        Err(error) => {
            eprintln!("cannot listen on 127.0.0.1:{port}: {error}");
            warden.shutdown().await;
            return ExitCode::FAILURE;
        }
    };
    let address = listener.local_addr().expect("a bound listener has an address");
    let http = HttpFront::builder(Front::new(warden.clone()), HostToken(token), address).build();
    println!("serving http://{address}/mcp");

    // 3. The host's own connection loop, the front as its service.
    let service = http.service();
    let stop = tokio::signal::ctrl_c();
    tokio::pin!(stop);
    loop {
        let (stream, _) = tokio::select! {
            _ = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    eprintln!("accepting a connection failed: {error}");
                    continue;
                }
            },
        };
        let service = service.clone();
        tokio::spawn(async move {
            let io = hyper_util::rt::TokioIo::new(stream);
            // SSE streams stay open while sessions last: no idle timeout here.
            match hyper::server::conn::http1::Builder::new().serve_connection(io, service).await {
                // A refused request's body is never read: the client may
                // close before sending it all.
                Err(error) if !error.is_incomplete_message() => eprintln!("a connection ended with an error: {error}"),
                _ => {}
            }
        });
    }

    // 4. Stop: sessions first (their calls cancelled), then the servers.
    eprintln!("stopping: ending sessions and shutting the servers down");
    http.close_sessions().await;
    warden.shutdown().await;
    ExitCode::SUCCESS
}

fn usage(problem: &str) -> ExitCode {
    eprintln!("{problem}\nusage: SERVE_MCP_TOKEN=… serve-mcp CONFIG [PORT]");
    ExitCode::from(2)
}
