use std::time::Duration;

use super::*;

fn event(event: &str, data: &str, id: Option<&str>) -> SseItem {
    SseItem::Event(SseEvent { event: event.into(), data: data.into(), id: id.map(Into::into) })
}

fn message(data: &str) -> SseItem {
    event("message", data, None)
}

/// Feeds the whole input at once, and also one byte at a time, and checks
/// both give the same items.
fn parse(input: &[u8]) -> Vec<SseItem> {
    let whole = SseParser::new().feed(input);
    let mut parser = SseParser::new();
    let bytewise: Vec<SseItem> = input.iter().flat_map(|b| parser.feed(std::slice::from_ref(b))).collect();
    assert_eq!(whole, bytewise, "byte-at-a-time feeding differs for {:?}", String::from_utf8_lossy(input));
    whole
}

// The examples from the WHATWG HTML standard, section "Server-sent events".

#[test]
fn spec_example_stock_ticker_multi_line_data() {
    let got = parse(b"data: YHOO\ndata: +2\ndata: 10\n\n");
    assert_eq!(got, vec![message("YHOO\n+2\n10")]);
}

#[test]
fn spec_example_comments_ids_and_a_trailing_partial_event() {
    let mut parser = SseParser::new();
    let got = parser.feed(b": test stream\n\ndata: first event\nid: 1\n\ndata:second event\nid\n\ndata:  third event");
    assert_eq!(got, vec![event("message", "first event", Some("1")), message("second event")]);
    // `id` without a value reset the id; the third event never ended.
    assert_eq!(parser.last_event_id(), None);
}

#[test]
fn spec_example_empty_data_lines() {
    // A `data` line without colon adds an empty line; the first block has a
    // data buffer of "\n" and dispatches an empty string.
    let got = parse(b"data\n\ndata\ndata\n\ndata:");
    assert_eq!(got, vec![message(""), message("\n")]);
}

#[test]
fn spec_example_data_with_and_without_space() {
    let got = parse(b"data:test\n\ndata: test\n\n");
    assert_eq!(got, vec![message("test"), message("test")]);
}

#[test]
fn only_one_leading_space_is_stripped() {
    assert_eq!(parse(b"data:  two\n\n"), vec![message(" two")]);
}

#[test]
fn a_field_without_colon_has_an_empty_value() {
    let mut parser = SseParser::new();
    let got = parser.feed(b"id: 5\nevent: custom\nevent\ndata: x\nid\n\n");
    // `event` alone resets the type to the default; `id` alone clears the id.
    assert_eq!(got, vec![message("x")]);
    assert_eq!(parser.last_event_id(), None);
}

#[test]
fn event_type_is_reset_after_dispatch_but_the_id_persists() {
    let got = parse(b"event: add\nid: 3\ndata: 73857293\n\ndata: 113411\n\nevent: remove\ndata: 2153\n\n");
    assert_eq!(
        got,
        vec![
            event("add", "73857293", Some("3")),
            event("message", "113411", Some("3")),
            event("remove", "2153", Some("3")),
        ]
    );
}

#[test]
fn event_type_is_reset_even_when_nothing_is_dispatched() {
    assert_eq!(parse(b"event: lost\n\ndata: x\n\n"), vec![message("x")]);
}

#[test]
fn comments_and_unknown_fields_are_ignored() {
    let got = parse(b":ping\ndata: a\n: between\nfoo: bar\nData: no\n:\ndata: b\n\n");
    assert_eq!(got, vec![message("a\nb")]);
}

#[test]
fn colon_in_the_value_is_kept() {
    assert_eq!(parse(b"data: a: b:c\n\n"), vec![message("a: b:c")]);
}

#[test]
fn every_line_ending_kind() {
    for input in [
        &b"data: a\ndata: b\n\n"[..],
        b"data: a\r\ndata: b\r\n\r\n",
        b"data: a\rdata: b\r\r",
        b"data: a\r\ndata: b\n\r",
        b"data: a\rdata: b\n\r\n",
    ] {
        assert_eq!(parse(input), vec![message("a\nb")], "input {:?}", String::from_utf8_lossy(input));
    }
}

#[test]
fn cr_at_a_chunk_end_and_lf_at_the_next_start_is_one_line_ending() {
    let mut parser = SseParser::new();
    assert_eq!(parser.feed(b"data: a\r"), vec![]);
    // Were the `\n` a second line ending, this would be the blank line.
    assert_eq!(parser.feed(b"\ndata: b\r"), vec![]);
    assert_eq!(parser.feed(b""), vec![]);
    assert_eq!(parser.feed(b"\n\r"), vec![message("a\nb")]);
    assert_eq!(parser.feed(b"\n"), vec![]);
}

