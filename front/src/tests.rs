//! The session logic with scripted clients: two sessions on one front over
//! in-memory pipes (`front::lines` on `tokio::io::duplex`), and the HTTP
//! sessions' expiry with paused time.

use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream, Lines};
use warden_actors::{Warden, WardenConfig};

use super::http::sessions::{Refused, Sessions};
use super::session::Session;
use super::view::View;
use super::{lines, Front};

/// A scripted client of one session.
struct Script {
    to_front: DuplexStream,
    from_front: Lines<BufReader<DuplexStream>>,
}

impl Script {
    fn open(front: &Arc<Front>) -> Script {
        let (to_front, front_input) = tokio::io::duplex(1 << 16);
        let (front_output, from_front) = tokio::io::duplex(1 << 16);
        let view = View::of(&front.warden, None, None, false).unwrap();
        tokio::spawn(lines::serve(Arc::clone(front), view, BufReader::new(front_input), front_output, 1 << 20));
        Script { to_front, from_front: BufReader::new(from_front).lines() }
    }

    async fn send(&mut self, message: Value) {
        let line = format!("{message}\n");
        self.to_front.write_all(line.as_bytes()).await.unwrap();
    }

    /// The next message with `id`, skipping notifications.
    async fn answer(&mut self, id: i64) -> Value {
        loop {
            let line = tokio::time::timeout(Duration::from_secs(20), self.from_front.next_line())
                .await
                .expect("an answer within 20 s")
                .unwrap()
                .expect("the session is open");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id {
                return message;
            }
        }
    }

    async fn initialize(&mut self) {
        self.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "script", "version": "1"}}}),
        )
        .await;
        self.answer(0).await;
    }
}

fn sleep_call(id: i64, ms: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {"name": "test__sleep", "arguments": {"ms": ms}}})
}

async fn warden_with_test_server() -> Warden {
    let server = warden_tests::bins::test_server().display().to_string();
    let text = format!("[security]\nauto_approve = true\n[servers.test]\ncommand = {server:?}\n");
    let warden = Warden::start(&WardenConfig::from_toml(&text, "test.toml").unwrap()).await.unwrap();
    tokio::time::timeout(Duration::from_secs(20), warden.settled()).await.unwrap();
    warden
}

#[tokio::test]
async fn one_sessions_cancel_never_touches_another_sessions_request_with_the_same_id() {
    let warden = warden_with_test_server().await;
    let front = Front::new(warden.clone());
    let (mut first, mut second) = (Script::open(&front), Script::open(&front));
    first.initialize().await;
    second.initialize().await;
    // Both use request id 7 for a 600 ms call; the first cancels its own.
    first.send(sleep_call(7, 600)).await;
    second.send(sleep_call(7, 600)).await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    first.send(json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 7}})).await;
    let answered = second.answer(7).await;
    assert_eq!(answered["result"]["content"][0]["text"], "slept 600 ms", "{answered}");
    // The cancelled request gets no answer; the first session answers its next one.
    first.send(json!({"jsonrpc": "2.0", "id": 8, "method": "ping"})).await;
    let next = first.answer(8).await;
    assert_eq!(next["result"], json!({}));
    let late = tokio::time::timeout(Duration::from_millis(900), first.answer(7)).await;
    assert!(late.is_err(), "a cancelled request was answered: {late:?}");
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn an_unused_http_session_ends_after_its_idle_limit_and_a_used_one_does_not() {
    let warden = Warden::builder().start().await.unwrap();
    let front = Front::new(warden.clone());
    let sessions = Sessions::new(8, Duration::from_secs(60), Box::new(|_| {}), None);
    let sweeper = sessions.spawn_sweeper();
    let owner = ("token #1", "/mcp");
    let session = |front: &Arc<Front>| Session::new(Arc::clone(front), View::of(&warden, None, None, false).unwrap());
    let (idle, _) = sessions.create(session(&front), owner, Box::new(())).ok().unwrap();
    let (used, _) = sessions.create(session(&front), owner, Box::new(())).ok().unwrap();
    for _ in 0..5 {
        tokio::time::sleep(Duration::from_secs(20)).await;
        assert!(sessions.get(&used, owner).is_some(), "a session in use was ended");
    }
    assert!(sessions.get(&idle, owner).is_none(), "a session unused for 100 s outlived its 60 s limit");
    assert!(sessions.get(&used, ("token #2", "/mcp")).is_none(), "another token's session was handed out");
    assert_eq!(sessions.count(), 1);
    sweeper.abort();
    warden.shutdown().await;
}

#[tokio::test(start_paused = true)]
async fn a_full_table_makes_room_by_ending_the_session_unused_longest_and_refuses_only_when_all_are_in_use() {
    let warden = Warden::builder().start().await.unwrap();
    let front = Front::new(warden.clone());
    let sessions = Sessions::new(4, Duration::from_secs(1800), Box::new(|_| {}), None);
    let owner = ("token #1", "/mcp");
    let session = |front: &Arc<Front>| Session::new(Arc::clone(front), View::of(&warden, None, None, false).unwrap());
    let mut ids = Vec::new();
    for _ in 0..4 {
        ids.push(sessions.create(session(&front), owner, Box::new(())).ok().unwrap().0);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    // All four used within the last 10 s: none may go.
    assert!(matches!(sessions.create(session(&front), owner, Box::new(())), Err(Refused::Full)));
    tokio::time::sleep(Duration::from_secs(12)).await;
    assert!(sessions.get(&ids[0], owner).is_some(), "the oldest is used again");
    // A thousand sessions opened and abandoned never keep a client out.
    for _ in 0..1000 {
        tokio::time::sleep(Duration::from_secs(11)).await;
        assert!(sessions.get(&ids[0], owner).is_some(), "a session in use was ended to make room");
        sessions.create(session(&front), owner, Box::new(())).ok().expect("room is made");
    }
    assert_eq!(sessions.count(), 4);
    assert!(sessions.get(&ids[1], owner).is_none(), "the one unused longest went first");
    warden.shutdown().await;
}
