use serde_json::json;

use super::*;

// Fake secrets are assembled from pieces so no secret scanner flags this file.

fn scanner() -> LeakScanner {
    LeakScanner::new(Vec::new())
}

fn known(label: &str, value: &str) -> KnownSecret {
    KnownSecret { label: label.to_string(), value: value.to_string() }
}

fn leak(kind: &str, path: &str) -> Leak {
    Leak { kind: kind.to_string(), path: path.to_string() }
}

/// One example of every shape, with its kind.
fn shape_examples() -> Vec<(&'static str, String)> {
    vec![
        ("aws_access_key", format!("AKIA{}", "IOSFODNN7EXAMPLE")),
        ("aws_access_key", format!("ASIA{}", "Q3EGUCY5TMN2XV7P")),
        ("github_token", format!("ghp_{}", "a1B2c3D4e5".repeat(4))),
        ("github_token", format!("ghs_{}", "Z9y8X7w6V5".repeat(4))),
        ("github_token", format!("github_pat_{}_{}", "11ABCDEFG0abcdefghijkl", "m".repeat(59))),
        ("gitlab_token", format!("glpat-{}", "xY7_zQ2-wV9rT4uS1pKa")),
        ("slack_token", format!("xoxb-{}", "1234567890-0987654321-AbCdEfGhIjKlMnOpQrStUvWx")),
        ("openai_key", format!("sk-{}", "T3BlbkFJ".repeat(6))),
        ("openai_key", format!("sk-proj-{}", "Ab3_-Cd4".repeat(12))),
        ("anthropic_key", format!("sk-ant-api03-{}", "Qw3rTy_-Ui0p".repeat(8))),
        ("google_api_key", format!("AIza{}", "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY")),
        ("stripe_key", format!("sk_live_{}", "4eC39HqLyjWDarjtT1zdp7dc")),
        ("stripe_key", format!("rk_live_{}", "51H8sFAKEsecret0000000000")),
    ]
}

fn pem() -> String {
    let begin = "-----BEGIN RSA PRIVATE KEY-----";
    let end = "-----END RSA PRIVATE KEY-----";
    format!("{begin}\nMIIEowIBAAKCAQEA7bq98Xs0Cd\nq3Lr+Z/9aHN1sWkz=\n{end}")
}

#[test]
fn every_shape_is_found_and_redacted() {
    for (kind, secret) in shape_examples() {
        let text = format!("token: {secret} (keep this)");
        let (redacted, leaks) = scanner().redact_text(&text).unwrap_or_else(|| panic!("{kind} not found in {text}"));
        assert_eq!(redacted, format!("token: [REDACTED:{kind}] (keep this)"), "{secret}");
        assert_eq!(leaks, vec![leak(kind, "")]);
        assert_eq!(scanner().find_in_text(&text), vec![leak(kind, "")]);
    }
}

#[test]
fn a_private_key_block_is_redacted_across_lines() {
    let text = format!("here:\n{}\ndone", pem());
    let (redacted, leaks) = scanner().redact_text(&text).unwrap();
    assert_eq!(redacted, "here:\n[REDACTED:private_key]\ndone");
    assert_eq!(leaks, vec![leak("private_key", "")]);
}

#[test]
fn a_private_key_cut_before_its_end_line_still_loses_its_body() {
    let text = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nBG5vbmUAAAAEbm9uZQ==";
    let (redacted, _) = scanner().redact_text(text).unwrap();
    assert_eq!(redacted, "[REDACTED:private_key]");
}

