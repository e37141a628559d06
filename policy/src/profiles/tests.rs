use serde_json::json;

use super::*;

fn rules(rules: &[(&str, Detail)]) -> Vec<(String, Detail)> {
    rules.iter().map(|(pattern, detail)| (pattern.to_string(), *detail)).collect()
}

fn tool() -> Value {
    json!({
        "name": "create_issue",
        "title": "Create issue",
        "description": "Creates an issue in a repository, e.g. a bug report. Needs write access.\n\nMore detail here.",
        "inputSchema": { "type": "object", "properties": { "repo": { "type": "string" } }, "required": ["repo"] },
        "outputSchema": { "type": "object" },
        "annotations": { "destructiveHint": false },
        "_meta": { "vendor": "x" },
        "x-unknown": 7,
    })
}

#[test]
fn exact_names_beat_globs_and_longer_globs_beat_shorter() {
    let profile = ToolProfile::new(
        Detail::Full,
        rules(&[
            ("github__*", Detail::Summary),
            ("github__create_*", Detail::Brief),
            ("github__create_issue", Detail::Full),
            ("*", Detail::Brief),
        ]),
    )
    .unwrap();
    assert_eq!(profile.detail_for("github__create_issue"), Detail::Full);
    assert_eq!(profile.detail_for("github__create_pr"), Detail::Brief);
    assert_eq!(profile.detail_for("github__list"), Detail::Summary);
    assert_eq!(profile.detail_for("fs__read"), Detail::Brief);
}

#[test]
fn the_default_applies_when_nothing_matches() {
    let profile = ToolProfile::new(Detail::Summary, rules(&[("git__?og", Detail::Brief)])).unwrap();
    assert_eq!(profile.detail_for("git__log"), Detail::Brief);
    assert_eq!(profile.detail_for("git__blog"), Detail::Summary);
    assert_eq!(profile.detail_for("fs__read"), Detail::Summary);
}

#[test]
fn the_winner_does_not_depend_on_rule_order() {
    let given = [("a*", Detail::Brief), ("*b", Detail::Summary), ("[ab]*", Detail::Full), ("ab*", Detail::Summary)];
    let mut orders = vec![given.to_vec()];
    let mut reversed = given.to_vec();
    reversed.reverse();
    orders.push(reversed);
    orders.push(vec![given[2], given[0], given[3], given[1]]);
    for order in orders {
        let profile = ToolProfile::new(Detail::Full, rules(&order)).unwrap();
        // "[ab]*" is longest (5), then "ab*" (3), then "*b" and "a*" (2, text order: "*b" first).
        assert_eq!(profile.detail_for("ab"), Detail::Full, "{order:?}");
        assert_eq!(profile.detail_for("xb"), Detail::Summary, "{order:?}");
        assert_eq!(profile.detail_for("zz"), Detail::Full, "{order:?}");
    }
    let tie = ToolProfile::new(Detail::Full, rules(&[("a*", Detail::Brief), ("*b", Detail::Summary)])).unwrap();
    assert_eq!(tie.detail_for("ab"), Detail::Summary, "equal lengths: text order, '*' sorts before 'a'");
}

#[test]
fn a_slash_is_an_ordinary_character() {
    let profile = ToolProfile::new(Detail::Full, rules(&[("fs__*", Detail::Brief)])).unwrap();
    assert_eq!(profile.detail_for("fs__dir/read"), Detail::Brief);
}

#[test]
fn bad_rules_are_refused_with_the_pattern_named() {
    let error = ToolProfile::new(Detail::Full, rules(&[("fs__[a", Detail::Brief)])).unwrap_err();
    assert_eq!(
        error.to_string(),
        "tool profile pattern 'fs__[a' is not a valid glob: unclosed character class; missing ']'"
    );
    let error = ToolProfile::new(Detail::Full, rules(&[("", Detail::Brief)])).unwrap_err();
    assert_eq!(error, ProfileError::EmptyPattern);
    let error = ToolProfile::new(Detail::Full, rules(&[("x*", Detail::Brief), ("x*", Detail::Full)])).unwrap_err();
    assert_eq!(error.to_string(), "tool profile pattern 'x*' is given twice, as Brief and as Full; keep one");
    assert!(ToolProfile::new(Detail::Full, rules(&[("x*", Detail::Brief), ("x*", Detail::Brief)])).is_ok());
}

