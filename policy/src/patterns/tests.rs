use super::*;

#[test]
fn exact_names_match_only_themselves() {
    let pattern = ToolPattern::new("fs__read_file").unwrap();
    assert!(pattern.is_exact());
    assert!(pattern.matches("fs__read_file"));
    assert!(!pattern.matches("fs__read_file2"));
    assert!(!pattern.matches("fs__read"));
}

#[test]
fn a_star_matches_every_tool_of_a_server_present_or_future() {
    let pattern = ToolPattern::new("fs__*").unwrap();
    assert!(!pattern.is_exact());
    for name in ["fs__read_file", "fs__write_file", "fs__a_tool_added_later", "fs__"] {
        assert!(pattern.matches(name), "{name}");
    }
    for name in ["fsx__read_file", "git__status", "fs_read"] {
        assert!(!pattern.matches(name), "{name}");
    }
}

#[test]
fn question_marks_and_classes_work() {
    assert!(ToolPattern::new("fs__read_?").unwrap().matches("fs__read_a"));
    assert!(!ToolPattern::new("fs__read_?").unwrap().matches("fs__read_ab"));
    assert!(ToolPattern::new("*__[rw]*").unwrap().matches("fs__write"));
    assert!(!ToolPattern::new("*__[rw]*").unwrap().matches("fs__list"));
}

#[test]
fn bad_globs_say_which_pattern_and_how_to_write_one() {
    let error = ToolPattern::new("fs__[read").unwrap_err();
    assert_eq!(error.pattern, "fs__[read");
    let text = error.to_string();
    assert!(text.starts_with("tool pattern 'fs__[read' is not a valid glob ("), "{text}");
    assert!(text.ends_with("use an exact name or '*', '?', '[...]', e.g. 'fs__*'"), "{text}");
    assert!(ToolPattern::new("").unwrap_err().to_string().contains("(it is empty)"));
}

#[test]
fn a_set_matches_when_any_pattern_does() {
    let set = ToolPatterns::new(&["shell", "fs__*"]).unwrap();
    assert!(set.matches("shell"));
    assert!(set.matches("fs__list"));
    assert!(!set.matches("git__commit"));
    assert_eq!(set.first_match("fs__list").map(ToolPattern::as_str), Some("fs__*"));
    assert!(!ToolPatterns::default().matches("anything"));
    assert_eq!(ToolPatterns::new(&["ok", "bad[", "fine"]).unwrap_err().pattern, "bad[");
}
