//! The line framer: any bytes, any chunking, the same frames; a line over
//! the limit is reported, never buffered whole.

use std::pin::Pin;
use std::task::{Context, Poll};

use proptest::prelude::*;
use tokio::io::{AsyncRead, BufReader, ReadBuf};

use super::{config, split_at, streamish};
use crate::framing::{Frame, LineReader, HEAD_BYTES};

/// Hands out one chunk per read, as a pipe does.
struct Chunked(std::collections::VecDeque<Vec<u8>>);

impl AsyncRead for Chunked {
    fn poll_read(mut self: Pin<&mut Self>, _: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<std::io::Result<()>> {
        while let Some(mut chunk) = self.0.pop_front() {
            if chunk.is_empty() {
                continue;
            }
            let n = chunk.len().min(buf.remaining());
            buf.put_slice(&chunk[..n]);
            if n < chunk.len() {
                self.0.push_front(chunk.split_off(n));
            }
            return Poll::Ready(Ok(()));
        }
        Poll::Ready(Ok(()))
    }
}

/// Every frame of `chunks`, read with a line limit of `max`.
fn frames(chunks: Vec<Vec<u8>>, max: usize) -> Vec<Frame> {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    runtime.block_on(async {
        // A small buffer, so chunks also straddle the reader's refills.
        let mut reader = LineReader::new(BufReader::with_capacity(7, Chunked(chunks.into())), max);
        let mut frames = Vec::new();
        while let Some(frame) = reader.next_frame().await.expect("reading memory cannot fail") {
            frames.push(frame);
        }
        frames
    })
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_same_bytes_split_anywhere_give_the_same_frames(
        bytes in streamish(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        max in 1usize..64,
    ) {
        let whole = frames(vec![bytes.clone()], max);
        prop_assert_eq!(frames(split_at(&bytes, &cuts), max), whole);
    }

    #[test]
    fn every_line_is_returned_whole_or_reported_and_none_exceeds_the_limit(
        lines in proptest::collection::vec("[a-z ]{1,40}", 1..10),
        max in 1usize..48,
    ) {
        let text = lines.iter().map(|line| format!("{line}\n")).collect::<String>();
        let got = frames(vec![text.into_bytes()], max);
        // Over the limit is reported before anything else is known of it;
        // a blank line within it is skipped.
        let expected: Vec<Frame> = lines
            .iter()
            .filter_map(|line| match line {
                line if line.len() > max => Some(Frame::Oversized {
                    bytes: line.len(),
                    limit: max,
                    head: line.as_bytes()[..line.len().min(HEAD_BYTES)].to_vec(),
                    tail: line.as_bytes()[line.len().saturating_sub(HEAD_BYTES)..].to_vec(),
                }),
                line if line.trim().is_empty() => None,
                line => Some(Frame::Line(line.clone())),
            })
            .collect();
        prop_assert_eq!(got, expected);
    }
}
