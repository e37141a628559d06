//! Approvals met at the terminal: `warden call` on a pseudo-terminal asks
//! for a waiting approval in place (deny with a reason, approve for the
//! session), driven by `tests/python/tty_drive.py` as a person would type.

#![allow(unused_crate_dependencies)]

mod common;

use common::{stderr, stdout, Home};
use serde_json::{json, Value};

#[test]
fn on_a_terminal_warden_call_asks_for_approval_in_place() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let home = Home::with_test_server("daemon-approvals-tty", "");
    let text = std::fs::read_to_string(&home.config).unwrap().replace("[security]\nauto_approve = true\n", "");
    std::fs::write(&home.config, text).unwrap();
    let on_a_terminal = |steps: Value, message: &str| {
        let (python, mut args) = python_server_command(&python_script("tty_drive.py"));
        let arguments = format!(r#"{{"message":"{message}"}}"#);
        args.extend([steps.to_string(), env!("CARGO_BIN_EXE_warden").into(), "call".into(), "test__echo".into()]);
        args.extend([arguments, "--config".into(), home.config.display().to_string()]);
        let output = std::process::Command::new(python).args(&args).env("WARDEN_HOME", &home.dir).output().unwrap();
        (output.status.code(), String::from_utf8_lossy(&output.stdout).replace('\r', ""))
    };
    let prompt = "[a]pprove once / approve for this [s]ession / [d]eny: ";
    // Denied in place, with a reason the caller reads.
    let (code, screen) = on_a_terminal(json!([[prompt, "d"], ["why (told to the caller): ", "not now"]]), "no");
    assert_eq!(code, Some(1), "{screen}");
    assert!(screen.contains("waiting for approval #"), "{screen}");
    assert!(screen.contains("denied it: not now"), "{screen}");
    // Enter alone approves nothing: asked again, then approved once.
    let (code, screen) = on_a_terminal(json!([[prompt, ""], ["type a, s or d", "a"]]), "once");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.trim_end().ends_with("once"), "{screen}");
    // Approved for the session: this call runs, and the next one unasked.
    let (code, screen) = on_a_terminal(json!([[prompt, "s"]]), "yes");
    assert_eq!(code, Some(0), "{screen}");
    assert!(screen.trim_end().ends_with("yes"), "{screen}");
    let output = home.warden(&["call", "test__echo", r#"{"message":"unasked"}"#]);
    assert_eq!(stdout(&output), "unasked\n", "{}", stderr(&output));
    let _ = home.warden(&["stop"]);
}

#[test]
fn on_a_terminal_ctrl_c_at_the_approval_prompt_cancels_the_call() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let home = Home::with_test_server("daemon-approvals-tty-ctrl-c", "");
    let text = std::fs::read_to_string(&home.config).unwrap().replace("[security]\nauto_approve = true\n", "");
    std::fs::write(&home.config, text).unwrap();
    let (python, mut args) = python_server_command(&python_script("tty_drive.py"));
    let prompt = "[a]pprove once / approve for this [s]ession / [d]eny: ";
    args.extend([json!([[prompt, "\u{3}"]]).to_string(), env!("CARGO_BIN_EXE_warden").into(), "call".into()]);
    args.extend([
        "test__echo".into(),
        r#"{"message":"no"}"#.into(),
        "--config".into(),
        home.config.display().to_string(),
    ]);
    let output = std::process::Command::new(python).args(&args).env("WARDEN_HOME", &home.dir).output().unwrap();
    let screen = String::from_utf8_lossy(&output.stdout).replace('\r', "");
    assert_eq!(output.status.code(), Some(130), "{screen}");
    assert!(screen.contains("Ctrl-C: cancelling the call"), "{screen}");
    // Nothing is left waiting for a person.
    let listed: Value = serde_json::from_str(&stdout(&home.warden(&["approvals", "--json"]))).unwrap();
    assert_eq!(listed["approvals"], json!([]), "{listed}");
    let _ = home.warden(&["stop"]);
}