#[test]
fn a_private_key_in_json_escaped_text_is_redacted() {
    let text = serde_json::to_string(&json!({ "key": pem() })).unwrap();
    let (redacted, _) = scanner().redact_text(&text).unwrap();
    assert_eq!(redacted, r#"{"key":"[REDACTED:private_key]"}"#);
}

#[test]
fn known_secrets_are_found_anywhere_and_named_by_label() {
    let scanner = LeakScanner::new(vec![known("GITHUB_PAT", "s3cr3t-value-42")]);
    assert!(!scanner.is_empty_of_known());
    let (redacted, leaks) = scanner.redact_text("url=https://x:s3cr3t-value-42@host/ and s3cr3t-value-42.").unwrap();
    assert_eq!(redacted, "url=https://x:[REDACTED:GITHUB_PAT]@host/ and [REDACTED:GITHUB_PAT].");
    assert_eq!(leaks, vec![leak("GITHUB_PAT", "")], "each kind is reported once per string");
}

#[test]
fn a_known_secret_in_json_args_is_found_with_its_path() {
    let scanner = LeakScanner::new(vec![known("API_TOKEN", "tok_0123456789")]);
    let args = json!({
        "query": "nothing here",
        "headers": { "auth/x": ["Bearer tok_0123456789"] },
        "count": 3,
    });
    assert_eq!(scanner.find_in_json(&args), vec![leak("API_TOKEN", "/headers/auth~1x/0")]);
}

#[test]
fn known_secrets_shorter_than_eight_characters_are_ignored() {
    let scanner = LeakScanner::new(vec![known("PIN", "1234567"), known("WORD", "true")]);
    assert!(scanner.is_empty_of_known());
    assert_eq!(scanner.redact_text("pin 1234567 is true"), None);
    let eight = LeakScanner::new(vec![known("PIN", "12345678")]);
    assert_eq!(eight.find_in_text("pin 12345678"), vec![leak("PIN", "")]);
}

#[test]
fn duplicate_values_are_scanned_for_once_under_the_first_label() {
    let scanner = LeakScanner::new(vec![known("FIRST", "same-value-123"), known("SECOND", "same-value-123")]);
    assert_eq!(scanner.redact_text("x same-value-123").unwrap().0, "x [REDACTED:FIRST]");
}

#[test]
fn a_longer_known_value_wins_over_one_it_contains() {
    let scanner = LeakScanner::new(vec![known("SHORT", "abcdefgh"), known("LONG", "abcdefgh-ijkl")]);
    assert_eq!(scanner.redact_text("abcdefgh-ijkl abcdefgh").unwrap().0, "[REDACTED:LONG] [REDACTED:SHORT]");
}

#[test]
fn a_known_secret_wins_over_a_shape_on_the_same_text() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let scanner = LeakScanner::new(vec![known("GITHUB_PAT", &token)]);
    let (redacted, leaks) = scanner.redact_text(&format!("auth {token}")).unwrap();
    assert_eq!(redacted, "auth [REDACTED:GITHUB_PAT]");
    assert_eq!(leaks, vec![leak("GITHUB_PAT", "")]);
}

#[test]
fn overlapping_matches_merge_into_one_redaction() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    // The known value covers the token's tail and runs past it.
    let tail = format!("{} and more", &token[20..]);
    let scanner = LeakScanner::new(vec![known("TAIL", &tail)]);
    let (redacted, leaks) = scanner.redact_text(&format!("<{token} and more>")).unwrap();
    assert_eq!(redacted, "<[REDACTED:TAIL]>");
    assert_eq!(leaks, vec![leak("TAIL", "")]);
}

#[test]
fn utf8_around_matches_is_kept() {
    let key = format!("AKIA{}", "IOSFODNN7EXAMPLE");
    let text = format!("clé: «{key}» — 鍵🔑{key}é");
    let (redacted, _) = scanner().redact_text(&text).unwrap();
    assert_eq!(redacted, "clé: «[REDACTED:aws_access_key]» — 鍵🔑[REDACTED:aws_access_key]é");
}

