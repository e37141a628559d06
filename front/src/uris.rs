//! How resource URIs of many servers share one endpoint.
//!
//! On `/mcp`, a resource `file:///etc/hosts` of server `fs` is shown as
//! `warden://fs/file:///etc/hosts`: the scheme says Warden, the authority
//! names the server, and everything after the first `/` that follows it is
//! the server's URI **verbatim** — not encoded — so any URI a server uses
//! survives (a query, a fragment, spaces, another `warden://`), and a
//! resource template (`test://static/resource/{id}`) stays a template the
//! client can expand. Server names are letters, digits, `_` and `-`, which
//! a URI authority allows, so the server part never needs escaping. The
//! way back takes the text after `warden://`, splits at the first `/`, and
//! hands the rest to that server unchanged.
//!
//! `/mcp/servers/<name>` shows a server's URIs as they are.

/// The scheme and separator of a mapped URI.
const PREFIX: &str = "warden://";

/// The URI a client sees for `server`'s resource `uri`.
pub(crate) fn to_client(server: &str, uri: &str) -> String {
    format!("{PREFIX}{server}/{uri}")
}

/// The server and its own URI for a URI the client sends; `None` when it is
/// not a mapped URI.
pub(crate) fn from_client(uri: &str) -> Option<(&str, &str)> {
    let rest = uri.strip_prefix(PREFIX)?;
    let (server, own) = rest.split_once('/')?;
    (!server.is_empty()).then_some((server, own))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn any_uri_comes_back_unchanged() {
        for uri in [
            "file:///etc/hosts",
            "test://static/resource/1",
            "https://example.com/a?b=c#d",
            "weird uri with spaces/and/slashes",
            "warden://other/nested",
            "",
        ] {
            let shown = to_client("fs_1", uri);
            assert_eq!(from_client(&shown), Some(("fs_1", uri)), "{shown}");
        }
    }

    proptest::proptest! {
        #![proptest_config(super::super::properties::config_of(2_000))]

        /// Property (issue 19): any server name Warden allows and any URI
        /// at all come back as they went; any text reads without a panic.
        #[test]
        fn every_uri_of_every_server_comes_back_unchanged(server in "[A-Za-z0-9_-]{1,24}", uri in "\\PC{0,64}") {
            let shown = to_client(&server, &uri);
            proptest::prop_assert_eq!(from_client(&shown), Some((server.as_str(), uri.as_str())));
        }

        #[test]
        fn any_text_from_a_client_reads_without_a_panic(text in "\\PC{0,64}") {
            let _ = from_client(&text);
        }
    }

    #[test]
    fn a_uri_that_is_not_mapped_is_refused() {
        assert_eq!(from_client("file:///etc/hosts"), None);
        assert_eq!(from_client("warden://"), None);
        assert_eq!(from_client("warden:///x"), None);
        assert_eq!(from_client("warden://fs"), None);
    }
}
