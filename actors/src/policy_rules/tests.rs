use std::time::Duration;

use warden_config::WardenConfig;

use super::{ConfiguredApprover, PolicyRules};

#[test]
fn security_and_agents_compile_into_the_policy_rules() {
    let config = WardenConfig::from_toml(
        r#"
        [servers.fs]
        command = "x"
        [security]
        approver = "auto"
        approval_timeout_secs = 12.5
        [[agents]]
        name = "coder"
        allowed_tools = ["shell", "fs__*"]
        auto_approve = true
        [[agents]]
        name = "reviewer"
        allowed_tools = []
        "#,
        "test.toml",
    )
    .expect("the config loads");
    let rules = PolicyRules::from_config(&config);
    assert_eq!(rules.approval_timeout, Duration::from_millis(12_500));
    assert_eq!(rules.approver, ConfiguredApprover::Auto);
    assert!(rules.agent("coder").unwrap().allowed_tools.matches("fs__read"));
    assert!(!rules.agent("coder").unwrap().allowed_tools.matches("git__log"));
    assert_eq!(rules.agent_names().collect::<Vec<_>>(), ["coder", "reviewer"]);
}