#[test]
fn ordinary_text_is_left_alone() {
    let prose = "Warden starts, supervises and polices MCP servers. Ask the desk-lamp task-runner to risk-assess \
        the sk-learn notebook; AKIA is not a key, nor is ASIAN or ghp_short. The github_pat_ prefix alone is fine, \
        as is xoxb-1 and glpat-short. -----BEGIN CERTIFICATE----- is public. See https://example.com/a/b?c=d.";
    let uuid = "550e8400-e29b-41d4-a716-446655440000";
    let sha = "9fceb02d0ae598e95dc970b74767f19372d61af8";
    // A PNG header and pixels, base64: long, mixed case, `+` and `/`.
    let image = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==\
        /9j/4AAQSkZJRgABAQEASABIAAD/2wBDAAoHBwgHBgoICAgLCgoLDhgQDg0NDh0VFhEYIx8lJCIfIiEmKzcvJik0KSEiMEExNDk7Pj4+JS5ESUM8SDc9Pjv/";
    let scanner = LeakScanner::new(vec![known("LONG_ENOUGH", "not-in-the-text")]);
    for text in [prose, uuid, sha, image] {
        assert_eq!(scanner.find_in_text(text), Vec::<Leak>::new(), "{text}");
        assert_eq!(scanner.redact_text(text), None);
    }
}

#[test]
fn shapes_inside_longer_words_do_not_match() {
    let key = format!("AKIA{}", "IOSFODNN7EXAMPLE");
    for text in [format!("X{key}"), format!("{key}X"), format!("mask-{}", "T3BlbkFJ".repeat(6))] {
        assert_eq!(scanner().find_in_text(&text), Vec::<Leak>::new(), "{text}");
    }
}

#[test]
fn json_strings_and_keys_are_redacted_in_place_and_other_values_kept() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let scanner = LeakScanner::new(vec![known("DB_PASSWORD", "hunter2-hunter2")]);
    let mut value = json!({
        "content": [{ "type": "text", "text": format!("pw=hunter2-hunter2 tok={token}") }],
        token.clone(): { "nested": "hunter2-hunter2" },
        "n": 12345678, "ok": true, "none": null, "f": 1.5,
    });
    let leaks = scanner.redact_json(&mut value);
    assert_eq!(
        value,
        json!({
            "content": [{ "type": "text", "text": "pw=[REDACTED:DB_PASSWORD] tok=[REDACTED:github_token]" }],
            "[REDACTED:github_token]": { "nested": "[REDACTED:DB_PASSWORD]" },
            "n": 12345678, "ok": true, "none": null, "f": 1.5,
        })
    );
    let mut expected = vec![
        leak("DB_PASSWORD", "/content/0/text"),
        leak("github_token", "/content/0/text"),
        leak("github_token", "/[REDACTED:github_token]"),
        leak("DB_PASSWORD", "/[REDACTED:github_token]/nested"),
    ];
    let mut found = leaks.clone();
    found.sort_by(|a, b| (&a.path, &a.kind).cmp(&(&b.path, &b.kind)));
    expected.sort_by(|a, b| (&a.path, &a.kind).cmp(&(&b.path, &b.kind)));
    assert_eq!(found, expected);
}

#[test]
fn find_and_redact_agree_on_json() {
    let token = format!("glpat-{}", "xY7_zQ2-wV9rT4uS1pKa");
    let scanner = LeakScanner::new(vec![known("K", "known-value-1")]);
    let value = json!({ "a": [token.clone(), "known-value-1"], token.clone(): 1 });
    let found = scanner.find_in_json(&value);
    let mut copy = value.clone();
    assert_eq!(scanner.redact_json(&mut copy), found);
    assert!(scanner.find_in_json(&copy).is_empty(), "{copy}");
}

#[test]
fn debug_output_never_shows_a_value() {
    let scanner = LeakScanner::new(vec![known("GITHUB_PAT", "very-secret-value")]);
    let shown = format!("{scanner:?} {:?}", known("GITHUB_PAT", "very-secret-value"));
    assert!(shown.contains("GITHUB_PAT"), "{shown}");
    assert!(!shown.contains("very-secret-value"), "{shown}");
}

