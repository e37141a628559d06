//! The `[summary]` table as the Summarizer reads it.

use warden_config::{ConfigError, WardenConfig};

use super::SummarySettings;

fn load(text: &str) -> Result<WardenConfig, ConfigError> {
    WardenConfig::from_toml_with(text, "test.toml", &lookup)
}

fn lookup(name: &str) -> Option<String> {
    match name {
        "LLM_KEY" => Some("sk-test-123".into()),
        "XDG_CACHE_HOME" => Some("/xdg".into()),
        "HOME" => Some("/home/me".into()),
        _ => None,
    }
}

#[test]
fn summaries_are_off_by_default_and_a_disabled_table_is_not_checked() {
    let config = load("").unwrap();
    assert!(!config.summary.enabled);
    assert_eq!(config.summary.concurrency, 3);
    assert!(SummarySettings::from_config(&config.summary, &lookup).is_none());
    // Half-written but off: still loads.
    let config = load("[summary]\nenabled = false\nendpoint = \"nonsense\"\napi_key_env = \"UNSET\"").unwrap();
    assert!(config.known_secrets.is_empty());
}

#[test]
fn an_enabled_table_resolves_url_key_and_cache_directory() {
    let config = load(
        "[summary]\nenabled = true\nmodel = \"tiny\"\nendpoint = \"https://api.example.com/v1/\"\napi_key_env = \"LLM_KEY\"\nconcurrency = 2",
    )
    .unwrap();
    assert_eq!(config.known_secrets, [("LLM_KEY".to_string(), "sk-test-123".to_string())]);
    let settings = SummarySettings::from_config(&config.summary, &lookup).unwrap();
    assert_eq!(settings.url, "https://api.example.com/v1/chat/completions");
    assert_eq!(settings.api_key.as_deref(), Some("sk-test-123"));
    assert_eq!(settings.concurrency, 2);
    assert_eq!(settings.cache_dir, std::path::Path::new("/xdg/warden"));

    let mut summary = config.summary.clone();
    summary.endpoint = "http://localhost:8080/v1/chat/completions".into();
    assert_eq!(summary.completions_url(), "http://localhost:8080/v1/chat/completions");
    let only_home = |name: &str| (name == "HOME").then(|| "/home/me".to_string());
    assert_eq!(summary.cache_dir(&only_home).unwrap(), std::path::Path::new("/home/me/.cache/warden"));
    let overridden = |name: &str| (name == "WARDEN_CACHE_DIR").then(|| "/tmp/c".to_string()).or_else(|| lookup(name));
    assert_eq!(summary.cache_dir(&overridden).unwrap(), std::path::Path::new("/tmp/c"));
}

#[test]
fn enabled_mistakes_are_errors_naming_the_field() {
    let error = |text: &str| load(text).unwrap_err().to_string();
    assert!(error("[summary]\nenabled = true\nendpoint = \"http://x/v1\"").contains("`summary.model`"));
    assert!(error("[summary]\nenabled = true\nmodel = \"m\"\nendpoint = \"api.example.com\"")
        .contains("`summary.endpoint`"));
    let unset = error("[summary]\nenabled = true\nmodel = \"m\"\nendpoint = \"http://x/v1\"\napi_key_env = \"UNSET\"");
    assert!(unset.contains("`summary.api_key_env` names `UNSET`, which is not set"), "{unset}");
    assert!(error("[summary]\nenabeld = true").contains("enabeld"));
}