#[test]
fn details_read_from_config_in_snake_case() {
    let detail: Detail = serde_json::from_value(json!("summary")).unwrap();
    assert_eq!(detail, Detail::Summary);
    assert_eq!(serde_json::to_value(Detail::Brief).unwrap(), json!("brief"));
}

#[test]
fn full_shows_everything_under_the_namespaced_name() {
    let mut expected = tool();
    expected["name"] = json!("github__create_issue");
    assert_eq!(present_tool("github__create_issue", &tool(), Detail::Full, Some("ignored")), expected);
}

#[test]
fn summary_shows_one_sentence_and_the_full_schema() {
    let shown = present_tool("github__create_issue", &tool(), Detail::Summary, None);
    assert_eq!(
        shown,
        json!({
            "name": "github__create_issue",
            "title": "Create issue",
            "description": "Creates an issue in a repository, e.g. a bug report.",
            "inputSchema": tool()["inputSchema"],
            "annotations": { "destructiveHint": false },
        })
    );
    let cached = present_tool("github__create_issue", &tool(), Detail::Summary, Some(" Opens an issue. "));
    assert_eq!(cached["description"], "Opens an issue.");
}

#[test]
fn summary_of_a_bare_tool_has_a_schema_and_no_empty_members() {
    let shown = present_tool("s__t", &json!({ "name": "t" }), Detail::Summary, None);
    assert_eq!(shown, json!({ "name": "s__t", "inputSchema": { "type": "object" } }));
}

#[test]
fn brief_shows_one_line_and_points_to_describe_tool() {
    let shown = present_tool("github__create_issue", &tool(), Detail::Brief, None);
    assert_eq!(
        shown,
        json!({
            "name": "github__create_issue",
            "description": "Creates an issue in a repository, e.g. a bug report. Call describe_tool for its parameters.",
            "inputSchema": { "type": "object" },
        })
    );
    let bare = present_tool("s__t", &json!({}), Detail::Brief, None);
    assert_eq!(bare["description"], "Call describe_tool for its parameters.");
}

#[test]
fn brief_cuts_long_lines_at_120_characters_on_a_char_boundary() {
    let description = "é".repeat(200);
    let shown = present_tool("s__t", &json!({ "description": description }), Detail::Brief, None);
    let text = shown["description"].as_str().unwrap();
    let line = text.strip_suffix(" Call describe_tool for its parameters.").unwrap();
    assert_eq!(line.chars().count(), 120);
    assert_eq!(line, format!("{}…", "é".repeat(119)));
    let exact = "x".repeat(120);
    let shown = present_tool("s__t", &json!({ "description": exact }), Detail::Brief, None);
    assert_eq!(shown["description"], format!("{exact} Call describe_tool for its parameters."));
}

#[test]
fn first_sentences() {
    let cases = [
        ("Reads a file. Then more.", "Reads a file."),
        ("Stop! Now.", "Stop!"),
        ("Really? Yes.", "Really?"),
        ("  Reads a file  ", "Reads a file"),
        ("Reads a file\nfrom disk.\nMore.", "Reads a file from disk."),
        ("Summary line\n\nDetails follow.", "Summary line"),
        ("Summary line\r\n  \r\nDetails.", "Summary line"),
        ("Uses the v1.2 API and 3.5 models. Fast.", "Uses the v1.2 API and 3.5 models."),
        ("Takes a path, e.g. /tmp. Returns bytes.", "Takes a path, e.g. /tmp."),
        ("Compares (i.e. diffs) two files. Slow.", "Compares (i.e. diffs) two files."),
        ("Spaces vs. tabs. Pick one.", "Spaces vs. tabs."),
        ("Ends with a dot.", "Ends with a dot."),
        ("See example.com/a.b for more", "See example.com/a.b for more"),
        ("", ""),
        ("Ünïcödé sentence. Next.", "Ünïcödé sentence."),
    ];
    for (text, expected) in cases {
        assert_eq!(first_sentence(text), expected, "{text:?}");
    }
}
