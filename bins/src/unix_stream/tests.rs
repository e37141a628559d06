use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

use super::*;

/// A connected pair: ours split, the peer a plain blocking socket.
fn pair() -> ((ReadHalf, WriteHalf), StdUnixStream) {
    let (ours, peer) = StdUnixStream::pair().expect("a socket pair");
    ours.set_nonblocking(true).expect("non-blocking");
    let ours = tokio::net::UnixStream::from_std(ours).expect("registered");
    (split(ours).expect("split"), peer)
}

#[tokio::test]
async fn lines_go_both_ways_and_dropping_the_write_half_ends_the_peer_s_stream() {
    let ((read, mut write), peer) = pair();
    let echo = std::thread::spawn(move || {
        let mut lines = std::io::BufReader::new(peer.try_clone().expect("cloned"));
        let mut peer = peer;
        let mut line = String::new();
        let mut seen = Vec::new();
        while std::io::BufRead::read_line(&mut lines, &mut line).expect("read") > 0 {
            peer.write_all(line.to_uppercase().as_bytes()).expect("written");
            seen.push(std::mem::take(&mut line));
        }
        seen
    });
    let mut answers = BufReader::new(read);
    for word in ["one", "two", "three"] {
        write.write_all(format!("{word}\n").as_bytes()).await.expect("written");
        let mut answer = String::new();
        answers.read_line(&mut answer).await.expect("answered");
        assert_eq!(answer, format!("{}\n", word.to_uppercase()));
    }
    drop(write);
    let seen = echo.join().expect("the peer saw the end of the stream");
    assert_eq!(seen, ["one\n", "two\n", "three\n"]);
}

#[tokio::test]
async fn a_write_larger_than_the_socket_buffer_waits_for_a_slow_reader_and_arrives_whole() {
    let ((_read, mut write), mut peer) = pair();
    let sent: Vec<u8> = (0..8 * 1024 * 1024u32).map(|n| (n % 251) as u8).collect();
    let reader = std::thread::spawn(move || {
        // Slow at first: the writer finds the buffer full and must wait.
        std::thread::sleep(Duration::from_millis(200));
        let mut received = Vec::new();
        peer.read_to_end(&mut received).expect("read");
        received
    });
    write.write_all(&sent).await.expect("written");
    assert!(matches!(write.0, Writer::Registered(_)), "8 MiB fit in the socket's buffer: nothing was tested");
    write.shutdown().await.expect("shut down");
    let received = tokio::task::spawn_blocking(move || reader.join().expect("read")).await.expect("joined");
    assert!(received == sent, "received {} bytes, not the {} sent in order", received.len(), sent.len());
}

#[test]
fn the_peer_reading_what_was_written_does_not_wake_the_runtime() {
    let unparked = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&unparked);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .on_thread_unpark(move || {
            counted.fetch_add(1, Ordering::Relaxed);
        })
        .build()
        .expect("a runtime");
    let messages = 20;
    runtime.block_on(async {
        let ((mut read, mut write), mut peer) = pair();
        for n in 0..messages {
            write.write_all(format!("message {n}\n").as_bytes()).await.expect("written");
        }
        // The peer reads them one by one while our runtime waits to read:
        // each read frees room in our socket's buffer.
        let peer = std::thread::spawn(move || {
            for n in 0..messages {
                std::thread::sleep(Duration::from_millis(10));
                let mut message = vec![0; format!("message {n}\n").len()];
                peer.read_exact(&mut message).expect("read");
            }
            peer
        });
        unparked.store(0, Ordering::Relaxed);
        let mut nothing = [0; 1];
        let waited = tokio::time::timeout(Duration::from_millis(400), read.read(&mut nothing)).await;
        assert!(waited.is_err(), "the peer wrote nothing");
        let _peer = peer.join().expect("the peer read everything");
    });
    // The timer's wake-up, and maybe one more; not one per read.
    let unparked = unparked.load(Ordering::Relaxed);
    assert!(unparked <= 3, "the runtime woke {unparked} times while only a timer was due");
}
