//! While servers start, a command shows which are on their way: plain
//! lines in a log, one live line per server on a terminal.

#![allow(unused_crate_dependencies)]

mod common;

use common::{stderr, stdout, Home};

/// A server that takes 2.5 s to answer `initialize`, and a quick one.
fn home(label: &str) -> Home {
    let home = Home::new(label);
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[security]\nauto_approve = true\n[servers.slow]\ncommand = {server:?}\nargs = [\"--startup-delay-ms\", \"2500\"]\n\
         [servers.quick]\ncommand = {server:?}\n"
    );
    std::fs::write(&home.config, config).unwrap();
    home
}

#[test]
fn a_log_is_told_which_server_is_awaited_and_when_it_runs() {
    let home = home("progress-plain");
    let output = home.warden(&["tools", "--no-daemon"]);
    assert!(output.status.success(), "{}", stderr(&output));
    assert!(stdout(&output).contains("slow__echo"), "{}", stdout(&output));
    let said = stderr(&output);
    let waiting = said.find("warden: … slow").unwrap_or_else(|| panic!("no line for the slow server: {said}"));
    let running = said.find("warden: ✓ slow").unwrap_or_else(|| panic!("never said it runs: {said}"));
    assert!(waiting < running, "{said}");
    assert!(said.contains("Ctrl-C stops waiting"), "{said}");
    assert!(!said.contains("quick"), "the quick server is not news: {said}");
    assert!(!said.contains('\x1b'), "no terminal codes in a log: {said:?}");
}

#[test]
fn a_terminal_gets_a_live_line_per_server() {
    use warden_tests::real_servers::{python_script, python_server_command};
    let home = home("progress-tty");
    let (python, mut args) = python_server_command(&python_script("tty_drive.py"));
    args.extend(["[]".into(), env!("CARGO_BIN_EXE_warden").into(), "tools".into(), "--no-daemon".into()]);
    args.extend(["--config".into(), home.config.display().to_string()]);
    let output = std::process::Command::new(python).args(&args).env("WARDEN_HOME", &home.dir).output().unwrap();
    let screen = String::from_utf8_lossy(&output.stdout).into_owned();
    assert_eq!(output.status.code(), Some(0), "{screen}");
    assert!(screen.contains("waiting for 1 of 2 servers to start (Ctrl-C stops waiting)"), "{screen:?}");
    assert!(screen.contains("\x1b[3A"), "the lines are redrawn in place: {screen:?}");
    assert!(screen.contains("servers started in"), "{screen:?}");
    assert!(screen.contains("✓ slow") && screen.contains("✓ quick"), "{screen:?}");
}

#[test]
fn a_server_found_to_speak_only_initialize_is_not_probed_again_by_the_next_run() {
    let home = Home::new("era-memo");
    let refused = home.dir.join("refused.log");
    let server = warden_tests::bins::test_server().display().to_string();
    let config = format!(
        "[security]\nauto_approve = true\n[servers.old]\ncommand = {server:?}\n\
         env = {{ WARDEN_TEST_REFUSED_LOG = {:?} }}\n",
        refused.display().to_string()
    );
    std::fs::write(&home.config, config).unwrap();
    let probes = || std::fs::read_to_string(&refused).unwrap_or_default().matches("server/discover").count();
    for run in 1..=2 {
        let output = home.warden(&["tools", "--no-daemon"]);
        assert!(stdout(&output).contains("old__echo"), "run {run}: {}", stderr(&output));
        assert_eq!(probes(), 1, "run {run}: probed once, in the first run only");
    }
    // Kept in the state directory, owner-only, naming the server.
    let memo = home.dir.join("eras.json");
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(std::fs::metadata(&memo).unwrap().permissions().mode() & 0o777, 0o600);
    assert!(std::fs::read_to_string(&memo).unwrap().contains("\"old\""));
    // Another command is another server: probed again.
    let text = std::fs::read_to_string(&home.config)
        .unwrap()
        .replace("command = ", "args = [\"--page-size\", \"5\"]\ncommand = ");
    std::fs::write(&home.config, text).unwrap();
    let output = home.warden(&["tools", "--no-daemon"]);
    assert!(stdout(&output).contains("old__echo"), "{}", stderr(&output));
    assert_eq!(probes(), 2, "{}", stderr(&output));
}
