//! The daemon suites' harness: one test's state directory and config, the
//! `warden` commands run against it, raw bridge connections, and a guard
//! that stops whatever daemon the test started, pass or fail.

#![allow(dead_code)] // Each suite uses some of it.

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use serde_json::{json, Value};

pub(crate) mod cluster;
pub(crate) mod front_client;
mod line_client;
#[allow(unused_imports)] // Each suite uses some of it.
pub(crate) use line_client::LineClient;
use warden_tests::{bins, process_alive, scratch_dir, wait_until_gone};

/// One test's state directory and config, and the daemons it started.
pub(crate) struct Home {
    pub(crate) dir: PathBuf,
    pub(crate) config: PathBuf,
}

impl Home {
    /// A home with no config written yet ([`Home::write`] writes one).
    pub(crate) fn new(label: &str) -> Home {
        let dir = scratch_dir(label);
        Home { config: dir.join("warden.toml"), dir: dir.join("state") }
    }

    /// A home whose config runs the test server as `test`, plus `extra`.
    /// Calls are auto-approved: the test server's tools carry no
    /// annotations, so each would wait for a person (the approval tests
    /// take that line out).
    pub(crate) fn with_test_server(label: &str, extra: &str) -> Home {
        let home = Home::new(label);
        home.write(&["test"], extra);
        home
    }

    /// Writes a config that runs the test server under each name, with
    /// auto-approval, plus `extra`.
    pub(crate) fn write(&self, servers: &[&str], extra: &str) {
        let mut text = String::from("[security]\nauto_approve = true\n");
        for name in servers {
            text += &format!("[servers.{name}]\ncommand = {:?}\n", bins::test_server().display().to_string());
        }
        text += extra;
        std::fs::write(&self.config, text).unwrap();
    }

