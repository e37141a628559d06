//! The floors under a call across nodes, measured in the same run:
//!
//! - **direct**: this process speaking to the test server over its pipes,
//!   one JSON-RPC line out and one back — what a local call cannot beat;
//! - **a relay that only forwards**: this process sends the same line over
//!   NATS to another process (this bench binary, re-run as a relay), which
//!   writes it to its own test server and publishes the line it gets back
//!   — what any call across nodes through NATS cannot beat: NATS both
//!   ways, a second process to wake, the server's pipes. No decoding, no
//!   policy, no call ids, no retries.
//!
//! Warden's own cost is then what it adds above each floor: local −
//! direct on one node, across − relay across two.

use std::time::{Duration, Instant};

use futures_util::StreamExt as _;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout};

/// Set to a NATS URL, the bench binary is the relay and nothing else.
pub(crate) const RELAY_ENV: &str = "WARDEN_BENCH_RELAY_NATS";

/// The subject the relay answers on.
const SUBJECT: &str = "bench.relay";

/// The test server, spoken to one line at a time.
pub(crate) struct Piped {
    _child: Child,
    stdin: ChildStdin,
    lines: Lines<BufReader<ChildStdout>>,
}

impl Piped {
    /// Starts `command` and shakes hands with it.
    pub(crate) async fn start(command: &str) -> Piped {
        let mut child = crate::bench_support::spawn_piped(command);
        let stdin = child.stdin.take().expect("stdin is piped");
        let lines = BufReader::new(child.stdout.take().expect("stdout is piped")).lines();
        let mut piped = Piped { _child: child, stdin, lines };
        let initialize = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench-floor","version":"1"}}}"#;
        piped.round_trip(initialize.as_bytes()).await;
        piped.stdin.write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n").await.unwrap();
        piped
    }

    /// Writes `line` and reads the server's next line.
    pub(crate) async fn round_trip(&mut self, line: &[u8]) -> String {
        self.stdin.write_all(line).await.expect("the test server reads");
        self.stdin.write_all(b"\n").await.expect("the test server reads");
        self.stdin.flush().await.expect("the test server reads");
        self.lines.next_line().await.expect("the test server answers").expect("the test server answers")
    }
}

/// A `tools/call` of the test server's echo, as one line.
pub(crate) fn echo_line(message: &str) -> Vec<u8> {
    let call = serde_json::json!({
        "jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "echo", "arguments": {"message": message}},
    });
    serde_json::to_vec(&call).expect("a call serialises")
}

/// The two floors, ready to be timed call by call.
pub(crate) struct Floors {
    direct: Piped,
    line: Vec<u8>,
    relay: tokio::process::Child,
    client: async_nats::Client,
    message: String,
}

impl Floors {
    /// Starts a test server for `direct`, and a relay process with its own
    /// over NATS at `url`.
    pub(crate) async fn start(server: &str, url: &str, message: &str) -> Floors {
        let mut relay = tokio::process::Command::new(std::env::current_exe().expect("the bench's own path"))
            .env(RELAY_ENV, url)
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("the relay starts");
        let mut ready = BufReader::new(relay.stdout.take().expect("piped")).lines();
        assert_eq!(ready.next_line().await.unwrap().as_deref(), Some("ready"), "the relay says it is ready");
        let client = async_nats::connect(url).await.expect("NATS");
        let direct = Piped::start(server).await;
        Floors { direct, line: echo_line(message), relay, client, message: message.to_string() }
    }

    /// One call straight to the test server's pipes; how long it took.
    pub(crate) async fn direct(&mut self) -> Duration {
        let started = Instant::now();
        let answer = self.direct.round_trip(&self.line).await;
        let took = started.elapsed();
        assert!(answer.contains(&self.message), "the echo came back: {answer}");
        took
    }

    /// One call through the relay; how long it took.
    pub(crate) async fn relayed(&mut self) -> Duration {
        let started = Instant::now();
        let answer = self.client.request(SUBJECT, self.line.clone().into()).await.expect("the relay answers");
        let took = started.elapsed();
        assert!(String::from_utf8_lossy(&answer.payload).contains(&self.message), "the echo came back");
        took
    }

    pub(crate) async fn stop(mut self) {
        let _ = self.relay.kill().await;
    }
}

/// The relay: answers each request on [`SUBJECT`] with the test server's
/// answer to it, until killed.
pub(crate) fn relay(url: &str, server: &str) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a runtime");
    runtime.block_on(async {
        let mut piped = Piped::start(server).await;
        let client = async_nats::connect(url).await.expect("NATS");
        let mut requests = client.subscribe(SUBJECT).await.expect("a subscription");
        client.flush().await.expect("flushed");
        println!("ready");
        while let Some(request) = requests.next().await {
            let answer = piped.round_trip(&request.payload).await;
            if let Some(to) = request.reply {
                client.publish(to, answer.into()).await.expect("NATS takes the answer");
            }
        }
    });
}
