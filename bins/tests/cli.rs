//! The `warden` command as a user runs it: what it prints on stdout and
//! stderr, and its exit code (0 ok, 1 a failed call or server, 2 bad usage
//! or config).
//!
//! These run the in-process mode (`--no-daemon`); `daemon.rs` runs the same
//! commands through the daemon.

// A test crate gets every dependency of the package; it uses few of them.
#![allow(unused_crate_dependencies)]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use warden_tests::{bins, scratch_dir};

/// A config file with the test server as `test` (plus `extra` TOML).
fn config_file(extra: &str) -> PathBuf {
    let path = scratch_dir("cli").join("warden.toml");
    let text = format!("[servers.test]\ncommand = {:?}\n{extra}", bins::test_server().display().to_string());
    std::fs::write(&path, text).unwrap();
    path
}

/// Config text that approves `unless_auto_approved` calls: the test server's
/// tools carry no annotations, so by default each call would need a person.
const AUTO_APPROVE: &str = "[security]\nauto_approve = true\n";

fn warden(args: &[&str], config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .arg("--no-daemon")
        .arg("--config")
        .arg(config)
        .env_remove("RUST_LOG")
        .env_remove("WARDEN_CONFIG")
        .output()
        .expect("warden runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn tools_lists_namespaced_names_with_descriptions() {
    let output = warden(&["tools"], &config_file(""));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 15, "{out}");
    assert_eq!(lines[0], "test__add         Adds `a` and `b`; answers the sum as text and as structuredContent.");
    assert!(lines.iter().any(|line| line.starts_with("test__echo  ")), "{out}");
    assert_eq!(lines[14], "14 tools");
    assert_eq!(stderr(&output), "");
}

#[test]
fn tools_json_carries_the_raw_tool_definitions() {
    let output = warden(&["tools", "--json"], &config_file(""));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let tools: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let add = tools.as_array().unwrap().iter().find(|tool| tool["name"] == "test__add").unwrap();
    assert_eq!(add["server"], "test");
    assert_eq!(add["tool"]["name"], "add");
    assert_eq!(add["tool"]["_meta"]["warden-test/owner"], "tests");
    assert_eq!(add["tool"]["annotations"]["readOnlyHint"], true);
}

