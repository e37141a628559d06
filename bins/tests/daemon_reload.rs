//! Live config reload against a real daemon with real servers: `warden
//! reload` and SIGHUP re-read the config file; added servers start, removed
//! ones stop after their calls in flight, changed ones restart (a new pid),
//! unchanged ones are not touched, and a broken file changes nothing.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use warden_tests::{bins, process_alive, scratch_dir, wait_until_gone};

/// One test's state directory and config file.
struct Home {
    dir: PathBuf,
    config: PathBuf,
}

impl Home {
    fn new(label: &str) -> Home {
        let dir = scratch_dir(label);
        Home { config: dir.join("warden.toml"), dir: dir.join("state") }
    }

    /// Writes a config that runs the test server under each name, with
    /// auto-approval (its tools carry no annotations), plus `extra`.
    fn write(&self, servers: &[&str], extra: &str) {
        let mut text = String::from("[security]\nauto_approve = true\n");
        for name in servers {
            text += &format!("[servers.{name}]\ncommand = {:?}\n", bins::test_server().display().to_string());
        }
        text += extra;
        std::fs::write(&self.config, text).unwrap();
    }

    /// `warden ARGS` against this home's daemon, without `--config`.
    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_warden"));
        command
            .args(args)
            .env("WARDEN_HOME", &self.dir)
            .env_remove("RUST_LOG")
            .env_remove("WARDEN_CONFIG")
            .env_remove("XDG_STATE_HOME");
        command
    }

    fn warden(&self, args: &[&str]) -> Output {
        self.command(args).arg("--config").arg(&self.config).output().expect("warden runs")
    }

    /// `warden reload` (it takes no `--config`: it reloads the daemon's own file).
    fn reload(&self) -> Output {
        self.command(&["reload"]).output().expect("warden runs")
    }

    /// `warden call NAME ARGUMENTS` and its stdout.
    fn call(&self, name: &str, arguments: &str) -> String {
        let output = self.warden(&["call", name, arguments]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}{}", stdout(&output), stderr(&output));
        stdout(&output).trim().to_string()
    }

    fn pid_of(&self, server: &str) -> u32 {
        self.call(&format!("{server}__pid"), "{}").parse().unwrap()
    }

    fn lockfile(&self) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.dir.join("daemon.json")).unwrap()).unwrap()
    }

    fn daemon_pid(&self) -> u32 {
        self.lockfile()["pid"].as_u64().unwrap() as u32
    }

    fn connect(&self) -> Connection {
        let lockfile = self.lockfile();
        let stream = TcpStream::connect(lockfile["address"].as_str().unwrap()).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let token = lockfile["token"].as_str().unwrap().to_string();
        Connection { writer: stream.try_clone().unwrap(), reader: BufReader::new(stream), token }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("daemon.log")).unwrap_or_default()
    }
}

impl Drop for Home {
    fn drop(&mut self) {
        if let Ok(text) = std::fs::read_to_string(self.dir.join("daemon.json")) {
            if let Some(pid) = serde_json::from_str::<Value>(&text).ok().and_then(|lock| lock["pid"].as_u64()) {
                unsafe { libc::kill(pid as i32, libc::SIGTERM) };
                if !wait_until_gone(pid as u32, Duration::from_secs(10)) {
                    unsafe { libc::kill(pid as i32, libc::SIGKILL) };
                }
            }
        }
    }
}

/// A raw bridge connection.
struct Connection {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
    token: String,
}

impl Connection {
    fn send(&mut self, mut request: Value) {
        request["token"] = json!(self.token);
        self.writer.write_all(format!("{request}\n").as_bytes()).unwrap();
    }

