//! OAuth as a person meets it on the command line: `warden status` names
//! the login to run, `warden login` (with `$BROWSER`, or `--no-browser`
//! and the URL opened by hand) saves tokens and the daemon's server starts
//! without a restart, `warden logout` revokes, a one-shot command logs in
//! by itself and steps up for scope (bounded), and no token ever reaches a
//! log line. Against `warden_tests::oauth_server`.

#![allow(unused_crate_dependencies)]

mod common;

use std::process::{Command, Output, Stdio};

use common::{stderr, stdout, Home};
use warden_tests::oauth_server::{OAuthServer, Options};

fn home(label: &str, server: &OAuthServer) -> Home {
    let home = Home::new(label);
    let text = format!("[security]\nauto_approve = true\n[servers.remote]\nurl = \"{}\"\n", server.mcp_url());
    std::fs::write(&home.config, text).unwrap();
    home
}

/// `warden ARGS --config CONFIG` with no terminal on stdin and, when
/// `browser` is set, the test browser as `$BROWSER`.
fn run(home: &Home, args: &[&str], browser: bool) -> Output {
    let mut command: Command = home.command(args);
    command.arg("--config").arg(&home.config).stdin(Stdio::null()).env_remove("BROWSER");
    if browser {
        command.env("BROWSER", warden_tests::bins::test_browser());
    }
    command.output().expect("warden runs")
}

fn both(output: &Output) -> String {
    format!("{}{}", stdout(output), stderr(output))
}

/// Every token the server issued or was shown.
fn tokens(server: &OAuthServer) -> Vec<String> {
    let seen = server.seen();
    let mut tokens: Vec<String> =
        seen.mcp_authorizations.iter().filter_map(|a| a.strip_prefix("Bearer ")).map(String::from).collect();
    for request in &seen.token_requests {
        tokens.extend(["refresh_token", "code", "code_verifier"].iter().filter_map(|k| request.get(*k).cloned()));
    }
    assert!(!tokens.is_empty());
    tokens
}

#[test]
fn the_daemon_waits_for_warden_login_and_its_server_starts_without_a_restart() {
    let server = OAuthServer::start(Options::default());
    let home = home("oauth-daemon", &server);
    // The daemon starts (RUST_LOG reaches it: everything it logs is kept).
    let output = home.command(&["status"]).arg("--config").arg(&home.config).env("RUST_LOG", "trace").output().unwrap();
    assert_eq!(output.status.code(), Some(1), "{}", both(&output));
    let text = stdout(&output);
    assert!(
        text.contains("remote  needs a login: the server asks for authorization — run `warden login remote`"),
        "{text}"
    );
    let daemon = home.daemon_pid();

    let output = run(&home, &["login", "remote"], true);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let said = stderr(&output);
    for step in [
        "asking http://127.0.0.1:",
        "discovering its authorization server",
        "registering Warden with",
        "opening the browser at:",
        "waiting up to 5 min for the browser to come back to http://127.0.0.1:",
        "exchanging the code for tokens",
        "logged in to 'remote' at",
        "telling the running daemon to connect 'remote' again",
    ] {
        assert!(said.contains(step), "«{step}» missing from:\n{said}");
    }
    assert_eq!(stdout(&output).trim(), "'remote' is running with 4 tools");
    assert_eq!(home.daemon_pid(), daemon, "the same daemon");
    assert!(home.call("remote__whoami", "{}").starts_with("client client-"));

    let log = home.log();
    assert!(log.len() > 1000, "the daemon logged at trace level");
    for token in tokens(&server) {
        assert!(!log.contains(&token), "a token is in daemon.log");
        assert!(!both(&output).contains(&token), "a token is in the login's output");
    }

    let output = run(&home, &["logout", "remote"], false);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    let revoke = format!("{}/revoke", server.origin);
    assert_eq!(stdout(&output).trim(), format!("logged out of 'remote': tokens revoked at {revoke} and forgotten"));
    assert_eq!(server.seen().revoked.len(), 1);
    let output = run(&home, &["call", "remote__whoami", "{}"], false);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("run `warden login remote`"), "{}", both(&output));
    let _ = run(&home, &["stop"], false);
}

#[test]
fn no_browser_prints_the_url_and_waits_for_it_to_be_opened_anywhere() {
    let server = OAuthServer::start(Options::default());
    let home = home("oauth-no-browser", &server);
    let mut child = home
        .command(&["login", "remote", "--no-browser", "--no-daemon"])
        .arg("--config")
        .arg(&home.config)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut said = String::new();
    let url = loop {
        let mut line = String::new();
        assert!(std::io::BufRead::read_line(&mut stderr, &mut line).unwrap() > 0, "no URL in:\n{said}");
        said += &line;
        if let Some(url) = line.trim().strip_prefix(&format!("{}/authorize?", server.origin)) {
            break format!("{}/authorize?{url}", server.origin);
        }
    };
    assert!(said.contains("open this URL in a browser (on any machine) to log in:"), "{said}");
    warden_tests::browser::follow(&url).expect("the person opens it");
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(0), "{said}{}", String::from_utf8_lossy(&output.stdout));
    assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "'remote' is running with 4 tools");
}