#[test]
fn call_prints_the_result_text() {
    let output = warden(&["call", "test__echo", r#"{"message":"hello there"}"#], &config_file(AUTO_APPROVE));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "hello there\n");
}

#[test]
fn call_json_prints_the_raw_result() {
    let output = warden(&["call", "test__add", r#"{"a":2,"b":3}"#, "--json"], &config_file(""));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(
        result,
        serde_json::json!({"content": [{"type": "text", "text": "5"}], "structuredContent": {"sum": 5}})
    );
}

#[test]
fn a_tool_error_prints_its_text_and_exits_1() {
    let output = warden(&["call", "test__fail", r#"{"message":"disk full"}"#], &config_file(AUTO_APPROVE));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "Error: disk full\n");
}

#[test]
fn an_image_is_summarised_not_dumped() {
    let output = warden(&["call", "test__image"], &config_file(AUTO_APPROVE));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "a 1x1 PNG image follows\n[image image/png: ~70 bytes]\n");
}

#[test]
fn a_call_that_needs_approval_is_refused_when_nobody_can_give_it() {
    let output = warden(&["call", "test__echo", r#"{"message":"hi"}"#], &config_file(""));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "error: 'test__echo' was not run: it needs approval ('test__echo' is medium risk (Warden default); its \
         approval is 'unless_auto_approved' (Warden default), auto-approval is off and no grant covers it) and no \
         approver is attached; attach an approver, or set its approval to \"never\" in security.tool_policies; the \
         daemon (any `warden` command without --no-daemon) queues such calls for `warden approve ID`\n"
    );
}

#[test]
fn a_pinned_policy_lets_a_tool_run_unasked() {
    let pinned = "[security.tool_policies.test__echo]\napproval = \"never\"\n";
    let output = warden(&["call", "test__echo", r#"{"message":"pinned"}"#], &config_file(pinned));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stdout(&output), "pinned\n");
}

#[test]
fn an_unknown_tool_exits_1_and_says_how_to_find_tools() {
    let output = warden(&["call", "nope__tool"], &config_file(""));
    assert_eq!(output.status.code(), Some(1));
    assert_eq!(stdout(&output), "");
    assert_eq!(
        stderr(&output),
        "error: unknown tool 'nope__tool': no running server lists it; `warden tools` lists the tools available\n"
    );
}

#[test]
fn arguments_that_are_not_a_json_object_exit_2() {
    let config = config_file("");
    let output = warden(&["call", "test__echo", "[1,2]"], &config);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(
        stderr(&output),
        "error: the arguments must be a JSON object such as '{\"message\":\"hi\"}', not an array\n"
    );
    let output = warden(&["call", "test__echo", "{message: hi}"], &config);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        stderr(&output).starts_with("error: the arguments are not JSON (key must be a string"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_config_error_names_the_file_and_the_field_and_exits_2() {
    let config = config_file("comand = \"typo\"\n");
    let output = warden(&["tools"], &config);
    assert_eq!(output.status.code(), Some(2));
    let error = stderr(&output);
    assert!(
        error.starts_with(&format!("error: config file '{}': unknown field `comand`", config.display())),
        "{error}"
    );
    assert_eq!(stdout(&output), "");
}

/// `warden` with no config anywhere: no `--config`, no `WARDEN_CONFIG`, an
/// empty XDG directory, and a state directory of its own (no daemon).
fn without_config(args: &[&str]) -> (Output, PathBuf) {
    let home = scratch_dir("no-config");
    let output = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(args)
        .env_remove("WARDEN_CONFIG")
        .env_remove("RUST_LOG")
        .env("XDG_CONFIG_HOME", home.join("config"))
        .env("HOME", &home)
        .env("WARDEN_HOME", home.join("state"))
        .output()
        .unwrap();
    (output, home)
}

fn no_config_notice(home: &Path) -> String {
    let place = home.join("config/warden/warden.toml");
    format!(
        "no config file found (looked at --config, $WARDEN_CONFIG and {0}); create {0} with a [servers.NAME] table \
         — see examples/warden.toml\n",
        place.display()
    )
}

#[test]
fn no_config_is_no_tools_said_on_stderr_with_how_to_add_one() {
    for args in [&["tools", "--no-daemon"][..], &["tools"]] {
        let (output, home) = without_config(args);
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        assert_eq!(stdout(&output), "0 tools\n", "{args:?}");
        assert_eq!(stderr(&output), no_config_notice(&home), "{args:?}");
        assert!(!home.join("state/daemon.json").exists(), "{args:?}: no daemon is started for no servers");
    }
}

#[test]
fn the_xdg_config_is_used_when_none_is_given() {
    let home = scratch_dir("xdg-config");
    let text = format!("[servers.test]\ncommand = {:?}\n", bins::test_server().display().to_string());
    std::fs::create_dir_all(home.join("config/warden")).unwrap();
    std::fs::write(home.join("config/warden/warden.toml"), text).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["tools", "--no-daemon"])
        .env_remove("WARDEN_CONFIG")
        .env_remove("RUST_LOG")
        .env("XDG_CONFIG_HOME", home.join("config"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stdout(&output).ends_with("14 tools\n"), "{}", stdout(&output));
}

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/formats").canonicalize().unwrap()
}

fn config_check(args: &[&str], config: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_warden"))
        .args(["config", "check"])
        .args(args)
        .arg("--config")
        .arg(config)
        .env_remove("WARDEN_CONFIG")
        .env("EXAMPLE_TOKEN", "t0k3n-never-shown")
        .output()
        .unwrap()
}

#[test]
fn config_check_prints_the_servers_where_each_came_from_and_no_secret() {
    let dir = examples().join("drop-ins");
    let output = config_check(&[], &dir.join("warden.toml"));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let d = dir.display();
    assert_eq!(
        stdout(&output),
        format!(
            "{d}/warden.toml: valid, 3 servers
server 'everything' (from {d}/warden.toml)
  command: npx
  args: [\"-y\",\"@modelcontextprotocol/server-everything@2026.8.31\",\"stdio\"]
  env.LOG_LEVEL: ***
server 'files' (from {d}/servers.d/files.yaml)
  command: npx
  args: [\"-y\",\"@modelcontextprotocol/server-filesystem@2026.8.31\",\"examples\"]
  default_policy: risk = \"medium\", approval = \"unless_auto_approved\"
server 'remote' (from {d}/servers.d/30-remote.json)
  url: https://mcp.example.com/v1
  headers.Authorization: ***${{EXAMPLE_TOKEN}}
  default_policy: risk = \"low\", approval = \"never\"
"
        )
    );
    assert_eq!(stderr(&output), "");
}

#[test]
fn config_check_json_is_the_same_for_every_format() {
    let parse = |file: &str| {
        let output = config_check(&["--json"], &examples().join(file));
        assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
        let mut all: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(!stdout(&output).contains("t0k3n"), "{file}: a secret is shown");
        for server in all["servers"].as_array_mut().unwrap() {
            server.as_object_mut().unwrap().remove("origin");
        }
        all["servers"].take()
    };
    let canonical = parse("warden.toml");
    assert_eq!(canonical[2]["name"], "remote");
    assert_eq!(canonical[2]["headers"]["Authorization"], "***${EXAMPLE_TOKEN}");
    assert_eq!(canonical[0]["env"]["LOG_LEVEL"], "***");
    for file in ["warden.yaml", "mcp_servers.yaml", "mcpServers.json", "drop-ins/warden.toml"] {
        assert_eq!(parse(file), canonical, "{file}");
    }
}

#[test]
fn config_check_exits_2_on_an_invalid_config_and_says_why() {
    let dir = scratch_dir("check-invalid");
    let config = dir.join("warden.json");
    std::fs::write(&config, r#"{"mcpServers": {"old": {"type": "websocket", "url": "ws://h/ws"}}}"#).unwrap();
    let expected = format!(
        "config file '{}', server 'old': `type` \"websocket\" is not supported; Warden runs \"stdio\" servers \
         (with `command`), \"http\" or \"streamable-http\" servers (Streamable HTTP, with `url`) and \"sse\" \
         servers (legacy HTTP+SSE, with `url`)",
        config.canonicalize().unwrap().display()
    );
    let output = config_check(&[], &config);
    assert_eq!(output.status.code(), Some(2));
    assert_eq!(stderr(&output), format!("error: {expected}\n"));
    assert_eq!(stdout(&output), "");

    let output = config_check(&["--json"], &config);
    assert_eq!(output.status.code(), Some(2));
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(answer, serde_json::json!({"valid": false, "error": expected}));
}

#[test]
fn config_check_without_a_config_says_so_and_exits_0() {
    let (output, home) = without_config(&["config", "check"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert_eq!(stderr(&output), no_config_notice(&home));
    assert_eq!(stdout(&output), "");
}

#[test]
fn status_shows_each_server_and_exits_1_when_one_failed() {
    let server = bins::test_server().display().to_string();
    let config = config_file(&format!(
        "[servers.broken]\ncommand = {server:?}\nargs = [\"--exit-at-start\", \"4\"]\nmax_restarts = 0\n"
    ));
    let output = warden(&["status"], &config);
    assert_eq!(output.status.code(), Some(1));
    let out = stdout(&output);
    let (failed, running) = out.split_once("test    running").expect("the test server's line");
    assert_eq!(
        failed,
        "broken  failed: it stopped before it was ready: the server process exited with code 4; its last stderr lines:\n  \
         warden-test-server 0.1.0 starting\n  about to exit with code 4 (--exit-at-start)\n  fatal: exiting at start as asked\n"
    );
    // The running server's line: tools, protocol, its process and uptime.
    let rest = running.strip_prefix(", 14 tools, protocol 2025-11-25, pid ").expect(&out);
    let (pid, uptime) = rest.split_once(", up ").expect(&out);
    assert!(pid.parse::<u32>().is_ok(), "{out}");
    assert!(uptime.ends_with(" s\n") && uptime.len() <= 8, "{out}");

    // `tools` still lists the healthy server, and warns about the other.
    let output = warden(&["tools"], &config);
    assert_eq!(output.status.code(), Some(0));
    assert!(stdout(&output).ends_with("14 tools\n"));
    assert!(
        stderr(&output).starts_with("warning: server 'broken' failed: it stopped before it was ready"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_server_restarting_on_start_is_reported_while_the_command_waits() {
    let server = bins::test_server().display().to_string();
    let config = config_file(&format!(
        "[servers.broken]\ncommand = {server:?}\nargs = [\"--exit-at-start\", \"3\"]\nmax_restarts = 1\nrestart_delay_secs = 2.5\n"
    ));
    let output = warden(&["tools"], &config);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let error = stderr(&output);
    // The wait before the restart is 2.5 s; it is reported within a second.
    assert!(error.starts_with("warden: ↻ broken"), "{error}");
    assert!(error.contains("restarting (attempt 1 of 1, next in "), "{error}");
    assert!(
        error.contains(" s) after: it stopped before it was ready: the server process exited with code 3"),
        "{error}"
    );
    assert!(error.contains("warning: server 'broken' failed: "), "{error}");
    assert!(error.contains("(gave up after 1 restart in a row)"), "{error}");
}

#[test]
fn status_json_is_machine_readable() {
    let output = warden(&["status", "--json"], &config_file(""));
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let statuses: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(statuses[0]["name"], "test");
    assert_eq!(statuses[0]["state"], "running");
    assert_eq!(statuses[0]["tools"], 14);
    assert_eq!(statuses[0]["error"], serde_json::Value::Null);
    assert_eq!(statuses[0]["last_error"], serde_json::Value::Null);
}

#[test]
fn tools_policy_shows_each_field_and_the_layer_it_came_from() {
    let config = config_file(
        "default_policy = { timeout = 30 }\n[security.tool_policies.test__echo]\napproval = \"always\"\nleaks = \"block\"\n",
    );
    let output = warden(&["tools", "--policy"], &config);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let out = stdout(&output);
    let line = |name: &str| out.lines().find(|line| line.starts_with(&format!("{name} "))).unwrap().to_string();
    let squeeze = |line: String| line.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(
        squeeze(line("test__add")),
        "test__add risk low [annotations] approval never [annotations] timeout 30 s [default_policy] leaks redact [default]"
    );
    assert_eq!(
        squeeze(line("test__echo")),
        "test__echo risk medium [default] approval always [security.tool_policies] timeout 30 s [default_policy] leaks \
         block [security.tool_policies]"
    );
    assert!(out.ends_with("14 tools\n"), "{out}");

    let output = warden(&["tools", "--policy", "--json"], &config);
    let rows: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let echo = rows.as_array().unwrap().iter().find(|row| row["name"] == "test__echo").unwrap();
    assert_eq!(echo["policy"]["approval"], serde_json::json!({"value": "always", "source": "tool_override"}));
    assert_eq!(echo["policy"]["timeout"], serde_json::json!({"value": 30.0, "source": "server_default"}));
}

#[test]
fn completions_for_three_shells_and_a_man_page_are_generated_from_the_commands() {
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_warden")).args(args).output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{args:?}: {}", stderr(&output));
        stdout(&output)
    };
    let bash = run(&["completions", "bash"]);
    assert!(bash.starts_with("_warden() {") && bash.contains("complete -F _warden"), "{bash}");
    let zsh = run(&["completions", "zsh"]);
    assert!(zsh.starts_with("#compdef warden"), "{zsh}");
    let fish = run(&["completions", "fish"]);
    assert!(fish.contains("complete -c warden"), "{fish}");
    for script in [&bash, &zsh, &fish] {
        for command in ["login", "approve", "completions", "no-daemon"] {
            assert!(script.contains(command), "{command} missing");
        }
    }
    let man = run(&["man"]);
    assert!(man.contains(".TH warden 1"), "{man}");
    assert!(man.contains("warden\\-login") || man.contains("login"), "{man}");
    let output = Command::new(env!("CARGO_BIN_EXE_warden")).args(["completions", "tcsh"]).output().unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("invalid value 'tcsh'"), "{}", stderr(&output));
}

/// A command's arguments are built only when it is the one run (clap's
/// `defer`): its help still starts with its own description and lists
/// every option, a mistake still exits 2 naming the option and the
/// command, and completions still know `warden help config check`.
#[test]
fn a_command_s_help_and_mistakes_show_its_own_description_and_options() {
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_warden")).args(args).env_remove("WARDEN_CONFIG").output().unwrap()
    };
    let top = stdout(&run(&["--help"]));
    for command in ["tools", "call", "approve", "service", "config", "serve", "mcp"] {
        assert!(top.contains(&format!("\n  {command} ")), "{command} missing from:\n{top}");
    }
    let call = stdout(&run(&["call", "--help"]));
    assert!(call.starts_with("Call one tool by its namespaced name"), "{call}");
    for option in ["<NAME>", "[ARGUMENTS]", "--config <FILE>", "--json", "--no-daemon", "--verbose"] {
        assert!(call.contains(option), "{option} missing from:\n{call}");
    }
    let check = stdout(&run(&["config", "check", "--help"]));
    assert!(check.starts_with("Read and check the config"), "{check}");
    let mistake = run(&["approve", "a1", "--grnt"]);
    assert_eq!(mistake.status.code(), Some(2));
    let said = stderr(&mistake);
    assert!(said.contains("unexpected argument '--grnt'") && said.contains("Usage: warden approve"), "{said}");
    let bash = stdout(&run(&["completions", "bash"]));
    assert!(bash.contains("warden__subcmd__help__subcmd__config__subcmd__check"), "no `warden help config check`");
}

#[test]
fn find_ranks_tools_by_what_is_wanted_and_keeps_to_the_agents_allowlist() {
    let agent = "[[agents]]\nname = \"talker\"\nallowed_tools = [\"test__echo\"]\n";
    let config = config_file(agent);
    let output = warden(&["find", "the sum of two numbers", "--json"], &config);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let found: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(found[0]["name"], "test__add", "{found}");
    let scores: Vec<f64> = found.as_array().unwrap().iter().map(|tool| tool["score"].as_f64().unwrap()).collect();
    assert!(scores.windows(2).all(|pair| pair[0] >= pair[1]), "best first: {scores:?}");
    let text = stdout(&warden(&["find", "send a message back", "--limit", "1"], &config));
    assert!(text.starts_with("test__echo  ") && text.lines().count() == 1, "{text}");
    let talker = warden(&["find", "the sum of two numbers", "--agent", "talker", "--json"], &config);
    let found: serde_json::Value = serde_json::from_slice(&talker.stdout).unwrap();
    assert!(found.as_array().unwrap().iter().all(|tool| tool["name"] == "test__echo"), "{found}");
}
