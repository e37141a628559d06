//! Live config reload, actor level: servers added, removed and restarted
//! while Warden runs, with scripted servers on paused time.
//!
//! A server is the same when the host hands Warden the same connector
//! (`reload_with`), or, from a config, when nothing that reaches its process
//! changed (`reload`).

mod common;

use std::sync::Arc;

use common::*;
use serde_json::json;
use warden_actors::{PolicyRules, ReloadReport, ServerSpec, Warden, WardenConfig};
use warden_protocol::{Connector, MemoryPeer};

fn spec(name: &str, connector: &Arc<warden_protocol::MemoryConnector>) -> ServerSpec {
    let connector: Arc<dyn Connector> = connector.clone();
    ServerSpec { name: name.into(), connector, settings: settings() }
}

fn unpoliced() -> PolicyRules {
    PolicyRules::default().with_auto_approve(true)
}

fn report(added: &[&str], removed: &[&str], restarted: &[&str], unchanged: &[&str]) -> ReloadReport {
    let list = |names: &[&str]| names.iter().map(|name| name.to_string()).collect();
    ReloadReport {
        added: list(added),
        removed: list(removed),
        restarted: list(restarted),
        unchanged: list(unchanged),
        reshaped: Vec::new(),
    }
}

/// Warden running `a` (tool `one`) and `b` (tool `two`).
async fn two_servers() -> (Warden, [Arc<warden_protocol::MemoryConnector>; 2], [Connections; 2], [MemoryPeer; 2]) {
    let (a, mut a_connections) = scripted("a");
    let (b, mut b_connections) = scripted("b");
    let warden = start_unpoliced(vec![spec("a", &a), spec("b", &b)]).await;
    let mut a_peer = a_connections.next().await;
    let mut b_peer = b_connections.next().await;
    ready(&mut a_peer, tools(&["one"])).await;
    ready(&mut b_peer, tools(&["two"])).await;
    within("the servers settle", warden.settled()).await;
    (warden, [a, b], [a_connections, b_connections], [a_peer, b_peer])
}

#[tokio::test(start_paused = true)]
async fn an_added_server_starts_and_hosts_see_its_tools_while_the_others_are_untouched() {
    let (warden, [a, b], [mut a_connections, _], _peers) = two_servers().await;
    let mut changes = warden.tool_changes();
    let (c, mut c_connections) = scripted("c");

    let done = warden.reload_with(vec![spec("a", &a), spec("b", &b), spec("c", &c)], unpoliced()).await.unwrap();
    assert_eq!(done, report(&["c"], &[], &[], &["a", "b"]));
    let mut c_peer = c_connections.next().await;
    ready(&mut c_peer, tools(&["three"])).await;

    let listed: Vec<String> =
        within("hosts hear of it", changes.changed()).await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["a__one", "b__two", "c__three"]);
    a_connections.assert_none();
    assert_eq!(status(&warden, "c").state, warden_actors::ServerState::Running);
}

#[tokio::test(start_paused = true)]
async fn a_removed_server_finishes_its_call_in_flight_then_stops_and_its_tools_are_gone() {
    let (warden, [a, _], _, [mut a_peer, mut b_peer]) = two_servers().await;
    let mut changes = warden.tool_changes();

    let on_b = warden.call_tool("b__two", json!({}));
    let on_a = warden.call_tool("a__one", json!({}));
    let reload = async {
        // Both calls reached their servers before the reload began.
        let b_call = next_request(&mut b_peer, "tools/call").await;
        let a_call = next_request(&mut a_peer, "tools/call").await;
        let done = warden.reload_with(vec![spec("a", &a)], unpoliced());
        let script = async {
            // `b` is withdrawn at once: no new call reaches it...
            within("b is withdrawn", warden.wait_for(|snapshot| snapshot.status("b").is_none())).await;
            assert_eq!(names(&warden), ["a__one"]);
            // ...but the call it has is waited for.
            quiescent().await;
            reply(&b_peer, &b_call, text_result("b finished"));
        };
        let (done, ()) = tokio::join!(done, script);
        // `b` is stopped only now: its connection closes.
        assert!(within("b's connection closes", b_peer.recv()).await.is_none());
        reply(&a_peer, &a_call, text_result("a finished"));
        done
    };
    let (on_b, on_a, done) = tokio::join!(on_b, on_a, reload);

    assert_eq!(done.unwrap(), report(&[], &["b"], &[], &["a"]));
    assert_eq!(on_b.unwrap().text(), "b finished");
    assert_eq!(on_a.unwrap().text(), "a finished");
    let listed: Vec<String> =
        within("hosts hear of it", changes.changed()).await.unwrap().into_iter().map(|t| t.name).collect();
    assert_eq!(listed, ["a__one"]);
    assert_eq!(warden.status().iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["a"]);
    let error = warden.call_tool("b__two", json!({})).await.unwrap_err();
    assert_eq!(error.to_string(), "unknown tool 'b__two': no running server lists it");
}

