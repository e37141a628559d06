use super::*;
use crate::server_settings::CrashRetry;

fn load(text: &str) -> Result<WardenConfig, ConfigError> {
    let mut config: WardenConfig = config::Config::builder()
        .add_source(config::File::from_str(text, config::FileFormat::Toml))
        .build()
        .and_then(|c| c.try_deserialize())
        .map_err(|e| ConfigError::Unreadable { file: "test.toml".into(), problem: e.to_string() })?;
    let lookup = |name: &str| match name {
        "TOKEN" => Some("s3cret".to_string()),
        _ => None,
    };
    config.check_and_expand("test.toml", &lookup)?;
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
            "[servers.a]\ncommand = \"x\"\nretry_after_crash = \"sometimes\"",
            "`retry_after_crash` must be \"safe\", \"always\" or \"never\", not \"sometimes\"",
        ),
        ("[servers.a]\ncommand = \"x\"\nrestart_delay_secs = -2", "`restart_delay_secs` must be a positive number"),
    ];
    for (text, expected) in cases {
        let error = load(text).unwrap_err().to_string();
        assert!(error.contains(expected), "for {text:?}\n  got: {error}\n  expected: {expected}");
        assert!(error.contains("test.toml"), "{error}");
    }
}

#[test]
fn restart_and_retry_settings_reach_the_server_settings() {
    let config = load(
        "[servers.a]\ncommand = \"x\"\nmax_restarts = 2\nrestart_delay_secs = 0.5\nretry_after_crash = \"never\"\n\
         [servers.b]\ncommand = \"y\"\n[servers.c]\nurl = \"http://h\"",
    )
    .unwrap();
    let a = config.servers["a"].settings(&config);
    assert_eq!((a.max_restarts, a.restart_delay, a.crash_retry), (2, Duration::from_millis(500), CrashRetry::Never));
    assert_eq!(a.restart_delay(3), Duration::from_secs(2));
    let b = config.servers["b"].settings(&config);
    assert_eq!((b.max_restarts, b.restart_delay, b.crash_retry), (5, Duration::from_secs(1), CrashRetry::Safe));
    let schedule: Vec<u64> = (1..=5).map(|attempt| b.restart_delay(attempt).as_secs()).collect();
    assert_eq!(schedule, [1, 2, 4, 8, 16]);
    assert_eq!(config.servers["c"].settings(&config).max_restarts, 0, "HTTP servers are not restarted");
}

#[test]
fn expansion_handles_literals_and_bad_references() {
    let lookup = |name: &str| (name == "A").then(|| "1".to_string());
    assert_eq!(expand("x${A}y${A}", &lookup).unwrap(), "x1y1");
    assert_eq!(expand("$${A} and $5", &lookup).unwrap(), "${A} and $5");
    assert!(expand("${A", &lookup).unwrap_err().contains("without a closing"));
    assert!(expand("${A-B}", &lookup).unwrap_err().contains("not a valid variable name"));
}

#[test]
fn a_missing_file_says_how_to_give_one() {
    let error = WardenConfig::load(Path::new("/nonexistent/warden.toml")).unwrap_err().to_string();
    assert_eq!(
        error,
        "config file '/nonexistent/warden.toml': no such file; pass --config with the path of a warden.toml"
    );
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
