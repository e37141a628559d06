//! `roots`: the directories a server may work in, told to servers that
//! ask (`roots/list`).
//!
//! Given at the top level of the config (every server) or in a server's
//! entry (that server only; its own list wins). A root is written as a
//! `file://` URI or as an absolute path, which is turned into one: people
//! write paths, the protocol carries URIs. Anything else — a relative path
//! (relative to what? the daemon's directory is not the user's), another
//! scheme — is refused by name, since a server handed a wrong root works
//! in the wrong place.

/// Checks `roots` and writes each as a `file://` URI; `Err` names the
/// item and what to write instead.
pub(crate) fn normalise(roots: &mut [String]) -> Result<(), String> {
    for (index, root) in roots.iter_mut().enumerate() {
        *root = uri_of(root).map_err(|problem| format!("item {index} (\"{root}\") {problem}"))?;
    }
    Ok(())
}

fn uri_of(root: &str) -> Result<String, String> {
    if let Some(path) = root.strip_prefix("file://") {
        if !path.starts_with('/') {
            return Err("must be a file:// URI of an absolute path, such as file:///home/me/project".into());
        }
        let trimmed = root.trim_end_matches('/');
        return Ok(if trimmed == "file:" { "file:///".into() } else { trimmed.into() });
    }
    if root.contains("://") {
        return Err("must be a file:// URI or an absolute path; roots name local directories".into());
    }
    if !root.starts_with('/') {
        return Err(
            "must be an absolute path (or a file:// URI); a relative path would depend on where Warden runs".into()
        );
    }
    let path = root.trim_end_matches('/');
    let path = if path.is_empty() { "/" } else { path };
    Ok(format!("file://{}", percent_encode_path(path)))
}

/// Percent-encodes what may not stand in a URI path (RFC 3986 `pchar`
/// plus `/`), byte by byte, so any UTF-8 path round-trips.
fn percent_encode_path(path: &str) -> String {
    let mut uri = String::with_capacity(path.len());
    for byte in path.bytes() {
        let keep = byte.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&byte);
        if keep {
            uri.push(byte as char);
        } else {
            uri.push_str(&format!("%{byte:02X}"));
        }
    }
    uri
}

#[cfg(test)]
mod tests {
    use super::*;

    fn normalised(roots: &[&str]) -> Result<Vec<String>, String> {
        let mut roots: Vec<String> = roots.iter().map(|root| root.to_string()).collect();
        normalise(&mut roots).map(|()| roots)
    }

    #[test]
    fn paths_become_file_uris_and_uris_stay() {
        assert_eq!(
            normalised(&["/home/me/project/", "file:///srv/data", "/tmp/with space/ü"]).unwrap(),
            ["file:///home/me/project", "file:///srv/data", "file:///tmp/with%20space/%C3%BC"]
        );
        assert_eq!(normalised(&["/"]).unwrap(), ["file:///"]);
    }

    #[test]
    fn relative_paths_and_other_schemes_are_refused_by_entry() {
        assert_eq!(
            normalised(&["/ok", "src"]).unwrap_err(),
            "item 1 (\"src\") must be an absolute path (or a file:// URI); a relative path would depend on where Warden runs"
        );
        assert_eq!(
            normalised(&["https://example.com"]).unwrap_err(),
            "item 0 (\"https://example.com\") must be a file:// URI or an absolute path; roots name local directories"
        );
        assert_eq!(
            normalised(&["file://relative"]).unwrap_err(),
            "item 0 (\"file://relative\") must be a file:// URI of an absolute path, such as file:///home/me/project"
        );
    }
}
