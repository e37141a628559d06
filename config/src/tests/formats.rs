//! YAML, JSON, the foreign server-list shapes and drop-ins: the shipped
//! examples load to the same servers, and every error says where and what.

use super::*;

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/formats")
}

fn token(name: &str) -> Option<String> {
    (name == "EXAMPLE_TOKEN").then(|| "t0k3n".to_string())
}

/// A fresh directory of its own under the temp directory.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("warden-formats-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// The error text of loading `path`.
fn error_of(path: &Path) -> String {
    WardenConfig::load_with(path, &token).unwrap_err().to_string()
}

/// The servers, without where each came from (which differs by file).
fn servers_of(path: &Path) -> BTreeMap<String, ServerConfig> {
    let config = WardenConfig::load_with(path, &token).unwrap_or_else(|error| panic!("{error}"));
    config.servers.into_iter().map(|(name, server)| (name, ServerConfig { origin: None, ..server })).collect()
}

#[test]
fn every_format_and_shape_loads_to_the_same_servers() {
    let canonical = servers_of(&examples().join("warden.toml"));
    assert_eq!(canonical.keys().collect::<Vec<_>>(), ["everything", "files", "remote"]);
    let everything = &canonical["everything"];
    assert_eq!(everything.command.as_deref(), Some("npx"));
    assert_eq!(everything.args, ["-y", "@modelcontextprotocol/server-everything@2026.8.31", "stdio"]);
    assert_eq!(everything.env, BTreeMap::from([("LOG_LEVEL".to_string(), "info".to_string())]));
    assert_eq!(everything.startup_timeout(), Duration::from_secs(120));
    let files = &canonical["files"];
    assert_eq!(files.default_policy.unwrap().risk, Some(Risk::Medium));
    assert_eq!(files.default_policy.unwrap().approval, Some(Approval::UnlessAutoApproved));
    let remote = &canonical["remote"];
    assert_eq!(remote.url.as_deref(), Some("https://mcp.example.com/v1"));
    assert_eq!(remote.headers, BTreeMap::from([("Authorization".to_string(), "Bearer t0k3n".to_string())]));
    assert_eq!(remote.masked.headers["Authorization"], "***${EXAMPLE_TOKEN}");
    assert_eq!(remote.default_policy.unwrap().approval, Some(Approval::Never));

    for other in ["warden.yaml", "mcp_servers.yaml", "mcpServers.json", "drop-ins/warden.toml", "codex.toml"] {
        assert_eq!(servers_of(&examples().join(other)), canonical, "{other} differs from warden.toml");
    }
}

#[test]
fn each_server_remembers_the_file_it_came_from() {
    let config = WardenConfig::load_with(&examples().join("drop-ins/warden.toml"), &token).unwrap();
    let origin = |name: &str| config.servers[name].origin.clone().unwrap();
    let dir = examples().join("drop-ins");
    assert_eq!(origin("everything"), dir.join("warden.toml"));
    assert_eq!(origin("files"), dir.join("servers.d/files.yaml"));
    assert_eq!(origin("remote"), dir.join("servers.d/30-remote.json"));
}

#[test]
fn a_drop_in_named_twice_is_an_error_naming_both_files() {
    let dir = scratch("twice-inline");
    let config = write(&dir, "warden.toml", "mcp_server_dir = \"d\"\n[servers.git]\ncommand = \"git-mcp\"\n");
    let drop_in = write(&dir, "d/git.yaml", "command: other\n");
    assert_eq!(
        error_of(&config),
        format!(
            "server 'git' is defined twice: in '{}' and in '{}'; server names must be unique",
            config.display(),
            drop_in.display()
        )
    );

    let dir = scratch("twice-drop-ins");
    let config = write(&dir, "warden.toml", "mcp_server_dir = \"d\"\n");
    let first = write(&dir, "d/a.toml", "name = \"git\"\ncommand = \"git-mcp\"\n");
    let second = write(&dir, "d/git.json", "{\"command\": \"git-mcp\"}");
    assert_eq!(
        error_of(&config),
        format!(
            "server 'git' is defined twice: in '{}' and in '{}'; server names must be unique",
            first.display(),
            second.display()
        )
    );
}

