//! The code's shape, checked: no source file over 500 lines, and no two
//! modules of a crate that import each other, directly or round a cycle
//! (`docs/architecture.md` says which way imports run). A child module
//! using its parent is how Rust modules work and is not counted; siblings
//! — and the subtrees under them — are.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The workspace root.
fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ is in the workspace").to_path_buf()
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else { return files };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files.extend(rust_files(&path));
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            files.push(path);
        }
    }
    files
}

#[test]
fn no_source_file_is_over_500_lines() {
    let mut long = Vec::new();
    for folder in ["protocol", "policy", "config", "actors", "front", "cluster", "bins", "tests", "benches", "examples"]
    {
        for file in rust_files(&root().join(folder)) {
            let lines = std::fs::read_to_string(&file).unwrap().lines().count();
            if lines > 500 {
                long.push(format!("{} ({lines} lines)", file.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(long.is_empty(), "split these along their seams: {long:?}");
}

type Module = Vec<String>;

/// A file's module path within its crate (`src/a/b.rs` is `a::b`).
fn module_of(src: &Path, file: &Path) -> Module {
    let relative = file.strip_prefix(src).unwrap().with_extension("");
    let mut parts: Module = relative.iter().map(|part| part.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("lib" | "main" | "mod")) {
        parts.pop();
    }
    parts
}

/// The paths a file names through `crate::` and `super::` (grouped
/// imports spelled out), without test modules.
fn named_paths(text: &str) -> Vec<(String, String)> {
    let text = match text.find("#[cfg(test)]\nmod tests {") {
        Some(at) => &text[..at],
        None => text,
    };
    let mut paths = Vec::new();
    for anchor in ["crate::", "super::"] {
        let mut rest = text;
        while let Some(at) = rest.find(anchor) {
            let before = rest[..at].chars().last();
            rest = &rest[at + anchor.len()..];
            if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':') {
                continue;
            }
            expand("", rest, &mut |path| paths.push((anchor.to_string(), path)));
        }
    }
    paths
}

/// Calls `found` with each path at the start of `text`: `a::b`, or each
/// member of `a::{b, c::d}`.
fn expand(prefix: &str, text: &str, found: &mut dyn FnMut(String)) {
    let ident: String = text.chars().take_while(|c| c.is_alphanumeric() || *c == '_' || *c == ':').collect();
    let path = format!("{prefix}{}", ident.trim_end_matches(':'));
    let after = &text[ident.len()..];
    if !after.starts_with('{') {
        found(path);
        return;
    }
    // A group: split its top level at commas.
    let (mut depth, mut start) = (0, 1);
    for (at, c) in after.char_indices() {
        match c {
            '{' => depth += 1,
            '}' | ',' if depth == 1 => {
                let member = after[start..at].trim();
                if !member.is_empty() {
                    expand(&format!("{path}::"), member, found);
                }
                start = at + 1;
                if c == '}' {
                    return;
                }
            }
            '}' => depth -= 1,
            _ => {}
        }
    }
}

/// The sibling subtrees of one crate that import each other, round any
/// cycle.
fn cycles_in(src: &Path) -> Vec<BTreeSet<String>> {
    let files = rust_files(src);
    let modules: BTreeSet<Module> = files.iter().map(|file| module_of(src, file)).collect();
    let mut edges: BTreeMap<Module, BTreeSet<Module>> = BTreeMap::new();
    for file in &files {
        let from = module_of(src, file);
        if from.iter().any(|part| part.ends_with("tests")) {
            continue;
        }
        for (anchor, path) in named_paths(&std::fs::read_to_string(file).unwrap()) {
            let mut parts: Module = path.split("::").filter(|part| !part.is_empty()).map(str::to_string).collect();
            if anchor == "super::" {
                let mut base = from.clone();
                base.pop();
                base.extend(parts);
                parts = base;
            }
            // The longest prefix that is a module is what it imports.
            let Some(to) = (1..=parts.len()).rev().map(|n| parts[..n].to_vec()).find(|m| modules.contains(m)) else {
                continue;
            };
            // Compare at the level where the two paths part.
            let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
            if common < from.len() && common < to.len() {
                edges.entry(from[..=common].to_vec()).or_default().insert(to[..=common].to_vec());
            }
        }
    }
    strongly_connected(&edges)
        .into_iter()
        .filter(|group| group.len() > 1)
        .map(|group| group.into_iter().map(|module| module.join("::")).collect())
        .collect()
}

/// Tarjan's algorithm, for the groups of modules that reach each other.
fn strongly_connected(edges: &BTreeMap<Module, BTreeSet<Module>>) -> Vec<Vec<Module>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<Module, BTreeSet<Module>>,
        index: BTreeMap<Module, usize>,
        low: BTreeMap<Module, usize>,
        stack: Vec<Module>,
        groups: Vec<Vec<Module>>,
    }
    fn visit(walk: &mut Walk<'_>, node: &Module) {
        let number = walk.index.len();
        walk.index.insert(node.clone(), number);
        walk.low.insert(node.clone(), number);
        walk.stack.push(node.clone());
        for next in walk.edges.get(node).into_iter().flatten() {
            if !walk.index.contains_key(next) {
                visit(walk, next);
                let low = walk.low[node].min(walk.low[next]);
                walk.low.insert(node.clone(), low);
            } else if walk.stack.contains(next) {
                let low = walk.low[node].min(walk.index[next]);
                walk.low.insert(node.clone(), low);
            }
        }
        if walk.low[node] == walk.index[node] {
            let mut group = Vec::new();
            while let Some(member) = walk.stack.pop() {
                let done = &member == node;
                group.push(member);
                if done {
                    break;
                }
            }
            walk.groups.push(group);
        }
    }
    let mut walk = Walk { edges, index: BTreeMap::new(), low: BTreeMap::new(), stack: Vec::new(), groups: Vec::new() };
    for node in edges.keys() {
        if !walk.index.contains_key(node) {
            visit(&mut walk, node);
        }
    }
    walk.groups
}

#[test]
fn no_two_modules_of_a_crate_import_each_other() {
    for krate in ["protocol", "policy", "config", "actors", "front", "cluster", "bins", "tests"] {
        let cycles = cycles_in(&root().join(krate).join("src"));
        assert!(cycles.is_empty(), "{krate}: these modules import each other: {cycles:?}");
    }
}

#[test]
fn the_cycle_check_finds_a_cycle_when_there_is_one() {
    let dir = warden_tests::scratch_dir("layout-cycle");
    std::fs::write(dir.join("lib.rs"), "mod a;\nmod b;\n").unwrap();
    std::fs::write(dir.join("a.rs"), "use crate::b::Thing;\n").unwrap();
    std::fs::write(dir.join("b.rs"), "use super::{a::{self, Other}};\n").unwrap();
    assert_eq!(cycles_in(&dir), [BTreeSet::from(["a".to_string(), "b".to_string()])]);
    std::fs::write(dir.join("b.rs"), "pub struct Thing;\n").unwrap();
    assert!(cycles_in(&dir).is_empty());
}

/// The relative links of a Markdown text: `[text](target)` with no
/// scheme, the `#anchor` cut off.
fn relative_links(markdown: &str) -> Vec<String> {
    let mut links = Vec::new();
    let mut rest = markdown;
    while let Some(at) = rest.find("](") {
        rest = &rest[at + 2..];
        let Some(end) = rest.find(')') else { break };
        let target = rest[..end].split('#').next().unwrap_or_default().trim();
        let scheme = target.split_once(':').is_some_and(|(scheme, _)| scheme.chars().all(|c| c.is_ascii_alphabetic()));
        if !target.is_empty() && !scheme && !target.contains(char::is_whitespace) {
            links.push(target.to_string());
        }
    }
    links
}

#[test]
fn every_relative_link_in_the_readme_and_the_docs_resolves() {
    let mut pages = vec![root().join("README.md")];
    let docs = std::fs::read_dir(root().join("docs")).expect("docs/ is there");
    pages.extend(docs.flatten().map(|entry| entry.path()).filter(|path| path.extension().is_some_and(|e| e == "md")));
    let mut dead = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for link in relative_links(&text) {
            if !page.parent().unwrap().join(&link).exists() {
                dead.push(format!("{} → {link}", page.strip_prefix(root()).unwrap().display()));
            }
        }
    }
    assert!(pages.len() > 5, "the docs were not found: {pages:?}");
    assert!(dead.is_empty(), "links to nothing: {dead:?}");
}

#[test]
fn relative_links_are_read_as_written() {
    let text = "see [a](docs/a.md#part), [b](https://x.example/b), [c](#top), [d](../d.rs) and [e](mailto:e@x)";
    assert_eq!(relative_links(text), ["docs/a.md", "../d.rs"]);
}

/// The README is the doorway: what Warden is, the two commands, the three
/// faces and where to go next. The manual is `docs/`.
#[test]
fn the_readme_is_a_doorway_not_the_manual() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 200, "README.md has {lines} lines: move the detail to a page under docs/ and link it");
    for page in relative_links(&readme).iter().filter(|link| link.starts_with("docs/")) {
        assert!(root().join(page).exists(), "{page}");
    }
    let linked = |page: &str| readme.contains(&format!("](docs/{page})"));
    for page in ["architecture.md", "config.md", "cli.md", "front.md", "embedding.md"] {
        assert!(linked(page), "the README does not link docs/{page}");
    }
}

/// A host that embeds Warden has no `warden` command: the library crates'
/// messages (errors, logs, what the front tells its clients) say what is
/// wrong and what to change, and the CLI adds its commands
/// (`bins/src/advice.rs`; the daemon's front is given its login advice).
#[test]
fn no_library_message_names_a_warden_command() {
    let mut found = Vec::new();
    for krate in ["actors", "protocol", "front", "cluster", "policy", "config"] {
        for file in rust_files(&root().join(krate).join("src")) {
            let text = std::fs::read_to_string(&file).unwrap();
            for (number, line) in text.lines().enumerate() {
                let code = line.trim_start();
                if code.starts_with("//") || !code.contains('"') {
                    continue;
                }
                let commands = ["`warden ", "run warden "];
                if commands.iter().any(|command| code.contains(command)) {
                    found.push(format!("{}:{}: {code}", file.strip_prefix(root()).unwrap().display(), number + 1));
                }
            }
        }
    }
    assert!(found.is_empty(), "library messages naming a `warden` command: {found:#?}");
}
