//! A resource subscription held by two faces of one Warden (two fronts, or
//! a front and another node of its cluster) ends only when both let go
//! (`Warden::hold_resource`). Against the reference `everything` server,
//! whose `toggle-subscriber-updates` has it say at once, then every 5 s,
//! that each subscribed resource was updated.

use std::time::Duration;

use serde_json::json;
use tokio::sync::broadcast::Receiver;
use warden_actors::{CallOptions, ServerNotice, ServerRequest};
use warden_tests::real_servers::EVERYTHING;
use warden_tests::{server_table, start_running};

const URI: &str = "demo://resource/static/document/architecture.md";

/// Whether an update of [`URI`] arrives within `limit` (older notices
/// dropped first).
async fn updated_within(notices: &mut Receiver<ServerNotice>, limit: Duration) -> bool {
    *notices = notices.resubscribe();
    let wait = async {
        loop {
            match notices.recv().await {
                Ok(notice) if notice.method == "notifications/resources/updated" => {
                    if notice.params.as_ref().is_some_and(|params| params["uri"] == URI) {
                        return;
                    }
                }
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(tokio::sync::broadcast::error::RecvError::Closed) => std::future::pending().await,
            }
        }
    };
    tokio::time::timeout(limit, wait).await.is_ok()
}

#[tokio::test]
async fn a_subscription_two_faces_hold_ends_only_after_both_let_go() {
    let warden = start_running(&server_table("everything", EVERYTHING.command(&[]), "")).await;
    let mut notices = warden.notices();
    for _ in 0..2 {
        let subscribe = json!({ "uri": URI });
        warden.host().request("everything", ServerRequest::Subscribe, subscribe, CallOptions::default()).await.unwrap();
        warden.hold_resource("everything", URI);
    }
    warden.call_tool("everything__toggle-subscriber-updates", json!({})).await.unwrap();
    assert!(updated_within(&mut notices, Duration::from_secs(10)).await, "the subscribed resource's update arrived");
    warden.release_resource("everything", URI).await;
    assert!(
        updated_within(&mut notices, Duration::from_secs(8)).await,
        "one face letting go left the other's subscription in place"
    );
    warden.release_resource("everything", URI).await;
    assert!(
        !updated_within(&mut notices, Duration::from_secs(7)).await,
        "after the last holder let go, the server was unsubscribed"
    );
    warden.shutdown().await;
}