#[test]
fn a_scanner_is_shareable_across_threads() {
    fn assert_shareable<T: Clone + Send + Sync + fmt::Debug>() {}
    assert_shareable::<LeakScanner>();
}

#[test]
fn known_values_with_regex_characters_match_literally() {
    let scanner = LeakScanner::new(vec![known("ODD", "a.b*c+d(e)[f]$"), known("UNI", "pässwörd-名前")]);
    let (redacted, leaks) = scanner.redact_text("x a.b*c+d(e)[f]$ y aXb*c+d(e)[f]$ z pässwörd-名前!").unwrap();
    assert_eq!(redacted, "x [REDACTED:ODD] y aXb*c+d(e)[f]$ z [REDACTED:UNI]!");
    assert_eq!(leaks, vec![leak("ODD", ""), leak("UNI", "")]);
}

#[test]
fn neighbouring_secrets_are_redacted_separately_in_order() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let scanner = LeakScanner::new(vec![known("DB", "hunter2-hunter2")]);
    let text = format!("{token} hunter2-hunter2,{token}");
    let (redacted, leaks) = scanner.redact_text(&text).unwrap();
    assert_eq!(redacted, "[REDACTED:github_token] [REDACTED:DB],[REDACTED:github_token]");
    assert_eq!(leaks, vec![leak("github_token", ""), leak("DB", "")]);
}

#[test]
fn empty_text_and_empty_json_hold_nothing() {
    assert_eq!(scanner().redact_text(""), None);
    assert!(scanner().find_in_json(&json!({})).is_empty());
    let mut value = json!([1, null, false, { "a": 2.5 }]);
    assert!(scanner().redact_json(&mut value).is_empty());
    assert_eq!(value, json!([1, null, false, { "a": 2.5 }]));
}

#[test]
fn a_plain_json_string_is_reported_at_the_root_pointer() {
    let mut value = json!(format!("AKIA{}", "IOSFODNN7EXAMPLE"));
    assert_eq!(scanner().redact_json(&mut value), vec![leak("aws_access_key", "")]);
    assert_eq!(value, json!("[REDACTED:aws_access_key]"));
}

#[test]
fn keys_that_redact_to_the_same_text_both_survive() {
    let scanner = LeakScanner::new(vec![known("K", "first-secret"), known("K", "second-secret")]);
    let mut value = json!({ "first-secret": 1, "second-secret": 2 });
    scanner.redact_json(&mut value);
    let map = value.as_object().unwrap();
    assert_eq!(map.len(), 2, "{value}");
    assert!(map.contains_key("[REDACTED:K]") && map.contains_key("[REDACTED:K]~2"), "{value}");
}

#[test]
fn a_large_text_is_scanned_whole() {
    let token = format!("ghp_{}", "a1B2c3D4e5".repeat(4));
    let filler = "{\"id\":1,\"path\":\"src/lib.rs\",\"message\":\"fix the parser\"}\n".repeat(20_000);
    let text = format!("{filler}{token}\n{filler}");
    let (redacted, leaks) = scanner().redact_text(&text).unwrap();
    assert_eq!(leaks, vec![leak("github_token", "")]);
    assert_eq!(redacted.len(), text.len() - token.len() + "[REDACTED:github_token]".len());
}

#[test]
fn text_as_short_as_the_shortest_secret_is_still_searched() {
    // `xoxb-` and ten characters: the shortest shape (15 bytes).
    let scanner = scanner();
    assert_eq!(scanner.shortest, 15);
    let token = format!("{}-1234567890", ["xo", "xb"].concat());
    assert_eq!(scanner.find_in_text(&token), vec![leak("slack_token", "")]);
    // A known secret may be shorter: the scanner's shortest follows it.
    let with_pin = LeakScanner::new(vec![known("PIN", "12345678")]);
    assert_eq!(with_pin.shortest, 8);
    assert_eq!(with_pin.find_in_json(&json!({"pin": "12345678"})), vec![leak("PIN", "/pin")]);
}
