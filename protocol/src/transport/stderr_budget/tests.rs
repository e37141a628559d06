use super::*;

#[test]
fn lines_past_the_budget_are_counted_and_reported_once_the_window_closes() {
    let start = Instant::now();
    let mut budget = StderrBudget::new(start);
    for _ in 0..StderrBudget::LINES {
        assert_eq!(budget.admit(10, start), (None, Verdict::Log));
    }
    assert_eq!(budget.summary_due(), None, "nothing left out yet");
    for _ in 0..1_000 {
        assert_eq!(budget.admit(10, start + Duration::from_secs(1)), (None, Verdict::Skip));
    }
    assert_eq!(budget.summary_due(), Some(start + StderrBudget::WINDOW));
    // The first line of the next window reports the old one and is logged.
    let later = start + StderrBudget::WINDOW;
    assert_eq!(budget.admit(10, later), (Some(1_000), Verdict::Log));
    assert_eq!(budget.summary_due(), None);
}

#[test]
fn long_lines_spend_the_byte_budget_before_the_line_budget() {
    let start = Instant::now();
    let mut budget = StderrBudget::new(start);
    let line = 16 * 1024;
    let logged = (0..10).filter(|_| budget.admit(line, start).1 == Verdict::Log).count();
    assert_eq!(logged, StderrBudget::BYTES / line);
    assert_eq!(budget.close(start + Duration::from_secs(3)), Some(10 - logged as u64));
    assert_eq!(budget.close(start + Duration::from_secs(4)), None, "a quiet window reports nothing");
}
