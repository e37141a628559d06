//! A `warden serve` a bench started: its lockfile, and where its MCP front
//! listens.
//!
//! The benches give the front `listen = "127.0.0.1:0"`, not a port taken
//! free and released: anything on the machine can take a released port
//! before the daemon binds it (the test suites lost runs that way). Which
//! port the kernel gave is then the daemon's to say, and it says it in
//! `status` (`daemon.front.url`), as `warden status` prints it to a user.

use std::io::{BufRead as _, BufReader, Write as _};
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The daemon's lockfile (`daemon.json` in its state directory), waited
/// for: the daemon writes it once every listener is bound.
pub(crate) fn lockfile(state_dir: &Path, limit: Duration) -> Value {
    let path = state_dir.join("daemon.json");
    let started = Instant::now();
    loop {
        if let Some(found) = std::fs::read_to_string(&path).ok().and_then(|text| serde_json::from_str(&text).ok()) {
            return found;
        }
        assert!(started.elapsed() < limit, "the daemon wrote no {} within {limit:?}", path.display());
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// The port of the daemon's MCP front, asked with `status` over its bridge.
pub(crate) fn front_port(lockfile: &Value) -> u16 {
    let address = lockfile["address"].as_str().expect("the lockfile names the bridge's address");
    let mut stream = std::net::TcpStream::connect(address).expect("the daemon's bridge accepts");
    let request = json!({"op": "status", "token": lockfile["token"]});
    stream.write_all(format!("{request}\n").as_bytes()).expect("the status request is written");
    let mut line = String::new();
    BufReader::new(stream).read_line(&mut line).expect("the daemon answers status");
    let status: Value = serde_json::from_str(&line).expect("status is JSON");
    let url = status["result"]["daemon"]["front"]["url"].as_str();
    url.and_then(warden_tests::listening::url_port).unwrap_or_else(|| panic!("status names no MCP front: {status}"))
}
