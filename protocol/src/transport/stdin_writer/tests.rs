use std::process::Stdio;

use tokio::io::{AsyncBufReadExt as _, BufReader};

use super::*;

/// Lines sent at once and lines queued for the writer, mixed, reach the
/// child in the order they were sent.
#[tokio::test]
async fn lines_sent_now_and_queued_arrive_in_order() {
    let mut child = tokio::process::Command::new("cat")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("cat runs");
    let (stop, stopped) = oneshot::channel();
    let (outbound, writer) = spawn(child.stdin.take().unwrap(), stopped);
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for n in 0..2_000 {
        let json = format!("{{\"n\":{n}}}").into_bytes();
        let sent = if n % 3 == 0 { outbound.send_json(json) } else { outbound.send_json_in_company(json) };
        sent.expect("the pipe is open");
    }
    for n in 0..2_000 {
        assert_eq!(lines.next_line().await.unwrap().as_deref(), Some(format!("{{\"n\":{n}}}").as_str()));
    }
    let _ = stop.send(());
    assert_eq!(writer.await.unwrap(), None, "the writer stopped without a failure");
    assert!(matches!(outbound.send_json_in_company(b"{}".to_vec()), Err(TransportError::Closed)));
}
