//! `warden clients`, `import`, `install` and `uninstall` on a fake home
//! directory holding the config files of real clients (their structure as
//! each product documents it): install moves the servers into Warden's
//! config and leaves one `warden mcp` entry that really serves them;
//! uninstall puts the client's file back byte for byte; nothing is written
//! on a conflict, on `--dry-run`, or where a rewrite would lose comments.

#![allow(unused_crate_dependencies)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use common::{stderr, stdout, Home, LineClient};
use serde_json::{json, Value};
use warden_tests::{bins, scratch_dir};

/// A fake home directory; Warden's state and config live under it.
struct FakeHome {
    home: PathBuf,
    /// Stops the daemon an installed client's entry started.
    daemon: Home,
}

impl FakeHome {
    fn new(label: &str) -> FakeHome {
        let home = scratch_dir(label);
        let daemon = Home { dir: home.join("state"), config: home.join(".config/warden/warden.toml") };
        FakeHome { home, daemon }
    }

    fn put(&self, path: &str, text: &str) -> PathBuf {
        let path = self.home.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    fn warden(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_warden"))
            .args(args)
            .env("HOME", &self.home)
            .env("WARDEN_HOME", self.home.join("state"))
            .env("GITHUB_TOKEN", "ghp_not_used")
            .env_remove("XDG_CONFIG_HOME")
            .env_remove("XDG_STATE_HOME")
            .env_remove("WARDEN_CONFIG")
            .env_remove("CODEX_HOME")
            .env_remove("RUST_LOG")
            .output()
            .expect("warden runs")
    }

    fn config(&self) -> String {
        std::fs::read_to_string(&self.daemon.config).unwrap_or_default()
    }
}

fn test_server() -> String {
    bins::test_server().display().to_string()
}

fn claude_desktop() -> String {
    format!(
        r#"{{
  "globalShortcut": "Ctrl+Space",
  "mcpServers": {{
    "test": {{ "command": {server:?}, "args": ["--tools", "echo,add"] }},
    "github": {{
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {{ "GITHUB_PERSONAL_ACCESS_TOKEN": "${{GITHUB_TOKEN}}" }}
    }}
  }}
}}
"#,
        server = test_server()
    )
}

const CODEX: &str = r#"model = "o3"  # the model codex uses

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-mcp"]
env = { DOCS_TOKEN = "${DOCS_TOKEN}" }
tool_timeout_sec = 30

[mcp_servers.old]
command = "old-mcp"
enabled = false
"#;

const GOOSE: &str = "extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  fetch:
    args:
    - mcp-server-fetch
    cmd: uvx
    enabled: true
    envs: {}
    name: fetch
    timeout: 300
    type: stdio
GOOSE_MODEL: gpt-4o
";

const VSCODE: &str = r#"{
  "servers": {
    "memory": { "type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"] },
    "remote": { "type": "http", "url": "https://mcp.example.com/mcp" }
  }
}
"#;

#[test]
fn install_then_uninstall_leaves_each_clients_file_byte_identical() {
    let cases = [
        ("claude-desktop", ".config/Claude/claude_desktop_config.json", claude_desktop(), &["test", "github"][..]),
        ("cursor", ".cursor/mcp.json", claude_desktop(), &["test", "github"][..]),
        ("codex", ".codex/config.toml", CODEX.to_string(), &["docs"][..]),
        ("goose", ".config/goose/config.yaml", GOOSE.to_string(), &["fetch"][..]),
        ("vscode", ".config/Code/User/mcp.json", VSCODE.to_string(), &["memory", "remote"][..]),
    ];
    for (client, path, text, servers) in cases {
        let home = FakeHome::new(&format!("install-{client}"));
        let file = home.put(path, &text);
        let output = home.warden(&["install", client]);
        assert_eq!(output.status.code(), Some(0), "{client}: {}{}", stdout(&output), stderr(&output));
        assert!(stdout(&output).contains(&format!("warden uninstall {client}")), "{}", stdout(&output));
        let config = home.config();
        for server in servers {
            assert!(config.contains(&format!("[servers.{server}]")), "{client}: {server} moved:\n{config}");
        }
        let installed = std::fs::read_to_string(&file).unwrap();
        assert_ne!(installed, text);
        assert!(installed.contains("--config") && installed.contains("warden.toml"), "{client}:\n{installed}");
        for server in servers {
            assert!(
                !installed.contains(&format!("{server}:"))
                    && !installed.contains(&format!("\"{server}\""))
                    && !installed.contains(&format!(".{server}]")),
                "{client}: {server} is gone from the client:\n{installed}"
            );
        }
        let output = home.warden(&["clients"]);
        assert!(stdout(&output).contains("uses Warden (warden install)"), "{}", stdout(&output));

        let output = home.warden(&["uninstall", client]);
        assert_eq!(output.status.code(), Some(0), "{client}: {}", stderr(&output));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text, "{client}: byte-identical after uninstall");
        assert!(!file
            .with_file_name(format!("{}.warden-backup", file.file_name().unwrap().to_string_lossy()))
            .exists());
    }
}

#[test]
fn what_stays_in_the_client_stays_and_secrets_stay_references() {
    let home = FakeHome::new("install-keeps");
    let codex = home.put(".codex/config.toml", CODEX);
    let goose = home.put(".config/goose/config.yaml", GOOSE);
    assert_eq!(home.warden(&["install", "codex"]).status.code(), Some(0));
    assert_eq!(home.warden(&["install", "goose"]).status.code(), Some(0));
    let codex = std::fs::read_to_string(codex).unwrap();
    assert!(
        codex.starts_with("model = \"o3\"  # the model codex uses\n"),
        "codex's own settings and comments stay:\n{codex}"
    );
    assert!(
        codex.contains("[mcp_servers.old]\ncommand = \"old-mcp\"\nenabled = false"),
        "a disabled server stays:\n{codex}"
    );
    let goose = std::fs::read_to_string(goose).unwrap();
    assert!(goose.contains("developer:") && goose.contains("type: builtin"), "goose's built-ins stay:\n{goose}");
    assert!(goose.contains("GOOSE_MODEL: gpt-4o"), "{goose}");
    let config = home.config();
    assert!(config.contains("env = { DOCS_TOKEN = \"${DOCS_TOKEN}\" }"), "a reference stays a reference:\n{config}");
    assert!(!config.contains("[servers.old]") && !config.contains("[servers.developer]"), "{config}");
}

