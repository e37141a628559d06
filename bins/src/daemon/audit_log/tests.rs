use super::*;
use warden_actors::Decision;

fn record(n: usize) -> AuditRecord {
    AuditRecord {
        time: 1_800_000_000.0 + n as f64,
        agent: None,
        via: Some("bridge".into()),
        server: Some("files".into()),
        tool: format!("files__read_{n}"),
        policy: None,
        decision: Decision::NotNeeded,
        leaks: Vec::new(),
        arguments_sha256: "ab".repeat(32),
        arguments: None,
        duration_ms: 0.25,
        outcome: "ok",
        error: None,
    }
}

fn config(max_mb: f64, files: u32) -> AuditConfig {
    AuditConfig { max_mb, files, ..AuditConfig::default() }
}

/// The numbers of the tools in the file's records, in file order.
fn numbers(path: &Path) -> Vec<usize> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let record: serde_json::Value = serde_json::from_str(line).expect("each line is a whole record");
            let tool = record["tool"].as_str().expect("a tool");
            tool.trim_start_matches("files__read_").parse().expect("a number")
        })
        .collect()
}

/// A flusher that never wakes on its own within a test.
const NEVER: Duration = Duration::from_secs(3600);

#[test]
fn a_call_only_buffers_its_record_and_closing_writes_them_all_in_order() {
    let dir = warden_tests::scratch_dir("audit-log-order");
    let path = dir.join("audit.jsonl");
    let log = AuditLog::open_flushing_every(path.clone(), &config(10.0, 2), NEVER).expect("opened");
    // Some 100 KB: an 8 KiB write buffer would have written a dozen times.
    for n in 0..300 {
        log.record(&record(n));
    }
    assert_eq!(std::fs::metadata(&path).expect("created").len(), 0, "a record is written by the flusher, not the call");
    log.close();
    assert_eq!(numbers(&path), (0..300).collect::<Vec<_>>());
}

#[test]
fn the_flusher_writes_what_waits_without_being_asked() {
    let dir = warden_tests::scratch_dir("audit-log-flusher");
    let path = dir.join("audit.jsonl");
    let log = AuditLog::open_flushing_every(path.clone(), &config(10.0, 2), Duration::from_millis(10)).expect("opened");
    log.record(&record(1));
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while numbers(&path).is_empty() {
        assert!(std::time::Instant::now() < deadline, "the flusher never wrote the record");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(numbers(&path), [1]);
    log.close();
}

#[test]
fn past_its_size_the_file_rotates_between_whole_lines_and_keeps_the_newest() {
    let dir = warden_tests::scratch_dir("audit-log-rotate");
    let path = dir.join("audit.jsonl");
    let max_mb = 0.01;
    let log = AuditLog::open_flushing_every(path.clone(), &config(max_mb, 2), NEVER).expect("opened");
    for n in 0..200 {
        log.record(&record(n));
    }
    log.close();
    let files = [dir.join("audit.jsonl.2"), dir.join("audit.jsonl.1"), path.clone()];
    let max_bytes = config(max_mb, 2).max_bytes();
    let mut kept = Vec::new();
    for file in &files {
        let size = std::fs::metadata(file).expect("kept").len();
        assert!(size <= max_bytes, "{} holds {size} bytes, past {max_bytes}", file.display());
        kept.extend(numbers(file));
    }
    assert!(!dir.join("audit.jsonl.3").exists(), "only `files` rotated files are kept");
    // The newest records, oldest file first, none missing between them.
    let first = kept[0];
    assert_eq!(kept, (first..200).collect::<Vec<_>>());
    assert!(first > 0, "three files of 10 KiB cannot hold 200 records");
}

#[test]
fn a_call_writes_the_buffer_itself_when_the_flusher_falls_far_behind() {
    let dir = warden_tests::scratch_dir("audit-log-behind");
    let path = dir.join("audit.jsonl");
    let log = AuditLog::open_flushing_every(path.clone(), &config(100.0, 2), NEVER).expect("opened");
    let mut n = 0;
    while std::fs::metadata(&path).expect("created").len() == 0 {
        assert!(n < 10 * MAX_PENDING / 100, "{n} records and nothing written: the buffer grows without bound");
        log.record(&record(n));
        n += 1;
    }
    log.close();
    assert_eq!(numbers(&path), (0..n).collect::<Vec<_>>());
}
