mod formats;
mod ignored;

use super::*;
use warden_policy::{Approval, LeakAction, PolicyLayer, Risk};

fn load(text: &str) -> Result<WardenConfig, ConfigError> {
    let lookup = |name: &str| match name {
        "TOKEN" => Some("s3cret".to_string()),
        "EXTRA_KEY" => Some("extra-secret-value".to_string()),
        _ => None,
    };
    load_with(text, &lookup)
}

/// TOML text read as `test.toml`, with `lookup` standing in for the
/// environment (shared with the other config test modules).
pub(crate) fn load_with(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<WardenConfig, ConfigError> {
    let mut config: WardenConfig = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Toml))
        .build()
        .and_then(|c| c.try_deserialize())
        .map_err(|e| ConfigError::Unreadable { file: "test.toml".into(), problem: e.to_string() })?;
    config.check_and_expand("test.toml", lookup)?;
    Ok(config)
}

#[test]
fn reads_stdio_and_http_servers_keeping_the_case_of_env_names() {
    let config = load(
        r#"
        call_timeout_secs = 5
        [servers.git]
        command = "uvx"
        args = ["mcp-server-git"]
        env = { GITHUB_TOKEN = "${TOKEN}", Mixed_Case = "a$b" }
        startup_timeout_secs = 2.5
        [servers.remote]
        url = "https://example.com/mcp"
        headers = { Authorization = "Bearer ${TOKEN}" }
        "#,
    )
    .unwrap();
    let git = &config.servers["git"];
    assert_eq!(git.command.as_deref(), Some("uvx"));
    assert_eq!(git.env["GITHUB_TOKEN"], "s3cret");
    assert_eq!(git.env["Mixed_Case"], "a$b");
    assert_eq!(git.startup_timeout(), Duration::from_millis(2500));
    assert_eq!(config.servers["remote"].headers["Authorization"], "Bearer s3cret");
    assert_eq!(config.call_timeout(), Duration::from_secs(5));
    assert_eq!(config.servers["remote"].startup_timeout(), DEFAULT_STARTUP_TIMEOUT);
}

