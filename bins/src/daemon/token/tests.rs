use super::*;

#[test]
fn tokens_are_64_hex_digits_and_differ() {
    let (a, b) = (generate().unwrap(), generate().unwrap());
    assert_eq!(a.len(), 64);
    assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
    assert_ne!(a, b);
}

#[test]
fn only_the_exact_token_matches() {
    let token = generate().unwrap();
    assert!(matches(Some(&token), &token));
    assert!(!matches(None, &token));
    assert!(!matches(Some(""), &token));
    assert!(!matches(Some(&token[..63]), &token));
    let mut wrong = token.clone();
    wrong.replace_range(63.., if token.ends_with('0') { "1" } else { "0" });
    assert!(!matches(Some(&wrong), &token));
}
