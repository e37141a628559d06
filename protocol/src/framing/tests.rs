use tokio::io::BufReader;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use super::*;

async fn frames(input: &[u8], max: usize, buffer: usize) -> Vec<Frame> {
    let mut reader = LineReader::new(BufReader::with_capacity(buffer, input), max);
    let mut out = Vec::new();
    while let Some(frame) = reader.next_frame().await.unwrap() {
        out.push(frame);
    }
    out
}

#[tokio::test]
async fn splits_lines_and_skips_blank_ones() {
    let got = frames(b"{\"a\":1}\n\n  \r\n{\"b\":2}\r\nlast", 100, 4).await;
    assert_eq!(
        got,
        vec![Frame::Line("{\"a\":1}".into()), Frame::Line("{\"b\":2}".into()), Frame::Line("last".into()),]
    );
}

#[tokio::test]
async fn an_oversized_line_is_reported_and_the_next_one_still_arrives() {
    let mut input = vec![b'x'; 50];
    input.extend_from_slice(b"\nok\n");
    // A small read buffer makes the long line arrive in many pieces.
    let got = frames(&input, 10, 3).await;
    assert_eq!(
        got,
        vec![
            Frame::Oversized { bytes: 50, limit: 10, head: vec![b'x'; 50], tail: vec![b'x'; 50] },
            Frame::Line("ok".into())
        ]
    );
}

#[tokio::test]
async fn an_oversized_line_keeps_its_first_bytes_however_it_arrives() {
    let mut input = br#"{"jsonrpc":"2.0","id":42,"result":{"#.to_vec();
    input.extend(std::iter::repeat_n(b'y', 5_000));
    input.extend_from_slice(
        b"}}
",
    );
    for buffer in [1, 7, 64, 8192] {
        let got = frames(&input, 100, buffer).await;
        let line = &input[..input.len() - 1];
        let expected = Frame::Oversized {
            bytes: line.len(),
            limit: 100,
            head: line[..HEAD_BYTES].to_vec(),
            tail: line[line.len() - HEAD_BYTES..].to_vec(),
        };
        assert_eq!(got, vec![expected], "read {buffer} bytes at a time");
    }
}

#[tokio::test]
async fn a_line_at_exactly_the_limit_is_kept() {
    let got = frames(b"0123456789\n", 10, 64).await;
    assert_eq!(got, vec![Frame::Line("0123456789".into())]);
}

#[tokio::test]
async fn invalid_utf8_is_reported_not_fatal() {
    let got = frames(b"\xff\xfe\nfine\n", 100, 64).await;
    assert_eq!(got, vec![Frame::NotUtf8 { bytes: 2 }, Frame::Line("fine".into())]);
}

#[tokio::test]
async fn takes_only_the_lines_already_there_without_waiting() {
    let (mut server, client) = tokio::io::duplex(1024);
    let mut reader = LineReader::new(BufReader::new(client), 100);
    assert!(reader.ready_frame().is_none(), "nothing has been written");
    tokio::io::AsyncWriteExt::write_all(&mut server, b"one\ntwo\nthr").await.unwrap();
    assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Line("one".into())));
    assert_eq!(reader.ready_frame().unwrap().unwrap(), Some(Frame::Line("two".into())));
    assert!(reader.ready_frame().is_none(), "`thr` is not a whole line yet");
    tokio::io::AsyncWriteExt::write_all(&mut server, b"ee\n").await.unwrap();
    drop(server);
    assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Line("three".into())));
    assert_eq!(reader.ready_frame().unwrap().unwrap(), None, "the end of the stream is ready too");
}

#[tokio::test]
async fn a_long_line_keeps_no_room_it_grew_but_did_not_use() {
    // 3 MB read 64 KiB at a time: the buffer doubled up to 4 MiB.
    let mut input = vec![b'z'; 3_000_000];
    input.push(b'\n');
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, &input[..]), usize::MAX);
    let Some(Frame::Line(line)) = reader.next_frame().await.unwrap() else { panic!("a line") };
    assert_eq!(line.len(), 3_000_000);
    assert!(line.capacity() <= line.len() + SLACK_BYTES, "capacity {} for {} bytes", line.capacity(), line.len());
}

