use super::*;

#[test]
fn plain_names_join_with_the_separator() {
    assert_eq!(namespaced_tool_name("everything", "echo"), "everything__echo");
    assert_eq!(namespaced_tool_name("fs", "read-file_2"), "fs__read-file_2");
}

#[test]
fn characters_providers_refuse_become_underscores_and_add_the_hash() {
    let hash = |tool: &str| format!("{:08x}", fnv1a(tool.as_bytes()) as u32);
    assert_eq!(namespaced_tool_name("fs", "files.read"), format!("fs__files_read_{}", hash("files.read")));
    assert_eq!(namespaced_tool_name("fs", "lire/écrire"), format!("fs__lire__crire_{}", hash("lire/écrire")));
}

#[test]
fn names_that_map_to_the_same_characters_stay_distinct() {
    let names: Vec<String> = ["a.b", "a,b", "a_b"].iter().map(|tool| namespaced_tool_name("srv", tool)).collect();
    assert_eq!(names[2], "srv__a_b", "an already valid name is kept as is");
    assert!(names[0].starts_with("srv__a_b_") && names[0].len() == "srv__a_b_".len() + 8, "{}", names[0]);
    assert!(names[1].starts_with("srv__a_b_") && names[1].len() == "srv__a_b_".len() + 8, "{}", names[1]);
    assert_ne!(names[0], names[1]);
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
        ("my.server", "has characters other than"),
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

#[test]
fn long_mapped_names_are_cut_and_end_in_the_hash() {
    let tool = format!("{}.end", "y".repeat(100));
    let name = namespaced_tool_name("server", &tool);
    assert_eq!(name.len(), MAX_TOOL_NAME_CHARS);
    assert_eq!(&name[55..], format!("_{:08x}", fnv1a(tool.as_bytes()) as u32));
}

#[test]
fn a_custom_limit_cuts_there() {
    let rules = NameRules::new("__", 32).unwrap();
    let name = rules.tool_name("fs", &"z".repeat(40));
    assert_eq!(name.len(), 32);
    assert!(name.starts_with("fs__zzzz"), "{name}");
    assert_eq!(rules.tool_name("fs", "read"), "fs__read");
    let exact = "z".repeat(28);
    assert_eq!(rules.tool_name("fs", &exact), format!("fs__{exact}"), "exactly at the limit is not cut");
}

#[test]
fn the_default_rules_are_the_free_functions() {
    let rules = NameRules::default();
    assert_eq!(rules, NameRules::new("__", 64).unwrap());
    for tool in ["echo", "a.b", &"q".repeat(90)] {
        assert_eq!(rules.tool_name("everything", tool), namespaced_tool_name("everything", tool));
    }
    assert_eq!(rules.split("git__log"), split_namespaced("git__log"));
}

#[test]
fn only_the_two_separators_and_a_sane_limit_are_accepted() {
    assert!(NameRules::new("_", 16).is_ok());
    assert!(NameRules::new("__", 128).is_ok());
    let error = NameRules::new(".", 64).unwrap_err().to_string();
    assert_eq!(error, "tool-name separator '.' is not supported; use '__' or '_'");
    assert!(NameRules::new("-", 64).is_err());
    assert!(NameRules::new("", 64).is_err());
    for limit in [0, 15, 129, 1000] {
        let error = NameRules::new("__", limit).unwrap_err().to_string();
        assert_eq!(error, format!("tool-name limit {limit} is out of range; use a limit from 16 to 128 characters"));
    }
}

#[test]
fn with_a_single_underscore_separator_server_names_have_none() {
    let rules = NameRules::new("_", 64).unwrap();
    assert_eq!(rules.validate_server_name("my-server"), Ok(()));
    let error = rules.validate_server_name("my_server").unwrap_err();
    assert_eq!(
        error.to_string(),
        "server name 'my_server' contains '_', which ends the server part of tool names when the separator is '_'; \
         use '-' instead (e.g. 'my-server')"
    );
    assert_eq!(rules.tool_name("git", "log_all"), "git_log_all");
    assert_eq!(rules.split("git_log_all"), Some(("git", "log_all")));
}

#[test]
fn a_short_limit_shortens_server_names_so_the_hash_fits() {
    let rules = NameRules::new("__", 16).unwrap();
    assert_eq!(rules.max_server_chars(), 5);
    assert_eq!(rules.validate_server_name("abcde"), Ok(()));
    let error = rules.validate_server_name("abcdef").unwrap_err().to_string();
    assert_eq!(error, "server name 'abcdef' is 6 characters; the limit is 5");
    let name = rules.tool_name("abcde", "a.long.dotted.name");
    assert_eq!(name.len(), 16);
    assert_eq!(rules.split(&name).map(|(server, _)| server), Some("abcde"));
}

#[test]
fn names_are_stable_whatever_the_order_servers_start_in() {
    let servers = [("fs", vec!["read.file", "read_file", "write"]), ("git", vec!["log", "log.all", "diff/staged"])];
    let build = |order: &[usize]| {
        let mut names = std::collections::BTreeMap::new();
        for &i in order {
            let (server, tools) = &servers[i];
            for tool in tools {
                names.insert(namespaced_tool_name(server, tool), (*server, *tool));
            }
        }
        names
    };
    let forward = build(&[0, 1]);
    assert_eq!(forward, build(&[1, 0]));
    assert_eq!(forward.len(), 6, "no two tools share a name: {forward:?}");
    assert_eq!(namespaced_tool_name("fs", "read.file"), namespaced_tool_name("fs", "read.file"));
}

/// A small deterministic generator, so the property loop needs no crate.
struct XorShift(u64);

impl XorShift {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn tool_name(&mut self) -> String {
        const PIECES: &[&str] = &["a", "Z", "0", "_", "-", ".", "/", " ", "é", "名", "🦀", "\u{0}", "__", "read", "x"];
        let len = (self.next() % 140) as usize;
        (0..len).map(|_| PIECES[(self.next() % PIECES.len() as u64) as usize]).collect()
    }
}

#[test]
fn every_name_is_valid_for_every_provider() {
    let mut rng = XorShift(0x9e37_79b9_7f4a_7c15);
    let rules = [NameRules::default(), NameRules::new("_", 16).unwrap(), NameRules::new("__", 128).unwrap()];
    for rules in &rules {
        let server = if rules.max_chars == 16 { "srv" } else { "my-server" };
        let mut seen = std::collections::HashMap::new();
        for _ in 0..3000 {
            let tool = rng.tool_name();
            let name = rules.tool_name(server, &tool);
            let chars = name.chars().count();
            assert!((1..=rules.max_chars).contains(&chars), "{name:?} for {tool:?}");
            assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{name:?}");
            assert_eq!(rules.split(&name).map(|(s, _)| s), Some(server), "{name:?}");
            if let Some(other) = seen.insert(name.clone(), tool.clone()) {
                assert_eq!(other, tool, "two tools share the name {name:?}");
            }
        }
    }
}
