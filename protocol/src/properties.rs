//! Property tests of the protocol crate's parsers, on inputs nobody wrote
//! by hand: whatever the bytes, no parser panics (elicitation schemas and
//! answers included); the streaming parsers
//! (line framing, SSE) give the same messages however the bytes are split
//! into chunks; JSON-RPC messages survive a round trip; memory stays
//! bounded by the limit for unbounded lines.
//!
//! Each property runs `PROPTEST_CASES` cases (2,000 unless set; CI runs
//! the default, a deeper run sets more).

use proptest::prelude::*;
use proptest::test_runner::Config;

mod elicitation;
mod framing;
mod messages;
mod sse;

/// The cases per property: `PROPTEST_CASES`, else 2,000.
pub(crate) fn config() -> Config {
    let cases = std::env::var("PROPTEST_CASES").ok().and_then(|cases| cases.parse().ok()).unwrap_or(2_000);
    Config { cases, failure_persistence: None, ..Config::default() }
}

/// `bytes` cut at the (sorted, deduplicated) offsets `cuts`.
fn split_at(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|cut| cut % (bytes.len() + 1)).collect();
    cuts.sort_unstable();
    cuts.dedup();
    let mut chunks = Vec::new();
    let mut start = 0;
    for cut in cuts.into_iter().chain([bytes.len()]) {
        chunks.push(bytes[start..cut].to_vec());
        start = cut;
    }
    chunks
}

/// Bytes that look like protocol traffic more often than noise would:
/// fragments of JSON, field names, line endings, invalid UTF-8.
fn streamish() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        Just(b"\n".to_vec()),
        Just(b"\r\n".to_vec()),
        Just(b"\r".to_vec()),
        Just(b"data: ".to_vec()),
        Just(b"id: 7".to_vec()),
        Just(b"event: message".to_vec()),
        Just(b"retry: 10".to_vec()),
        Just(b": comment".to_vec()),
        Just(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#.to_vec()),
        Just(vec![0xEF, 0xBB, 0xBF]),
        Just(vec![0xFF, 0xFE]),
        proptest::collection::vec(any::<u8>(), 0..12),
        "[a-z{}\":, ]{0,12}".prop_map(String::into_bytes),
    ];
    proptest::collection::vec(piece, 0..40).prop_map(|pieces| pieces.concat())
}