#[test]
fn a_name_in_two_sections_of_one_file_is_an_error() {
    let dir = scratch("twice-sections");
    let config = write(
        &dir,
        "warden.json",
        r#"{"mcp_servers": [{"name": "git", "command": "a"}], "mcpServers": {"git": {"command": "b"}}}"#,
    );
    assert_eq!(
        error_of(&config),
        format!(
            "server 'git' is defined twice: in '{0}' (`mcp_servers`) and in '{0}' (`mcpServers`); server names must \
             be unique",
            config.display()
        )
    );
}

#[test]
fn every_shape_error_names_the_file_the_server_and_the_field() {
    let dir = scratch("shape-errors");
    let cases = [
        (
            r#"{"mcpServers": {"old": {"type": "websocket", "url": "ws://h/ws"}}}"#,
            "server 'old': `type` \"websocket\" is not supported; Warden runs \"stdio\" servers (with `command`), \
             \"http\" or \"streamable-http\" servers (Streamable HTTP, with `url`) and \"sse\" servers (legacy \
             HTTP+SSE, with `url`)",
        ),
        (
            r#"{"mcpServers": {"old": {"type": "sse", "url": "http://h/sse", "transport": "auto"}}}"#,
            "server 'old': `type` is \"sse\" (the legacy HTTP+SSE transport) but `transport` says otherwise; keep \
             one of them",
        ),
        (
            r#"{"mcpServers": {"a": {"type": "stdio", "url": "http://h/mcp"}}}"#,
            "server 'a': `type` is \"stdio\", which needs `command` (and no `url`); for a remote server write \
             `type = \"http\"` with `url`",
        ),
        (
            r#"{"mcpServers": {"a": {"type": "streamable-http", "command": "x"}}}"#,
            "server 'a': `type` is \"streamable-http\", which needs `url` (and no `command`); for a local server \
             write `type = \"stdio\"` with `command`",
        ),
        (
            r#"{"mcpServers": {"a": {"type": 1, "command": "x"}}}"#,
            "server 'a': `type` must be a string, not an integer",
        ),
        (
            r#"{"mcpServers": {"a": "npx server"}}"#,
            "server 'a': must be a table of settings (`command` or `url`, …), not a string",
        ),
        (r#"{"mcpServers": ["a"]}"#, "`mcpServers` must be a map of servers by name, not a list"),
        (
            r#"{"mcp_servers": [{"command": "x"}]}"#,
            "server 'mcp_servers[0]': has no `name`; every entry of `mcp_servers` needs one (it prefixes the \
             server's tools)",
        ),
        (
            r#"{"mcp_servers": [{"name": 7, "command": "x"}]}"#,
            "server 'mcp_servers[0]': `name` must be a string, not an integer",
        ),
        (
            r#"{"mcp_servers": 3}"#,
            "`mcp_servers` must be a list of servers, each with a `name`, or codex's tables by name, not an integer",
        ),
        (
            r#"{"mcp_servers": {"a": {"command": "x", "disabled_tools": ["[rm"]}}}"#,
            "server 'a': `disabled_tools`: tool pattern '[rm' is not a valid glob (unclosed character class; missing \
             ']'); use an exact name or '*', '?', '[...]', e.g. 'fs__*'",
        ),
        (
            r#"{"mcp_servers": {"a": {"url": "http://h", "bearer_token_env_var": 3}}}"#,
            "server 'a': `bearer_token_env_var` must name an environment variable, not an integer",
        ),
        (
            r#"{"mcp_servers": {"a": {"command": "x", "startup_timeout_sec": 5, "startup_timeout_secs": 5}}}"#,
            "server 'a': has both `startup_timeout_sec` (codex) and `startup_timeout_secs` (Warden); keep one",
        ),
        (
            r#"{"mcp_servers": [{"name": "a", "url": "ftp://h"}]}"#,
            "server 'a': `url` must be an http:// or https:// address of the server's MCP endpoint, not \"ftp://h\"",
        ),
        (r#"{"servers": ["a"]}"#, "`servers` must be a table of servers by name, not a list"),
        (r#"{"mcp_server_dir": 3}"#, "`mcp_server_dir` must be the path of a directory, not an integer"),
    ];
    for (text, expected) in cases {
        let path = write(&dir, "warden.json", text);
        let error = error_of(&path);
        let file = path.display();
        assert!(error.starts_with(&format!("config file '{file}'")), "for {text}\n  got: {error}");
        assert!(error.ends_with(expected), "for {text}\n  got: {error}\n  expected: {expected}");
    }
}

#[test]
fn an_unknown_field_in_a_foreign_shape_is_the_schema_error() {
    let dir = scratch("unknown-field");
    let path = write(&dir, "warden.yaml", "mcp_servers:\n  - name: a\n    comand: x\n");
    let error = error_of(&path);
    assert!(error.starts_with(&format!("config file '{}': unknown field `comand`", path.display())), "{error}");
    assert!(error.contains("servers.a"), "{error}");
}

#[test]
fn a_drop_in_error_names_the_drop_in() {
    let dir = scratch("drop-in-errors");
    let config = write(&dir, "warden.toml", "mcp_server_dir = \"d\"\n");
    let drop_in = write(&dir, "d/git.toml", "comand = \"x\"\n");
    let error = error_of(&config);
    assert!(
        error.starts_with(&format!("config file '{}', server 'git': unknown field `comand`", drop_in.display())),
        "{error}"
    );

    write(&dir, "d/git.toml", "args = [\"x\"]\n");
    assert_eq!(
        error_of(&config),
        format!(
            "config file '{}', server 'git': has neither `command` nor `url`; set `command` for a local (stdio) \
             server or `url` for a remote (HTTP) one",
            drop_in.display()
        )
    );

    write(&dir, "d/git.toml", "name = \"git\"\ntype = \"websocket\"\nurl = \"http://h\"\n");
    assert!(error_of(&config)
        .starts_with(&format!("config file '{}', server 'git': `type` \"websocket\"", drop_in.display())));

    write(&dir, "d/git.toml", "command = [\n");
    assert!(error_of(&config).starts_with(&format!("config file '{}': ", drop_in.display())), "{}", error_of(&config));
}

#[test]
fn a_missing_drop_in_directory_is_an_error() {
    let dir = scratch("no-drop-in-dir");
    let config = write(&dir, "warden.toml", "mcp_server_dir = \"nowhere\"\n");
    let error = error_of(&config);
    let expected = format!(
        "config file '{}': `mcp_server_dir` is '{}', which cannot be read as a directory: No such file or directory",
        config.display(),
        dir.join("nowhere").display()
    );
    assert!(error.starts_with(&expected), "{error}");
}

#[test]
fn the_config_file_is_found_given_then_from_the_environment_then_in_xdg() {
    let dir = scratch("discovery");
    let xdg = write(&dir, "xdg/warden/warden.toml", "[servers.xdg]\ncommand = \"x\"\n");
    let named = write(&dir, "named.yaml", "servers:\n  named:\n    command: x\n");
    let env_for = |xdg_home: PathBuf, warden_config: Option<PathBuf>| {
        move |name: &str| match name {
            "XDG_CONFIG_HOME" => Some(xdg_home.display().to_string()),
            "WARDEN_CONFIG" => warden_config.as_ref().map(|path| path.display().to_string()),
            _ => None,
        }
    };
    let found = |explicit: Option<&Path>, env: &dyn Fn(&str) -> Option<String>| match WardenConfig::discover_with(
        explicit, env,
    )
    .unwrap()
    {
        Discovered::Loaded { path, config } => (path, config.servers.keys().cloned().collect::<Vec<_>>()),
        nothing => panic!("{nothing:?}"),
    };
    let env = env_for(dir.join("xdg"), None);
    assert_eq!(found(None, &env), (xdg.canonicalize().unwrap(), vec!["xdg".to_string()]));
    let env = env_for(dir.join("xdg"), Some(named.clone()));
    assert_eq!(found(None, &env).1, ["named"]);
    let explicit = write(&dir, "explicit.toml", "[servers.explicit]\ncommand = \"x\"\n");
    assert_eq!(found(Some(&explicit), &env).1, ["explicit"]);

    let env = env_for(dir.join("empty"), None);
    let nothing = WardenConfig::discover_with(None, &env).unwrap();
    assert_eq!(
        nothing.notice().unwrap(),
        format!(
            "no config file found (looked at --config, $WARDEN_CONFIG and {0}); create {0} with a [servers.NAME] \
             table — see examples/warden.toml",
            dir.join("empty/warden/warden.toml").display()
        )
    );
    let home_only = |name: &str| (name == "HOME").then(|| "/home/someone".to_string());
    let Discovered::Nothing { looked_at } = WardenConfig::discover_with(None, &home_only).unwrap() else {
        panic!("found a config under /home/someone")
    };
    assert_eq!(looked_at, Some(PathBuf::from("/home/someone/.config/warden/warden.toml")));

    let missing = dir.join("missing.toml");
    let error = WardenConfig::discover_with(Some(&missing), &env).unwrap_err().to_string();
    assert_eq!(error, format!("config file '{}': no such file", missing.display()));
}

#[test]
fn type_sse_is_the_legacy_transport() {
    let dir = scratch("type-sse");
    let path = write(&dir, "servers.json", r#"{"mcpServers": {"old": {"type": "sse", "url": "http://h/sse"}}}"#);
    let servers = servers_of(&path);
    assert_eq!(servers["old"].transport.as_deref(), Some("sse"));
    assert_eq!(servers["old"].url.as_deref(), Some("http://h/sse"));
}

#[test]
fn a_value_of_the_wrong_kind_is_an_error_naming_the_field_in_every_shape() {
    let dir = scratch("kinds");
    let cases = [
        (
            "warden.json",
            r#"{"mcpServers": {"a": {"command": 5}}}"#,
            "server 'a': `command` must be a string, not an integer",
        ),
        (
            "warden.json",
            r#"{"mcpServers": {"a": {"command": "x", "args": ["-v", 2]}}}"#,
            "server 'a': `args` must be a list of strings, but item 1 is an integer",
        ),
        (
            "warden.json",
            r#"{"servers": {"a": {"command": "x", "env": {"TOKEN": 12}}}}"#,
            "server 'a': `env` `TOKEN` must be a string, not an integer",
        ),
        (
            "warden.yaml",
            "mcp_servers:\n  - name: a\n    command: x\n    inherit_env: \"no\"\n",
            "server 'a': `inherit_env` must be true or false, not a string",
        ),
        (
            "warden.toml",
            "[servers.a]\ncommand = \"x\"\nstartup_timeout_secs = \"30\"\n",
            "server 'a': `startup_timeout_secs` must be a number, not a string",
        ),
        (
            "warden.toml",
            "[servers.a]\ncommand = \"x\"\nmax_restarts = 2.5\n",
            "server 'a': `max_restarts` must be a whole number, not a number",
        ),
        (
            "warden.toml",
            "call_timeout_secs = \"60\"\n[servers.a]\ncommand = \"x\"\n",
            "`call_timeout_secs` must be a number, not a string",
        ),
        (
            "warden.json",
            r#"{"daemon": {"log_files": "3"}, "servers": {}}"#,
            "`daemon.log_files` must be a whole number, not a string",
        ),
        (
            "warden.yaml",
            "security:\n  auto_approve: 1\n",
            "`security.auto_approve` must be true or false, not an integer",
        ),
    ];
    for (name, text, expected) in cases {
        let path = write(&dir, name, text);
        let error = error_of(&path);
        assert!(error.starts_with(&format!("config file '{}'", path.display())), "{error}");
        assert!(error.ends_with(expected), "{name} {text}\n  got: {error}\n  expected the end: {expected}");
    }
    // A drop-in is checked the same way, and names itself.
    let main = write(&dir, "main.toml", "mcp_server_dir = \"servers.d\"\n");
    let drop_in = write(&dir, "servers.d/b.json", r#"{"command": ["npx"]}"#);
    let error = error_of(&main);
    assert_eq!(
        error,
        format!("config file '{}', server 'b': `command` must be a string, not a list", drop_in.display())
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn codex_fields_are_mapped_to_warden_ones() {
    let dir = scratch("codex-fields");
    let path = write(
        &dir,
        "config.toml",
        "model = \"o3\"\n[mcp_servers.api]\nurl = \"https://h/mcp\"\ntool_timeout_sec = 30\n\
         http_headers = { X-Team = \"core\" }\nenv_http_headers = { X-Key = \"EXAMPLE_TOKEN\" }\n\
         [mcp_servers.local]\ncommand = \"x\"\ninherit_env = false\nenv_vars = [\"HOME\"]\n",
    );
    let servers = servers_of(&path);
    let api = &servers["api"];
    assert_eq!(api.default_policy.unwrap().timeout, Some(30.0));
    assert_eq!(
        api.headers,
        BTreeMap::from([("X-Key".to_string(), "t0k3n".to_string()), ("X-Team".to_string(), "core".to_string())])
    );
    assert_eq!(api.masked.headers["X-Key"], "${EXAMPLE_TOKEN}", "shown as the variable it names");
    assert_eq!(servers["local"].pass_env, ["HOME"], "env_vars with inherit_env = false");
}

#[test]
fn a_drop_in_may_be_a_block_copied_from_a_main_config() {
    let dir = scratch("fragments");
    let config = write(&dir, "warden.toml", "mcp_server_dir = \"d\"\n");
    write(&dir, "d/ev.toml", "[servers.ev]\ncommand = \"ev-mcp\"\n");
    write(
        &dir,
        "d/desktop.json",
        r#"{"mcpServers": {"a": {"command": "a-mcp"}, "b": {"type": "http", "url": "http://h/mcp"}}}"#,
    );
    write(&dir, "d/codex.toml", "[mcp_servers.c]\ncommand = \"c-mcp\"\nstartup_timeout_sec = 9\n");
    let loaded = WardenConfig::load_with(&config, &token).unwrap();
    assert_eq!(loaded.servers.keys().collect::<Vec<_>>(), ["a", "b", "c", "ev"]);
    assert_eq!(loaded.servers["b"].url.as_deref(), Some("http://h/mcp"));
    assert_eq!(loaded.servers["c"].startup_timeout(), Duration::from_secs(9));
    assert_eq!(loaded.servers["a"].origin.as_deref(), Some(dir.join("d/desktop.json").as_path()));

    let bad = write(&dir, "d/whole.toml", "[servers.x]\ncommand = \"x\"\n[security]\nauto_approve = true\n");
    let error = error_of(&config);
    assert_eq!(
        error,
        format!(
            "config file '{}': a drop-in of `mcp_server_dir` holds servers only, and this one also has `security`: move it to the main config",
            bad.display()
        )
    );
}

#[test]
fn a_vscode_mcp_json_loads_with_its_env_file_and_inputs() {
    let strip = |servers: BTreeMap<String, ServerConfig>| -> BTreeMap<String, ServerConfig> {
        servers.into_iter().map(|(name, server)| (name, ServerConfig { masked: Masked::default(), ..server })).collect()
    };
    let canonical = strip(servers_of(&examples().join("warden.toml")));
    let vscode = servers_of(&examples().join("vscode/.vscode/mcp.json"));
    // `${input:example-token}` is shown as written, and read from EXAMPLE_TOKEN.
    assert_eq!(vscode["remote"].masked.headers["Authorization"], "***${input:example-token}");
    assert_eq!(strip(vscode), canonical);

    let dir = scratch("vscode-input");
    let path = write(
        &dir,
        ".vscode/mcp.json",
        r#"{"servers": {"a": {"type": "http", "url": "http://h/mcp", "headers": {"K": "${input:api-key}"}}}}"#,
    );
    assert!(
        error_of(&path).ends_with(
            "server 'a': `headers.K`: `${input:api-key}` is a VS Code input, which Warden reads from the environment: set `API_KEY` (or `api-key`) before starting Warden"
        ),
        "{}",
        error_of(&path)
    );
}

#[test]
fn zed_and_goose_files_load_to_the_same_processes_and_urls() {
    let canonical = servers_of(&examples().join("warden.toml"));
    for file in ["zed.json", "goose.yaml"] {
        let servers = servers_of(&examples().join(file));
        assert_eq!(servers.keys().collect::<Vec<_>>(), ["everything", "files", "remote"], "{file}");
        for (name, server) in &servers {
            let want = &canonical[name];
            assert_eq!(
                (&server.command, &server.args, &server.env, &server.url, &server.headers),
                (&want.command, &want.args, &want.env, &want.url, &want.headers),
                "{file}: {name}"
            );
        }
        if file == "goose.yaml" {
            assert_eq!(servers["files"].default_policy.unwrap().timeout, Some(300.0), "goose's timeout");
        }
    }
    let dir = scratch("goose-filter");
    let path =
        write(&dir, "config.yaml", "extensions:\n  a:\n    type: stdio\n    cmd: x\n    available_tools: [read]\n");
    assert_eq!(servers_of(&path)["a"].enabled_tools, Some(vec!["read".to_string()]), "goose's filter is Warden's");
}