#[test]
fn errors_name_the_file_the_server_and_the_field() {
    let cases = [
        (
            "[servers.a]\ncommand = \"x\"\nurl = \"http://h\"",
            "config file 'test.toml', server 'a': has both `command` and `url`",
        ),
        ("[servers.a]\nargs = [\"x\"]", "server 'a': has neither `command` nor `url`"),
        (
            "[servers.a]\ncommand = \"x\"\nenv = { K = \"${NOPE}\" }",
            "server 'a': `env.K`: environment variable `NOPE` is not set",
        ),
        ("[servers.a]\ncommand = \"x\"\nheaders = { K = \"v\" }", "`headers` only applies to `url` servers"),
        ("[servers.a]\ncomand = \"x\"", "unknown field `comand`"),
        ("[servers.\"bad name\"]\ncommand = \"x\"", "server 'bad name': server name 'bad name' has characters"),
        ("[servers.a]\ncommand = \"x\"\nstartup_timeout_secs = 0", "`startup_timeout_secs` must be a positive number"),
        ("call_timeout_secs = -1", "`call_timeout_secs` must be a positive number"),
        ("servrs = 1", "unknown field `servrs`"),
        ("[servers.a]\nurl = \"ftp://h/mcp\"", "`url` must be an http:// or https:// address"),
        ("[servers.a]\nurl = \"localhost:3000/mcp\"", "not \"localhost:3000/mcp\""),
        ("[servers.a]\ncommand = \"x\"\npass_env = [\"PATH\"]", "`pass_env` only applies with `inherit_env = false`"),
        ("[servers.a]\nurl = \"http://h\"\nmax_restarts = 2", "HTTP servers are not restarted"),
        (
            "[servers.a]\nurl = \"http://h\"\ntransport = \"websocket\"",
            "`transport` must be \"auto\", \"streamable-http\" or \"sse\", not \"websocket\"",
        ),
        ("[servers.a]\ncommand = \"x\"\ntransport = \"sse\"", "`transport` only applies to `url` servers"),
        (
            "[servers.a]\ncommand = \"x\"\nretry_after_crash = \"sometimes\"",
            "`retry_after_crash` must be \"safe\", \"always\" or \"never\", not \"sometimes\"",
        ),
        (
            "[servers.a]\ncommand = \"x\"\nprotocol_version = \"2026-01-01\"",
            "`protocol_version` must be \"auto\" or one of \"2026-07-28\", \"2025-11-25\", \"2025-06-18\", \"2025-03-26\", \"2024-11-05\", not \"2026-01-01\"",
        ),
        ("[servers.a]\ncommand = \"x\"\nrestart_delay_secs = -2", "`restart_delay_secs` must be a positive number"),
        (
            "[daemon]\nlisten = \"0.0.0.0:7000\"",
            "`daemon.listen` is 0.0.0.0:7000, which is not a loopback address: anyone who can reach it and has the \
             token can run every tool; set `allow_non_loopback = true` in [daemon] if you mean it",
        ),
        ("[daemon]\nlisten = \"localhost\"", "`daemon.listen` must be an IP address and port such as"),
        (
            "[daemon]\nidle_timeout_minutes = -1",
            "`daemon.idle_timeout_minutes` must be a number of minutes (0: never exit on idleness), not -1",
        ),
        ("[daemon]\nidle_timout_minutes = 1", "unknown field `idle_timout_minutes`"),
        (
            "[daemon]\nworkers = 0",
            "`daemon.workers` must be from 1 to 1024 threads (leave it out for one per core), not 0",
        ),
        ("[daemon]\nworkers = 100000", "`daemon.workers` must be from 1 to 1024 threads"),
        (
            "[servers.a]\ncommand = \"x\"\nrename = { read = \"get\", fetch = \"get\" }",
            "server 'a': `rename` gives 'fetch' and 'read' the same name 'get'; pick two names",
        ),
        ("[servers.a]\ncommand = \"x\"\nrename = { read = \"a b\" }", "`rename`: 'read' → 'a b': a tool name must"),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err().to_string();
        assert!(error.contains(expected), "for {text:?}\n  got: {error}\n  expected: {expected}");
        assert!(error.contains("test.toml"), "{error}");
    }
}

