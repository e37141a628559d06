use super::*;

#[test]
fn plain_names_join_with_the_separator() {
    assert_eq!(namespaced_tool_name("everything", "echo"), "everything__echo");
    assert_eq!(namespaced_tool_name("fs", "read-file_2"), "fs__read-file_2");
}

#[test]
fn characters_providers_refuse_become_underscores() {
    assert_eq!(namespaced_tool_name("fs", "files.read"), "fs__files_read");
    assert_eq!(namespaced_tool_name("fs", "lire/écrire"), "fs__lire__crire");
}

#[test]
fn long_names_are_cut_to_64_and_stay_distinct() {
    let a = namespaced_tool_name("server", &format!("{}_alpha", "x".repeat(100)));
    let b = namespaced_tool_name("server", &format!("{}_beta", "x".repeat(100)));
    assert_eq!(a.len(), MAX_TOOL_NAME_CHARS);
    assert_eq!(b.len(), MAX_TOOL_NAME_CHARS);
    assert_ne!(a, b);
    assert!(a.starts_with("server__xxxx"));
}

#[test]
fn server_names_follow_the_rules() {
    for good in ["everything", "fs", "git-2", "my_server", "a"] {
        assert_eq!(validate_server_name(good), Ok(()), "{good}");
    }
    let cases = [
        ("", "cannot be empty"),
        ("9lives", "does not start with a letter"),
        ("my server", "has characters other than"),
        ("a__b", "contains '__'"),
        ("trailing_", "ends with '_'"),
        (&"x".repeat(33), "is 33 characters; the limit is 32"),
    ];
    for (name, expected) in cases {
        let error = validate_server_name(name).unwrap_err().to_string();
        assert!(error.contains(expected), "{name}: {error}");
    }
}

#[test]
fn a_namespaced_name_splits_back_at_the_server() {
    assert_eq!(split_namespaced("git-2__log__all"), Some(("git-2", "log__all")));
    assert_eq!(split_namespaced("noseparator"), None);
}