#[tokio::test(start_paused = true)]
async fn a_changed_server_restarts_with_its_new_connection_and_lists_its_new_tools() {
    let (warden, [a, _], [_, mut b_connections], [_, mut b_peer]) = two_servers().await;
    let mut changes = warden.tool_changes();
    let (b2, mut b2_connections) = scripted("b");

    let done = warden.reload_with(vec![spec("a", &a), spec("b", &b2)], unpoliced()).await.unwrap();
    assert_eq!(done, report(&[], &[], &["b"], &["a"]));
    assert!(within("the old b closes", b_peer.recv()).await.is_none());
    let mut new_peer = b2_connections.next().await;
    ready(&mut new_peer, tools(&["two", "more"])).await;
    within("b is running again", warden.settled()).await;
    b_connections.assert_none();

    let call = warden.call_tool("b__more", json!({}));
    let script = async {
        let request = next_request(&mut new_peer, "tools/call").await;
        reply(&new_peer, &request, text_result("from the new b"));
    };
    let (outcome, ()) = tokio::join!(call, script);
    assert_eq!(outcome.unwrap().text(), "from the new b");
    let mut listed = names(&warden);
    listed.sort();
    assert_eq!(listed, ["a__one", "b__more", "b__two"]);
    assert!(within("hosts hear of it", changes.changed()).await.is_some());
}

#[tokio::test(start_paused = true)]
async fn a_reload_that_changes_naming_is_refused_and_changes_nothing() {
    let (warden, [a, _], _, _peers) = two_servers().await;
    let rules = rules_from("[naming]\nseparator = \"_\"\n");

    let error = warden.reload_with(vec![spec("a", &a)], rules).await.unwrap_err();
    assert!(
        error.to_string().starts_with("the new config changes `[naming]`, which cannot change while Warden runs"),
        "{error}"
    );
    assert_eq!(names(&warden), ["a__one", "b__two"]);
}

#[tokio::test(start_paused = true)]
async fn policy_changes_apply_to_the_next_call() {
    let (warden, [a, b], _, [mut a_peer, _]) = two_servers().await;
    // No auto-approval any more: the unannotated tool needs a person.
    let done = warden.reload_with(vec![spec("a", &a), spec("b", &b)], PolicyRules::default()).await.unwrap();
    assert_eq!(done, report(&[], &[], &[], &["a", "b"]));
    let error = warden.call_tool("a__one", json!({})).await.unwrap_err();
    assert!(error.to_string().contains("approval"), "{error}");
    assert_silent(&mut a_peer).await;
}

/// From a config: `default_policy` is policy, not process; `args` is process.
#[tokio::test]
async fn config_servers_restart_only_when_what_reaches_their_process_changed() {
    let config = |args: &str, policy: &str| {
        let text = format!(
            "[servers.gone]\ncommand = \"/nonexistent/warden-reload-test\"\nargs = [{args}]\n{policy}\n\
             [servers.other]\ncommand = \"/nonexistent/warden-reload-other\"\n"
        );
        WardenConfig::from_toml(&text, "test.toml").expect("the config loads")
    };
    let warden = Warden::start(&config("\"1\"", "")).await.unwrap();
    within("the servers settle", warden.settled()).await;

    let policy = "[servers.gone.default_policy]\napproval = \"never\"";
    let done = warden.reload(&config("\"1\"", policy)).await.unwrap();
    assert_eq!(done, report(&[], &[], &[], &["gone", "other"]));
    let done = warden.reload(&config("\"2\"", policy)).await.unwrap();
    assert_eq!(done, report(&[], &[], &["gone"], &["other"]));
    warden.shutdown().await;
}
