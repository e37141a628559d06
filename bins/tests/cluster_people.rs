//! The cluster's people: a call waiting for a person on one node answered
//! from others, a grant given on one node covering calls on all, and a
//! server's questions — listed and answered on every node, or put to the
//! caller on the node its call entered at.

#![allow(unused_crate_dependencies)]

mod common;

use std::process::Stdio;
use std::time::{Duration, Instant};

use common::cluster::{call_in_background, ended_within, lists, nats, node, wait_for};
use common::{stderr, stdout, Home};

#[test]
fn a_call_waiting_for_a_person_on_one_node_is_listed_and_answered_once_from_others() {
    let nats = nats("cluster-nats-8");
    // A asks a person for its own server's calls (no auto-approval).
    let a = Home::new("cluster-approve-a");
    let server = warden_tests::bins::test_server().display().to_string();
    let config =
        format!("[servers.test]\ncommand = {server:?}\n[cluster]\nnats = [\"{}\"]\nnode = \"a\"\n", nats.url());
    std::fs::write(&a.config, config).unwrap();
    let b = node("cluster-approve-b", "b", false, &nats);
    let c = node("cluster-approve-c", "c", false, &nats);
    for home in [&a, &b, &c] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    let call = call_in_background(&a, "test__echo", r#"{"message":"approved elsewhere"}"#);
    let mut id = String::new();
    wait_for(Duration::from_secs(10), "A's waiting call listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["approvals", "--json"]))).unwrap_or_default();
        let found = listed["approvals"].as_array().and_then(|all| all.first()).cloned();
        if let Some(request) = found {
            assert_eq!(request["node"], "a", "{request}");
            assert_eq!(request["tool"], "test__echo", "{request}");
            id = request["id"].as_str().unwrap().to_string();
        }
        !id.is_empty()
    });
    assert!(id.starts_with("a:"), "{id}");
    assert!(stdout(&c.warden(&["approvals"])).contains(&format!("#{id} test__echo")));
    // B approves and C denies at the same moment: one decision is taken.
    let spawn = |home: &Home, args: &[&str]| {
        let mut command = home.command(args);
        command.arg("--config").arg(&home.config).stdout(Stdio::piped()).stderr(Stdio::piped());
        command.spawn().unwrap()
    };
    let (approve, deny) = (spawn(&b, &["approve", &id]), spawn(&c, &["deny", &id, "--reason", "no"]));
    let (approve, deny) = (approve.wait_with_output().unwrap(), deny.wait_with_output().unwrap());
    let approved = approve.status.code() == Some(0);
    let denied = deny.status.code() == Some(0);
    assert!(approved != denied, "one decision: approve {approve:?}, deny {deny:?}");
    let loser = if approved { &deny } else { &approve };
    assert!(stderr(loser).contains("is waiting"), "{}", stderr(loser));
    let output = call.wait_with_output().unwrap();
    assert_eq!(output.status.code() == Some(0), approved, "{}", String::from_utf8_lossy(&output.stderr));
    if approved {
        assert_eq!(String::from_utf8_lossy(&output.stdout).trim(), "approved elsewhere");
    }
    wait_for(Duration::from_secs(5), "the answered call leaving every list", || {
        !stdout(&b.warden(&["approvals"])).contains(&id)
    });
}