#[test]
fn a_one_shot_command_logs_in_by_itself_and_steps_up_for_scope_a_bounded_number_of_times() {
    let server = OAuthServer::start(Options::default());
    let home = home("oauth-one-shot", &server);
    // Nobody there: it says what to run and does not wait.
    let output = run(&home, &["call", "remote__whoami", "{}", "--no-daemon"], false);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains(
            "server 'remote' needs a login: run `warden login remote` (no terminal or $BROWSER to do it here)"
        ),
        "{}",
        both(&output)
    );
    // A browser: it logs in, then calls; `admin` needs a second login for its scope.
    let output = run(&home, &["call", "remote__admin", "{}", "--no-daemon"], true);
    assert_eq!(output.status.code(), Some(0), "{}", both(&output));
    assert_eq!(stdout(&output).trim(), "admin ok");
    assert!(stderr(&output).contains("logging in to 'remote' for it"), "{}", both(&output));
    assert_eq!(server.seen().authorizations.len(), 2);
    // A server that keeps asking: refused after two step-ups.
    server.change(|options| options.always_insufficient = true);
    let output = run(&home, &["call", "remote__admin", "{}", "--no-daemon"], true);
    assert_eq!(output.status.code(), Some(1));
    assert!(
        stderr(&output).contains("(still refused after 2 logins for more scope; the server keeps asking)"),
        "{}",
        both(&output)
    );
    assert_eq!(server.seen().authorizations.len(), 4);
}

#[test]
fn an_mcp_client_is_told_which_server_needs_a_login_and_nothing_hangs() {
    use std::io::{BufRead as _, BufReader, Write as _};
    let server = OAuthServer::start(Options::default());
    let home = home("oauth-front", &server);
    let mut child = home
        .command(&["mcp", "--no-daemon"])
        .arg("--config")
        .arg(&home.config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let told = std::cell::RefCell::new(Vec::<serde_json::Value>::new());
    // Sends a request and reads up to its answer, keeping the warnings.
    let mut request = |id: u64, method: &str, params: serde_json::Value| -> serde_json::Value {
        let line = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{line}").unwrap();
        loop {
            let mut text = String::new();
            assert!(stdout.read_line(&mut text).unwrap() > 0, "warden mcp ended");
            let message: serde_json::Value = serde_json::from_str(&text).unwrap();
            if message["id"] == id {
                return message;
            }
            if message["method"] == "notifications/message" {
                told.borrow_mut().push(message["params"].clone());
            }
        }
    };
    let started = std::time::Instant::now();
    let params = serde_json::json!({"protocolVersion": "2025-11-25", "capabilities": {},
                                    "clientInfo": {"name": "t", "version": "1"}});
    let init = request(1, "initialize", params);
    let instructions = init["result"]["instructions"].as_str().unwrap().to_string();
    let expected = "remote (needs a login: run `warden login remote`; its tools are absent until then)";
    if !instructions.contains(expected) {
        // Not settled at `initialize`: a warning says so as soon as it is.
        assert!(instructions.contains("remote (starting)"), "{instructions}");
        let mut id = 10;
        while !told.borrow().iter().any(|params| params["logger"] == "warden") {
            assert!(started.elapsed() < std::time::Duration::from_secs(10), "no warning came");
            id += 1;
            request(id, "ping", serde_json::json!({}));
        }
        let warning = told.borrow().iter().find(|params| params["logger"] == "warden").cloned().unwrap();
        assert_eq!(warning["level"], "warning");
        assert_eq!(
            warning["data"],
            "server 'remote' needs a login: run `warden login remote`; its tools are absent until then"
        );
    }
    let tools = request(2, "tools/list", serde_json::json!({}));
    assert_eq!(tools["result"]["tools"], serde_json::json!([]));
    let call = request(3, "tools/call", serde_json::json!({"name": "remote__whoami", "arguments": {}}));
    assert!(call.to_string().contains("run `warden login remote`"), "{call}");
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "nothing waited");
    drop(request);
    drop(stdin);
    // `warden mcp` ends when its client closes stdin (it used to wait forever).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if std::time::Instant::now() > deadline {
            let _ = child.kill();
            panic!("warden mcp did not end within 10 s of its stdin closing");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert!(status.success());
}