#[test]
fn an_installed_client_reaches_its_servers_through_its_one_warden_entry() {
    let home = FakeHome::new("install-serves");
    let file = home.put(".config/Claude/claude_desktop_config.json", &claude_desktop());
    // The test server's tools need approval without this.
    std::fs::create_dir_all(home.daemon.config.parent().unwrap()).unwrap();
    std::fs::write(&home.daemon.config, "[security]\nauto_approve = true\n").unwrap();
    let output = home.warden(&["install", "claude-desktop"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // What Claude Desktop now starts: its one entry.
    let installed: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    let servers = installed["mcpServers"].as_object().unwrap();
    assert_eq!(servers.keys().collect::<Vec<_>>(), ["warden"]);
    assert_eq!(installed["globalShortcut"], "Ctrl+Space", "the client's own settings stay");
    let entry = &servers["warden"];
    let args: Vec<&str> = entry["args"].as_array().unwrap().iter().map(|arg| arg.as_str().unwrap()).collect();
    let mut command = Command::new(entry["command"].as_str().unwrap());
    command
        .args(&args)
        .env("HOME", &home.home)
        .env("WARDEN_HOME", home.home.join("state"))
        .env("GITHUB_TOKEN", "ghp_not_used")
        .env_remove("WARDEN_CONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    let mut client = LineClient::spawn(command);
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "claude-ai", "version": "0"}}});
    client.send(&init.to_string());
    assert_eq!(client.answer(1)["result"]["serverInfo"]["name"], "warden");
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test__echo", "arguments": {"message": "through warden"}}});
    client.send(&call.to_string());
    assert_eq!(client.answer(2)["result"]["content"][0]["text"], "through warden");
    client.child.kill().unwrap();
    client.child.wait().unwrap();
}

#[test]
fn import_names_conflicts_writes_nothing_on_dry_run_and_reads_zeds_comments() {
    let home = FakeHome::new("import");
    home.put(".config/Claude/claude_desktop_config.json", &claude_desktop());
    let before = "# mine\n[servers.github]\ncommand = \"my-github\"\n";
    std::fs::create_dir_all(home.daemon.config.parent().unwrap()).unwrap();
    std::fs::write(&home.daemon.config, before).unwrap();

    let output = home.warden(&["import", "claude-desktop", "--dry-run"]);
    let printed = stdout(&output);
    assert!(printed.contains("! github"), "{printed}");
    assert!(printed.contains("+[servers.test]") && printed.contains("(dry run: nothing written)"), "{printed}");
    assert_eq!(home.config(), before);

    let output = home.warden(&["import", "claude-desktop"]);
    assert_eq!(output.status.code(), Some(1), "a conflict is a failure: {}", stdout(&output));
    let config = home.config();
    assert!(config.starts_with(before) && config.contains("[servers.test]"), "{config}");
    assert!(config.contains("command = \"my-github\""), "never overwritten:\n{config}");

    // Zed's settings.json has comments: read, but not rewritten.
    let zed = "// Zed settings\n{\n  \"theme\": \"One Dark\", // mine\n  \"context_servers\": {\n    \"ctx\": {\n      \"command\": \"ctx-mcp\",\n      \"args\": [],\n    },\n  },\n}\n";
    let zed_file = home.put(".config/zed/settings.json", zed);
    let output = home.warden(&["import", "zed"]);
    assert_eq!(output.status.code(), Some(0), "{}{}", stdout(&output), stderr(&output));
    assert!(home.config().contains("[servers.ctx]"), "{}", home.config());
    let output = home.warden(&["install", "zed"]);
    assert_ne!(output.status.code(), Some(0));
    assert!(
        stderr(&output).contains("holds comments, which rewriting it would lose; edit it by hand"),
        "{}",
        stderr(&output)
    );
    assert!(stderr(&output).contains("\"warden\""), "the entry to paste is shown: {}", stderr(&output));
    assert_eq!(std::fs::read_to_string(zed_file).unwrap(), zed);

    let output = home.warden(&["import", "nowhere"]);
    assert!(stderr(&output).contains("'nowhere' is neither a client (claude-desktop,"), "{}", stderr(&output));
}

#[test]
fn uninstall_will_not_overwrite_a_file_changed_since_install() {
    let home = FakeHome::new("uninstall-changed");
    let file = home.put(".cursor/mcp.json", &claude_desktop());
    assert_eq!(home.warden(&["install", "cursor"]).status.code(), Some(0));
    std::fs::write(&file, "{\"mcpServers\": {}}\n").unwrap();
    let output = home.warden(&["uninstall", "cursor"]);
    assert_eq!(output.status.code(), Some(1));
    assert!(stderr(&output).contains("changed since `warden install`"), "{}", stderr(&output));
    assert_eq!(home.warden(&["uninstall", "cursor", "--force"]).status.code(), Some(0));
    assert_eq!(std::fs::read_to_string(&file).unwrap(), claude_desktop());
    let output = home.warden(&["uninstall", "cursor"]);
    assert!(stderr(&output).contains("Warden is not installed in Cursor"), "{}", stderr(&output));
}
