//! Servers' questions answered through the daemon, as people meet them: a
//! `warden call` whose server (the official Python SDK's, pinned:
//! `tests/python/asking_server.py`) asks a question waits; `warden pending`
//! in another process lists it with its fields, defaults and choices, and
//! `warden answer` answers it — a wrong answer refused with the reason, the
//! question still waiting. Real processes, a real daemon.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

mod common;

use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

use common::*;
use serde_json::{json, Value};
use warden_tests::real_servers::{python_script, python_server_command};

fn asking_home(label: &str) -> Home {
    let home = Home::new(label);
    let (python, args) = python_server_command(&python_script("asking_server.py"));
    let config = format!(
        "[security]\nauto_approve = true\n[servers.py]\ncommand = {python:?}\nargs = {args:?}\nstartup_timeout_secs = 60\nprotocol_version = \"2025-11-25\"\n"
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

fn spawn_call(home: &Home, tool: &str) -> Child {
    home.command(&["call", tool, "{}"])
        .arg("--config")
        .arg(&home.config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The questions waiting, once there is one (polled as a person would look).
fn waiting_question(home: &Home) -> Value {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let output = home.warden(&["pending", "--json"]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let listed: Value = serde_json::from_slice(&output.stdout).unwrap();
        if let Some(question) = listed["questions"].as_array().and_then(|questions| questions.first()) {
            return question.clone();
        }
        assert!(Instant::now() < deadline, "no question came: {listed}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn a_question_waits_in_the_daemon_and_another_process_answers_it() {
    let home = asking_home("questions-form");
    let output = home.warden(&["pending"]);
    assert_eq!(stdout(&output), "nothing is waiting for a person\n", "{}", stderr(&output));

    let call = spawn_call(&home, "py__book_table");
    let question = waiting_question(&home);
    let id = question["id"].as_u64().unwrap();
    assert_eq!((question["server"].clone(), question["tool"].clone()), (json!("py"), json!("py__book_table")));
    assert_eq!(question["mode"], "form");
    let listed = stdout(&home.warden(&["pending"]));
    assert_eq!(
        listed,
        format!(
            "#{id} question from server py during py__book_table: Book a table for how many nights?\n    \
             name (Name): text, default \"Ada\" — Who the table is for\n    \
             size (Size): one of: small, large, required\n    \
             nights (Nights): a whole number from 1 to 14, default 2\n    \
             answer: `warden answer {id} --accept '{{\"size\": \"small\"}}'`, `--defaults`, `--decline` or `--cancel`\n"
        )
    );

    // Wrong answers are refused, and the question goes on waiting.
    let output = home.warden(&["answer", &id.to_string(), "--accept", r#"{"size": "huge"}"#]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!("error: question {id} was not answered: `size` must be one of: small, large; `huge` is not one\n")
    );
    let output = home.warden(&["answer", &id.to_string(), "--defaults"]);
    assert_eq!(
        stderr(&output),
        format!(
            "error: question {id} was not answered: `size` is required and has no default; give it a value (one of: small, large)\n"
        )
    );
    let output = home.warden(&["answer", &id.to_string(), "--accept", r#"{"size": "large", "nights": "3"}"#]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), format!("answered #{id} (accept)\n"));
    let call = call.wait_with_output().unwrap();
    assert_eq!(call.status.code(), Some(0), "{}", stderr(&call));
    // Not on a terminal: stderr said at once what waits and how to answer it.
    let told = stderr(&call);
    assert!(
        told.starts_with(&format!(
            "waiting for a person: #{id} question from server py during py__book_table: Book a table for how many nights?\n"
        )) && told.contains(&format!("    answer: `warden answer {id} --accept '{{\"size\": \"small\"}}'`")),
        "{told}"
    );
    // The text, then the SDK's structured copy of it.
    assert_eq!(stdout(&call), "booked Ada large 3\n{\"result\":\"booked Ada large 3\"}\n");

    let output = home.warden(&["answer", &id.to_string(), "--cancel"]);
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(
        stderr(&output),
        format!(
            "error: no question {id} is waiting (it was answered, withdrawn, timed out, or never asked); `warden pending` lists the ones that are\n"
        )
    );
}

#[test]
fn a_url_question_shows_where_it_leads_and_is_declined() {
    let home = asking_home("questions-url");
    let call = spawn_call(&home, "py__sign_in");
    let question = waiting_question(&home);
    let id = question["id"].as_u64().unwrap();
    let listed = stdout(&home.warden(&["pending"]));
    assert_eq!(
        listed,
        format!(
            "#{id} question from server py during py__sign_in: Sign in to continue\n    \
             open https://login.example.com/auth?x=1\n    \
             it leads to login.example.com — check that before you open it\n    \
             answer: `warden answer {id} --accept '{{}}'` once opened, `--decline` or `--cancel`\n"
        )
    );
    let output = home.warden(&["answer", &id.to_string(), "--decline"]);
    assert_eq!(stdout(&output), format!("answered #{id} (decline)\n"), "{}", stderr(&output));
    let call = call.wait_with_output().unwrap();
    assert_eq!(stdout(&call), "url decline\n{\"result\":\"url decline\"}\n", "{}", stderr(&call));
}

#[test]
fn on_a_terminal_warden_call_asks_in_place_and_asks_again_after_a_wrong_answer() {
    let home = asking_home("questions-tty");
    let warden = env!("CARGO_BIN_EXE_warden").to_string();
    let config = home.config.display().to_string();
    // What a person types, each after the prompt it answers.
    let steps = json!([
        ["answer it? [Y]es / [n]o (decline) / [c]ancel: ", ""],
        ["Name (text) — Who the table is for [\"Ada\"]: ", ""],
        ["Size (one of: small, large) [required]: ", "huge"],
        ["Nights (a whole number from 1 to 14) [2]: ", ""],
        ["`size` must be one of: small, large; `huge` is not one; try again", ""],
        ["Name (text)", "Bo"],
        ["Size (one of", "large"],
        ["Nights (a whole", "5"]
    ]);
    let (python, mut args) = python_server_command(&python_script("tty_drive.py"));
    args.extend([steps.to_string(), warden, "call".into(), "py__book_table".into(), "--config".into(), config]);
    let output = std::process::Command::new(python).args(&args).env("WARDEN_HOME", &home.dir).output().unwrap();
    let screen = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    assert_eq!(output.status.code(), Some(0), "{screen}\n{}", stderr(&output));
    assert!(screen.contains("server 'py' asks (during py__book_table): Book a table for how many nights?"), "{screen}");
    assert!(screen.contains("booked Bo large 5"), "the second answer reached the server: {screen}");
}

#[test]
fn a_question_leaves_the_queue_when_the_warden_call_waiting_for_it_is_killed() {
    let home = asking_home("questions-gone");
    let mut call = spawn_call(&home, "py__book_table");
    let question = waiting_question(&home);
    assert_eq!(question["server"], "py", "{question}");
    // No goodbye: the client is gone, and so is what it waited for.
    call.kill().unwrap();
    call.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let listed: Value = serde_json::from_slice(&home.warden(&["pending", "--json"]).stdout).unwrap();
        if listed["questions"] == json!([]) {
            break;
        }
        assert!(Instant::now() < deadline, "the dead client's question still waits: {listed}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = home.warden(&["stop"]);
}
