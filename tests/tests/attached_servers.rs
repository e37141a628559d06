//! Servers attached while Warden runs (`Warden::attach_server`, what a
//! cluster node does with other nodes' servers): served like configured
//! ones, left alone by reloads, and displaced by a configured server of
//! the same name.

#![allow(unused_crate_dependencies)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warden_actors::{AttachError, ServerSettings, ServerSpec, Warden};
use warden_protocol::{StdioConnector, StdioSpec};
use warden_tests::{bins, server_table, start_running, test_config};

fn table(name: &str) -> String {
    server_table(name, (bins::test_server().display().to_string(), Vec::new()), "")
}

fn attachable(name: &str) -> ServerSpec {
    let spec = StdioSpec::new(name, bins::test_server().display().to_string(), Vec::new());
    ServerSpec {
        name: name.into(),
        connector: Arc::new(StdioConnector::new(spec)),
        settings: ServerSettings::default(),
    }
}

async fn echo(warden: &Warden, name: &str) -> Result<String, String> {
    let result = warden.call_tool(name, json!({"message": "hi"})).await.map_err(|error| error.to_string())?;
    Ok(result.text())
}

async fn listed(warden: &Warden, name: &str) {
    tokio::time::timeout(Duration::from_secs(30), warden.wait_for(|snapshot| snapshot.tool(name).is_some()))
        .await
        .unwrap_or_else(|_| panic!("{name} was never listed"));
}

#[tokio::test]
async fn an_attached_server_is_served_kept_through_reloads_and_yields_to_a_configured_one() {
    let warden = start_running(&table("a")).await;
    warden.attach_server(attachable("b")).await.unwrap();
    listed(&warden, "b__echo").await;
    assert_eq!(echo(&warden, "b__echo").await.unwrap(), "hi");
    assert_eq!(warden.attached_servers().await, ["b"]);

    // A name in use is refused, configured or attached.
    for taken in ["a", "b"] {
        let error = warden.attach_server(attachable(taken)).await.unwrap_err();
        assert!(matches!(&error, AttachError::Taken(name) if name == taken), "{error}");
        assert!(error.to_string().contains("is running already"), "{error}");
    }

    // A reload of the config it is not in leaves it running.
    let report = warden.reload(&test_config(&table("a")).unwrap()).await.unwrap();
    assert!(report.removed.is_empty(), "{report:?}");
    assert_eq!(echo(&warden, "b__echo").await.unwrap(), "hi");

    // A configured server of its name displaces it.
    let both = format!("{}{}", table("a"), table("b"));
    let report = warden.reload(&test_config(&both).unwrap()).await.unwrap();
    assert_eq!(report.added, ["b"], "{report:?}");
    assert!(warden.attached_servers().await.is_empty());
    listed(&warden, "b__echo").await;
    tokio::time::timeout(Duration::from_secs(30), warden.settled()).await.unwrap();
    assert_eq!(echo(&warden, "b__echo").await.unwrap(), "hi");
    assert!(!warden.detach_server("b").await, "a configured server is not detached");

    // Detaching an attached server withdraws its tools.
    warden.attach_server(attachable("c")).await.unwrap();
    listed(&warden, "c__echo").await;
    assert!(warden.detach_server("c").await);
    assert!(warden.snapshot().tool("c__echo").is_none());
    let error = echo(&warden, "c__echo").await.unwrap_err();
    assert!(error.contains("c__echo"), "{error}");
    warden.shutdown().await;
}