#[test]
fn cr_cr_is_two_line_endings_across_chunks() {
    let mut parser = SseParser::new();
    assert_eq!(parser.feed(b"data: a\r"), vec![]);
    assert_eq!(parser.feed(b"\r"), vec![message("a")]);
}

#[test]
fn a_byte_order_mark_at_the_start_is_skipped() {
    assert_eq!(parse(b"\xEF\xBB\xBFdata: x\n\n"), vec![message("x")]);
    // Split across chunks, too.
    let mut parser = SseParser::new();
    assert_eq!(parser.feed(b"\xEF"), vec![]);
    assert_eq!(parser.feed(b"\xBB"), vec![]);
    assert_eq!(parser.feed(b"\xBFdata: y\n\n"), vec![message("y")]);
}

#[test]
fn only_the_first_byte_order_mark_is_skipped() {
    // A second BOM makes the field name "\u{FEFF}data", which is unknown.
    assert_eq!(parse(b"\xEF\xBB\xBF\xEF\xBB\xBFdata: x\n\ndata: y\n\n"), vec![message("y")]);
    // A BOM later in the stream is ordinary text.
    assert_eq!(parse(b"data: x\n\n\xEF\xBB\xBFdata: y\n\n"), vec![message("x")]);
}

#[test]
fn a_partial_byte_order_mark_is_text() {
    // EF BB then `d`: not a BOM; the held-back bytes decode as U+FFFD.
    assert_eq!(parse(b"\xEF\xBBdata: x\n\ndata: y\n\n"), vec![message("y")]);
    assert_eq!(parse(b"\xEF\xBB\n\ndata: y\n\n"), vec![message("y")]);
    assert_eq!(parse(b"\xEF\xBB:comment\ndata: y\n\n"), vec![message("y")]);
}

#[test]
fn invalid_utf8_becomes_replacement_characters() {
    assert_eq!(parse(b"data: a\xFFb\ndata: \xE2\x82\n\n"), vec![message("a\u{FFFD}b\n\u{FFFD}")]);
}

#[test]
fn utf8_split_across_chunks_decodes_whole() {
    let mut parser = SseParser::new();
    assert_eq!(parser.feed("data: €".as_bytes().split_at(8).0), vec![]);
    assert_eq!(parser.feed(&"data: €\n\n".as_bytes()[8..]), vec![message("€")]);
}

#[test]
fn a_priming_event_without_data_records_the_id_without_dispatching() {
    let mut parser = SseParser::new();
    assert_eq!(parser.feed(b"id: prime-1\nretry: 1000\n\n"), vec![]);
    assert_eq!(parser.last_event_id(), Some("prime-1"));
    assert_eq!(parser.retry(), Some(Duration::from_millis(1000)));
    // Later events carry the id.
    assert_eq!(parser.feed(b"data: {}\n\n"), vec![event("message", "{}", Some("prime-1"))]);
}

#[test]
fn a_priming_event_with_an_empty_data_line_dispatches_empty_data() {
    // What the TypeScript SDK's servers send. A `data:` line, even empty,
    // makes the data buffer "\n", so the standard dispatches an event with
    // empty data; the transport must skip it rather than parse it as JSON.
    let mut parser = SseParser::new();
    let got = parser.feed(b"id: 0_stream-1\nretry: 1000\ndata: \n\n");
    assert_eq!(got, vec![event("message", "", Some("0_stream-1"))]);
    assert_eq!(parser.last_event_id(), Some("0_stream-1"));
    assert_eq!(parser.retry(), Some(Duration::from_millis(1000)));
}

#[test]
fn the_id_of_an_unfinished_event_is_not_yet_the_last_event_id() {
    let mut parser = SseParser::new();
    assert_eq!(parser.feed(b"id: 1\n\nid: 2\ndata: cut off"), vec![]);
    assert_eq!(parser.last_event_id(), Some("1"));
}

#[test]
fn an_id_containing_nul_is_ignored() {
    let mut parser = SseParser::new();
    assert_eq!(
        parser.feed(b"id: good\ndata: a\n\nid: b\0ad\ndata: b\n\n"),
        vec![event("message", "a", Some("good")), event("message", "b", Some("good"))]
    );
    assert_eq!(parser.last_event_id(), Some("good"));
}