#[test]
fn a_grant_given_with_an_approval_from_another_node_covers_calls_on_every_node() {
    let nats = nats("cluster-nats-9");
    // Both nodes ask a person; A runs the server, B imports it.
    let server = warden_tests::bins::test_server().display().to_string();
    let (a, b) = (Home::new("cluster-grant-a"), Home::new("cluster-grant-b"));
    let config_a = format!(
        "[servers.test]\ncommand = {server:?}\n[cluster]\nnats = [\"{}\"]\nnode = \"a\"\nexport = [\"test\"]\n",
        nats.url()
    );
    std::fs::write(&a.config, config_a).unwrap();
    std::fs::write(&b.config, format!("[cluster]\nnats = [\"{}\"]\nnode = \"b\"\n", nats.url())).unwrap();
    for home in [&a, &b] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    wait_for(Duration::from_secs(10), "A's tools on B", || lists(&b, "test__echo"));
    // Without a grant, a call entering at B waits for a person.
    let asked = call_in_background(&b, "test__echo", r#"{"message":"unapproved"}"#);
    assert_eq!(ended_within(asked, Duration::from_secs(2)), None, "B ran a call nobody approved");

    // A call waiting on A, approved from B with a grant for the tool.
    let waiting = call_in_background(&a, "test__echo", r#"{"message":"first"}"#);
    let mut id = String::new();
    wait_for(Duration::from_secs(10), "A's waiting call listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["approvals", "--json"]))).unwrap_or_default();
        if let Some(request) = listed["approvals"].as_array().and_then(|all| all.first()) {
            id = request["id"].as_str().unwrap_or_default().to_string();
        }
        id.starts_with("a:")
    });
    let approved = b.warden(&["approve", &id, "--grant"]);
    assert_eq!(approved.status.code(), Some(0), "{}", stderr(&approved));
    assert_eq!(ended_within(waiting, Duration::from_secs(10)).as_deref(), Some("first"));

    // The grant covers later calls on A, and calls entering at B.
    let on_a = call_in_background(&a, "test__echo", r#"{"message":"unasked on a"}"#);
    assert_eq!(ended_within(on_a, Duration::from_secs(10)).as_deref(), Some("unasked on a"));
    let start = Instant::now();
    loop {
        let on_b = call_in_background(&b, "test__echo", r#"{"message":"unasked on b"}"#);
        match ended_within(on_b, Duration::from_secs(2)) {
            Some(said) => {
                assert_eq!(said, "unasked on b");
                break;
            }
            None => assert!(start.elapsed() < Duration::from_secs(6), "A's grant never covered B's calls"),
        }
    }
    // A grant for one tool covers no other.
    let other = call_in_background(&b, "test__pid", "{}");
    assert_eq!(ended_within(other, Duration::from_secs(2)), None, "a grant for test__echo let test__pid run");
}

#[test]
fn a_question_a_server_asks_on_one_node_is_listed_and_answered_on_another() {
    let nats = nats("cluster-nats-10");
    // A runs the Python SDK's asking server and exports it; B imports it.
    let a = common::cluster::asking_node("cluster-question-a", &nats);
    let b = node("cluster-question-b", "b", false, &nats);
    for home in [&a, &b] {
        assert_eq!(home.warden(&["status"]).status.code(), Some(0));
    }
    wait_for(Duration::from_secs(30), "A's server on B", || lists(&b, "py__book_table"));
    // A call made on A waits in A's queue: listed on B as `a:N`, answered from B.
    let call = call_in_background(&a, "py__book_table", "{}");
    let mut id = String::new();
    wait_for(Duration::from_secs(20), "the server's question listed on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["pending", "--json"]))).unwrap_or_default();
        if let Some(question) = listed["questions"].as_array().and_then(|all| all.first()) {
            assert_eq!((&question["node"], &question["server"]), (&serde_json::json!("a"), &serde_json::json!("py")));
            id = question["id"].as_str().unwrap_or_default().to_string();
        }
        id.starts_with("a:")
    });
    let listed = stdout(&b.warden(&["pending"]));
    assert!(listed.contains(&format!("#{id} question from server py")), "{listed}");
    assert!(listed.contains(&format!("answer: `warden answer {id} --accept")), "{listed}");
    // A wrong answer from B is refused by A's queue with the reason; the question waits.
    let wrong = b.warden(&["answer", &id, "--accept", r#"{"size": "huge"}"#]);
    assert_eq!(wrong.status.code(), Some(1));
    assert!(stderr(&wrong).contains("`size` must be one of: small, large; `huge` is not one"), "{}", stderr(&wrong));
    let right = b.warden(&["answer", &id, "--accept", r#"{"size": "large", "nights": "3"}"#]);
    assert_eq!(right.status.code(), Some(0), "{}", stderr(&right));
    assert_eq!(
        ended_within(call, Duration::from_secs(20)).as_deref(),
        Some("booked Ada large 3\n{\"result\":\"booked Ada large 3\"}")
    );
    let again = b.warden(&["answer", &id, "--cancel"]);
    assert!(stderr(&again).contains("no question"), "{}", stderr(&again));

    // A call made on B: its question comes back to B, to the caller — told
    // in place, waiting in B's own queue like a local server's.
    let call = call_in_background(&b, "py__book_table", "{}");
    let mut local = 0;
    wait_for(Duration::from_secs(20), "the question of B's call waiting on B", || {
        let listed: serde_json::Value =
            serde_json::from_str(&stdout(&b.warden(&["pending", "--json"]))).unwrap_or_default();
        let question = listed["questions"].as_array().and_then(|all| all.first()).cloned().unwrap_or_default();
        local = question["id"].as_u64().unwrap_or(0);
        local > 0
    });
    let right = b.warden(&["answer", &local.to_string(), "--accept", r#"{"size": "small"}"#]);
    assert_eq!(right.status.code(), Some(0), "{}", stderr(&right));
    let output = call.wait_with_output().unwrap();
    assert_eq!(stdout(&output).lines().next(), Some("booked Ada small 2"), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(&format!("waiting for a person: #{local} question from server py")),
        "{}",
        stderr(&output)
    );
    // Nothing waited in A's own queue (B's answered question may still be
    // listed there as `b:N` for the moment its node takes to withdraw it).
    let on_a: serde_json::Value = serde_json::from_str(&stdout(&a.warden(&["pending", "--json"]))).unwrap();
    let own = on_a["questions"].as_array().unwrap().iter().filter(|question| question["id"].is_u64()).count();
    assert_eq!(own, 0, "a question waited in A's queue: {on_a}");
}