    fn answer(&mut self) -> Value {
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|_| panic!("not JSON: {line}"))
    }
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn reload_adds_removes_and_restarts_servers_and_leaves_the_others_alone() {
    let home = Home::new("reload-cli");
    home.write(&["keep", "gone", "changing"], "");
    let keep = home.pid_of("keep");
    let gone = home.pid_of("gone");
    let changing = home.pid_of("changing");

    // Calls in flight on the server that stays and on the one that goes.
    let mut on_keep = home.connect();
    on_keep.send(json!({"op": "call_tool", "name": "keep__sleep", "args": {"ms": 1500}}));
    let mut on_gone = home.connect();
    on_gone.send(json!({"op": "call_tool", "name": "gone__sleep", "args": {"ms": 1500}}));
    std::thread::sleep(Duration::from_millis(300));

    home.write(&["keep", "changing", "added"], "[servers.changing.env]\nMARK = \"2\"\n");
    let output = home.reload();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = stdout(&output);
    let expected = format!(
        "reloaded {}\n  added: added\n  removed: gone\n  restarted: changing\n  unchanged: keep\n",
        home.config.display()
    );
    assert_eq!(printed, expected);

    assert_eq!(on_keep.answer()["result"]["content"][0]["text"], "slept 1500 ms");
    assert_eq!(on_gone.answer()["result"]["content"][0]["text"], "slept 1500 ms");
    assert!(wait_until_gone(gone, Duration::from_secs(10)), "the removed server's process is stopped");
    assert!(!process_alive(changing), "the changed server's old process is stopped");
    assert_eq!(home.pid_of("keep"), keep);
    let restarted = home.pid_of("changing");
    assert_ne!(restarted, changing);
    assert!(process_alive(restarted));
    assert_eq!(home.call("added__echo", r#"{"message":"hi"}"#), "hi");

    let output = home.warden(&["call", "gone__echo"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(stderr(&output).contains("unknown tool 'gone__echo'"), "{}", stderr(&output));
    let output = home.warden(&["tools"]);
    let listed = stdout(&output);
    assert!(listed.contains("added__echo") && !listed.contains("gone__"), "{listed}");
}

#[test]
fn a_broken_config_is_refused_with_the_reason_and_the_running_one_keeps_serving() {
    let home = Home::new("reload-broken");
    home.write(&["test"], "");
    let server = home.pid_of("test");

    std::fs::write(&home.config, "[servers.test\ncommand = 'x'\n").unwrap();
    let output = home.reload();
    assert_eq!(output.status.code(), Some(1), "{}", stdout(&output));
    let error = stderr(&output);
    assert!(error.contains("the config was not reloaded; the running one stays in place:"), "{error}");
    assert!(error.contains(&home.config.display().to_string()), "{error}");

    let mut connection = home.connect();
    connection.send(json!({"op": "reload"}));
    let answer = connection.answer();
    assert_eq!(answer["ok"], false);
    assert_eq!(answer["error"]["code"], "config_invalid");

    // A change the daemon cannot make live is refused the same way.
    home.write(&["test", "other"], "[naming]\nseparator = \"_\"\n");
    connection.send(json!({"op": "reload"}));
    let answer = connection.answer();
    assert_eq!(answer["error"]["code"], "reload_refused");
    assert!(answer["error"]["message"].as_str().unwrap().contains("`[naming]`"), "{answer}");

    assert_eq!(home.pid_of("test"), server);
    let output = home.warden(&["tools"]);
    assert!(!stdout(&output).contains("other"), "{}", stdout(&output));
}

#[test]
fn sighup_reloads_the_config_and_logs_it() {
    let home = Home::new("reload-sighup");
    home.write(&["test"], "");
    let server = home.pid_of("test");
    let daemon = home.daemon_pid();

    home.write(&["test", "added"], "");
    unsafe { libc::kill(daemon as i32, libc::SIGHUP) };
    let deadline = Instant::now() + Duration::from_secs(20);
    while !home.log().contains("config reloaded") {
        assert!(Instant::now() < deadline, "no reload logged: {}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(process_alive(daemon), "SIGHUP does not stop the daemon");
    assert_eq!(home.call("added__echo", r#"{"message":"hi"}"#), "hi");
    assert_eq!(home.pid_of("test"), server);
    assert!(home.log().contains("SIGHUP received: reloading"), "{}", home.log());

    // A broken file on SIGHUP is logged, and nothing changes.
    std::fs::write(&home.config, "not = [toml").unwrap();
    unsafe { libc::kill(daemon as i32, libc::SIGHUP) };
    while !home.log().contains("the config was not reloaded") {
        assert!(Instant::now() < deadline, "no refusal logged: {}", home.log());
        std::thread::sleep(Duration::from_millis(50));
    }
    // The CLI would refuse the broken file itself; ask the daemon directly.
    let mut connection = home.connect();
    connection.send(json!({"op": "call_tool", "name": "test__pid", "args": {}}));
    assert_eq!(connection.answer()["result"]["content"][0]["text"], server.to_string());
}