    /// `warden ARGS` against this home's daemon, without `--config`.
    pub(crate) fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(args)
            .env("WARDEN_HOME", &self.dir)
            .env_remove("RUST_LOG")
            .env_remove("WARDEN_CONFIG")
            .env_remove("XDG_STATE_HOME");
        command
    }

    /// Runs a client (`program` with `args`: an SDK client script) that
    /// finds this home's daemon, and returns the JSON line it printed last.
    pub(crate) fn client_json(&self, program: &str, args: &[String]) -> Value {
        let output = Command::new(program)
            .args(args)
            .env("WARDEN_HOME", &self.dir)
            .env_remove("WARDEN_CONFIG")
            .output()
            .expect("the client runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "the client {args:?} failed: {stdout}\n{}", stderr(&output));
        let line = stdout.lines().last().unwrap_or_default();
        serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not the client's JSON ({e}): {stdout}\n{}", stderr(&output)))
    }

    /// `warden ARGS --config CONFIG`.
    pub(crate) fn warden(&self, args: &[&str]) -> Output {
        self.command(args).arg("--config").arg(&self.config).output().expect("warden runs")
    }

    /// `warden reload` (it takes no `--config`: it reloads the daemon's own file).
    pub(crate) fn reload(&self) -> Output {
        self.command(&["reload"]).output().expect("warden runs")
    }

    /// `warden call NAME ARGUMENTS`, which must succeed; its stdout.
    pub(crate) fn call(&self, name: &str, arguments: &str) -> String {
        let output = self.warden(&["call", name, arguments]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}{}", stdout(&output), stderr(&output));
        stdout(&output).trim().to_string()
    }

    /// The pid of the test server running as `server`.
    pub(crate) fn pid_of(&self, server: &str) -> u32 {
        self.call(&format!("{server}__pid"), "{}").parse().unwrap()
    }

    /// Starts the daemon with a first call; its pid.
    pub(crate) fn start_daemon(&self) -> u32 {
        self.call("test__echo", r#"{"message":"up"}"#);
        self.daemon_pid()
    }

    pub(crate) fn lockfile_path(&self) -> PathBuf {
        self.dir.join("daemon.json")
    }

    pub(crate) fn lockfile(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.lockfile_path()).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub(crate) fn daemon_pid(&self) -> u32 {
        self.lockfile().expect("a lockfile")["pid"].as_u64().unwrap() as u32
    }

    /// A raw connection to the daemon, and its token.
    pub(crate) fn connect(&self) -> (Connection, String) {
        let lockfile = self.lockfile().expect("a running daemon");
        let stream = TcpStream::connect(lockfile["address"].as_str().unwrap()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let token = lockfile["token"].as_str().unwrap().to_string();
        (Connection::new(stream, token.clone()), token)
    }

    pub(crate) fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }

    /// The port the running daemon bound for `listener` (see [`bound_port`]).
    pub(crate) fn bound_port(&self, listener: &str) -> u16 {
        // Exit 1 (a server failed) still prints the status.
        bound_port(&self.warden(&["status", "--json"]), listener)
    }

    /// The running daemon's MCP front port (see [`bound_port`]).
    pub(crate) fn front_port(&self) -> u16 {
        self.bound_port("front")
    }

    /// Every `warden serve` process serving this home's config.
    pub(crate) fn daemon_processes(&self) -> Vec<u32> {
        let config = self.config.display().to_string();
        std::fs::read_dir("/proc")
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
            .filter(|pid| {
                let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
                let args: Vec<&[u8]> = cmdline.split(|&byte| byte == 0).collect();
                args.contains(&b"serve".as_slice()) && args.contains(&config.as_bytes()) && process_alive(*pid)
            })
            .collect()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        // Whatever daemon this test left: asked to stop, then killed.
        for pid in self.daemon_processes() {
            unsafe { libc::kill(pid as i32, libc::SIGTERM) };
            if !wait_until_gone(pid, Duration::from_secs(10)) {
                unsafe { libc::kill(pid as i32, libc::SIGKILL) };
            }
        }
    }
}

/// A blocking line-by-line bridge client.
pub(crate) struct Connection {
    pub(crate) reader: BufReader<TcpStream>,
    pub(crate) writer: TcpStream,
    token: String,
}

impl Connection {
    fn new(stream: TcpStream, token: String) -> Connection {
        Connection { writer: stream.try_clone().unwrap(), reader: BufReader::new(stream), token }
    }

    /// Sends `line` as it is, plus a newline.
    pub(crate) fn send(&mut self, line: &str) {
        self.writer.write_all(line.as_bytes()).unwrap();
        self.writer.write_all(b"\n").unwrap();
    }

    /// Sends `request` with this connection's token.
    pub(crate) fn send_request(&mut self, mut request: Value) {
        request["token"] = json!(self.token);
        self.send(&request.to_string());
    }

    /// The next answer line, or `None` once the daemon closed the connection.
    pub(crate) fn answer(&mut self) -> Option<Value> {
        let mut line = String::new();
        match self.reader.read_line(&mut line) {
            Ok(0) | Err(_) => None,
            Ok(_) => Some(serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))),
        }
    }

    /// Sends `request` as it is and waits for its answer.
    pub(crate) fn ask(&mut self, request: Value) -> Value {
        self.send(&request.to_string());
        self.answer().expect("an answer")
    }
}

/// The port of `url` in the `daemon` member of what `warden status --json`
/// printed (`listener`: `"front"`, `"metrics"`): where the daemon bound it.
/// Tests configure `127.0.0.1:0` and ask here: a port taken and released
/// for the daemon to bind could be taken by another test in between.
pub(crate) fn bound_port(status: &Output, listener: &str) -> u16 {
    let status: Value = serde_json::from_slice(&status.stdout).unwrap_or_else(|_| panic!("{}", stderr(status)));
    let url = status["daemon"][listener]["url"].as_str();
    url.and_then(warden_tests::listening::url_port).unwrap_or_else(|| panic!("no {listener} url with a port: {status}"))
}

pub(crate) fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

pub(crate) fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

pub(crate) fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}
