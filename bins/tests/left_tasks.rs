//! A daemon killed while a task-backed call runs: the task goes on in its
//! HTTP server (`tests/python/task_server.py`, the 2026-07-28 tasks
//! extension), and the next daemon lists it (`warden tasks`) and fetches
//! its result (`warden tasks --result KEY`).

#![allow(unused_crate_dependencies)]

mod common;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{stderr, stdout, Home};
use serde_json::Value;
use warden_tests::real_servers::{python_script, python_server_command};

/// The task server on a port of its choosing, its tasks done `seconds`
/// after a call.
struct TaskServer {
    child: Child,
    url: String,
}

impl TaskServer {
    fn start(seconds: f64) -> TaskServer {
        let (python, mut args) = python_server_command(&python_script("task_server.py"));
        args.extend(["0".to_string(), seconds.to_string()]);
        let mut child = Command::new(python)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // It prints the port it listens on, then nothing more.
        let mut line = String::new();
        let _ = std::io::BufRead::read_line(&mut std::io::BufReader::new(child.stdout.take().unwrap()), &mut line);
        let Some(port) = line.trim().strip_prefix("listening on port ") else {
            let _ = child.kill();
            panic!("the task server did not say it listens: {line:?}");
        };
        let port: u16 = port.parse().unwrap();
        TaskServer { child, url: format!("http://127.0.0.1:{port}/mcp") }
    }
}

impl Drop for TaskServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits (30 s at most) until `ready` gives something.
fn until<T>(what: &str, mut ready: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(found) = ready() {
            return found;
        }
        assert!(Instant::now() < deadline, "{what} never came");
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn json_of(home: &Home, args: &[&str]) -> Value {
    let output = home.warden(args);
    assert!(output.status.success(), "{args:?}: {}", stderr(&output));
    serde_json::from_str(&stdout(&output)).unwrap_or_else(|_| panic!("{args:?} printed {}", stdout(&output)))
}

#[test]
fn a_task_whose_daemon_died_is_listed_and_its_result_fetched_by_the_next_daemon() {
    let server = TaskServer::start(4.0);
    let home = Home::new("left-tasks");
    let config = format!("[security]\nauto_approve = true\n[servers.slow]\nurl = {:?}\n", server.url);
    std::fs::write(&home.config, config).unwrap();

    // A call that runs as a task; the daemon dies while it waits.
    let mut call = home.command(&["call", "slow__long", r#"{"word":"hello"}"#]);
    let call = call.arg("--config").arg(&home.config).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let journal = home.dir.join("tasks.json");
    until("the task in the journal", || std::fs::read_to_string(&journal).ok().filter(|text| text.contains("task-1")));
    for pid in home.daemon_processes() {
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    }
    let called = call.wait_with_output().unwrap();
    assert!(!called.status.success(), "the call dies with its daemon: {}", stdout(&called));

    // The next daemon lists it, with what the server says now.
    let listed = json_of(&home, &["tasks", "--json"]);
    let tasks = listed["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 1, "{listed}");
    let task = &tasks[0];
    assert_eq!((task["server"].as_str(), task["tool"].as_str()), (Some("slow"), Some("slow__long")), "{listed}");
    assert_eq!(task["task_id"], "task-1");
    assert!(matches!(task["now"]["status"].as_str(), Some("working" | "completed")), "{listed}");
    let key = task["key"].as_str().unwrap().to_string();
    let text = stdout(&home.warden(&["tasks"]));
    assert!(text.contains(&format!("{key} slow__long (server slow, task task-1): ")), "{text}");

    // Fetched once it has ended, then forgotten.
    let fetched = until("the task's end", || {
        let fetched = json_of(&home, &["tasks", "--result", &key, "--json"]);
        (fetched["status"] != "working").then_some(fetched)
    });
    assert_eq!(fetched["status"], "completed", "{fetched}");
    assert_eq!(fetched["result"]["content"][0]["text"], "hello, done", "{fetched}");
    assert_eq!(json_of(&home, &["tasks", "--json"])["tasks"], serde_json::json!([]));
    assert_eq!(stdout(&home.warden(&["tasks"])), "no tasks were left by an earlier daemon\n");
    let unknown = home.warden(&["tasks", "--result", &key]);
    assert!(!unknown.status.success());
    assert!(stderr(&unknown).contains("`warden tasks` lists the ones there are"), "{}", stderr(&unknown));
    let _ = home.warden(&["stop"]);
}
