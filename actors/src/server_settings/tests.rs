use std::time::Duration;

use warden_config::{CrashRetry, WardenConfig};

use super::ServerSettings;

fn load(text: &str) -> WardenConfig {
    WardenConfig::from_toml(text, "test.toml").expect("the config loads")
}

#[test]
fn restart_and_retry_settings_reach_the_server_settings() {
    let config = load(
        "[servers.a]\ncommand = \"x\"\nmax_restarts = 2\nrestart_delay_secs = 0.5\nretry_after_crash = \"never\"\n\
         [servers.b]\ncommand = \"y\"\n[servers.c]\nurl = \"http://h\"",
    );
    let a = ServerSettings::of(&config.servers["a"], &config, None);
    assert_eq!(
        (a.max_restarts, a.first_restart_delay, a.crash_retry),
        (2, Duration::from_millis(500), CrashRetry::Never)
    );
    assert_eq!(a.backoff(3), Duration::from_secs(2));
    let b = ServerSettings::of(&config.servers["b"], &config, None);
    assert_eq!((b.max_restarts, b.first_restart_delay, b.crash_retry), (5, Duration::from_secs(1), CrashRetry::Safe));
    let schedule: Vec<u64> = (1..=5).map(|attempt| b.backoff(attempt).as_secs()).collect();
    assert_eq!(schedule, [1, 2, 4, 8, 16]);
    assert_eq!(
        ServerSettings::of(&config.servers["c"], &config, None).max_restarts,
        0,
        "HTTP servers are not restarted"
    );
}

#[test]
fn the_configs_message_limit_default_is_the_transports() {
    assert_eq!(warden_config::DEFAULT_MAX_MESSAGE_BYTES, warden_protocol::DEFAULT_MAX_MESSAGE_BYTES);
    for transport in warden_config::HTTP_TRANSPORTS {
        assert!(warden_protocol::HttpTransport::parse(transport).is_some(), "{transport}");
    }
}