#[test]
fn expansion_handles_literals_and_bad_references() {
    let lookup = |name: &str| (name == "A").then(|| "1".to_string());
    assert_eq!(expand("x${A}y${A}", &lookup).unwrap(), "x1y1");
    assert_eq!(expand("$${A} and $5", &lookup).unwrap(), "${A} and $5");
    assert!(expand("${A", &lookup).unwrap_err().contains("without a closing"));
    assert!(expand("${A-B}", &lookup).unwrap_err().contains("not a valid variable name"));
    // Claude Code's fallback form: the default when unset or empty.
    let lookup = |name: &str| match name {
        "A" => Some("1".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    assert_eq!(expand("${A:-x}/${NOPE:-none}/${EMPTY:-e}/${NOPE:-}", &lookup).unwrap(), "1/none/e/");
    assert_eq!(expand("${EMPTY}", &lookup).unwrap(), "", "set but empty, without a default: empty");
    assert!(expand("${NOPE}", &lookup).unwrap_err().contains("write `${NOPE:-default}` for a fallback"));
}

#[test]
fn a_missing_file_says_how_to_give_one() {
    let error = WardenConfig::load(Path::new("/nonexistent/warden.toml")).unwrap_err().to_string();
    assert_eq!(error, "config file '/nonexistent/warden.toml': no such file");
}

/// Writes `text` to a file of its own in the temp directory; its path.
fn temp_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("warden-config-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_bad_ca_cert_is_an_error_naming_the_file_the_server_and_the_field() {
    let not_pem = temp_file("not-pem.pem", "hello\n");
    let broken = temp_file("broken.pem", "-----BEGIN CERTIFICATE-----\n!!!\n-----END CERTIFICATE-----\n");
    let not_der = temp_file("not-der.pem", "-----BEGIN CERTIFICATE-----\naGVsbG8=\n-----END CERTIFICATE-----\n");
    let cases = [
        (PathBuf::from("/nonexistent/ca.pem"), "`ca_cert` \"/nonexistent/ca.pem\" cannot be read: No such file"),
        (not_pem.clone(), "holds no certificate; it must be a PEM file with `-----BEGIN CERTIFICATE-----` blocks"),
        (broken.clone(), "is not a valid PEM file"),
        (not_der.clone(), "holds a certificate that cannot be used as a root"),
    ];
    for (path, expected) in cases {
        let text = format!("[servers.remote]\nurl = \"https://h/mcp\"\nca_cert = {:?}\n", path.display().to_string());
        let error = load(&text).unwrap_err().to_string();
        let prefix = format!("config file 'test.toml', server 'remote': `ca_cert` \"{}\"", path.display());
        assert!(error.starts_with(&prefix), "got: {error}\nexpected the start: {prefix}");
        assert!(error.contains(expected), "got: {error}\nexpected: {expected}");
    }
    let error = load("[servers.a]\ncommand = \"x\"\nca_cert = \"ca.pem\"").unwrap_err().to_string();
    assert_eq!(error, "config file 'test.toml', server 'a': `ca_cert` only applies to `https://` `url` servers");
    let error = load("[servers.a]\nurl = \"http://h/mcp\"\nca_cert = \"ca.pem\"").unwrap_err().to_string();
    assert_eq!(
        error,
        "config file 'test.toml', server 'a': `ca_cert` only applies to `https://` URLs; this server's `url` is plain `http://`"
    );
    for path in [not_pem, broken, not_der] {
        let _ = std::fs::remove_file(path);
    }
}

#[test]
fn security_and_agents_parse() {
    let config = load(
        r#"
        [servers.fs]
        command = "x"
        default_policy = { risk = "high", timeout = 10 }
        [security]
        auto_approve = true
        approver = "auto"
        approval_timeout_secs = 12.5
        secrets = ["EXTRA_KEY"]
        [security.tool_policies.fs__write]
        risk = "high"
        approval = "always"
        leaks = "block"
        timeout = 120
        [[agents]]
        name = "coder"
        allowed_tools = ["shell", "fs__*"]
        auto_approve = true
        [[agents]]
        name = "reviewer"
        allowed_tools = []
        "#,
    )
    .unwrap();
    let write = PolicyLayer {
        risk: Some(Risk::High),
        approval: Some(Approval::Always),
        timeout: Some(120.0),
        leaks: Some(LeakAction::Block),
    };
    assert_eq!(config.security.tool_policies["fs__write"], write);
    assert_eq!((config.security.auto_approve, config.security.approver.as_str()), (true, "auto"));
    assert_eq!(config.security.approval_timeout_secs, 12.5);
    assert_eq!(config.security.secrets, ["EXTRA_KEY"]);
    assert_eq!(
        config.servers["fs"].default_policy,
        Some(PolicyLayer { risk: Some(Risk::High), timeout: Some(10.0), ..PolicyLayer::default() })
    );
    let agents: Vec<(&str, &[String], bool)> = config
        .agents
        .iter()
        .map(|agent| (agent.name.as_str(), agent.allowed_tools.as_slice(), agent.auto_approve))
        .collect();
    assert_eq!(
        agents,
        [("coder", &["shell".to_string(), "fs__*".to_string()][..], true), ("reviewer", &[][..], false)]
    );
}

#[test]
fn security_defaults_fail_closed() {
    let config = load("[servers.a]\ncommand = \"x\"").unwrap();
    assert_eq!(config.security, SecurityConfig::default());
    assert_eq!((config.security.approver.as_str(), config.security.approval_timeout_secs), ("none", 300.0));
    assert!(!config.security.auto_approve);
    assert!(config.agents.is_empty());
}

#[test]
fn every_policy_error_says_the_field_and_what_is_wrong() {
    let cases = [
        (
            "[security]\napprover = \"maybe\"",
            "config file 'test.toml': `security.approver` must be \"none\", \"auto\" or \"deny\", not \"maybe\"",
        ),
        (
            "[security]\napproval_timeout_secs = 0",
            "config file 'test.toml': `security.approval_timeout_secs` must be a positive number of seconds, not 0",
        ),
        (
            "[security]\nsecrets = [\"NOT-A-NAME\"]",
            "config file 'test.toml': `security.secrets` \"NOT-A-NAME\" is not an environment variable name (letters, \
             digits and '_')",
        ),
        (
            "[security.tool_policies.fs__write]\ntimeout = -1",
            "config file 'test.toml': `security.tool_policies.fs__write` timeout = -1 is not a number of seconds \
             between 0 and 86400 (one day)",
        ),
        (
            "[[agents]]\nname = \"coder\"\nallowed_tools = [\"fs__[\"]",
            "config file 'test.toml': `agents[0] ('coder').allowed_tools` tool pattern 'fs__[' is not a valid glob \
             (unclosed character class; missing ']'); use an exact name or '*', '?', '[...]', e.g. 'fs__*'",
        ),
        (
            "[[agents]]\nname = \"coder\"\nallowed_tools = []\n[[agents]]\nname = \"coder\"\nallowed_tools = []",
            "config file 'test.toml': `agents[1].name` 'coder' is already an agent's name",
        ),
        (
            "[[agents]]\nname = \" \"\nallowed_tools = []",
            "config file 'test.toml': `agents[0].name` is empty; give the agent the name hosts use",
        ),
        (
            "[servers.a]\ncommand = \"x\"\ndefault_policy = { timeout = 0 }",
            "config file 'test.toml', server 'a': `default_policy`: timeout = 0 is not a number of seconds between 0 \
             and 86400 (one day)",
        ),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err().to_string();
        assert_eq!(error, expected, "for {text:?}");
    }
}

#[test]
fn unknown_keys_and_values_in_policy_tables_are_errors() {
    let cases = [
        ("[security.tool_policies.fs__write]\nrisky = \"high\"", "unknown field `risky`"),
        ("[security]\nauto_aprove = true", "unknown field `auto_aprove`"),
        ("[[agents]]\nname = \"a\"\nallowed_tools = []\ntools = []", "unknown field `tools`"),
        (
            "[servers.a]\ncommand = \"x\"\ndefault_policy = { risk = \"extreme\" }",
            "enum Risk does not have variant constructor extreme for key `servers.a.default_policy.risk`",
        ),
        (
            "[servers.a]\ncommand = \"x\"\ndefault_policy = { approval = \"sometimes\" }",
            "variant constructor sometimes",
        ),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err().to_string();
        assert!(error.starts_with("config file 'test.toml'"), "{error}");
        assert!(error.contains(expected), "for {text:?}\n  got: {error}\n  expected: {expected}");
    }
}

#[test]
fn known_secrets_hold_env_and_header_values_every_expanded_variable_and_security_secrets() {
    let config = load(
        r#"
        [servers.git]
        command = "x"
        env = { GITHUB_TOKEN = "${TOKEN}", PLAIN = "plain-value-123" }
        [servers.remote]
        url = "https://example.com/mcp"
        headers = { Authorization = "Bearer ${TOKEN}" }
        [servers.linear]
        url = "https://example.com/linear"
        oauth = { client_id = "warden", client_secret = "literal-client-secret" }
        [security]
        secrets = ["EXTRA_KEY", "UNSET_VAR"]
        "#,
    )
    .unwrap();
    let known: Vec<(&str, &str)> =
        config.known_secrets.iter().map(|(label, value)| (label.as_str(), value.as_str())).collect();
    // Each `${VAR}` as it was expanded (once per use), then every env and
    // header value whole, then `security.secrets` that are set.
    assert_eq!(
        known,
        [
            ("TOKEN", "s3cret"),
            ("TOKEN", "s3cret"),
            ("GITHUB_TOKEN", "s3cret"),
            ("PLAIN", "plain-value-123"),
            ("oauth.client_secret", "literal-client-secret"),
            ("Authorization", "Bearer s3cret"),
            ("EXTRA_KEY", "extra-secret-value"),
        ]
    );
}

#[test]
fn the_daemon_listens_on_loopback_and_idles_out_after_five_minutes_by_default() {
    let config = load("").unwrap();
    assert_eq!(config.daemon.listen_addr().unwrap(), "127.0.0.1:0".parse().unwrap());
    assert_eq!(config.daemon.idle_timeout(), Some(DEFAULT_IDLE_TIMEOUT));
    assert_eq!(DEFAULT_IDLE_TIMEOUT, Duration::from_secs(300));

    let config =
        load("[daemon]\nlisten = \"0.0.0.0:7000\"\nallow_non_loopback = true\nidle_timeout_minutes = 0.01").unwrap();
    assert_eq!(config.daemon.listen_addr().unwrap(), "0.0.0.0:7000".parse().unwrap());
    assert_eq!(config.daemon.idle_timeout(), Some(Duration::from_millis(600)));
    let service = load("[daemon]\nidle_timeout_minutes = 0").unwrap();
    assert_eq!(service.daemon.idle_timeout(), None, "0: never exit on idleness");
    let config = load("[daemon]\nlisten = \"[::1]:7000\"").unwrap();
    assert_eq!(config.daemon.listen_addr().unwrap(), "[::1]:7000".parse().unwrap());
    assert_eq!(config.daemon.workers, None, "one worker per core unless asked");
    assert_eq!(load("[daemon]\nworkers = 1").unwrap().daemon.workers, Some(1));
}

#[test]
fn a_bad_oauth_table_is_an_error_naming_the_key_and_what_to_do() {
    let url = "[servers.a]\nurl = \"https://h/mcp\"\n";
    let cases = [
        ("[servers.a]\ncommand = \"x\"\noauth = {}", "`oauth` only applies to `url` servers"),
        (
            &format!("{url}oauth = {{ grant = \"implicit\" }}"),
            "`oauth.grant` must be \"authorization_code\" or \"client_credentials\", not \"implicit\"",
        ),
        (
            &format!("{url}oauth = {{ grant = \"client_credentials\", client_id = \"c\" }}"),
            "needs `client_secret` or `private_key_file`",
        ),
        (&format!("{url}oauth = {{ grant = \"client_credentials\" }}"), "needs `client_id`"),
        (
            &format!("{url}oauth = {{ client_secret = \"s\" }}"),
            "`oauth.client_secret` needs the `client_id` it belongs to",
        ),
        (
            &format!("{url}oauth = {{ client_metadata_url = \"http://h/c.json\" }}"),
            "`oauth.client_metadata_url` must be an https:// URL",
        ),
        (&format!("{url}oauth = {{ scopes = [\"a b\"] }}"), "`oauth.scopes`: \"a b\" is not a scope"),
        (
            &format!("{url}oauth = {{ signing_alg = \"HS256\" }}"),
            "`oauth.signing_alg` must be \"RS256\" or \"ES256\", not \"HS256\"",
        ),
        (
            &format!("{url}oauth = {{ private_key_file = \"k.pem\" }}"),
            "`oauth.private_key_file` only applies with `grant = \"client_credentials\"`",
        ),
        (
            &format!("{url}oauth = {{ client_id = \"c\", client_secret = \"${{NOPE}}\" }}"),
            "`oauth.client_secret`: environment variable `NOPE` is not set",
        ),
        (&format!("{url}oauth = {{ clientid = \"c\" }}"), "unknown field `clientid`"),
        (
            &format!("{url}headers = {{ Authorization = \"Bearer x\" }}\noauth = {{}}"),
            "has both `oauth` and an `Authorization` header",
        ),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err().to_string();
        assert!(error.contains(expected), "for {text:?}\n  got: {error}\n  expected: {expected}");
        assert!(error.contains("server 'a'") || error.contains("`servers.a.oauth`"), "{error}");
    }
    let fine = load(&format!("{url}[servers.a.oauth]\ngrant = \"client_credentials\"\nclient_id = \"c\"\nclient_secret = \"s\"\nscopes = [\"read\"]\n")).unwrap();
    let oauth = fine.servers["a"].oauth.as_ref().unwrap();
    assert_eq!(oauth.grant(), crate::OAuthGrant::ClientCredentials);
    assert!(!format!("{oauth:?}").contains("\"s\""), "the secret is not in Debug: {oauth:?}");
}
