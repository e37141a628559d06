//! The SSE parser: any bytes, any chunking, the same events and the same
//! last event id.

use proptest::prelude::*;

use super::{config, split_at, streamish};
use crate::sse::{SseItem, SseParser};

fn parse(chunks: &[Vec<u8>], max: usize) -> (Vec<SseItem>, Option<String>) {
    let mut parser = SseParser::with_max_event_bytes(max);
    let items = chunks.iter().flat_map(|chunk| parser.feed(chunk)).collect();
    (items, parser.last_event_id().map(str::to_string))
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn the_same_bytes_split_anywhere_give_the_same_events(
        bytes in streamish(),
        cuts in proptest::collection::vec(any::<usize>(), 0..8),
        max in 1usize..256,
    ) {
        let whole = parse(&[bytes.clone()], max);
        prop_assert_eq!(parse(&split_at(&bytes, &cuts), max), whole);
    }

    #[test]
    fn a_byte_at_a_time_gives_the_same_events(bytes in streamish()) {
        let bytes_one_by_one: Vec<Vec<u8>> = bytes.iter().map(|byte| vec![*byte]).collect();
        prop_assert_eq!(parse(&bytes_one_by_one, 1 << 20), parse(&[bytes], 1 << 20));
    }
}