#[test]
fn retry_takes_only_ascii_digits() {
    let mut parser = SseParser::new();
    assert_eq!(parser.retry(), None);
    parser.feed(b"retry: 3000\n\n");
    assert_eq!(parser.retry(), Some(Duration::from_millis(3000)));
    for ignored in [
        &b"retry: 1.5\n"[..],
        b"retry: -1\n",
        b"retry: 10s\n",
        b"retry:  10\n",
        b"retry:\n",
        b"retry\n",
        b"retry: \xD9\xA1\n", // ARABIC-INDIC DIGIT ONE is a digit, not an ASCII one
        b"retry: 99999999999999999999999\n",
    ] {
        parser.feed(ignored);
        assert_eq!(parser.retry(), Some(Duration::from_millis(3000)), "{:?}", String::from_utf8_lossy(ignored));
    }
    // Takes effect without a blank line, and zero is allowed.
    parser.feed(b"retry:0\n");
    assert_eq!(parser.retry(), Some(Duration::ZERO));
}

#[test]
fn an_oversized_event_is_dropped_and_the_next_one_is_intact() {
    let mut parser = SseParser::with_max_event_bytes(20);
    let mut input = b"id: 1\ndata: 0123456789\ndata: 0123456789\nid: 2\n\n".to_vec();
    input.extend_from_slice(b"data: fits\n\n");
    // Lines: "id: 1" (5) + 16 + 16 + "id: 2" (5) = 42 bytes, over 20.
    assert_eq!(parser.feed(&input), vec![SseItem::Oversized { bytes: 42 }, event("message", "fits", Some("2"))]);
    assert_eq!(parser.last_event_id(), Some("2"));
}

#[test]
fn an_oversized_line_is_not_buffered_whole() {
    let mut parser = SseParser::with_max_event_bytes(64);
    assert_eq!(parser.feed(b"event: big\ndata: "), vec![]);
    for _ in 0..1000 {
        assert_eq!(parser.feed(&[b'x'; 1000]), vec![]);
        assert!(parser.line.len() <= 64 && parser.data.is_empty());
    }
    let got = parser.feed(b"\n\ndata: next\n\n");
    assert_eq!(got, vec![SseItem::Oversized { bytes: 10 + 6 + 1_000_000 }, message("next")]);
}

#[test]
fn the_limit_is_inclusive() {
    // "data: " + 14 bytes = 20 bytes of field line.
    let mut parser = SseParser::with_max_event_bytes(20);
    assert_eq!(parser.feed(b"data: 0123456789abcd\n\n"), vec![message("0123456789abcd")]);
    assert_eq!(parser.feed(b"data: 0123456789abcde\n\n"), vec![SseItem::Oversized { bytes: 21 }]);
}

#[test]
fn comments_do_not_count_towards_the_limit() {
    let mut parser = SseParser::with_max_event_bytes(10);
    let mut input = b": keep-alive\n".repeat(5);
    input.extend_from_slice(b":");
    input.extend_from_slice(&[b'c'; 100]);
    input.extend_from_slice(b"\ndata: ok\n\n");
    assert_eq!(parser.feed(&input), vec![message("ok")]);
}

#[test]
fn a_json_rpc_message_split_over_several_data_lines_and_chunks() {
    let mut parser = SseParser::new();
    let chunks: [&[u8]; 5] = [
        b"event: message\nid: abc-1\r\ndata: {\"jsonrpc\":\"2.0\",",
        b"\r\ndata: \"id\":1,\r\nda",
        b"ta: \"result\":{\"tools\":[]}",
        b"}\r",
        b"\n\r\n",
    ];
    let got: Vec<SseItem> = chunks.iter().flat_map(|c| parser.feed(c)).collect();
    let expected = "{\"jsonrpc\":\"2.0\",\n\"id\":1,\n\"result\":{\"tools\":[]}}";
    assert_eq!(got, vec![event("message", expected, Some("abc-1"))]);
    // Newlines between data lines are JSON whitespace: the message parses.
    let SseItem::Event(SseEvent { data, .. }) = &got[0] else { unreachable!() };
    let value: serde_json::Value = serde_json::from_str(data).unwrap();
    assert_eq!(value, serde_json::json!({"jsonrpc": "2.0", "id": 1, "result": {"tools": []}}));
}

#[test]
fn byte_at_a_time_matches_one_chunk_for_a_mixed_stream() {
    let input = b"\xEF\xBB\xBF: hi\r\nretry: 500\rid: 9\nevent: e\r\ndata: one\rdata:two\n\r\ndata: \xE2\x82\xAC\n\n";
    let got = parse(input);
    assert_eq!(got, vec![event("e", "one\ntwo", Some("9")), event("message", "€", Some("9"))]);
}

#[test]
fn an_unterminated_event_at_end_of_stream_is_not_dispatched() {
    assert_eq!(parse(b"data: a\n"), vec![]);
}
