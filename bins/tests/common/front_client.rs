//! The front suites' raw HTTP/1.1 client: a daemon with an HTTP front
//! over the test server, and a keep-alive connection speaking just enough
//! HTTP to test it (headers and bodies as a hostile client would send
//! them, which the SDK clients cannot).

use std::collections::HashMap;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{json, Value};
use warden_tests::{bins, real_servers};

use super::{bound_port, stderr, Home};

pub(crate) const TOKEN: &str = "front-token-0123456789abcdef";
pub(crate) const CODER_TOKEN: &str = "coder-token-0123456789abcdef";

/// A home whose daemon runs the test server (and, with `everything`,
/// server-everything) behind an HTTP front on a port of its choosing; the
/// daemon is started. Returns the home and the front's port.
pub(crate) fn front_home(label: &str, everything: bool, front_extra: &str) -> (Home, u16) {
    let home = Home::new(label);
    let mut text = format!(
        "[security]\nauto_approve = true\n\n[servers.test]\ncommand = {:?}\n\
         args = [\"--tools\", \"echo,sleep,notify,cancellations,crash,progress\"]\nrestart_delay_secs = 0.2\n",
        bins::test_server().display().to_string()
    );
    if everything {
        let (node, args) = real_servers::EVERYTHING.command(&[]);
        text += &format!("\n[servers.everything]\ncommand = {node:?}\nargs = {args:?}\n");
    }
    text += &format!(
        "\n[[agents]]\nname = \"coder\"\nallowed_tools = [\"test__echo\"]\n\n[front]\nlisten = \"127.0.0.1:0\"\n\
         tokens = [{{ token = \"{TOKEN}\" }}, {{ token = \"{CODER_TOKEN}\", agent = \"coder\" }}]\n{front_extra}"
    );
    std::fs::write(&home.config, text).unwrap();
    let status = home.warden(&["status", "--json"]);
    assert_eq!(status.status.code(), Some(0), "{}", stderr(&status));
    let port = bound_port(&status, "front");
    (home, port)
}

/// One answer: status, headers (lower-case names), body.
#[derive(Debug)]
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) headers: HashMap<String, String>,
    pub(crate) body: String,
}

impl Reply {
    pub(crate) fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// A keep-alive HTTP/1.1 connection speaking just enough to test the front.
pub(crate) struct Http {
    pub(crate) reader: BufReader<TcpStream>,
    port: u16,
    /// The last answer said `Connection: close`: the next request reconnects.
    closed: bool,
}

impl Http {
    pub(crate) fn connect(port: u16) -> Http {
        let stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        // Headers and body go in two writes: without this, Nagle's
        // algorithm holds the body for the server's delayed ACK (40 ms).
        stream.set_nodelay(true).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Http { reader: BufReader::new(stream), port, closed: false }
    }

    pub(crate) fn send(&mut self, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Reply {
        if self.closed {
            *self = Http::connect(self.port);
        }
        let mut request = format!("{method} {path} HTTP/1.1\r\nContent-Length: {}\r\n", body.len());
        if !headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("host")) {
            request += &format!("Host: 127.0.0.1:{}\r\n", self.port);
        }
        for (name, value) in headers {
            request += &format!("{name}: {value}\r\n");
        }
        request += "\r\n";
        let stream = self.reader.get_mut();
        stream.write_all(request.as_bytes()).unwrap();
        // A refused body may be cut off by the server: its answer is read anyway.
        if let Err(error) = stream.write_all(body.as_bytes()) {
            eprintln!("writing the body of {method} {path} failed: {error}");
        }
        self.read_reply()
    }

    pub(crate) fn read_reply(&mut self) -> Reply {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        let status = line.split(' ').nth(1).unwrap_or_else(|| panic!("no status line: {line:?}")).parse().unwrap();
        let mut headers = HashMap::new();
        loop {
            line.clear();
            self.reader.read_line(&mut line).unwrap();
            let Some((name, value)) = line.trim_end().split_once(':') else { break };
            headers.insert(name.to_ascii_lowercase(), value.trim().to_string());
        }
        let length: usize = headers.get("content-length").map_or(0, |length| length.parse().unwrap());
        let mut body = vec![0; length];
        self.reader.read_exact(&mut body).unwrap();
        self.closed = headers.get("connection").is_some_and(|value| value == "close");
        Reply { status, headers, body: String::from_utf8(body).unwrap() }
    }

    /// A POST of one JSON-RPC message with the bearer `token`.
    pub(crate) fn post(&mut self, path: &str, token: &str, session: Option<&str>, message: &Value) -> Reply {
        let bearer = format!("Bearer {token}");
        let mut headers = vec![("Authorization", bearer.as_str()), ("Accept", "application/json, text/event-stream")];
        if let Some(session) = session {
            headers.push(("Mcp-Session-Id", session));
        }
        self.send("POST", path, &headers, &message.to_string())
    }

    /// `initialize` on `path`; the session id.
    pub(crate) fn initialize(&mut self, path: &str, token: &str) -> Result<String, Reply> {
        let message = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
        self.initialize_with(path, token, &message)
    }

    /// `initialize` as `message` says; the session id.
    pub(crate) fn initialize_with(&mut self, path: &str, token: &str, message: &Value) -> Result<String, Reply> {
        let reply = self.post(path, token, None, message);
        match reply.headers.get("mcp-session-id") {
            Some(id) if reply.status == 200 => Ok(id.clone()),
            _ => Err(reply),
        }
    }
}

/// A `tools/call` request.
pub(crate) fn call(id: u64, name: &str, arguments: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
}
