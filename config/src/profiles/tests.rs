use crate::{ConfigError, WardenConfig};
use warden_policy::Detail;

fn load(text: &str) -> Result<WardenConfig, ConfigError> {
    WardenConfig::from_toml(text, "test.toml")
}

#[test]
fn profiles_read_with_glob_keys_and_agents_name_them() {
    let config = load(
        r#"
        [tool_profiles.compact]
        default = "summary"
        tools = { "fs__*" = "brief", "fs__read_file" = "full" }
        [[agents]]
        name = "coder"
        allowed_tools = ["fs__*"]
        profile = "compact"
        "#,
    )
    .unwrap();
    let compact = &config.tool_profiles["compact"];
    assert_eq!(compact.default, Detail::Summary);
    assert_eq!(compact.tools["fs__*"], Detail::Brief);
    let profile = compact.compile("compact").unwrap();
    assert_eq!(profile.detail_for("fs__write_file"), Detail::Brief);
    assert_eq!(profile.detail_for("fs__read_file"), Detail::Full);
    assert_eq!(profile.detail_for("git__status"), Detail::Summary);
    assert_eq!(config.agents[0].profile.as_deref(), Some("compact"));
}

#[test]
fn profile_errors_name_the_table_and_say_what_is_wrong() {
    let error = load("[tool_profiles.compact]\ntools = { \"fs__[\" = \"brief\" }\n").unwrap_err().to_string();
    assert!(error.starts_with("config file 'test.toml': `tool_profiles.compact.tools` "), "{error}");
    assert!(error.contains("fs__["), "{error}");

    let error = load("[tool_profiles.compact]\ndefault = \"tiny\"\n").unwrap_err().to_string();
    assert_eq!(
        error,
        "config file 'test.toml': enum Detail does not have variant constructor tiny for key \
         `tool_profiles.compact.default`; expected \"full\", \"summary\", \"brief\" or \"deferred\""
    );

    let error = load("[[agents]]\nname = \"coder\"\nallowed_tools = []\nprofile = \"compact\"\n").unwrap_err();
    assert_eq!(
        error.to_string(),
        "config file 'test.toml': `agents[0] ('coder').profile` names \"compact\", which is not a \
         [tool_profiles.compact] table"
    );
}
