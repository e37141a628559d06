use super::*;

fn server(name: &str, state: &str, tools: usize, error: Option<&str>) -> ServerReport {
    serde_json::from_value(serde_json::json!({
        "name": name, "state": state, "tools": tools, "error": error,
        "detail": match error { Some(error) => format!("{state}: {error}"), None => state.to_string() },
    }))
    .unwrap()
}

/// A display whose patience has run out.
fn patient_for_long(terminal: bool) -> StartupProgress {
    StartupProgress { began: Instant::now() - Duration::from_secs(1), ..StartupProgress::with(terminal) }
}

#[test]
fn quick_servers_are_never_mentioned() {
    let mut progress = StartupProgress::with(false);
    assert_eq!(progress.render(&[server("a", "starting", 0, None)], false), "", "shown before its patience ran out");
    let mut terminal = StartupProgress::with(true);
    terminal.finish(&[server("a", "running", 3, None)]);
    assert_eq!(terminal.drawn, 0);
}

#[test]
fn a_plain_log_says_each_change_once_and_follows_a_server_to_its_end() {
    let mut progress = patient_for_long(false);
    let first = progress.render(&[server("slow", "starting", 0, None), server("quick", "running", 2, None)], false);
    assert!(first.contains("warden: … slow") && first.contains("starting (1 s)"), "{first}");
    assert!(first.contains("Ctrl-C stops waiting"), "{first}");
    assert!(!first.contains("quick"), "a server that was quick is not news: {first}");
    let same = progress.render(&[server("slow", "starting", 0, None), server("quick", "running", 2, None)], false);
    assert_eq!(same, "", "nothing changed, nothing said");
    let crashed = progress.render(&[server("slow", "restarting", 0, Some("exited with status 1"))], false);
    assert!(crashed.contains("↻ slow") && crashed.contains("exited with status 1"), "{crashed}");
    let last = progress.render(&[server("slow", "running", 1, None), server("quick", "running", 2, None)], true);
    assert_eq!(last, format!("warden: ✓ {:<16} running, 1 tool\n", "slow"));
}

#[test]
fn a_terminal_gets_one_line_per_server_redrawn_in_place() {
    let mut progress = patient_for_long(true);
    let servers = [server("files", "starting", 0, None), server("broken", "failed", 0, Some("no such file"))];
    let first = progress.render(&servers, false);
    assert!(!first.contains("\x1b[3A"), "the first drawing moves nothing: {first:?}");
    assert_eq!(first.matches('\n').count(), 3, "{first:?}");
    assert!(first.contains("waiting for 1 of 2 servers to start (Ctrl-C stops waiting)"), "{first:?}");
    assert!(first.contains("✗ broken") && first.contains("failed: no such file"), "{first:?}");
    let servers = [server("files", "running", 14, None), server("broken", "failed", 0, Some("no such file"))];
    let last = progress.render(&servers, true);
    assert!(last.starts_with("\x1b[3A"), "redrawn over the three lines: {last:?}");
    assert!(last.contains("servers started in") && last.contains("running, 14 tools"), "{last:?}");
}

#[test]
fn a_long_error_is_cut_to_the_terminal_width() {
    let line = server_line(&server("x", "failed", 0, Some(&"e".repeat(300))), Duration::ZERO);
    let cut = fit(&line, 80);
    assert_eq!(cut.chars().count(), 80);
    assert!(cut.ends_with('…'));
}
