//! Another program's settings in its own shape are warnings, not errors:
//! the file is valid there. Warden's own `[servers.NAME]` stays strict.

use super::*;

fn load_file(name: &str, text: &str) -> Result<WardenConfig, ConfigError> {
    let dir = std::env::temp_dir().join(format!("warden-ignored-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    WardenConfig::load_with(&path, &|_| None)
}

#[test]
fn a_codex_or_vscode_setting_warden_lacks_is_named_and_ignored() {
    let codex = "model = \"o3\"\n[mcp_servers.docs]\ncommand = \"docs-mcp\"\nstartup_timeout_ms = 20000\n";
    let config = load_file("config.toml", codex).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(
        config.servers["docs"].ignored,
        ["`startup_timeout_ms` (a codex setting) is not something Warden does; it is ignored"]
    );
    let vscode = r#"{"servers": {"a": {"type": "stdio", "command": "x", "dev": {"watch": "src/**"}}}}"#;
    let config = load_file("mcp.json", vscode).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(config.servers["a"].ignored.len(), 1, "{:?}", config.servers["a"].ignored);
    assert!(config.servers["a"].ignored[0].starts_with("`dev` (a VS Code setting)"));
}

#[test]
fn mcp_servers_entries_disabled_by_their_client_are_left_out() {
    let cline = r#"{"mcpServers": {
        "on": {"command": "x", "alwaysAllow": ["read"], "disabled": false},
        "off": {"command": "y", "disabled": true}
    }}"#;
    let config = load_file("cline.json", cline).unwrap_or_else(|error| panic!("{error}"));
    assert_eq!(config.servers.keys().collect::<Vec<_>>(), ["on"]);
    assert!(config.servers["on"].ignored[0].starts_with("`alwaysAllow` (a `mcpServers` setting)"));
    let wrong = r#"{"mcpServers": {"a": {"command": "x", "disabled": "yes"}}}"#;
    let error = load_file("wrong.json", wrong).unwrap_err().to_string();
    assert!(error.ends_with("server 'a': `disabled` must be true or false, not a string"), "{error}");
}

#[test]
fn wardens_own_servers_table_still_refuses_a_typo() {
    let error = load_file("warden.toml", "[servers.a]\ncomand = \"x\"\n").unwrap_err().to_string();
    assert!(error.contains("unknown field `comand`"), "{error}");
}

#[test]
fn the_list_of_server_fields_is_the_schemas() {
    for field in crate::server::SERVER_FIELDS {
        let table = config::Value::new(None, config::Map::from([(field.to_string(), config::Value::from(true))]));
        let error = table.try_deserialize::<ServerConfig>().map(|_| String::new()).unwrap_or_else(|e| e.to_string());
        assert!(!error.contains("unknown field"), "`{field}` is listed but the schema does not have it: {error}");
    }
    let error = config::Value::new(None, config::Map::from([("nope".to_string(), config::Value::from(true))]))
        .try_deserialize::<ServerConfig>()
        .unwrap_err()
        .to_string();
    let expected: Vec<String> = crate::server::SERVER_FIELDS.iter().map(|field| format!("`{field}`")).collect();
    assert!(error.contains(&expected.join(", ")), "the schema has fields the list lacks: {error}");
}
