//! Property tests of the config loader: no text makes it panic, and a
//! server entry whose fields have arbitrary kinds either loads or is an
//! error naming the file and the server — never a crash, never a silently
//! coerced value. `PROPTEST_CASES` cases (2,000 unless set).

use proptest::prelude::*;
use proptest::test_runner::Config;

use crate::WardenConfig;

fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(2_000);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// A TOML value of some kind.
fn toml_value() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<i64>().prop_map(|n| n.to_string()),
        any::<bool>().prop_map(|b| b.to_string()),
        (0.0f64..1e6).prop_map(|f| format!("{f:.3}")),
        "[a-z0-9 ./${}_-]{0,16}".prop_map(|text| format!("{text:?}")),
        proptest::collection::vec("[a-z]{0,5}", 0..3).prop_map(|items| format!("{items:?}")),
        Just("{ A = \"b\" }".to_string()),
        Just("{ A = 1 }".to_string()),
    ]
}

const FIELDS: [&str; 17] = [
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "transport",
    "startup_timeout_secs",
    "inherit_env",
    "pass_env",
    "max_restarts",
    "restart_delay_secs",
    "retry_after_crash",
    "protocol_version",
    "type",
    "name",
    "nonsense",
];

proptest! {
    #![proptest_config(config())]

    #[test]
    fn no_text_makes_the_loader_panic(text in "\\PC{0,300}") {
        let _ = WardenConfig::from_toml_with(&text, "fuzz.toml", &|_| None);
    }

    #[test]
    fn a_server_of_arbitrary_fields_loads_or_is_an_error_naming_it(
        fields in proptest::collection::vec((0..FIELDS.len(), toml_value()), 0..6),
    ) {
        let mut text = String::from("[servers.s]\n");
        let mut seen = std::collections::HashSet::new();
        for (field, value) in fields {
            if seen.insert(field) {
                text.push_str(&format!("{} = {value}\n", FIELDS[field]));
            }
        }
        match WardenConfig::from_toml_with(&text, "fuzz.toml", &|name| (name == "HOME").then(|| "/home".into())) {
            Ok(config) => {
                // What loaded kept its kind: a command is the text written.
                let server = &config.servers["s"];
                if let Some(command) = &server.command {
                    prop_assert!(text.contains(&format!("command = {command:?}")), "{text} -> {command:?}");
                }
            }
            Err(error) => {
                let message = error.to_string();
                prop_assert!(message.starts_with("config file 'fuzz.toml'"), "{message}");
            }
        }
    }
}
