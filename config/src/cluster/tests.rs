use crate::WardenConfig;

const SERVER: &str = "[servers.git]\ncommand = \"git-mcp\"\n";

fn load(cluster: &str) -> Result<WardenConfig, String> {
    let lookup = |name: &str| match name {
        "NATS_TOKEN" => Some("s3cret-nats-token".to_string()),
        "EMPTY" => Some(String::new()),
        _ => None,
    };
    let text = format!("{SERVER}[cluster]\n{cluster}");
    WardenConfig::from_toml_with(&text, "warden.toml", &lookup).map_err(|error| error.to_string())
}

#[test]
fn a_cluster_on_loopback_loads_with_its_defaults() {
    let config = load("nats = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\nexport = [\"git\"]").unwrap();
    let cluster = config.cluster.unwrap();
    assert_eq!(cluster.node_name(), "a");
    assert!(cluster.import);
    assert_eq!(cluster.subject_prefix, "warden");
    assert!(cluster.exports("git"));
    assert!(!cluster.exports("db"));
    let config = load("nats = [\"nats://localhost:4222\", \"tls://nats.example.com:4222\"]\nexport = [\"*\"]").unwrap();
    let cluster = config.cluster.unwrap();
    assert!(!cluster.node_name().is_empty(), "the host name is the default node name");
    assert!(cluster.exports("anything"));
    let error = load("").unwrap_err();
    assert!(error.contains("nats"), "{error}");
}

#[test]
fn clear_text_off_loopback_is_refused_unless_allowed() {
    let error = load("nats = [\"nats://10.0.0.5:4222\"]\nnode = \"a\"").unwrap_err();
    assert!(
        error.contains("`cluster.nats[0]` \"nats://10.0.0.5:4222\" is not on loopback and not `tls://`"),
        "{error}"
    );
    assert!(error.contains("allow_insecure = true"), "{error}");
    load("nats = [\"nats://10.0.0.5:4222\"]\nnode = \"a\"\nallow_insecure = true").unwrap();
    load("nats = [\"tls://10.0.0.5:4222\"]\nnode = \"a\"").unwrap();
}

#[test]
fn bad_values_are_named_with_what_to_write() {
    let cases = [
        ("nats = []", "`cluster.nats` is empty"),
        ("nats = [\"http://127.0.0.1:4222\"]", "has the scheme `http`"),
        ("nats = [\"127.0.0.1:4222\"]", "is not a URL"),
        ("nats = [\"nats://user:pw@127.0.0.1:4222\"]", "\"nats://***@127.0.0.1:4222\" carries credentials"),
        ("nats = [\"nats://127.0.0.1\"]\nnode = \"a.b\"", "`cluster.node` \"a.b\" contains `.`"),
        ("nats = [\"nats://127.0.0.1\"]\nnode = \"a\"\nsubject_prefix = \"w.*\"", "token 2 (\"*\") contains `*`"),
        ("nats = [\"nats://127.0.0.1\"]\nnode = \"a\"\nexport = [\"db\"]", "`cluster.export[0]` names \"db\""),
        ("nats = [\"nats://127.0.0.1\"]\nnode = \"a\"\ntoken = \"${EMPTY}\"", "`cluster.token` is empty"),
        ("nats = [\"nats://127.0.0.1\"]\nnode = \"a\"\nsurprise = 1", "unknown field `surprise`"),
        (
            "nats = [\"nats://127.0.0.1\"]\nnode = \"a\"\ntoken = \"t\"\nnkey_seed = \"s\"",
            "more than one of `token`, `nkey_seed` and `credentials`",
        ),
    ];
    for (table, expected) in cases {
        let error = load(table).expect_err(table);
        assert!(error.contains(expected), "{table}: {error}");
    }
}

#[test]
fn the_token_is_expanded_and_known_as_a_secret() {
    let config = load("nats = [\"nats://127.0.0.1:4222\"]\nnode = \"a\"\ntoken = \"${NATS_TOKEN}\"").unwrap();
    assert_eq!(config.cluster.as_ref().unwrap().token.as_deref(), Some("s3cret-nats-token"));
    assert!(config.known_secrets.iter().any(|(_, value)| value == "s3cret-nats-token"));
}
