//! The pre-check never hides a secret: a scanner with it finds exactly
//! what one without it finds, on text built to hold secrets, near-secrets
//! and their prefixes in every position.

use std::sync::LazyLock;

use proptest::prelude::*;
use proptest::test_runner::Config;

use super::super::{KnownSecret, LeakScanner};
use super::Starts;

// Fake secrets are assembled from pieces so no secret scanner flags this file.

fn known() -> Vec<KnownSecret> {
    vec![
        KnownSecret { label: "PASSWORD".into(), value: format!("hunter2{}", "-rather-long") },
        // Begins with bytes that are not word bytes, mid-word is fine.
        KnownSecret { label: "ODD".into(), value: format!("--{}", "odd/secret==") },
    ]
}

/// Scanners with the pre-check and, each beside it, the same scanner
/// without: every text searched. Built once (compiling them per case was
/// most of the test's time).
static SCANNERS: LazyLock<Vec<(LeakScanner, LeakScanner)>> = LazyLock::new(|| {
    [LeakScanner::new(Vec::new()), LeakScanner::new(known())]
        .into_iter()
        .map(|scanner| (scanner.clone(), LeakScanner { starts: None, ..scanner }))
        .collect()
});

/// Pieces that text is made of: shape prefixes and bodies, PEM lines,
/// known values and their halves, word and non-word bytes, non-ASCII.
fn piece() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            "ghp_",
            "gho_",
            "ghs_",
            "github_pat_",
            "AKIA",
            "ASIA",
            "glpat-",
            "xoxb-",
            "sk-ant-",
            "sk-",
            "sk-proj-",
            "AIza",
            "sk_live_",
            "rk_live_",
            "-----BEGIN RSA PRIVATE KEY-----",
            "-----END RSA PRIVATE KEY-----",
            "-----BEGIN PRIVATE KEY-----",
            "hunter2",
            "-rather-long",
            "hunter2-rather-long",
            "Zhunter2-rather-long",
            "--",
            "odd/secret==",
            " ",
            "-",
            "_",
            ".",
            "x",
            "é",
            "\n",
            "\\",
            "\"",
            "a",
        ])
        .prop_map(str::to_string),
        "[A-Za-z0-9_-]{1,60}",
        "\\PC{0,6}",
    ]
}

fn text() -> impl Strategy<Value = String> {
    proptest::collection::vec(piece(), 1..8).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(Config { cases: 4_000, failure_persistence: None, ..Config::default() })]

    #[test]
    fn the_precheck_never_hides_a_secret(text in text()) {
        for (scanner, searching_all) in SCANNERS.iter() {
            prop_assert_eq!(scanner.find_in_text(&text), searching_all.find_in_text(&text));
        }
    }
}

#[test]
fn every_shape_and_known_value_has_a_precheck() {
    for scanner in [LeakScanner::new(Vec::new()), LeakScanner::new(known())] {
        assert!(scanner.starts.is_some(), "the built-in shapes have finite prefixes");
    }
}

#[test]
fn ordinary_text_is_passed_over_and_a_possible_start_is_not() {
    let starts = LeakScanner::new(known()).starts.expect("a pre-check");
    for ordinary in ["hello from the call-latency bench", "echo: high risk, ask the night shift", "a-b_c d"] {
        assert!(!starts.may_begin_in(ordinary), "{ordinary}");
    }
    // Word starts for shapes; anywhere for PEM headers and known values.
    for possible in ["the sky", "see ghost", "x--y", "myhunter2", "(AKIA"] {
        assert!(starts.may_begin_in(possible), "{possible}");
    }
    for not_at_a_word_start in ["task", "highAKIA"] {
        assert!(!starts.may_begin_in(not_at_a_word_start), "{not_at_a_word_start}");
    }
}

#[test]
fn a_shape_without_finite_prefixes_turns_the_precheck_off() {
    assert!(Starts::new(&[("[a-z]+x", true)], std::iter::empty()).is_none());
    assert!(Starts::new(&[("(?:ab|cd)x", true)], std::iter::empty()).is_some());
}