#[tokio::test]
async fn a_recycled_line_is_read_into_and_holds_only_the_next_line() {
    let input = b"{\"a\":\"a long first line\"}\n{\"b\":2}\n\nlast".as_slice();
    let mut reader = LineReader::new(BufReader::with_capacity(4, input), 100);
    let mut got = Vec::new();
    let mut given_back = None;
    while let Some(frame) = reader.next_frame().await.unwrap() {
        let Frame::Line(line) = frame else { panic!("only lines here, got {frame:?}") };
        // Each line after the first (all shorter) lands in the buffer given back.
        if let Some(buffer) = given_back {
            assert_eq!(line.as_ptr(), buffer, "{line:?} was read into a new buffer");
        }
        got.push(line.clone());
        given_back = Some(line.as_ptr());
        reader.recycle(line);
    }
    assert_eq!(got, ["{\"a\":\"a long first line\"}", "{\"b\":2}", "last"]);
}

#[tokio::test]
async fn a_recycled_buffer_with_much_room_is_let_go() {
    let mut reader = LineReader::new(BufReader::new(b"x\n".as_slice()), 100);
    reader.recycle(String::with_capacity(SLACK_BYTES + 1));
    assert_eq!(reader.line.capacity(), 0, "a large buffer is not kept for small lines");
    assert_eq!(reader.next_frame().await.unwrap(), Some(Frame::Line("x".into())));
}

/// A line of `len` `x`s that is always ready, as a server writing a long
/// line faster than it is read looks. It notes whether `flag` was already
/// set when it had given out `watch_at` bytes.
struct FastWriter {
    len: usize,
    given: usize,
    watch_at: usize,
    flag: Arc<AtomicBool>,
    seen_while_reading: Option<bool>,
}

impl tokio::io::AsyncRead for FastWriter {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.given >= self.watch_at && self.seen_while_reading.is_none() {
            self.seen_while_reading = Some(self.flag.load(Ordering::SeqCst));
        }
        let n = buf.remaining().min(self.len - self.given);
        buf.put_slice(&vec![b'x'; n]);
        self.given += n;
        if self.given == self.len && buf.remaining() > 0 {
            buf.put_slice(b"\n");
            self.len += 1;
            self.given += 1;
        }
        Poll::Ready(Ok(()))
    }
}

/// Reads one always-ready line of `len` bytes on one thread beside a task
/// spawned just before: whether that task had run when the reader was
/// `watch_at` bytes in — only if the reader gave the thread back.
async fn other_task_ran_while_reading(len: usize, watch_at: usize) -> bool {
    let flag = Arc::new(AtomicBool::new(false));
    tokio::spawn({
        let flag = flag.clone();
        async move { flag.store(true, Ordering::SeqCst) }
    });
    let writer = FastWriter { len, given: 0, watch_at, flag, seen_while_reading: None };
    let mut reader = LineReader::new(BufReader::with_capacity(64 * 1024, writer), usize::MAX);
    match reader.next_frame().await.unwrap() {
        Some(Frame::Line(line)) => assert_eq!(line.len(), len),
        other => panic!("expected the whole line, got {other:?}"),
    }
    reader.into_inner().into_inner().seen_while_reading.expect("the reader got that far")
}

#[tokio::test(flavor = "current_thread")]
async fn a_long_line_that_is_always_ready_lets_other_tasks_run_while_it_is_read() {
    let len = HEAVY_BYTES + 16 * YIELD_EVERY_BYTES;
    assert!(other_task_ran_while_reading(len, HEAVY_BYTES + 2 * YIELD_EVERY_BYTES).await);
}

#[tokio::test(flavor = "current_thread")]
async fn a_line_under_the_heavy_size_is_read_without_leaving_the_thread() {
    // Nothing moves below it (`heavy_work.rs`: blocks spread over threads
    // stay resident).
    assert!(!other_task_ran_while_reading(HEAVY_BYTES - 1, HEAVY_BYTES - 64 * 1024).await);
}
