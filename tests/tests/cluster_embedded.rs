//! Hosts that embed Warden joining a cluster from their own process
//! (`warden_cluster::Cluster::join`), against a real nats-server: one
//! host's server called through the other's handle, as its own tools.

use std::time::Duration;

use serde_json::json;
use warden_cluster::Cluster;
use warden_tests::nats::NatsServer;
use warden_tests::{bins, scratch_dir, server_table, start_running, test_config};

fn cluster(nats: &NatsServer, node: &str, export: &str) -> String {
    format!("[cluster]\nnats = [\"{}\"]\nnode = \"{node}\"\nexport = [{export}]\n", nats.url())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_host_calls_another_hosts_server_through_its_own_handle() {
    let nats = tokio::task::spawn_blocking(|| NatsServer::start(&scratch_dir("cluster-embedded"), "")).await.unwrap();
    let table = server_table("files", (bins::test_server().display().to_string(), Vec::new()), "");
    let host_a = format!("{table}{}", cluster(&nats, "host-a", "\"files\""));
    let a = start_running(&host_a).await;
    let a_config = test_config(&host_a).unwrap();
    let a_cluster = Cluster::join(&a, &a_config).await.unwrap().expect("a [cluster] table");
    assert_eq!(a_cluster.node(), "host-a");

    // Host B has no server of its own; joining attaches A's.
    let b_config = test_config(&cluster(&nats, "host-b", "")).unwrap();
    let b = warden_actors::Warden::start(&b_config).await.unwrap();
    let b_cluster = Cluster::join(&b, &b_config).await.unwrap().expect("a [cluster] table");
    tokio::time::timeout(Duration::from_secs(30), b.wait_for(|snapshot| snapshot.tool("files__echo").is_some()))
        .await
        .expect("A's tools listed on B");
    let result = b.call_tool("files__echo", json!({"message": "from host b"})).await.unwrap();
    assert_eq!(result.text(), "from host b");
    let view = b_cluster.view();
    assert_eq!(view.nodes.iter().map(|node| node.name.as_str()).collect::<Vec<_>>(), ["host-a"]);
    assert_eq!(view.servers[0].nodes, ["host-a"]);

    // A leaves: B withdraws its server at once (a deleted heartbeat, not a
    // lapsed one), and says why a call fails.
    a_cluster.leave().await;
    tokio::time::timeout(Duration::from_secs(5), b.wait_for(|snapshot| snapshot.tool("files__echo").is_none()))
        .await
        .expect("A's tools withdrawn on B when A left");
    let error = b.call_tool("files__echo", json!({"message": "gone"})).await.unwrap_err();
    assert!(error.to_string().contains("files__echo"), "{error}");
    b_cluster.leave().await;
    a.shutdown().await;
    b.shutdown().await;
}
